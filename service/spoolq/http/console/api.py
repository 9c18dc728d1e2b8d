"""The console's JSON API under ``/console/api``: what the pages call, nothing the doors lack.

Every call names its key in ``X-BV-API-Key`` (the same keys and permissions as the EmoDB door;
see :mod:`spoolq.auth`). With keys configured, a request without a valid key gets 401
(the console then asks for one). Permissions are checked per queue against
:func:`~spoolq.http.overview.permission_name`, with EmoDB's meanings:

* ``get_status``: the queue is listed and its page, settings and moves are shown;
* ``poll``: peek, receive, acknowledge, release and delete messages; purge, unclaim all, delete the queue; the source of a move or redrive;
  cancelling its moves (on SQS queues purge, unclaim, delete and moves need ``admin``, as the
  SQS door asks: :func:`~spoolq.http.overview.manage_action`);
* ``post``: send a test message; the destination of a move or redrive; create a queue (``admin``
  for an SQS queue; see :mod:`.admin`).

A refused action answers 403 and changes nothing. Queues are addressed by their store name
(``sqs:123456789012:us-east-1:jobs``, ``__dedupq:events``), or by the name users type where only
one queue answers to it (``orders.fifo``, an SQS queue URL: :func:`spoolq.queue_names.resolve`;
400 naming the matches where several do); ``GET /names?name=...`` says which queues a name stands
for. The console shows the door, the name users know and the kind (``emodb``, ``sqs-fifo``, ...). Lists come from the cached :class:`~spoolq.http.overview.Overview`
(at most ~1 s old here); a queue's page and the peek read the store directly. The views live
in :mod:`.admin` (create, delete), :mod:`.messages` (peek, send) and here (the rest).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from flask import Response, json, request
from flask_smorest import Blueprint
from marshmallow import ValidationError

from spoolq import __version__
from spoolq.errors import InvalidArgument, QueueNotFound, SpoolqError
from spoolq.http import apidoc
from spoolq.http.console import admin, messages, topics
from spoolq.http.console import schemas as cs
from spoolq.http.console.base import LIST_MAX_AGE, ConsoleApi, ConsoleError, errors_doc, json_response
from spoolq.http.context import Services
from spoolq.http.overview import COUNT_LIMIT, QueueRow
from spoolq.http.schemas import STORE_NAME_PATTERN
from spoolq.queue_names import door_and_name, manage_action, permission_name, resolve, user_kind
from spoolq.rates import RateHistory
from spoolq.serving import flush_mode
from spoolq.store.model import QueueInfo, QueueKind

STARTED_AT = time.time()


class ConsoleViews(ConsoleApi):
    def __init__(self, services: Services, history: RateHistory) -> None:
        super().__init__(services)
        self.history = history

    def rates(self) -> Response:
        who = self.principal()
        try:
            query = cs.ConsoleRatesQuery().load(dict(request.args))
        except ValidationError as e:
            raise ConsoleError(400, f"invalid query: {e.messages}") from None
        queue: str | None = query.get("queue")
        if queue is not None:
            self.require(who, "get_status", queue)

        def keep(name: str) -> bool:  # Principal.can caches its answers
            return name == queue if queue is not None else who.can("get_status", permission_name(name))
        return json_response(self.history.rates(query["window"], keep), cs.ConsoleRatesSchema())

    def session(self) -> Response:
        who = self.principal()
        return json_response({"open": self.services.auth.open, "principal": who.name, "version": __version__,
                      "node": self.services.settings.node_id}, cs.ConsoleSessionSchema())

    def queues(self) -> Response:
        who = self.principal()
        snap = self.services.overview.snapshot(LIST_MAX_AGE)
        if snap.error is not None:
            raise ConsoleError(503, snap.error)
        totals, consumers = self.totals(), self.consumers()
        rows = [self.row(r, snap.queues, totals, who, consumers) for r in snap.queues.values()
                if who.can("get_status", permission_name(r.store_name))]
        rows.sort(key=lambda r: (r["name"], r["door"], r["store_name"]))
        return json_response({"queues": rows, "moves": self.visible_moves(who), "time": time.time()},
                     cs.ConsoleQueueListSchema())

    def queue(self, name: str) -> Response:
        who = self.principal()
        self.require(who, "get_status", name)
        info = self.existing(name)
        store = self.services.store()
        c = store.counts(name, limit=COUNT_LIMIT)
        snap = self.services.overview.snapshot(LIST_MAX_AGE)
        door, shown = door_and_name(name)
        oldest = store.oldest_ready_at(name)
        sources = tuple(sorted(r.store_name for r in snap.queues.values()
                               if r.config.dead_letter is not None and r.config.dead_letter.queue == name))
        row = QueueRow(name, door, shown, info.kind.value, c.ready, c.claimed, c.delayed, c.exact, oldest,
                       info.config, sources)
        out = self.row(row, snap.queues, self.totals(), who, self.consumers())
        cfg = info.config
        out.update(settings={
            "visibility_timeout": cfg.claim_ttl, "delay": cfg.delay, "retention": cfg.retention,
            "max_message_bytes": cfg.max_message_bytes, "receive_wait": cfg.receive_wait,
            "fifo": info.kind is QueueKind.FIFO, "content_based_dedup": cfg.content_based_dedup,
            "archive": cfg.archive, "archive_retention": cfg.archive_retention},
            tags=dict(info.tags), created_at=info.created_at, moves=self.visible_moves(who, name))
        return json_response(out, cs.ConsoleQueueDetailSchema())

    def purge(self, name: str) -> Response:
        who = self.principal()
        self.require(who, manage_action(name), name)
        self.existing(name)
        typed = self.body(cs.ConsoleConfirmBodySchema())["confirm"]
        if typed != door_and_name(name)[1]:
            raise ConsoleError(400, "type the queue's name to confirm the purge")
        self.services.store().purge(name)
        self.services.overview.invalidate()
        return json_response({"ok": True}, cs.ConsoleOkSchema())

    def unclaim(self, name: str) -> Response:
        who = self.principal()
        self.require(who, manage_action(name), name)
        self.existing(name)
        self.services.store().unclaim_all(name)
        self.services.overview.invalidate()
        return json_response({"ok": True}, cs.ConsoleOkSchema())

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
        self.require_send_into(who, dest, "move messages into")
        self.existing(dest)
        ref = self.services.store().move(name, dest, max_per_second=data.get("max_per_second"))
        self.services.overview.invalidate()
        return json_response(self.move_json(self.services.store().move_status(ref)), cs.ConsoleMoveSchema())

    def cancel(self, ref: str) -> Response:
        who = self.principal()
        store = self.services.store()
        status = store.move_status(ref)
        self.require(who, manage_action(status.source), status.source)
        return json_response(self.move_json(store.cancel_move(ref)), cs.ConsoleMoveSchema())

    def names(self) -> Response:
        who = self.principal()
        try:
            typed = cs.ConsoleResolveQuery().load(dict(request.args))["name"]
        except ValidationError as e:
            raise ConsoleError(400, f"invalid query: {e.messages}") from None
        store = self.services.store()
        settings = self.services.settings
        found: dict[str, QueueInfo] = {}

        def exists(name: str) -> bool:
            try:
                found[name] = store.get_queue(name)
            except (QueueNotFound, InvalidArgument):
                return False
            return True

        matches = resolve(typed, exists, account=settings.sqs_account_id, region=settings.sqs_region)
        out = [{"store_name": m, "door": door_and_name(m)[0], "name": door_and_name(m)[1],
                "kind": user_kind(m, found[m].kind.value)}
               for m in matches if who.can("get_status", permission_name(m))]
        return json_response({"queues": out}, cs.ConsoleResolvedSchema())

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
        damaged, data_format = snap.health.get("damaged"), snap.health.get("format")
        return json_response({"version": __version__, "node": s.node_id, "root": str(s.root),
                      "format": data_format if isinstance(data_format, int) else None,
                      "damaged": damaged if isinstance(damaged, list) else [],
                      "free_bytes": free if isinstance(free, int) else None, "fsync": s.fsync,
                      "flush": flush_mode(s), "workers": s.workers, "threads": s.threads, "pid": os.getpid(),
                      "started_at": STARTED_AT, "queues": len(snap.queues),
                      "flushes": sum(v for _l, v in metrics.samples("spoolq_flush_seconds_count")),
                      "flush_seconds_avg": flush_avg, "flush_batch_avg": batch_avg,
                      "flush_seconds_buckets": flush_buckets, "flush_batch_buckets": batch_buckets,
                      "long_polls_waiting": waiting, "open": self.services.auth.open}, cs.ConsoleServerSchema())



# --- blueprint ---------------------------------------------------------------------------------

_Handler = Callable[..., Response]
_Route = tuple[str, str, str, _Handler, str, dict[str, Any]]

_QUEUE_PARAM = {"in": "path", "name": "name", "required": True,
                "schema": {"type": "string", "pattern": STORE_NAME_PATTERN},
                "description": "the queue's store name, or its name as users type it where only one queue has it"}


def _routes() -> list[_Route]:
    """Every endpoint, in the contract's order: (rule, method, view, handler, summary, doc kwargs)."""
    return _list_routes() + _queue_routes([_QUEUE_PARAM]) + _node_routes()


def _list_routes() -> list[_Route]:
    """Who the key is, and the queues: listed, created, deleted when empty."""
    v = ConsoleViews
    return [
        ("/session", "GET", "session", v.session, "Who the key is (401 without a valid key when keys are configured)",
         dict(ok=cs.ConsoleSessionSchema, errors=errors_doc(401))),
        ("/queues", "GET", "queues", v.queues, "Every queue the key may see, with counts, totals and moves",
         dict(ok=cs.ConsoleQueueListSchema, errors=errors_doc(401, 503))),
        ("/queues", "POST", "create", admin.create,
         "Create a queue of any door (its door's name rule and permission: post, admin for SQS)",
         dict(ok=cs.ConsoleCreatedSchema, errors=errors_doc(400, 401, 403, 409, 503), body=cs.ConsoleCreateBodySchema)),
        ("/queues/delete-empty", "POST", "delete_empty", admin.delete_empty,
         "Delete each named queue that holds no message (every one authorised first)",
         dict(ok=cs.ConsoleDeleteEmptySchema, errors=errors_doc(400, 401, 403, 503), body=cs.ConsoleDeleteEmptyBodySchema)),
    ]


def _queue_routes(q: list[dict[str, Any]]) -> list[_Route]:
    """One queue (``q``: its path parameter): its details, its messages, its claims, its moves."""
    v = ConsoleViews
    return [
        ("/queues/<name>", "GET", "queue", v.queue, "One queue: counts, settings, tags, moves",
         dict(ok=cs.ConsoleQueueDetailSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q)),
        ("/queues/<name>/delete", "POST", "delete", admin.delete,
         "Delete the queue and its messages (the name typed to confirm)",
         dict(ok=cs.ConsoleOkSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q,
              body=cs.ConsoleConfirmBodySchema)),
        ("/queues/<name>/messages", "GET", "peek", messages.peek, "Peek at messages without claiming them",
         dict(ok=cs.ConsolePeekSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q, query=cs.ConsolePeekQuery)),
        ("/queues/<name>/messages", "POST", "send", messages.send, "Send a test message",
         dict(ok=cs.ConsoleSentSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q, body=cs.ConsoleSendBodySchema)),
        ("/queues/<name>/receive", "POST", "receive", messages.receive,
         "Receive messages with a claim, as a consumer's poll does (each with its receipt)",
         dict(ok=cs.ConsoleReceivedSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q,
              body=cs.ConsoleReceiveBodySchema)),
        ("/queues/<name>/ack", "POST", "ack", messages.ack, "Acknowledge received messages by receipt",
         dict(ok=cs.ConsoleDoneSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q,
              body=cs.ConsoleReceiptsBodySchema)),
        ("/queues/<name>/release", "POST", "release", messages.release,
         "Release received messages by receipt (visible again now)",
         dict(ok=cs.ConsoleDoneSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q,
              body=cs.ConsoleReceiptsBodySchema)),
        ("/queues/<name>/nack", "POST", "nack", messages.nack,
         "Negatively acknowledge received messages by receipt (visible again now, their nack count up)",
         dict(ok=cs.ConsoleDoneSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q,
              body=cs.ConsoleReceiptsBodySchema)),
        ("/queues/<name>/visibility", "POST", "visibility", messages.visibility,
         "Set how long received messages stay claimed from now, by receipt (0: visible again now)",
         dict(ok=cs.ConsoleDoneSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q,
              body=cs.ConsoleVisibilityBodySchema)),
        ("/queues/<name>/messages/<message_id>/delete", "POST", "delete_message", messages.delete_message,
         "Delete one message by id wherever it is (a Disque job id on a Disque queue)",
         dict(ok=cs.ConsoleOkSchema, errors=errors_doc(400, 401, 403, 404, 503),
              parameters=[*q, {"in": "path", "name": "message_id", "required": True,
                               "schema": {"type": "string", "pattern": "^[0-9a-f]{40}$"}}])),
        ("/queues/<name>/purge", "POST", "purge", v.purge, "Delete every message (the name typed to confirm)",
         dict(ok=cs.ConsoleOkSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q, body=cs.ConsoleConfirmBodySchema)),
        ("/queues/<name>/unclaim", "POST", "unclaim", v.unclaim, "Release every claim",
         dict(ok=cs.ConsoleOkSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q)),
        ("/queues/<name>/move", "POST", "move", v.move, "Start moving every message to another queue",
         dict(ok=cs.ConsoleMoveSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q, body=cs.ConsoleMoveBodySchema)),
        ("/queues/<name>/redrive", "POST", "redrive", v.redrive, "Move a dead-letter queue's messages back to its source",
         dict(ok=cs.ConsoleMoveSchema, errors=errors_doc(400, 401, 403, 404, 503), parameters=q, body=cs.ConsoleMoveBodySchema)),
    ]


def _node_routes() -> list[_Route]:
    """Moves by reference, names, rates, topics and the node."""
    v = ConsoleViews
    return [
        ("/moves/<ref>/cancel", "POST", "cancel", v.cancel, "Cancel a move",
         dict(ok=cs.ConsoleMoveSchema, errors=errors_doc(400, 401, 403, 404, 503),
              parameters=[{"in": "path", "name": "ref", "required": True, "schema": {"type": "string"}}])),
        ("/names", "GET", "names", v.names,
         "The queues a name as users type it stands for (its door's name, store name or SQS queue URL)",
         dict(ok=cs.ConsoleResolvedSchema, errors=errors_doc(400, 401), query=cs.ConsoleResolveQuery)),
        ("/rates", "GET", "rates", v.rates,
         "Messages per second of each queue over the last hour (the server's history, every 5 s)",
         dict(ok=cs.ConsoleRatesSchema, errors=errors_doc(400, 401, 403), query=cs.ConsoleRatesQuery)),
        ("/topics", "GET", "topics", topics.topics,
         "Every SNS topic the key may see: subscriptions, filter policies, message totals (for rates)",
         dict(ok=cs.ConsoleTopicListSchema, errors=errors_doc(401, 503))),
        ("/server", "GET", "server", v.server, "The node: root, free space, flush latency, group-commit sizes, workers",
         dict(ok=cs.ConsoleServerSchema, errors=errors_doc(401, 503))),
    ]


def create_blueprint(services: Services, history: RateHistory) -> Blueprint:
    blp = Blueprint("console_api", __name__, url_prefix="/console/api",
                    description="The web console's JSON API (spoolq extension)")
    views = ConsoleViews(services, history)
    for rule, method, view, handler, summary, kw in _routes():
        doc: dict[str, Any] = {
            "operationId": f"console_{view}", "summary": summary, "security": apidoc.CONSOLE_SECURITY,
            "responses": {"200": {"description": "success", "content": apidoc.json_content(kw["ok"])},
                          **kw["errors"]}}
        if "query" in kw:
            doc["parameters"] = [{"in": "query", "schema": kw["query"]}]
        if "body" in kw:
            doc["requestBody"] = {"required": True, "content": apidoc.json_content(kw["body"])}
        if view == "create":  # the queue made is addressed by its store name, not the door's name
            doc["responses"]["200"]["links"] = {"queue": {
                "operationId": "console_queue", "parameters": {"name": "$response.body#/store_name"}}}
        func = blp.doc(**doc)(_bind(views, view, handler))
        blp.route(rule, methods=[method], parameters=kw.get("parameters", []), endpoint=view)(func)

    @blp.errorhandler(ConsoleError)  # type: ignore[untyped-decorator]
    def console_error(exc: ConsoleError) -> Response:
        return Response(json.dumps({"message": exc.message}), status=exc.status, mimetype="application/json")

    @blp.errorhandler(SpoolqError)  # type: ignore[untyped-decorator]
    def store_error(exc: SpoolqError) -> Response:
        status = exc.http_status if exc.http_status in (400, 404, 409, 503) else 400
        return Response(json.dumps({"message": exc.message}), status=status, mimetype="application/json")

    return blp


def _bind(views: ConsoleViews, view: str, handler: _Handler) -> _Handler:
    bound = partial(handler, views)

    def endpoint(**kwargs: str) -> Response:
        if "name" in kwargs:  # a queue as the user typed it: its store name where one queue answers to it
            kwargs["name"] = views.resolved(kwargs["name"])
        return bound(**kwargs)
    endpoint.__name__ = f"console_{view}"
    endpoint.__doc__ = None
    return endpoint
