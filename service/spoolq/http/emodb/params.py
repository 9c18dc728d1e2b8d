"""The query parameters of the EmoDB doors: each query declared here, and read once.

Each query has two faces, side by side:

* a typed value the view gets (:class:`Poll`, :class:`Peek`, ...), built by its ``read``
  from the query string in EmoDB's declaration order (a value that does not parse: 400 text,
  ``"x" is not a number.``), and, when the query has ranges, checked by its ``check`` once
  the queue's name has been checked (out of range: 400 ``IllegalArgumentException``);
* the marshmallow schema the OpenAPI contract shows (:class:`PollQuery`, ...): documentation
  only, its defaults and ranges taken from the same constants.

``partitioned`` is EmoDB's: read (so a bad value is refused) and ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from flask import request
from marshmallow import Schema, fields, validate

from spoolq.http.emodb import wire
from spoolq.http.schemas import BATCH_TOKEN_PATTERN, QUEUE_NAME_PATTERN
from spoolq.store.model import MAX_BATCH_CLAIM, OutgoingMessage

Args = Mapping[str, str]

POLL_LIMIT = 10
PEEK_LIMIT = 10
RENEW_TTL = 30
LIST_LIMIT = 10_000
BATCH_LIMIT = 1000
BATCH_TTL = 300
MAX_DELAY = 365 * 86400
#: the largest byte budget the store takes; a larger ``maxBytes`` (up to Java's Long.MAX_VALUE, the
#: contract's maximum) is no tighter, so it is taken as this
MAX_BATCH_BYTES = 2**62


def _plain_message(body: bytes) -> OutgoingMessage:
    """A send without extension parameters."""
    return OutgoingMessage(body=body)


def send_options(environ: dict[str, Any]) -> Callable[[bytes], OutgoingMessage]:
    """Extension parameters on send (``delay``, ``ttl``, ``atMostOnce``): what makes each message."""
    if not environ.get("QUERY_STRING"):
        return _plain_message
    args = request.args
    delay = wire.float_param(args, "delay", None)
    ttl = wire.float_param(args, "ttl", None)
    at_most_once = wire.bool_param(args, "atMostOnce", False)
    if delay is not None and not 0 <= delay <= MAX_DELAY:
        raise wire.illegal_argument("Delay must be between 0 and 31536000 seconds")
    if ttl is not None and not wire.MIN_TTL <= ttl <= MAX_DELAY:
        raise wire.illegal_argument(f"Ttl must be >={wire.MIN_TTL:g} and <=31536000 seconds")

    def make(body: bytes) -> OutgoingMessage:
        return OutgoingMessage(body=body, delay=delay, ttl=ttl, at_most_once=at_most_once)
    return make


def archive_option(environ: dict[str, Any]) -> bool | None:
    """Extension parameter on send: ``archive=true|false``, the archive setting the queues sent
    to must have (None: not given)."""
    if not environ.get("QUERY_STRING") or "archive" not in request.args:
        return None
    return wire.bool_param(request.args, "archive")


def partitioned(args: Args) -> None:
    """EmoDB's ``partitioned``: a boolean, ignored."""
    wire.bool_param(args, "partitioned")


class Poll(NamedTuple):
    """``poll``: ``ttl`` None is the queue's visibility timeout; 0 returns messages unclaimed."""

    ttl: int | None
    limit: int
    wait: float
    meta: bool

    @classmethod
    def read(cls, args: Args) -> Poll:
        partitioned(args)
        ttl = wire.int_param(args, "ttl", None)
        limit = wire.int_param(args, "limit", POLL_LIMIT)
        wait = wire.float_param(args, "wait", 0.0)
        meta = wire.bool_param(args, "meta")
        assert limit is not None and wait is not None
        return cls(ttl, limit, wait, meta)

    def check(self, *, dedup: bool) -> None:
        """EmoDB's ranges, in its order (the dedup resource checks the limit before the ttl)."""
        ttl, limit, wait = self.ttl, self.limit, self.wait
        if ttl is not None and ttl < 0:
            raise wire.illegal_argument("ClaimTtl must be >=0")
        if limit <= 0:
            raise wire.illegal_argument("Limit must be >0")
        ttl_check = ("ClaimTtl must be <=1 hour", ttl is not None and ttl > wire.MAX_CLAIM_TTL)
        limit_check = ("Limit must be <=1000", limit > wire.MAX_POLL_LIMIT)
        for text, failed in ((limit_check, ttl_check) if dedup else (ttl_check, limit_check)):
            if failed:
                raise wire.illegal_argument(text)
        if wait < 0:
            raise wire.illegal_argument("Wait must be >=0")
        if wait > wire.MAX_WAIT:
            raise wire.illegal_argument("Wait must be <=20")


class Peek(NamedTuple):
    limit: int
    meta: bool

    @classmethod
    def read(cls, args: Args, *, dedup: bool) -> Peek:
        if dedup:
            partitioned(args)
        limit = wire.int_param(args, "limit", PEEK_LIMIT)
        meta = wire.bool_param(args, "meta")
        assert limit is not None
        return cls(limit, meta)

    def check(self) -> None:
        if self.limit <= 0:
            raise wire.illegal_argument("Limit must be >0")
        if self.limit > wire.MAX_PEEK_LIMIT:
            raise wire.illegal_argument("Limit must be <=5000")


class Renew(NamedTuple):
    """``renew``: ``ttl`` 0 releases the claims."""

    ttl: int

    @classmethod
    def read(cls, args: Args) -> Renew:
        partitioned(args)
        ttl = wire.int_param(args, "ttl", RENEW_TTL)
        assert ttl is not None
        return cls(ttl)

    def check(self) -> None:
        if self.ttl < 0:
            raise wire.illegal_argument("ClaimTtl must be >=0")
        if self.ttl > wire.MAX_CLAIM_TTL:
            raise wire.illegal_argument("ClaimTtl must be <=1 hour")


class Size(NamedTuple):
    """``size``: count exactly up to ``limit`` (None: no limit)."""

    limit: int | None

    @classmethod
    def read(cls, args: Args, *, dedup: bool) -> Size:
        if dedup:
            partitioned(args)
        return cls(wire.int_param(args, "limit", None, maximum=wire.JAVA_LONG_MAX))

    def checked(self) -> Size:
        """Java's Long.MAX_VALUE is no limit; any other limit is positive."""
        if self.limit == wire.JAVA_LONG_MAX:
            return Size(None)
        if self.limit is not None and self.limit <= 0:
            raise wire.illegal_argument("Limit must be >0")
        return self


class ListQueues(NamedTuple):
    prefix: str
    limit: int

    @classmethod
    def read(cls, args: Args) -> ListQueues:
        prefix = args.get("prefix", "")
        limit = wire.int_param(args, "limit", LIST_LIMIT, maximum=wire.JAVA_LONG_MAX)
        assert limit is not None
        if limit <= 0:
            raise wire.illegal_argument("Limit must be >0")
        return cls(prefix, limit)


class Move(NamedTuple):
    """``_move``: ``source`` and ``dest`` are the queues as the URL names them."""

    source: str
    dest: str

    @classmethod
    def read(cls, args: Args) -> Move:
        source, dest = args.get("from"), args.get("to")
        if source is None:
            raise wire.illegal_argument("from is required")
        if dest is None:
            raise wire.illegal_argument("to is required")
        return cls(source, dest)


class ClaimBatch(NamedTuple):
    token: str  # "" when missing
    limit: int
    ttl: int
    max_bytes: int | None
    meta: bool

    @classmethod
    def read(cls, args: Args) -> ClaimBatch:
        token = args.get("token", "")
        limit = wire.int_param(args, "limit", BATCH_LIMIT)
        ttl = wire.int_param(args, "ttl", BATCH_TTL)
        max_bytes = wire.int_param(args, "maxBytes", None, maximum=wire.JAVA_LONG_MAX)
        meta = wire.bool_param(args, "meta")
        assert limit is not None and ttl is not None
        return cls(token, limit, ttl, max_bytes, meta)

    def check(self) -> None:
        if not self.token:
            raise wire.illegal_argument("token is required")
        if not 1 <= self.limit <= MAX_BATCH_CLAIM:
            raise wire.illegal_argument(f"Limit must be >0 and <={MAX_BATCH_CLAIM}")
        check_batch_ttl(self.ttl)
        if self.max_bytes is not None and self.max_bytes <= 0:
            raise wire.illegal_argument("MaxBytes must be >0")

    def budget(self) -> int | None:
        """The byte budget the store is asked for."""
        return None if self.max_bytes is None else min(self.max_bytes, MAX_BATCH_BYTES)


def read_batch_ttl(args: Args) -> int:
    """``renewbatches``' ``ttl``."""
    ttl = wire.int_param(args, "ttl", BATCH_TTL)
    assert ttl is not None
    return ttl


def check_batch_ttl(ttl: int) -> None:
    if not 1 <= ttl <= wire.MAX_CLAIM_TTL:
        raise wire.illegal_argument("ClaimTtl must be >0 and <=1 hour")


# --- the contract's view of the same queries (documentation only) ---------------------------


def _bool_param() -> fields.String:
    return fields.String(metadata={"description": '"true" or "false" in any case; accepted and ignored',
                                   "enum": ["true", "false", "TRUE", "FALSE"]})


class PartitionedQuery(Schema):
    partitioned = _bool_param()


class SendQuery(Schema):
    delay = fields.Float(validate=validate.Range(0, MAX_DELAY),
                         metadata={"description": "extension: seconds before the message becomes visible"})
    ttl = fields.Float(validate=validate.Range(wire.MIN_TTL, MAX_DELAY),
                       metadata={"description": "extension: drop the message if not consumed within this many "
                                                "seconds (the store counts milliseconds)"})
    atMostOnce = fields.String(metadata={
        "description": "extension: deliver at most once, never redeliver", "enum": ["true", "false"]})
    archive = fields.String(metadata={
        "description": "extension: the queue keeps (true) or does not keep (false) an archive of acknowledged "
                       "messages; a queue the send creates gets this setting, a queue that exists with the "
                       "other one answers 400 and nothing is sent", "enum": ["true", "false"]})


class PollQuery(Schema):
    partitioned = _bool_param()
    ttl = fields.Integer(validate=validate.Range(0, wire.MAX_CLAIM_TTL), metadata={
        "description": "claim seconds; 0 returns messages without claiming (default: the queue's visibility "
                       "timeout, 30 unless its settings say otherwise)"})
    limit = fields.Integer(load_default=POLL_LIMIT, validate=validate.Range(1, wire.MAX_POLL_LIMIT))
    wait = fields.Float(validate=validate.Range(0, wire.MAX_WAIT),
                        metadata={"description": "extension: long-poll up to this many seconds"})
    meta = fields.String(metadata={
        "description": 'extension: "true" adds sentAt (epoch seconds) and receiveCount to each message',
        "enum": ["true", "false"]})


class PeekQuery(Schema):
    limit = fields.Integer(load_default=PEEK_LIMIT, validate=validate.Range(1, wire.MAX_PEEK_LIMIT))
    meta = fields.String(metadata={
        "description": 'extension: "true" adds sentAt (epoch seconds) and receiveCount to each message',
        "enum": ["true", "false"]})


class DedupPeekQuery(PeekQuery):
    partitioned = _bool_param()


class SizeQuery(Schema):
    limit = fields.Integer(validate=validate.Range(1, wire.JAVA_LONG_MAX),
                           metadata={"description": "count exactly up to this, estimate beyond", "format": "int64"})


class DedupSizeQuery(SizeQuery):
    partitioned = _bool_param()


class RenewQuery(Schema):
    partitioned = _bool_param()
    ttl = fields.Integer(load_default=RENEW_TTL, validate=validate.Range(0, wire.MAX_CLAIM_TTL),
                         metadata={"description": "seconds; extend-only; 0 releases the claims"})


class ClaimBatchQuery(Schema):
    token = fields.String(required=True, metadata={
        "description": "names the batch: the first call claims it, later calls return the same messages",
        "pattern": BATCH_TOKEN_PATTERN})
    limit = fields.Integer(load_default=BATCH_LIMIT, validate=validate.Range(1, MAX_BATCH_CLAIM),
                           metadata={"description": "most messages the batch claims"})
    ttl = fields.Integer(load_default=BATCH_TTL, validate=validate.Range(1, wire.MAX_CLAIM_TTL),
                         metadata={"description": "claim seconds (renewed to this when the batch is fetched again)"})
    maxBytes = fields.Integer(validate=validate.Range(1, wire.JAVA_LONG_MAX), metadata={
        "description": "stop claiming once the bodies claimed reach this many bytes (at least one message)",
        "format": "int64"})
    meta = fields.String(metadata={
        "description": 'extension: "true" adds sentAt (epoch seconds) and receiveCount to each message',
        "enum": ["true", "false"]})


class RenewBatchesQuery(Schema):
    ttl = fields.Integer(load_default=BATCH_TTL, validate=validate.Range(1, wire.MAX_CLAIM_TTL),
                         metadata={"description": "claim seconds from now; extend-only"})


class MoveQuery(Schema):
    from_ = fields.String(required=True, data_key="from", metadata={"pattern": QUEUE_NAME_PATTERN})
    to = fields.String(required=True, metadata={"pattern": QUEUE_NAME_PATTERN})


class ListQueuesQuery(Schema):
    prefix = fields.String(load_default="", metadata={"description": "only queues whose name starts with this"})
    limit = fields.Integer(load_default=LIST_LIMIT, validate=validate.Range(1, wire.JAVA_LONG_MAX),
                           metadata={"description": "count each queue exactly up to this, estimate beyond",
                                     "format": "int64"})
