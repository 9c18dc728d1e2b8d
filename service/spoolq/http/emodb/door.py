"""EmoDB QueueService (``/queue/1``) and DedupQueueService (``/dedupq/1``) front doors.

Wire-compatible with classic EmoDB (see ``shared/spec/emodb-queue-api.md`` §3-§4 and
``docs/compatibility.md`` for the deliberate deviations). Each view checks, in EmoDB's
order: Content-Type (415), authentication and permission (403), query parameters in
declaration order (400 text), the JSON body (422 / 400 JSON), then the service rules
(400 text with ``X-BV-Exception``), and makes one store call.

Queue mapping: ``/queue/1/{q}`` is store queue ``q`` (kind standard); ``/dedupq/1/{q}`` is
store queue ``__dedupq:{q}`` (kind dedup). Both doors share the ``queue|...`` permissions.
EmoDB's lowercase rule holds for the queues an EmoDB client creates; a queue another door made
(``sqs:123456789012:us-east-1:Orders``, ``disque:MyJobs``) is reached by its store name, and
its permissions are checked under the name its own door checks
(:func:`~spoolq.http.overview.permission_name`).

Extension: ``archive=true|false`` on send, sendbatch and _sendbatch: the archive setting the queues
must have; a queue the send creates is created with it, one that exists with the other setting is
a 400 and nothing is sent. ``GET /queue/1/{q}/_settings`` shows a queue's settings and ``POST`` with some of them
changes them (:mod:`spoolq.queue_settings`): reading needs ``get_status``, changing needs what a
purge needs (``poll``; ``admin`` as well on an SQS queue) and ``post`` on a new dead-letter queue.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson
from flask import request
from flask_smorest import Blueprint

from spoolq.auth import OPEN, Principal, may_send_into
from spoolq.errors import QueueNotFound
from spoolq.http import apidoc, framing
from spoolq.http import schemas as s
from spoolq.http.context import Services
from spoolq.http.emodb import batches as emodb_batches
from spoolq.http.emodb import params, wire
from spoolq.http.emodb import queue_settings as emodb_queue_settings
from spoolq.http.framing import Response
from spoolq.queue_names import manage_action, permission_name, split_sqs_store_name, user_kind
from spoolq.store.model import Message, MoveState, OutgoingMessage, QueueKind, is_queue_name

JSON = "application/json"
_SUCCESS = b'{"success":true}'


def _json(body: bytes | str, status: int = 200) -> Response:
    return Response.whole(body if isinstance(body, bytes) else body.encode(), JSON, status)


def success() -> Response:
    return _json(_SUCCESS)


def _plain_message(body: bytes) -> OutgoingMessage:
    """A send without extension parameters."""
    return OutgoingMessage(body=body)


class EmoDoor:
    """The views of one EmoDB resource; ``dedup`` selects ``/dedupq/1`` behaviour."""

    def __init__(self, services: Services, *, dedup: bool) -> None:
        self.services = services
        self.dedup = dedup
        self.kind = QueueKind.DEDUP if dedup else QueueKind.STANDARD

    # --- request pieces ---------------------------------------------------------------

    def require_json_body(self, environ: dict[str, Any] | None = None) -> None:
        """415 unless the body is JSON; ``environ``: the request's, when the view has it already
        (``flask.request`` is a context lookup per use)."""
        if (request.environ if environ is None else environ).get("CONTENT_TYPE") == JSON:  # the common case
            return
        mimetype = request.mimetype or ""
        if not (mimetype == JSON or (mimetype.startswith("application/") and mimetype.endswith("+json"))):
            raise wire.json_error(415, {"message": "HTTP 415 Unsupported Media Type"})

    def principal(self) -> Principal:
        auth = self.services.auth
        if auth.open:
            return OPEN
        header = request.headers.get("X-BV-API-Key")
        who = auth.principal(header, None if header else request.args.get("APIKey"))
        if who is None:
            raise wire.not_authorized()
        return who

    def permission(self, queue: str) -> str:
        """The name a permission on ``queue`` (as the URL names it) is matched against."""
        return queue if self.dedup else permission_name(queue)

    def permission_store_name(self, queue: str) -> str:
        """The store name whose permissions apply to ``queue`` as the URL names it (checked or not)."""
        return wire.DEDUP_STORE_PREFIX + queue if self.dedup else queue

    def authorize(self, action: str, queue: str) -> Principal:
        if self.services.auth.open:  # open mode: everyone may do everything
            return OPEN
        who = self.principal()
        if not who.can(action, self.permission(queue)):
            raise wire.not_authorized()
        return who

    def body(self, environ: dict[str, Any] | None = None) -> Any:
        data = framing.body_of(request.environ if environ is None else environ)
        return wire.parse_body(request.get_data(cache=False) if data is None else data)

    def store_name(self, queue: str) -> str:
        """The store queue of a URL's queue name: an EmoDB name, or the store name of an existing
        queue another door made (``/queue/1`` only); anything else is EmoDB's 400."""
        try:
            return wire.check_queue_name(queue, dedup=self.dedup)
        except wire.EmoHttpError:
            if self.dedup or queue.startswith(wire.DEDUP_STORE_PREFIX) or not is_queue_name(queue):
                raise
            try:
                self.services.store().get_queue(queue)
            except QueueNotFound:
                raise wire.illegal_argument(wire.QUEUE_NAME_TEXT) from None
            return queue

    def send_options(self, environ: dict[str, Any] | None = None) -> Callable[[bytes], OutgoingMessage]:
        """Extension parameters on send: ``delay``, ``ttl``, ``atMostOnce``."""
        if not (request.environ if environ is None else environ).get("QUERY_STRING"):
            return _plain_message
        args = request.args
        delay = wire.float_param(args, "delay", None)
        ttl = wire.float_param(args, "ttl", None)
        at_most_once = wire.bool_param(args, "atMostOnce", False)
        if delay is not None and not 0 <= delay <= 365 * 86400:
            raise wire.illegal_argument("Delay must be between 0 and 31536000 seconds")
        if ttl is not None and not wire.MIN_TTL <= ttl <= 365 * 86400:
            raise wire.illegal_argument(f"Ttl must be >={wire.MIN_TTL:g} and <=31536000 seconds")

        def make(body: bytes) -> OutgoingMessage:
            return OutgoingMessage(body=body, delay=delay, ttl=ttl, at_most_once=at_most_once)
        return make

    def archive_option(self, environ: dict[str, Any] | None = None) -> bool | None:
        """Extension parameter on send: ``archive=true|false``, the archive setting the queues sent
        to must have (None: not given)."""
        if not (request.environ if environ is None else environ).get("QUERY_STRING") \
                or "archive" not in request.args:
            return None
        return wire.bool_param(request.args, "archive")

    def prepare_archive(self, names: Iterable[str], archive: bool | None) -> Callable[[], None]:
        """Check ``archive=`` before anything is written; returns what creates the missing queues."""
        return emodb_queue_settings.prepare_archive(self.services.store(), names, archive, self.kind,
                                              "dedupq" if self.dedup else "queue")

    # --- views --------------------------------------------------------------------------

    def send(self, queue: str) -> Response:
        environ = framing.current_request().environ
        self.require_json_body(environ)
        self.authorize("post", queue)
        make = self.send_options(environ)
        archive = self.archive_option(environ)
        value = self.body(environ)
        name = self.store_name(queue)
        data = wire.message_bytes(value)
        if archive is not None:
            self.prepare_archive([name], archive)()
        self.services.store().send(name, make(data), create=self.kind)
        return success()

    def send_batch(self, queue: str) -> Response:
        environ = framing.current_request().environ
        self.require_json_body(environ)
        self.authorize("post", queue)
        make = self.send_options(environ)
        archive = self.archive_option(environ)
        values = wire.message_list(self.body(environ))
        name = self.store_name(queue)
        messages = [make(wire.message_bytes(v)) for v in values]
        if messages:
            if archive is not None:
                self.prepare_archive([name], archive)()
            self.services.store().send_batch(name, messages, create=self.kind)
        return success()

    def send_batches(self) -> Response:
        self.require_json_body()
        who = self.principal()
        make = self.send_options()
        archive = self.archive_option()
        batches = wire.batch_map(self.body())
        for queue in batches:
            if not who.can("post", self.permission(queue)):
                return _json(wire.compact({"queue": queue}), 403)
        prepared: list[tuple[str, list[OutgoingMessage]]] = []
        for queue, values in batches.items():
            name = self.store_name(queue)
            prepared.append((name, [make(wire.message_bytes(v)) for v in values]))
        self.prepare_archive([name for name, messages in prepared if messages], archive)()
        store = self.services.store()
        for name, messages in prepared:
            if messages:
                store.send_batch(name, messages, create=self.kind)
        return success()

    def poll(self, queue: str) -> Response:
        self.authorize("poll", queue)
        args = request.args
        wire.bool_param(args, "partitioned")
        ttl = wire.int_param(args, "ttl", None)  # none: the queue's visibility timeout (30 s unless set)
        limit = wire.int_param(args, "limit", 10)
        wait = wire.float_param(args, "wait", 0.0)
        meta = wire.bool_param(args, "meta")
        assert limit is not None and wait is not None
        name = self.store_name(queue)
        if ttl is not None and ttl < 0:
            raise wire.illegal_argument("ClaimTtl must be >=0")
        if limit <= 0:
            raise wire.illegal_argument("Limit must be >0")
        ttl_check = ("ClaimTtl must be <=1 hour", ttl is not None and ttl > wire.MAX_CLAIM_TTL)
        limit_check = ("Limit must be <=1000", limit > wire.MAX_POLL_LIMIT)
        for text, failed in ((limit_check, ttl_check) if self.dedup else (ttl_check, limit_check)):
            if failed:
                raise wire.illegal_argument(text)
        if wait < 0:
            raise wire.illegal_argument("Wait must be >=0")
        if wait > wire.MAX_WAIT:
            raise wire.illegal_argument("Wait must be <=20")
        if ttl == 0:  # EmoDB: a poll with ttl 0 returns visible messages without claiming them
            return self.render_messages(self.services.store().peek_ready(name, limit, wait), meta=meta)
        deliveries = self.services.poll(name, limit, None if ttl is None else float(ttl), wait)
        return self.render_messages([d.message for d in deliveries], meta=meta)

    def peek(self, queue: str) -> Response:
        self.authorize("poll", queue)
        args = request.args
        if self.dedup:
            wire.bool_param(args, "partitioned")
        limit = wire.int_param(args, "limit", 10)
        meta = wire.bool_param(args, "meta")
        assert limit is not None
        name = self.store_name(queue)
        if limit <= 0:
            raise wire.illegal_argument("Limit must be >0")
        if limit > wire.MAX_PEEK_LIMIT:
            raise wire.illegal_argument("Limit must be <=5000")
        messages = self.services.store().peek(name, limit=limit)
        return self.render_messages(messages, meta=meta)

    @staticmethod
    def render_messages(messages: list[Message], *, meta: bool = False) -> Response:
        """EmoDB's ``[{"id", "payload"}]``; ``meta=true`` (spoolq extension) adds ``sentAt``
        (epoch seconds) and ``receiveCount`` (deliveries so far, this one included on poll)."""
        if not meta:  # the common case: one orjson call around each stored payload (ids are hex)
            return _json(orjson.dumps([{"id": m.id, "payload": orjson.Fragment(wire.payload_json(m.body))}
                                       for m in messages]))
        parts = []
        for m in messages:
            head = b'{"id":"' + m.id.encode("ascii") + b'","payload":' + wire.payload_json(m.body)
            head += b',"sentAt":%s,"receiveCount":%d' % (repr(round(m.sent_at, 3)).encode(), m.receive_count)
            parts.append(head + b"}")
        return _json(b"[" + b",".join(parts) + b"]")

    def renew(self, queue: str) -> Response:
        self.require_json_body()
        self.authorize("poll", queue)
        args = request.args
        wire.bool_param(args, "partitioned")
        ttl = wire.int_param(args, "ttl", 30)
        assert ttl is not None
        ids = wire.id_list(self.body())
        name = self.store_name(queue)
        if ttl < 0:
            raise wire.illegal_argument("ClaimTtl must be >=0")
        if ttl > wire.MAX_CLAIM_TTL:
            raise wire.illegal_argument("ClaimTtl must be <=1 hour")
        if ids:
            store = self.services.store()
            if ttl == 0:
                store.release(name, ids)
            else:
                store.renew(name, ids, float(ttl))
        return success()

    def ack(self, queue: str) -> Response:
        req = framing.current_request()
        environ = req.environ
        self.require_json_body(environ)
        self.authorize("poll", queue)
        if environ.get("QUERY_STRING"):
            wire.bool_param(req.args, "partitioned")
        ids = wire.id_list(self.body(environ))
        name = self.store_name(queue)
        if ids:
            self.services.store().ack(name, ids)
        return success()

    # spoolq extension: batch claims (the views are in :mod:`spoolq.http.emodb_batches`)
    def claim_batch(self, queue: str) -> Response:
        return emodb_batches.claim_batch(self, queue)

    def renew_batches(self, queue: str) -> Response:
        return emodb_batches.renew_batches(self, queue)

    def ack_batches(self, queue: str) -> Response:
        return emodb_batches.ack_batches(self, queue)

    def size(self, queue: str) -> Response:
        self.authorize("get_status", queue)
        args = request.args
        if self.dedup:
            wire.bool_param(args, "partitioned")
        limit = wire.int_param(args, "limit", None, maximum=wire.JAVA_LONG_MAX)
        name = self.store_name(queue)
        if limit == wire.JAVA_LONG_MAX:
            limit = None
        if limit is not None and limit <= 0:
            raise wire.illegal_argument("Limit must be >0")
        return _json(str(self.services.store().size(name, limit=limit)))

    def claim_count(self, queue: str) -> Response:
        self.authorize("get_status", queue)
        wire.bool_param(request.args, "partitioned")
        name = self.store_name(queue)
        return _json(str(self.services.store().claim_count(name)))

    def unclaim_all(self, queue: str) -> Response:
        self.authorize("poll", queue)
        wire.bool_param(request.args, "partitioned")
        name = self.store_name(queue)
        self.services.store().unclaim_all(name)
        return success()

    def purge(self, queue: str) -> Response:
        self.authorize("poll", queue)
        if split_sqs_store_name(queue) is not None:
            self.authorize("admin", queue)  # an SQS queue: purging it is an SQS admin action
        wire.bool_param(request.args, "partitioned")
        name = self.store_name(queue)
        self.services.store().purge(name)
        return success()

    def list_queues(self) -> Response:
        """spoolq extension: every queue this key may ``get_status``, with its counts.

        Dedup queues are listed under their ``/dedupq/1`` name with ``kind: dedup``; counts are
        exact up to ``limit`` messages per queue and estimated beyond (``exact: false``)."""
        who = self.principal()
        args = request.args
        prefix = args.get("prefix", "")
        limit = wire.int_param(args, "limit", 10000, maximum=wire.JAVA_LONG_MAX)
        assert limit is not None
        if limit <= 0:
            raise wire.illegal_argument("Limit must be >0")
        store = self.services.store()
        out: list[dict[str, Any]] = []
        strip = len(wire.DEDUP_STORE_PREFIX)
        for name in store.list_queues():
            shown = name[strip:] if name.startswith(wire.DEDUP_STORE_PREFIX) else name
            if not shown.startswith(prefix) or not who.can("get_status", permission_name(name)):
                continue
            with contextlib.suppress(QueueNotFound):  # deleted since it was listed
                kind = user_kind(name, store.get_queue(name).kind.value)
                c = store.counts(name, limit=limit)
                out.append({"name": shown, "kind": kind, "ready": c.ready, "claimed": c.claimed,
                            "delayed": c.delayed, "exact": c.exact})
        out.sort(key=lambda q: q["name"])
        return _json(json.dumps(out, separators=(",", ":")))

    def move(self) -> Response:
        who = self.principal()
        source, dest = request.args.get("from"), request.args.get("to")
        if source is None:
            raise wire.illegal_argument("from is required")
        if dest is None:
            raise wire.illegal_argument("to is required")
        if not (who.can("poll", self.permission(source)) and may_send_into(who, self.permission_store_name(dest))):
            raise wire.not_authorized()
        if not source:
            raise wire.illegal_argument("from is required")
        if not dest:
            raise wire.illegal_argument("to is required")
        if source == dest:
            raise wire.illegal_argument("cannot move queue to itself")
        if split_sqs_store_name(source) is not None or split_sqs_store_name(dest) is not None:
            # SQS queues move only through SQS StartMessageMoveTask, so every move of an SQS
            # queue is an SQS task, cancellable there by the queue's admins
            raise wire.illegal_argument("SQS queues are moved with SQS StartMessageMoveTask")
        src_name, dest_name = self.store_name(source), self.store_name(dest)
        ref = self.services.store().move(src_name, dest_name)
        return _json(wire.compact({"id": ref}))

    def move_status(self, ref: str) -> Response:
        """A move's status, for callers that may see the status of its source or destination."""
        who = self.principal()
        if not wire.MOVE_REF_RE.fullmatch(ref):
            raise wire.unknown_move(ref)
        status = self.services.store().move_status(ref)
        prefix = wire.DEDUP_STORE_PREFIX
        if status.source.startswith(prefix) != self.dedup or status.destination.startswith(prefix) != self.dedup:
            raise wire.unknown_move(ref)  # a move of the other resource's kind
        strip = len(prefix) if self.dedup else 0
        source, destination = status.source[strip:], status.destination[strip:]
        if not (who.can("get_status", self.permission(source)) or who.can("get_status", self.permission(destination))):
            raise wire.not_authorized()
        state = {MoveState.IN_PROGRESS: "IN_PROGRESS", MoveState.COMPLETE: "COMPLETE"}.get(status.state, "ERROR")
        body = {"from": source, "to": destination, "status": state}
        return _json(wire.compact(body))

    # --- settings (spoolq extension) ----------------------------------------------------------

    def get_settings(self, queue: str) -> Response:
        self.authorize("get_status", queue)
        return _json(emodb_queue_settings.settings_json(self.services.store(), self.store_name(queue)))

    def update_settings(self, queue: str) -> Response:
        self.require_json_body()
        who = self.authorize(manage_action(queue), queue)
        changes = self.body()
        name = self.store_name(queue)
        return _json(emodb_queue_settings.change_settings(self.services.store(), who, name, changes))

# --- blueprint -----------------------------------------------------------------------------

_Route = tuple[str, str, str, str, Mapping[str, Any]]


def _routes(dedup: bool) -> list[_Route]:
    """(rule, method, view, summary, doc kwargs) for every endpoint."""
    body_err = apidoc.emodb_errors(body=True)
    errs = apidoc.emodb_errors()
    success_ok = apidoc.ok_json(s.SuccessSchema)
    messages_ok = apidoc.ok_json(s.MessageSchema(many=True), "messages (possibly [])")
    count_ok = apidoc.ok_json(s.COUNT, "a bare JSON integer")
    routes: list[_Route] = [
        ("/<queue>/send", "POST", "send", "Send one message", dict(
            ok=success_ok, body=s.ANY_JSON, query=params.SendQuery, errors=body_err)),
        ("/<queue>/sendbatch", "POST", "send_batch", "Send messages to one queue (all or nothing)", dict(
            ok=success_ok, body=s.ANY_LIST, query=params.SendQuery, errors=body_err)),
        ("/_sendbatch", "POST", "send_batches", "Send messages to several queues (all or nothing)", dict(
            ok=success_ok, body=s.BATCH_MAP, query=params.SendQuery,
            errors=apidoc.emodb_errors(body=True, queue_forbidden=True))),
        ("/<queue>/poll", "GET", "poll", "Claim and return up to limit messages", dict(
            ok=messages_ok, query=params.PollQuery, errors=errs)),
        ("/<queue>/peek", "GET", "peek", "Return up to limit messages without claiming", dict(
            ok=messages_ok, query=params.DedupPeekQuery if dedup else params.PeekQuery, errors=errs)),
        ("/<queue>/renew", "POST", "renew", "Extend claims (ttl=0 releases them)", dict(
            ok=success_ok, body=s.ID_LIST, query=params.RenewQuery, errors=body_err)),
        ("/<queue>/ack", "POST", "ack", "Acknowledge (delete) messages", dict(
            ok=success_ok, body=s.ID_LIST, query=params.PartitionedQuery, errors=body_err)),
        ("/<queue>/claimbatch", "POST", "claim_batch",
         "Claim a batch named by a token, or fetch it again (spoolq extension)", dict(
             ok=messages_ok, query=params.ClaimBatchQuery, errors=errs)),
        ("/<queue>/renewbatches", "POST", "renew_batches", "Extend the claims of batches (spoolq extension)", dict(
            ok=apidoc.ok_json(s.BatchCountSchema), body=s.TOKEN_LIST, query=params.RenewBatchesQuery, errors=body_err)),
        ("/<queue>/ackbatches", "POST", "ack_batches", "Acknowledge batches (spoolq extension)", dict(
            ok=apidoc.ok_json(s.BatchCountSchema), body=s.TOKEN_LIST, errors=body_err)),
        ("/<queue>/size", "GET", "size", "Count messages (exact up to limit)", dict(
            ok=count_ok, query=params.DedupSizeQuery if dedup else params.SizeQuery, errors=errs)),
        ("/<queue>/claimcount", "GET", "claim_count", "Count unexpired claims", dict(
            ok=count_ok, query=params.PartitionedQuery, errors=errs)),
        ("/<queue>/unclaimall", "POST", "unclaim_all", "Release every claim", dict(
            ok=success_ok, query=params.PartitionedQuery, errors=errs)),
        ("/<queue>", "DELETE", "purge", "Delete every message", dict(
            ok=success_ok, query=params.PartitionedQuery, errors=errs)),
        ("/_move", "POST", "move", "Start moving every message of one queue to another", dict(
            ok=apidoc.ok_json(s.MoveRefSchema), query=params.MoveQuery, errors=errs)),
        ("/<queue>/_settings", "GET", "get_settings", "A queue's settings (spoolq extension)", dict(
            ok=apidoc.ok_json(s.QueueSettingsSchema), errors=apidoc.emodb_errors(not_found=True))),
        ("/<queue>/_settings", "POST", "update_settings", "Change some of a queue's settings (spoolq extension)",
         dict(ok=apidoc.ok_json(s.QueueSettingsSchema, "the queue's settings after the change"),
              body=s.QueueSettingsChangeSchema, errors=apidoc.emodb_errors(body=True, not_found=True))),
        ("/_move/<ref>", "GET", "move_status", "Status of a move", dict(
            ok=apidoc.ok_json(s.MoveStatusSchema), errors=apidoc.emodb_errors(move=True))),
    ]
    if not dedup:
        routes.append(("/_queues", "GET", "list_queues", "List queues with their counts (spoolq extension)", dict(
            ok=apidoc.ok_json(s.QueueSummarySchema(many=True), "queues the key may get_status, by name"),
            query=params.ListQueuesQuery, errors=errs)))
    return routes


def create_blueprint(services: Services, *, dedup: bool) -> Blueprint:
    """The ``/queue/1`` (or ``/dedupq/1``) blueprint bound to ``services``."""
    name = "dedupq" if dedup else "queue"
    blp = Blueprint(name, __name__, url_prefix=f"/{name}/1",
                    description=("EmoDB DedupQueueService" if dedup else "EmoDB QueueService")
                    + " (wire-compatible; the deviations are in the compatibility notes)")
    door = EmoDoor(services, dedup=dedup)
    prefix = "dedup_" if dedup else ""
    for rule, method, view, summary, kw in _routes(dedup):
        parameters = []
        if "<queue>" in rule:
            parameters.append(apidoc.queue_path_param(store_names=not dedup))
        if "<ref>" in rule:
            parameters.append({"in": "path", "name": "ref", "required": True, "schema": {"type": "string"}})
        doc = apidoc.operation(prefix + view, summary, **kw)
        func = apidoc.documented(_bind(door, view), **doc)
        blp.route(rule, methods=[method], parameters=parameters, endpoint=view)(func)
    return blp


def _bind(door: EmoDoor, view: str) -> Callable[..., Response]:
    bound: Callable[..., Response] = getattr(door, view)

    def endpoint(**kwargs: str) -> Response:
        return bound(**kwargs)
    endpoint.__name__ = view
    endpoint.__doc__ = None
    return endpoint
