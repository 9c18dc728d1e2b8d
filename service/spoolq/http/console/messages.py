"""The console's message views: peek, send, receive with a claim, acknowledge, release, nack,
change visibility, delete by id.

A test send is JSON unless the user chose text (:func:`message_body`). **Receive** claims
messages as any consumer's poll does (their receive count goes up; a dead-letter policy applies)
for the visibility timeout asked for (the queue's own by default); each comes with its receipt.
**Acknowledge** (a receipt) removes the message if nobody received it since the console did
(an expired claim nobody took over still acknowledges, as in SQS), counted as an acknowledgement; **release** (a receipt) makes it visible again now; **delete** (a message id,
or a Disque job id on a Disque queue) removes the message wherever it is, claimed by anyone or
not. **Nack** (a receipt) releases it as Disque's ``NACK`` does: visible again now, counted as a
negative acknowledgement. **Visibility** (receipts and seconds) sets how long the claims last from
now, as SQS's ``ChangeMessageVisibility`` does (0: visible again now). All of them need ``poll``, as
receiving and deleting do through every door.

A send names, besides its body, a FIFO queue's group and deduplication ids (without one, a queue
with content-based deduplication uses the body's SHA-256, any other a new random id), a delay, and
message attributes: strings, stored as the SQS door stores its ``String`` attributes
(``{"ma": {name: {"DataType": "String", "StringValue": value}}}``), so an SQS consumer receives them,
and counted toward the queue's message size as SQS counts them.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from flask import Response, request
from marshmallow import ValidationError

from spoolq import job_ids as disque_ids
from spoolq.errors import MessageIdChecksumMismatch, MessageRefused, MessageRule
from spoolq.http.console import schemas as cs
from spoolq.http.console.base import ConsoleApi, ConsoleError, json_response
from spoolq.http.emodb import wire as emodb_wire
from spoolq.queue_names import DISQUE_PREFIX, door_and_name
from spoolq.store.model import Delivery, Message, OutgoingMessage, QueueKind, message_id_of


def message_json(m: Message) -> dict[str, Any]:
    try:
        body, encoding = m.body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        body, encoding = base64.b64encode(m.body).decode("ascii"), "base64"
    return {"id": m.id, "sent_at": m.sent_at, "receive_count": m.receive_count,
            "claimed_until": m.claimed_until, "group_id": m.group_id, "size": len(m.body),
            "body": body, "encoding": encoding, "attributes": dict(m.attributes)}


def peek(api: ConsoleApi, name: str) -> Response:
    who = api.principal()
    api.require(who, "poll", name)
    api.existing(name)
    try:
        limit = cs.ConsolePeekQuery().load(dict(request.args))["limit"]
    except ValidationError as e:
        raise ConsoleError(400, f"invalid query: {e.messages}") from None
    out = [message_json(m) for m in api.services.store().peek(name, limit=limit)]
    return json_response({"messages": out}, cs.ConsolePeekSchema())


def receive(api: ConsoleApi, name: str) -> Response:
    who = api.principal()
    api.require(who, "poll", name)
    api.existing(name)
    data = api.body(cs.ConsoleReceiveBodySchema())
    got = api.services.store().poll(name, limit=data["limit"], claim_ttl=data["visibility_timeout"])
    api.services.overview.invalidate()
    return json_response({"messages": [delivery_json(d) for d in got]}, cs.ConsoleReceivedSchema())


def delivery_json(d: Delivery) -> dict[str, Any]:
    return {**message_json(d.message), "claimed_until": d.claimed_until, "receipt": d.receipt}


def ack(api: ConsoleApi, name: str) -> Response:
    return _each_receipt(api, name, api.services.store().ack)


def release(api: ConsoleApi, name: str) -> Response:
    return _each_receipt(api, name, api.services.store().release)


def nack(api: ConsoleApi, name: str) -> Response:
    return _each_receipt(api, name, api.services.store().nack)


def visibility(api: ConsoleApi, name: str) -> Response:
    who = api.principal()
    api.require(who, "poll", name)
    api.existing(name)
    data = api.body(cs.ConsoleVisibilityBodySchema())
    store, timeout = api.services.store(), data["visibility_timeout"]
    # 0: visible again now; else the claims end that many seconds from now, sooner or later
    done = _each_of_this_queue(name, data["receipts"], lambda q, ours: store.release(q, ours) if timeout == 0
                               else store.set_claim_ttl(q, ours, float(timeout)))
    api.services.overview.invalidate()
    return json_response({"done": done}, cs.ConsoleDoneSchema())


def _each_receipt(api: ConsoleApi, name: str, op: Callable[[str, Sequence[str]], list[bool]]) -> Response:
    who = api.principal()
    api.require(who, "poll", name)
    api.existing(name)
    receipts = api.body(cs.ConsoleReceiptsBodySchema())["receipts"]
    done = _each_of_this_queue(name, receipts, op)
    api.services.overview.invalidate()
    return json_response({"done": done}, cs.ConsoleDoneSchema())


def _each_of_this_queue(name: str, receipts: Sequence[str],
                        op: Callable[[str, Sequence[str]], list[bool]]) -> list[bool]:
    """``op`` on the receipts that name a message of queue ``name``; a receipt of another queue (its
    id's checksum names another queue) is not done, as an unknown receipt is not; a malformed one is
    refused (400) before anything is done."""
    mine = [_of_queue(r, name) for r in receipts]  # each checked once; a malformed one raises here
    ours = [r for r, m in zip(receipts, mine, strict=True) if m]
    done = iter(op(name, ours) if ours else [])
    return [next(done) if m else False for m in mine]


def _of_queue(receipt: str, name: str) -> bool:
    try:
        message_id_of(receipt, name)
    except MessageIdChecksumMismatch:
        return False
    return True


def delete_message(api: ConsoleApi, name: str, message_id: str) -> Response:
    who = api.principal()
    api.require(who, "poll", name)
    api.existing(name)
    store_id = disque_ids.to_store(message_id) if name.startswith(DISQUE_PREFIX) else None
    if not api.services.store().ack(name, [store_id or message_id])[0]:
        raise ConsoleError(404, f"no message {message_id!r} in this queue (acknowledged, moved or expired already?)")
    api.services.overview.invalidate()
    return json_response({"ok": True}, cs.ConsoleOkSchema())


def send(api: ConsoleApi, name: str) -> Response:
    who = api.principal()
    api.require(who, "post", name)
    info = api.existing(name)
    data = api.body(cs.ConsoleSendBodySchema())
    group = data.get("group_id")
    body = message_body(data["body"], data["format"], door_and_name(name)[0])
    dedup = data.get("dedup_id")
    if dedup is None and info.kind is QueueKind.FIFO and not info.config.content_based_dedup:
        dedup = os.urandom(16).hex()
    attributes = data.get("attributes") or {}
    stored = {"ma": {k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()}} if attributes else None
    delay = data.get("delay")
    message = OutgoingMessage(body=body, group_id=group or None, dedup_id=dedup, attributes=stored,
                              delay=None if delay is None else float(delay),
                              extra_bytes=sum(len(k) + len("String") + len(v) for k, v in attributes.items()))
    try:
        result = api.services.store().send(name, message)
    except MessageRefused as refused:  # the store decides a message's rules; the console words this one
        if refused.rule is MessageRule.GROUP_ID_MISSING:
            raise ConsoleError(400, "a FIFO queue needs a message group id") from None
        raise
    api.services.overview.invalidate()
    return json_response({"id": result.id, "format": data["format"]}, cs.ConsoleSentSchema())


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
