"""The console's JSON API under ``/console/api``: what the pages call, nothing the doors lack.

Every call names its key in ``X-BV-API-Key`` (the same keys and permissions as the EmoDB door;
see :mod:`spoolq.http.auth`). With keys configured, a request without a valid key gets 401
(the console then asks for one). Permissions are checked per queue against
:func:`~spoolq.http.overview.permission_name`, with EmoDB's meanings:

* ``get_status``: the queue is listed and its page, settings and moves are shown;
* ``poll``: peek, purge, unclaim all; the source of a move or redrive; cancelling its moves;
* ``post``: send a test message; the destination of a move or redrive.

A refused action answers 403 and changes nothing. Queues are addressed by their store name
(``sqs:123456789012:us-east-1:jobs``, ``__dedupq:events``); the console shows the door and
the name users know. Lists come from the cached :class:`~spoolq.http.overview.Overview`
(at most ~1 s old here); a queue's page and the peek read the store directly.
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from flask import Response, request
from flask_smorest import Blueprint
from marshmallow import Schema, ValidationError

from spoolq import __version__
from spoolq.errors import QueueNotFound, SpoolqError
from spoolq.http import apidoc, emodb_wire
from spoolq.http.auth import Principal
from spoolq.http.console import schemas as cs
from spoolq.http.context import Services
from spoolq.http.overview import QueueRow, door_and_name, manage_action, permission_name
from spoolq.store.model import MoveState, MoveStatus, OutgoingMessage, QueueKind

LIST_MAX_AGE = 1.0
DOOR_NAMES = {"queue": "EmoDB", "dedupq": "EmoDB dedup", "sqs": "SQS", "mq": "MQ", "disque": "Disque"}
STARTED_AT = time.time()


class ConsoleError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _json(value: Mapping[str, Any], schema: Schema, status: int = 200) -> Response:
    return Response(schema.dumps(value), status=status, mimetype="application/json")


def _errors(*codes: int) -> dict[str, Any]:
    text = {400: "invalid input", 401: "an API key is required (or the key is unknown)",
            403: "the key may not do this", 404: "no such queue or move",
            503: "storage unavailable; retry"}
    return {str(c): {"description": text[c], "content": apidoc.json_content(cs.ConsoleErrorSchema)}
            for c in codes}


def message_body(text: str, fmt: str, door: str) -> bytes:
    """The bytes a test send stores. ``text``: as typed. ``json``: the text must be one JSON value
    (refused with where it fails otherwise); EmoDB queues get the compact form their own door
    stores, so a dedup queue collapses it with the same payload sent through ``/dedupq/1``."""
    if fmt == "text":
        return text.encode("utf-8")
    try:
        json.loads(text, parse_constant=_no_constant)
    except ValueError as e:
        where = f" (line {e.lineno}, column {e.colno}: {e.msg})" if isinstance(e, json.JSONDecodeError) else f" ({e})"
        raise ConsoleError(400, f"the body is not valid JSON{where}; correct it, or send it as text") from None
    except RecursionError:
        raise ConsoleError(400, "the body is not valid JSON (nested too deeply)") from None
    if door not in ("queue", "dedupq"):
        return text.encode("utf-8")
    try:
        return emodb_wire.message_bytes(emodb_wire.parse_body(text.encode("utf-8")))
    except emodb_wire.EmoHttpError as e:
        raise ConsoleError(400, f"EmoDB refuses this payload: {_emodb_reason(e)}") from None


def _no_constant(word: str) -> Any:
    raise ValueError(f"{word} is not JSON")


def _emodb_reason(e: emodb_wire.EmoHttpError) -> str:
    if e.status == 422:
        return "null is not a message"
    try:
        return str(json.loads(e.body).get("message") or e.body)
    except (ValueError, AttributeError):
        return e.body


class ConsoleApi:
    def __init__(self, services: Services) -> None:
        self.services = services

    # --- request pieces -------------------------------------------------------------------

    def principal(self) -> Principal:
        who = self.services.auth.principal(request.headers.get("X-BV-API-Key"), None)
        if who is None:
            raise ConsoleError(401, "an API key is required" if not request.headers.get("X-BV-API-Key")
                               else "this API key is not known")
        return who

    @staticmethod
    def can(who: Principal, store_name: str) -> dict[str, bool]:
        name = permission_name(store_name)
        can = {a: who.can(a, name) for a in ("get_status", "post", "poll")}
        can["manage"] = who.can(manage_action(store_name), name)
        return can

    def require(self, who: Principal, action: str, store_name: str) -> None:
        if not who.can(action, permission_name(store_name)):
            door, name = door_and_name(store_name)
            raise ConsoleError(403, f"this key may not {action} on the {DOOR_NAMES[door]} queue {name!r}")

    def body(self, schema: Schema) -> dict[str, Any]:
        raw = request.get_json(silent=True)
        if not isinstance(raw, dict):
            raise ConsoleError(400, "the body must be a JSON object")
        try:
            loaded: dict[str, Any] = schema.load(raw)
        except ValidationError as e:
            raise ConsoleError(400, f"invalid body: {e.messages}") from None
        return loaded

    def existing(self, store_name: str) -> Any:
        try:
            return self.services.store().get_queue(store_name)
        except QueueNotFound:
            raise ConsoleError(404, f"no queue {door_and_name(store_name)[1]!r}") from None

    def totals(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for labels, value in self.services.metrics.samples("spoolq_queue_messages_total"):
            out.setdefault(labels["queue"], {})[labels["operation"]] = value
        return out

    def row(self, row: QueueRow, rows: Mapping[str, QueueRow], totals: Mapping[str, Mapping[str, float]],
            who: Principal) -> dict[str, Any]:
        t = totals.get(row.store_name, {})
        dlq = row.config.dead_letter
        dead = None
        if dlq is not None:
            target = rows.get(dlq.queue)
            dead = {"queue": dlq.queue, "max_receives": dlq.max_receives,
                    "messages": target.ready + target.delayed if target else 0}
        return {"store_name": row.store_name, "door": row.door, "name": row.name, "kind": row.kind,
                "ready": row.ready, "claimed": row.claimed, "delayed": row.delayed, "exact": row.exact,
                "oldest_age": round(row.oldest_age(time.time()), 3), "dead_letter": dead,
                "dead_letter_sources": list(row.dead_letter_sources),
                "totals": {k: t.get(k, 0.0) for k in ("send", "poll", "ack")},
                "can": self.can(who, row.store_name)}

    def move_json(self, m: MoveStatus) -> dict[str, Any]:
        remaining = 0
        if m.state is MoveState.IN_PROGRESS:
            remaining = self.services.store().counts(m.source, limit=100_000).total
        return {"ref": m.ref, "source": m.source, "destination": m.destination, "state": m.state.value,
                "moved": m.moved, "remaining": remaining, "started_at": m.started_at,
                "finished_at": m.finished_at, "error": m.error, "max_per_second": m.max_per_second}

    def visible_moves(self, who: Principal, queue: str | None = None) -> list[dict[str, Any]]:
        moves = self.services.store().list_moves()
        shown = [m for m in moves
                 if (queue is None or queue in (m.source, m.destination))
                 and (who.can("get_status", permission_name(m.source))
                      or who.can("get_status", permission_name(m.destination)))]
        shown.sort(key=lambda m: m.started_at, reverse=True)
        return [self.move_json(m) for m in shown[:50]]

    # --- views ----------------------------------------------------------------------------

    def session(self) -> Response:
        who = self.principal()
        return _json({"open": self.services.auth.open, "principal": who.name, "version": __version__,
                      "node": self.services.settings.node_id}, cs.ConsoleSessionSchema())

    def queues(self) -> Response:
        who = self.principal()
        snap = self.services.overview.snapshot(LIST_MAX_AGE)
        if snap.error is not None:
            raise ConsoleError(503, snap.error)
        totals = self.totals()
        rows = [self.row(r, snap.queues, totals, who) for r in snap.queues.values()
                if who.can("get_status", permission_name(r.store_name))]
        rows.sort(key=lambda r: (r["name"], r["door"], r["store_name"]))
        return _json({"queues": rows, "moves": self.visible_moves(who), "time": time.time()},
                     cs.ConsoleQueueListSchema())

    def queue(self, name: str) -> Response:
        who = self.principal()
        self.require(who, "get_status", name)
        info = self.existing(name)
        store = self.services.store()
        c = store.counts(name, limit=100_000)
        snap = self.services.overview.snapshot(LIST_MAX_AGE)
        door, shown = door_and_name(name)
        oldest = store.oldest_ready_at(name) if hasattr(store, "oldest_ready_at") else None
        sources = tuple(sorted(r.store_name for r in snap.queues.values()
                               if r.config.dead_letter is not None and r.config.dead_letter.queue == name))
        row = QueueRow(name, door, shown, info.kind.value, c.ready, c.claimed, c.delayed, c.exact, oldest,
                       info.config, sources)
        out = self.row(row, snap.queues, self.totals(), who)
        cfg = info.config
        out.update(settings={
            "visibility_timeout": cfg.claim_ttl, "delay": cfg.delay, "retention": cfg.retention,
            "max_message_bytes": cfg.max_message_bytes, "receive_wait": cfg.receive_wait,
            "fifo": info.kind is QueueKind.FIFO, "content_based_dedup": cfg.content_based_dedup,
            "archive": cfg.archive, "archive_retention": cfg.archive_retention},
            tags=dict(info.tags), created_at=info.created_at, moves=self.visible_moves(who, name))
        return _json(out, cs.ConsoleQueueDetailSchema())

    def peek(self, name: str) -> Response:
        who = self.principal()
        self.require(who, "poll", name)
        self.existing(name)
        try:
            limit = cs.ConsolePeekQuery().load(dict(request.args))["limit"]
        except ValidationError as e:
            raise ConsoleError(400, f"invalid query: {e.messages}") from None
        out = []
        for m in self.services.store().peek(name, limit=limit):
            try:
                body, encoding = m.body.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                body, encoding = base64.b64encode(m.body).decode("ascii"), "base64"
            out.append({"id": m.id, "sent_at": m.sent_at, "receive_count": m.receive_count,
                        "claimed_until": m.claimed_until, "group_id": m.group_id, "size": len(m.body),
                        "body": body, "encoding": encoding, "attributes": dict(m.attributes)})
        return _json({"messages": out}, cs.ConsolePeekSchema())

    def send(self, name: str) -> Response:
        who = self.principal()
        self.require(who, "post", name)
        info = self.existing(name)
        data = self.body(cs.ConsoleSendBodySchema())
        group = data.get("group_id")
        if info.kind is QueueKind.FIFO and not group:
            raise ConsoleError(400, "a FIFO queue needs a message group id")
        body = message_body(data["body"], data["format"], door_and_name(name)[0])
        message = OutgoingMessage(body=body, group_id=group or None,
                                  dedup_id=os.urandom(16).hex() if info.kind is QueueKind.FIFO else None)
        result = self.services.store().send(name, message)
        self.services.overview.invalidate()
        return _json({"id": result.id, "format": data["format"]}, cs.ConsoleSentSchema())

    def purge(self, name: str) -> Response:
        who = self.principal()
        self.require(who, manage_action(name), name)
        self.existing(name)
        typed = self.body(cs.ConsolePurgeBodySchema())["confirm"]
        if typed != door_and_name(name)[1]:
            raise ConsoleError(400, "type the queue's name to confirm the purge")
        self.services.store().purge(name)
        self.services.overview.invalidate()
        return _json({"ok": True}, cs.ConsoleOkSchema())

    def unclaim(self, name: str) -> Response:
        who = self.principal()
        self.require(who, manage_action(name), name)
        self.existing(name)
        self.services.store().unclaim_all(name)
        self.services.overview.invalidate()
        return _json({"ok": True}, cs.ConsoleOkSchema())

    def move(self, name: str) -> Response:
        return self._move(name, redrive=False)

    def redrive(self, name: str) -> Response:
        return self._move(name, redrive=True)

    def _move(self, name: str, *, redrive: bool) -> Response:
        who = self.principal()
        data = self.body(cs.ConsoleMoveBodySchema())
        self.existing(name)
        dest = data.get("to")
        if redrive and not dest:
            sources = [r.store_name for r in self.services.overview.snapshot(0).queues.values()
                       if r.config.dead_letter is not None and r.config.dead_letter.queue == name]
            if len(sources) != 1:
                raise ConsoleError(400, "this queue is the dead-letter queue of "
                                   f"{len(sources)} queues; name the destination")
            dest = sources[0]
        if not dest:
            raise ConsoleError(400, "name the destination queue")
        if dest == name:
            raise ConsoleError(400, "cannot move a queue to itself")
        self.require(who, manage_action(name), name)
        self.require(who, "post", dest)
        self.existing(dest)
        ref = self.services.store().move(name, dest, max_per_second=data.get("max_per_second"))
        self.services.overview.invalidate()
        return _json(self.move_json(self.services.store().move_status(ref)), cs.ConsoleMoveSchema())

    def cancel(self, ref: str) -> Response:
        who = self.principal()
        store = self.services.store()
        status = store.move_status(ref)
        self.require(who, manage_action(status.source), status.source)
        return _json(self.move_json(store.cancel_move(ref)), cs.ConsoleMoveSchema())

    def server(self) -> Response:
        self.principal()
        s = self.services.settings
        snap = self.services.overview.snapshot(LIST_MAX_AGE)
        metrics = self.services.metrics

        def histogram(base: str) -> tuple[dict[str, float], float | None]:
            buckets = {labels["le"]: v for labels, v in metrics.samples(base + "_bucket")}
            total = sum(v for _l, v in metrics.samples(base + "_sum"))
            count = sum(v for _l, v in metrics.samples(base + "_count"))
            return buckets, (total / count if count else None)

        flush_buckets, flush_avg = histogram("spoolq_flush_seconds")
        batch_buckets, batch_avg = histogram("spoolq_flush_batch_size")
        waiting = sum(v for _l, v in metrics.samples("spoolq_long_polls_waiting"))
        free = snap.health.get("free_bytes")
        return _json({"version": __version__, "node": s.node_id, "root": str(s.root),
                      "free_bytes": free if isinstance(free, int) else None, "fsync": s.fsync,
                      "flush": s.flush, "workers": s.workers, "threads": s.threads, "pid": os.getpid(),
                      "started_at": STARTED_AT, "queues": len(snap.queues),
                      "flushes": sum(v for _l, v in metrics.samples("spoolq_flush_seconds_count")),
                      "flush_seconds_avg": flush_avg, "flush_batch_avg": batch_avg,
                      "flush_seconds_buckets": flush_buckets, "flush_batch_buckets": batch_buckets,
                      "long_polls_waiting": waiting, "open": self.services.auth.open}, cs.ConsoleServerSchema())


# --- blueprint ---------------------------------------------------------------------------------

_Route = tuple[str, str, str, str, dict[str, Any]]

_QUEUE_PARAM = {"in": "path", "name": "name", "required": True, "schema": {"type": "string"},
                "description": "the queue's store name"}


def _routes() -> list[_Route]:
    q = [_QUEUE_PARAM]
    return [
        ("/session", "GET", "session", "Who the key is (401 without a valid key when keys are configured)",
         dict(ok=cs.ConsoleSessionSchema, errors=_errors(401))),
        ("/queues", "GET", "queues", "Every queue the key may see, with counts, totals and moves",
         dict(ok=cs.ConsoleQueueListSchema, errors=_errors(401, 503))),
        ("/queues/<name>", "GET", "queue", "One queue: counts, settings, tags, moves",
         dict(ok=cs.ConsoleQueueDetailSchema, errors=_errors(400, 401, 403, 404, 503), parameters=q)),
        ("/queues/<name>/messages", "GET", "peek", "Peek at messages without claiming them",
         dict(ok=cs.ConsolePeekSchema, errors=_errors(400, 401, 403, 404, 503), parameters=q, query=cs.ConsolePeekQuery)),
        ("/queues/<name>/messages", "POST", "send", "Send a test message",
         dict(ok=cs.ConsoleSentSchema, errors=_errors(400, 401, 403, 404, 503), parameters=q, body=cs.ConsoleSendBodySchema)),
        ("/queues/<name>/purge", "POST", "purge", "Delete every message (the name typed to confirm)",
         dict(ok=cs.ConsoleOkSchema, errors=_errors(400, 401, 403, 404, 503), parameters=q, body=cs.ConsolePurgeBodySchema)),
        ("/queues/<name>/unclaim", "POST", "unclaim", "Release every claim",
         dict(ok=cs.ConsoleOkSchema, errors=_errors(400, 401, 403, 404, 503), parameters=q)),
        ("/queues/<name>/move", "POST", "move", "Start moving every message to another queue",
         dict(ok=cs.ConsoleMoveSchema, errors=_errors(400, 401, 403, 404, 503), parameters=q, body=cs.ConsoleMoveBodySchema)),
        ("/queues/<name>/redrive", "POST", "redrive", "Move a dead-letter queue's messages back to its source",
         dict(ok=cs.ConsoleMoveSchema, errors=_errors(400, 401, 403, 404, 503), parameters=q, body=cs.ConsoleMoveBodySchema)),
        ("/moves/<ref>/cancel", "POST", "cancel", "Cancel a move",
         dict(ok=cs.ConsoleMoveSchema, errors=_errors(400, 401, 403, 404, 503),
              parameters=[{"in": "path", "name": "ref", "required": True, "schema": {"type": "string"}}])),
        ("/server", "GET", "server", "The node: root, free space, flush latency, group-commit sizes, workers",
         dict(ok=cs.ConsoleServerSchema, errors=_errors(401, 503))),
    ]


def create_blueprint(services: Services) -> Blueprint:
    blp = Blueprint("console_api", __name__, url_prefix="/console/api",
                    description="The web console's JSON API (spoolq extension)")
    api = ConsoleApi(services)
    for rule, method, view, summary, kw in _routes():
        doc: dict[str, Any] = {
            "operationId": f"console_{view}", "summary": summary, "security": apidoc.SECURITY[:1],
            "responses": {"200": {"description": "success", "content": apidoc.json_content(kw["ok"])},
                          **kw["errors"]}}
        if "query" in kw:
            doc["parameters"] = [{"in": "query", "schema": kw["query"]}]
        if "body" in kw:
            doc["requestBody"] = {"required": True, "content": apidoc.json_content(kw["body"])}
        func = blp.doc(**doc)(_bind(api, view))
        blp.route(rule, methods=[method], parameters=kw.get("parameters", []), endpoint=view)(func)

    @blp.errorhandler(ConsoleError)  # type: ignore[untyped-decorator]
    def console_error(exc: ConsoleError) -> Response:
        return Response(json.dumps({"message": exc.message}), status=exc.status, mimetype="application/json")

    @blp.errorhandler(SpoolqError)  # type: ignore[untyped-decorator]
    def store_error(exc: SpoolqError) -> Response:
        status = exc.http_status if exc.http_status in (400, 404, 409, 503) else 400
        return Response(json.dumps({"message": exc.message}), status=status, mimetype="application/json")

    return blp


def _bind(api: ConsoleApi, view: str) -> Callable[..., Response]:
    bound: Callable[..., Response] = getattr(api, view)

    def endpoint(**kwargs: str) -> Response:
        return bound(**kwargs)
    endpoint.__name__ = f"console_{view}"
    endpoint.__doc__ = None
    return endpoint
