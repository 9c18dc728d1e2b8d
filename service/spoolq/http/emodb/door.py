"""What every EmoDB view shares: the door's request pieces and its answers.

:class:`EmoDoor` is one resource (``/queue/1`` or ``/dedupq/1``): the services, whether it is the
dedup resource, and the steps each view takes in EmoDB's order -- the Content-Type (415), who is
calling and whether they may (403), the JSON body (422 / 400 JSON) and the store queue a URL's
name stands for (400 text). The query parameters are read by :mod:`.params`. The answers are
EmoDB's: ``{"success":true}``, a bare JSON value, or the messages as :func:`render_messages`
writes them.
"""

from __future__ import annotations

from typing import Any

import orjson
from flask import request

from spoolq.auth import OPEN, Principal
from spoolq.errors import QueueNotFound
from spoolq.http import framing
from spoolq.http.context import Services
from spoolq.http.emodb import wire
from spoolq.http.framing import Response
from spoolq.queue_names import permission_name
from spoolq.store.model import Message, QueueKind, is_queue_name

JSON = "application/json"
_SUCCESS = b'{"success":true}'


def json_answer(body: bytes | str, status: int = 200) -> Response:
    """A JSON answer of ``body``, already serialized."""
    return Response.whole(body if isinstance(body, bytes) else body.encode(), JSON, status)


def success() -> Response:
    """EmoDB's ``{"success":true}``."""
    return json_answer(_SUCCESS)


def render_messages(messages: list[Message], *, meta: bool = False) -> Response:
    """EmoDB's ``[{"id", "payload"}]``; ``meta=true`` (spoolq extension) adds ``sentAt``
    (epoch seconds) and ``receiveCount`` (deliveries so far, this one included on poll)."""
    if not meta:  # the common case: one orjson call around each stored payload (ids are hex)
        return json_answer(orjson.dumps([{"id": m.id, "payload": orjson.Fragment(wire.payload_json(m.body))}
                                         for m in messages]))
    parts = []
    for m in messages:
        head = b'{"id":"' + m.id.encode("ascii") + b'","payload":' + wire.payload_json(m.body)
        head += b',"sentAt":%s,"receiveCount":%d' % (repr(round(m.sent_at, 3)).encode(), m.receive_count)
        parts.append(head + b"}")
    return json_answer(b"[" + b",".join(parts) + b"]")


class EmoDoor:
    """One EmoDB resource and the request pieces of its views; ``dedup`` selects ``/dedupq/1``."""

    def __init__(self, services: Services, *, dedup: bool) -> None:
        self.services = services
        self.dedup = dedup
        self.kind = QueueKind.DEDUP if dedup else QueueKind.STANDARD
        #: how the door's resource is named in URLs (``queue``, ``dedupq``)
        self.resource = "dedupq" if dedup else "queue"

    def require_json_body(self, environ: dict[str, Any] | None = None) -> None:
        """415 unless the body is JSON; ``environ``: the request's, when the view has it already
        (``flask.request`` is a context lookup per use)."""
        if (request.environ if environ is None else environ).get("CONTENT_TYPE") == JSON:  # the common case
            return
        mimetype = request.mimetype or ""
        if not (mimetype == JSON or (mimetype.startswith("application/") and mimetype.endswith("+json"))):
            raise wire.json_error(415, {"message": "HTTP 415 Unsupported Media Type"})

    def principal(self) -> Principal:
        """Who is calling (403 for an unknown key); everyone in open mode."""
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
        """The caller, when they may do ``action`` on ``queue``; else 403."""
        if self.services.auth.open:  # open mode: everyone may do everything
            return OPEN
        who = self.principal()
        if not who.can(action, self.permission(queue)):
            raise wire.not_authorized()
        return who

    def body(self, environ: dict[str, Any] | None = None) -> Any:
        """The request's JSON body, parsed as EmoDB parses it."""
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
