"""The query parameters of the EmoDB doors, as the OpenAPI contract shows them.

The views read the query themselves (:mod:`.door`), because EmoDB's error texts and check order
must be reproduced exactly; these schemas document the same names, defaults and ranges.
"""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from spoolq.http.emodb import wire
from spoolq.http.schemas import BATCH_TOKEN_PATTERN, QUEUE_NAME_PATTERN
from spoolq.store.model import MAX_BATCH_CLAIM

POLL_LIMIT = 10
PEEK_LIMIT = 10
RENEW_TTL = 30
LIST_LIMIT = 10_000
BATCH_LIMIT = 1000
BATCH_TTL = 300
MAX_DELAY = 365 * 86400


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
