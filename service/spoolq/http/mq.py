"""MQ's six endpoints (SoftLayer MQ's README) under ``/mq``.

=========  ==============================  ==============================================
method     path                            answer
=========  ==============================  ==============================================
PUT        /mq/<queue>                     201 created, 200 if it already existed
GET        /mq/<queue>                     200 if the queue exists, else 404
DELETE     /mq/<queue>                     200: the queue and all its messages are gone
GET        /mq/<queue>/messages            200 body = message, ``X-Message-Id``; 204 if none;
                                           404 no such queue
POST       /mq/<queue>/messages            201, ``X-Message-Id``; 400 unreadable body;
                                           404 no such queue; 503 + ``Retry-After``
DELETE     /mq/<queue>/messages/<id>       200 removed, 404 not there (already removed)
=========  ==============================  ==============================================

A fetched message is claimed (MQ's "delay" folder) for the queue's claim ttl (30 s by
default) and comes back if it is not deleted by then. Extensions: ``?wait=`` seconds to
long-poll on fetch, ``?ttl=`` claim seconds on fetch; ``?delay=`` / ``?ttl=`` (expiry) on
add. Bodies are opaque bytes. Errors are ``text/plain``. A queue exists once PUT made it (MQ's
folder): fetching from or adding to a queue that does not exist is 404, never "empty". The store queue for ``<queue>``
is ``mq:<queue>``. Permissions (with API keys): add = ``queue|post|<queue>``, create =
``post``, fetch / delete message / delete queue = ``poll``, queue exists = ``get_status``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from flask import request
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from spoolq.errors import QueueNotFound, SpoolqError, StorageUnavailable
from spoolq.http import apidoc, framing
from spoolq.http import schemas as s
from spoolq.http.context import Services
from spoolq.http.framing import Response
from spoolq.queues import names as queue_names
from spoolq.store.model import MAX_CLAIM_TTL, MAX_DELAY, OutgoingMessage, QueueKind

PREFIX = queue_names.MQ_PREFIX
NAME_RE = queue_names.MQ_NAME
#: the shortest message ttl the store keeps (it counts in milliseconds)
MIN_TTL = 0.001
_NUM_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
#: the longest long poll a fetch may ask for (seconds)
MAX_WAIT = 20


#: the query of a fetch, as :meth:`MqDoor.fetch` reads it (documentation only)
class MqFetchQuery(Schema):
    wait = fields.Float(validate=validate.Range(0, MAX_WAIT),
                        metadata={"description": "extension: long-poll up to this many seconds"})
    ttl = fields.Float(validate=validate.Range(1, 43200),
                       metadata={"description": "extension: seconds before an unacknowledged message is redelivered"})


#: the query of an add, as :meth:`MqDoor.add` reads it (documentation only)
class MqSendQuery(Schema):
    delay = fields.Float(validate=validate.Range(0, 365 * 86400),
                         metadata={"description": "extension: seconds before the message becomes visible"})
    ttl = fields.Float(validate=validate.Range(MIN_TTL, 365 * 86400),
                       metadata={"description": "extension: drop the message if not consumed within this many "
                                                "seconds (the store counts milliseconds)"})


class MqError(Exception):
    def __init__(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.headers = headers or {}


def text_response(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    body = (text + "\n").encode() if text else b""
    return Response.whole(body, "text/plain; charset=utf-8", status, tuple(headers.items()) if headers else ())


def render_error(exc: BaseException) -> Response:
    """The MQ rendering of any error raised while serving ``/mq``."""
    if isinstance(exc, MqError):
        return text_response(exc.status, exc.text, exc.headers)
    if isinstance(exc, StorageUnavailable):
        return text_response(503, exc.message, {"Retry-After": str(exc.retry_after)})
    if isinstance(exc, QueueNotFound):
        return text_response(404, f"queue {exc.name.removeprefix(PREFIX)!r} does not exist")
    if isinstance(exc, SpoolqError):
        return text_response(exc.http_status, exc.message)
    if isinstance(exc, RequestEntityTooLarge):
        return text_response(413, "request body too large")
    if isinstance(exc, HTTPException):  # 405 keeps its Allow header
        allow = {k: v for k, v in exc.get_headers() if k == "Allow"}
        return text_response(exc.code or 500, exc.name.lower(), allow)
    return text_response(500, "internal error (logged)")


def _store_name(queue: str) -> str:
    if not NAME_RE.fullmatch(queue) or queue in (".", ".."):
        raise MqError(400, "invalid queue name: use 1-255 of A-Z a-z 0-9 : @ . _ - (not . or ..)")
    return PREFIX + queue


def _seconds(name: str, low: float, high: float, environ: dict[str, Any] | None = None) -> float | None:
    """A query parameter in seconds; ``environ``: the request's, when the view has it already."""
    if not (request.environ if environ is None else environ).get("QUERY_STRING"):
        return None
    raw = request.args.get(name)
    if raw is None:
        return None
    value = float(raw) if _NUM_RE.fullmatch(raw) else float("nan")
    if not low <= value <= high:
        raise MqError(400, f"{name} must be a number of seconds in [{low:g}, {high:g}]")
    return value


class MqDoor:
    def __init__(self, services: Services) -> None:
        self.services = services

    def authorize(self, action: str, queue: str) -> None:
        auth = self.services.auth
        if auth.open:
            return
        header = request.headers.get("X-BV-API-Key")
        who = auth.principal(header, None if header else request.args.get("APIKey"))
        if who is None or not who.can(action, queue):
            raise MqError(403, "not authorized")

    def create_queue(self, queue: str) -> Response:
        self.authorize("post", queue)
        name = _store_name(queue)
        store = self.services.store()
        try:
            store.get_queue(name)
            return text_response(200, "")
        except QueueNotFound:
            store.create_queue(name, QueueKind.STANDARD, exist_ok=True)
            return text_response(201, "")

    def get_queue(self, queue: str) -> Response:
        self.authorize("get_status", queue)
        self.services.store().get_queue(_store_name(queue))
        return text_response(200, "")

    def delete_queue(self, queue: str) -> Response:
        self.authorize("poll", queue)
        self.services.store().delete_queue(_store_name(queue))
        return text_response(200, "")

    def fetch(self, queue: str) -> Response:
        self.authorize("poll", queue)
        name = _store_name(queue)
        wait = _seconds("wait", 0.0, MAX_WAIT) or 0.0
        ttl = _seconds("ttl", 1.0, MAX_CLAIM_TTL)
        info = self.services.store().get_queue(name)  # 404 for a queue that does not exist, as an add answers
        deliveries = self.services.poll(info, 1, ttl, wait)
        if not deliveries:
            return Response(status=204)
        message = deliveries[0].message
        return Response(message.body, status=200, mimetype="application/octet-stream",
                        headers={"X-Message-Id": message.id})

    def add(self, queue: str) -> Response:
        self.authorize("post", queue)
        name = _store_name(queue)
        environ = framing.current_request().environ
        delay = _seconds("delay", 0.0, MAX_DELAY, environ)
        ttl = _seconds("ttl", MIN_TTL, MAX_DELAY, environ)
        try:
            buffered = framing.body_of(environ)
            body = request.get_data(cache=False) if buffered is None else buffered
        except RequestEntityTooLarge:
            raise
        except (HTTPException, OSError, ValueError) as e:
            raise MqError(400, f"the request body could not be read: {type(e).__name__}") from None
        result = self.services.store().send(name, OutgoingMessage(body=body, delay=delay, ttl=ttl))
        return text_response(201, "", {"X-Message-Id": result.id})

    def delete_message(self, queue: str, message_id: str) -> Response:
        self.authorize("poll", queue)
        name = _store_name(queue)
        removed = self.services.store().ack(name, [message_id])
        if not any(removed):
            raise MqError(404, "no such message")
        return text_response(200, "")


def _ok(status: str, description: str, content: Mapping[str, Any] | None = None,
        headers: Mapping[str, Any] | None = None) -> dict[str, Any]:
    resp: dict[str, Any] = {"description": description}
    if content:
        resp["content"] = content
    if headers:
        resp["headers"] = headers
    return {status: resp}


_TEXT = {"text/plain": {"schema": s.TEXT}}
_MSG_ID = {"X-Message-Id": {"schema": {"type": "string"}, "required": True}}


def _errors(*codes: int) -> dict[str, Any]:
    texts = {400: "invalid name, parameter or unreadable body", 403: "not authorized", 404: "no such queue or message",
             413: "body over the server's limit", 503: "storage unavailable; retry after Retry-After seconds"}
    out: dict[str, Any] = {}
    for code in codes:
        out.update(_ok(str(code), texts[code], _TEXT,
                       {"Retry-After": {"schema": {"type": "integer"}}} if code == 503 else None))
    return out


def create_blueprint(services: Services) -> Blueprint:
    blp = Blueprint("mq", __name__, url_prefix="/mq", description="MQ's six endpoints (bodies are opaque bytes)")
    door = MqDoor(services)
    qparam = [{"in": "path", "name": "queue", "required": True,
               "schema": {"type": "string", "pattern": s.MQ_QUEUE_PATTERN}}]
    idparam = [*qparam, {"in": "path", "name": "message_id", "required": True,
                         "description": "the id an add answered (X-Message-Id)",
                         "schema": {"type": "string", "pattern": "^[0-9a-f]{40}$"}}]
    routes = [
        MqRoute("/<queue>", "PUT", door.create_queue, "mq_create_queue", "Create a queue", qparam, {}, dict(
            **_ok("201", "created", _TEXT), **_ok("200", "already existed", _TEXT), **_errors(400, 403, 503))),
        MqRoute("/<queue>", "GET", door.get_queue, "mq_get_queue", "Does the queue exist?", qparam, {}, dict(
            **_ok("200", "it exists", _TEXT), **_errors(400, 403, 404, 503))),
        MqRoute("/<queue>", "DELETE", door.delete_queue, "mq_delete_queue", "Delete a queue and its messages", qparam, {}, dict(
            **_ok("200", "deleted", _TEXT), **_errors(400, 403, 404, 503))),
        MqRoute("/<queue>/messages", "GET", door.fetch, "mq_fetch", "Fetch (claim) one message", qparam,
         {"parameters": [{"in": "query", "schema": MqFetchQuery}]}, dict(
            **_ok("200", "the message body", {"application/octet-stream": {"schema": s.BINARY}}, _MSG_ID),
            **_ok("204", "no message can be fetched now"), **_errors(400, 403, 404, 503))),
        MqRoute("/<queue>/messages", "POST", door.add, "mq_send", "Add a message", qparam,
         {"parameters": [{"in": "query", "schema": MqSendQuery}],
          "requestBody": {"required": False, "description": "opaque bytes; any Content-Type is accepted",
                          "content": {"application/octet-stream": {"schema": s.BINARY}}}}, dict(
            **_ok("201", "stored durably", _TEXT, _MSG_ID), **_errors(400, 403, 404, 413, 503))),
        MqRoute("/<queue>/messages/<message_id>", "DELETE", door.delete_message, "mq_delete", "Delete a message", idparam,
         {}, dict(**_ok("200", "removed", _TEXT), **_errors(400, 403, 404, 503))),
    ]
    for route in routes:
        doc: dict[str, Any] = {"operationId": route.operation_id, "summary": route.summary,
                               "responses": route.responses, "security": apidoc.SECURITY, **route.extra}
        blp.route(route.rule, methods=[route.method], parameters=route.parameters, endpoint=route.view.__name__)(
            apidoc.documented(_endpoint(route.view), **doc))
    return blp


class MqRoute(NamedTuple):
    """One of MQ's endpoints: its URL rule and method, the door's view, and its OpenAPI entry."""

    rule: str
    method: str
    view: Callable[..., Response]
    operation_id: str
    summary: str
    parameters: list[dict[str, Any]]
    extra: dict[str, Any]  # more of the operation's entry (query parameters, request body)
    responses: dict[str, Any]


def _endpoint(view: Callable[..., Response]) -> Callable[..., Response]:
    """The function Flask calls for ``view`` (a bound method of the door), with the path's variables."""

    def endpoint(**path: str) -> Response:
        return view(**path)
    endpoint.__name__ = view.__name__
    endpoint.__doc__ = None
    return endpoint
