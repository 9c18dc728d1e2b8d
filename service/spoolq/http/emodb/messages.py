"""The EmoDB views of messages: send, sendbatch, _sendbatch, poll, peek, renew, ack.

Each view takes the door and the URL's queue and goes through EmoDB's order: Content-Type (415),
permission (403), query parameters (:mod:`.params`; 400 text), the JSON body (422 / 400 JSON),
the queue's name (400), the parameters' ranges (400), then one store call and the answer.
"""

from __future__ import annotations

from collections.abc import Iterable

from flask import request

from spoolq.http import framing
from spoolq.http.emodb import params, queue_settings, wire
from spoolq.http.emodb.door import EmoDoor, json_answer, render_messages, success
from spoolq.http.framing import Response
from spoolq.store.model import OutgoingMessage


def _prepare_archive(door: EmoDoor, names: Iterable[str], archive: bool | None) -> None:
    """Check ``archive=`` before anything is written, then create the missing queues with it."""
    queue_settings.prepare_archive(door.services.store(), names, archive, door.kind, door.resource)()


def send(door: EmoDoor, queue: str) -> Response:
    environ = framing.current_request().environ
    door.require_json_body(environ)
    door.authorize("post", queue)
    make = params.send_options(environ)
    archive = params.archive_option(environ)
    value = door.body(environ)
    name = door.store_name(queue)
    data = wire.message_bytes(value)
    if archive is not None:
        _prepare_archive(door, [name], archive)
    door.services.store().send(name, make(data), create=door.kind)
    return success()


def send_batch(door: EmoDoor, queue: str) -> Response:
    environ = framing.current_request().environ
    door.require_json_body(environ)
    door.authorize("post", queue)
    make = params.send_options(environ)
    archive = params.archive_option(environ)
    values = wire.message_list(door.body(environ))
    name = door.store_name(queue)
    messages = [make(wire.message_bytes(v)) for v in values]
    if messages:
        if archive is not None:
            _prepare_archive(door, [name], archive)
        door.services.store().send_batch(name, messages, create=door.kind)
    return success()


def send_batches(door: EmoDoor) -> Response:
    """``_sendbatch``: every queue's messages, all or nothing; 403 names the first queue refused."""
    environ = request.environ
    door.require_json_body(environ)
    who = door.principal()
    make = params.send_options(environ)
    archive = params.archive_option(environ)
    batches = wire.batch_map(door.body(environ))
    for queue in batches:
        if not who.can("post", door.permission(queue)):
            return json_answer(wire.compact({"queue": queue}), 403)
    prepared: list[tuple[str, list[OutgoingMessage]]] = []
    for queue, values in batches.items():
        name = door.store_name(queue)
        prepared.append((name, [make(wire.message_bytes(v)) for v in values]))
    _prepare_archive(door, [name for name, messages in prepared if messages], archive)
    store = door.services.store()
    for name, messages in prepared:
        if messages:
            store.send_batch(name, messages, create=door.kind)
    return success()


def poll(door: EmoDoor, queue: str) -> Response:
    door.authorize("poll", queue)
    query = params.Poll.read(request.args)
    name = door.store_name(queue)
    query.check(dedup=door.dedup)
    if query.ttl == 0:  # EmoDB: a poll with ttl 0 returns visible messages without claiming them
        return render_messages(door.services.store().peek_ready(name, query.limit, query.wait), meta=query.meta)
    ttl = None if query.ttl is None else float(query.ttl)
    deliveries = door.services.poll(name, query.limit, ttl, query.wait)
    return render_messages([d.message for d in deliveries], meta=query.meta)


def peek(door: EmoDoor, queue: str) -> Response:
    door.authorize("poll", queue)
    query = params.Peek.read(request.args, dedup=door.dedup)
    name = door.store_name(queue)
    query.check()
    return render_messages(door.services.store().peek(name, limit=query.limit), meta=query.meta)


def renew(door: EmoDoor, queue: str) -> Response:
    """Extend claims; ``ttl=0`` releases them."""
    door.require_json_body()
    door.authorize("poll", queue)
    query = params.Renew.read(request.args)
    ids = wire.id_list(door.body())
    name = door.store_name(queue)
    query.check()
    if ids:
        store = door.services.store()
        if query.ttl == 0:
            store.release(name, ids)
        else:
            store.renew(name, ids, float(query.ttl))
    return success()


def ack(door: EmoDoor, queue: str) -> Response:
    req = framing.current_request()
    environ = req.environ
    door.require_json_body(environ)
    door.authorize("poll", queue)
    if environ.get("QUERY_STRING"):
        params.partitioned(req.args)
    ids = wire.id_list(door.body(environ))
    name = door.store_name(queue)
    if ids:
        door.services.store().ack(name, ids)
    return success()
