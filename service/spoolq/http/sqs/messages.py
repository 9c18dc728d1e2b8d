"""Message-level SQS actions: SendMessage(+Batch), ReceiveMessage, DeleteMessage(+Batch),
ChangeMessageVisibility(+Batch). Each parses, makes one store call, and renders.

What a message keeps in the store's opaque ``attributes``::

    {"ma": {name: {DataType, StringValue | BinaryValue(base64)}},   # MessageAttributes
     "sa": {"AWSTraceHeader": {...}},                                # MessageSystemAttributes
     "sender": "<caller's identity id>",                             # SenderId
     "src": "<store queue it was sent to>",                          # DeadLetterQueueSourceArn
     "dd": "<dedup id as the client gave it>"}                       # messages sent with messageGroup
                                                                     # scope before the store scoped ids

MessageId is the store id in AWS's form: a UUID derived from it (:func:`message_id`), so a
send and every receive of the message agree without keeping a second id; the store id itself
travels inside the receipt handle. SenderId is the caller's identity id (:meth:`Caller.sender_id`).

A message is checked once: this door checks what only SQS rules (the body's characters,
DelaySeconds on a FIFO queue, message attributes), the store decides the rest (the size, attributes
included; group and deduplication ids; what a FIFO queue needs) and its refusal, a typed
:class:`~spoolq.errors.MessageRefused`, is worded as AWS words it (:func:`_refusal`).
Batch sends fail each entry on its own: a bad entry goes to ``Failed`` (HTTP 200) and the good
ones are written with one ``send_each``, where an entry the store refuses fails alone;
request-level problems (empty, more than 10, bad or repeated ids, over 1 MiB in total, a FIFO
queue's missing group or deduplication id) fail the whole call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from flask import has_request_context, request

from spoolq.errors import MessageRefused, MessageRule, SpoolqError
from spoolq.http.gunicorn import parking
from spoolq.http.sqs import checks
from spoolq.http.sqs.checks import invalid_value, optional_int, optional_str, required_str, string_list
from spoolq.http.sqs.context import arn_of_store_name, unwrap_receipt, wrap_receipt
from spoolq.http.sqs.digests import md5_of_attributes, md5_of_body, md5_of_bytes
from spoolq.http.sqs.env import Env
from spoolq.http.sqs.errors import (
    BatchRequestTooLong,
    InvalidParameterValue,
    MessageNotInflight,
    MissingParameter,
    ReceiptHandleIsInvalid,
    SqsError,
)
from spoolq.http.sqs.wire import uuid4_text
from spoolq.store.model import Delivery, OutgoingMessage, QueueInfo, QueueKind, QueueRef, message_id_of

ANONYMOUS_SENDER = "AIDAIT2UOQQY3AUEKVGXU"
#: the X-Ray header AWS keeps as the AWSTraceHeader system attribute when the sender passes none
TRACE_HEADER = "X-Amzn-Trace-Id"
TRACE_HEADER_KEY = "HTTP_" + TRACE_HEADER.upper().replace("-", "_")  # its key in the WSGI environ
SYSTEM_ATTRIBUTES = ("SenderId", "SentTimestamp", "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp",
                     "SequenceNumber", "MessageDeduplicationId", "MessageGroupId", "AWSTraceHeader",
                     "DeadLetterQueueSourceArn")
NOT_FOR_QUEUE_TYPE = "The request include parameter that is not valid for this queue type."
EXPIRED_HANDLE = "The receipt handle has expired."
GONE_HANDLE = "Message does not exist or is not available for visibility timeout change."
NO_DEDUP_ID = ("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId "
               "provided explicitly")


#: a store id is 36 hex digits of its own (time, node, counter, random) and 4 of its queue's checksum
STORE_ID_HEAD = 36


def message_id(store_id: str) -> str:
    """The MessageId SQS clients see for a store id: a version-4-shaped UUID derived from the id
    without its queue's checksum, so a message keeps its MessageId where the store keeps that head."""
    return uuid4_text(hashlib.sha256(store_id[:STORE_ID_HEAD].encode("ascii")).hexdigest())  # its first 16 bytes


def _trace_header() -> dict[str, dict[str, str]]:
    """``AWSTraceHeader`` from the request's X-Ray header (AWS keeps it when the sender passes none)."""
    # read from the environ, as werkzeug's headers read it (a missing header costs them a KeyError)
    value = request.environ.get(TRACE_HEADER_KEY) if has_request_context() else None
    return {"AWSTraceHeader": {"DataType": "String", "StringValue": value}} if value else {}


def _stored_plain(env: Env, info: QueueInfo) -> dict[str, Any]:
    """What a message with no attributes of its own keeps in the store's ``attributes``."""
    return {"sender": env.caller.sender_id or env.caller.account, "src": info.name}


def _refusal(refused: MessageRefused, batch: bool = False) -> SqsError:
    """The store's refusal of a message as AWS words it (SendMessage, or ``batch``: a
    SendMessageBatch entry, or the whole batch for a FIFO queue's missing id)."""
    rule = refused.rule
    if rule is MessageRule.SIZE:
        return InvalidParameterValue(
            f"One or more parameters are invalid. Reason: Message must be shorter than {refused.limit} bytes.")
    if rule is MessageRule.GROUP_ID or rule is MessageRule.DEDUP_ID:
        name = "MessageGroupId" if rule is MessageRule.GROUP_ID else "MessageDeduplicationId"
        if not isinstance(refused.value, str):
            return invalid_value(name, refused.value, "Must be a string.")
        return invalid_value(name, refused.value, f"{name} can only include alphanumeric and punctuation "
                                                  f"characters. 1 to {refused.limit} in length.")
    if rule is MessageRule.GROUP_ID_MISSING:
        # a batch words it as InvalidParameterValue, not SendMessage's MissingParameter (recorded:
        # test_send_batch_missing_message_group_id_for_fifo_queue)
        return InvalidParameterValue("The request must contain the parameter MessageGroupId.") if batch \
            else MissingParameter("MessageGroupId")
    if rule is MessageRule.DEDUP_ID_MISSING:
        return InvalidParameterValue(NO_DEDUP_ID)
    if rule is MessageRule.DEDUP_ID_NOT_FIFO:
        return invalid_value("MessageDeduplicationId", refused.value, NOT_FOR_QUEUE_TYPE)
    return InvalidParameterValue(refused.message)


#: the keys of a SendMessage request or a batch entry that gives nothing optional
_ONLY_REQUIRED = frozenset({"QueueUrl", "Id", "MessageBody"})


def _prepare(env: Env, info: QueueInfo, entry: Mapping[str, Any], trace: dict[str, dict[str, str]],
             plain: dict[str, Any], attrs: dict[str, dict[str, str]] | SqsError | None = None,
             attrs_size: int = 0, batch: bool = False) -> tuple[OutgoingMessage, dict[str, Any]]:
    """Check what only SQS rules (the body's characters, DelaySeconds, the attributes) and build what
    the store takes plus the reply's digests. The store decides the rest (the size with the
    attributes, the group and deduplication ids, what a FIFO queue needs): :func:`_refusal` words
    its refusals. ``trace`` is the request's :func:`_trace_header` (read once per request, not once
    per batch entry), ``plain`` its :func:`_stored_plain`: every entry of a request that keeps nothing
    else shares that one object, so the store encodes it once per batch. ``attrs``: the entry's
    message attributes checked already (a batch checks them once, for its total size too), and
    ``attrs_size`` what they count toward the message size."""
    body = entry.get("MessageBody")
    if body is None or body == "":
        raise MissingParameter("MessageBody")
    if not isinstance(body, str):
        raise InvalidParameterValue("MessageBody must be a string.")
    raw = checks.encoded_body(body)
    if entry.keys() <= _ONLY_REQUIRED and not attrs:  # nothing optional given: what the rest makes of that
        return (OutgoingMessage(body=raw, attributes={**plain, "sa": trace} if trace else plain),
                {"MD5OfMessageBody": md5_of_bytes(raw)})
    fifo = info.kind is QueueKind.FIFO
    delay = None
    if entry.get("DelaySeconds") is not None:
        delay = optional_int(entry, "DelaySeconds", 0, checks.MAX_DELAY, "DelaySeconds must be >= 0 and <= 900.")
        if fifo:
            if delay:
                raise invalid_value("DelaySeconds", delay, NOT_FOR_QUEUE_TYPE)
            delay = None  # 0 on a FIFO queue means "the queue's DelaySeconds" (recorded from AWS)
    if attrs is None:
        raw_attrs = entry.get("MessageAttributes")
        attrs = checks.check_message_attributes(raw_attrs) if raw_attrs is not None else {}
        attrs_size = checks.attributes_size(attrs) if attrs else 0
    elif isinstance(attrs, SqsError):
        raise attrs
    raw_system = entry.get("MessageSystemAttributes")
    system = checks.check_message_attributes(raw_system, system=True) if raw_system is not None else {}
    group, dedup = entry.get("MessageGroupId"), entry.get("MessageDeduplicationId")
    if batch and fifo:  # a batch entry's empty id is a missing one where the queue needs it (recorded)
        group = group or None
        if not info.config.content_based_dedup:
            dedup = dedup or None
    stored: dict[str, Any] = plain
    if attrs:
        stored = {**stored, "ma": attrs}
    if system or trace:
        stored = {**stored, "sa": system or trace}
    reply: dict[str, Any] = {"MD5OfMessageBody": md5_of_bytes(raw)}
    if attrs:
        reply["MD5OfMessageAttributes"] = md5_of_attributes(attrs)
    if system:
        reply["MD5OfMessageSystemAttributes"] = md5_of_attributes(system)
    message = OutgoingMessage(body=raw, delay=None if delay is None else float(delay), group_id=group,
                              dedup_id=dedup, attributes=stored,
                              extra_bytes=attrs_size)
    return message, reply


def send_message(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    info = env.queue(store_name)
    message, reply = _prepare(env, info, p, _trace_header(), _stored_plain(env, info))
    try:
        result = env.store.send(info, message)  # the queue as looked up: no second lookup
    except MessageRefused as refused:
        raise _refusal(refused) from None
    reply["MessageId"] = message_id(result.id)
    if result.sequence_number is not None:  # FIFO only
        reply["SequenceNumber"] = result.sequence_number
    return reply


def _checked_attributes(raw: object) -> tuple[dict[str, dict[str, str]] | SqsError, int]:
    """A batch entry's message attributes (``raw``, given) checked, or what is wrong with them; and
    what they count toward the message's size (0 when they are wrong)."""
    try:
        attrs = checks.check_message_attributes(raw)
    except SqsError as exc:
        return exc, 0
    return attrs, checks.attributes_size(attrs) if attrs else 0


#: batch entries word a too-long message as AWS does there (recorded: test_send_batch_message_size)
_BATCH_WORDING = ("One or more parameters are invalid.", "One or more parameters cannot be validated.")


def _failure(entry_id: str, exc: SpoolqError) -> dict[str, Any]:
    code = exc.sqs_query_code if isinstance(exc, InvalidParameterValue) or "#" in exc.sqs_type else exc.sqs_type
    return {"Id": entry_id, "SenderFault": exc.sqs_status < 500, "Code": code,
            "Message": exc.message.replace(*_BATCH_WORDING)}


def _batch_reply(successful: list[dict[str, Any]], failed: list[dict[str, Any]]) -> dict[str, Any]:
    """AWS omits an empty ``Failed`` list; ``Successful`` is always there."""
    return {"Successful": successful, "Failed": failed} if failed else {"Successful": successful}


def send_message_batch(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    entries = checks.check_entries(p, "SendMessageBatchRequestEntry")
    info = env.queue(store_name)
    # each entry's attributes checked once and their size counted once; what the entries count
    # toward the batch's 1 MiB: their bodies, and their attributes where these are valid
    attributes: list[tuple[dict[str, dict[str, str]] | SqsError, int]] = []
    total = 0
    for entry in entries:
        raw_attrs = entry.get("MessageAttributes")
        checked = ({}, 0) if raw_attrs is None else _checked_attributes(raw_attrs)
        attributes.append(checked)
        body = entry.get("MessageBody")
        if isinstance(body, str):
            total += len(body) if body.isascii() else len(body.encode("utf-8"))
        total += checked[1]
    if total > checks.MAX_MESSAGE_BYTES:
        raise BatchRequestTooLong(checks.MAX_MESSAGE_BYTES, total)
    ready: list[tuple[str, OutgoingMessage, dict[str, Any]]] = []
    failed: dict[str, dict[str, Any]] = {}  # entry id -> its failure
    trace, plain = _trace_header(), _stored_plain(env, info)
    for entry, (attrs, attrs_size) in zip(entries, attributes, strict=True):
        try:
            message, reply = _prepare(env, info, entry, trace, plain, attrs, attrs_size, batch=True)
        except SqsError as exc:
            failed[entry["Id"]] = _failure(entry["Id"], exc)
            continue
        ready.append((entry["Id"], message, reply))
    successful: list[dict[str, Any]] = []
    if ready:
        try:
            outcomes = env.store.send_each(info, [m for _, m, _ in ready])
        except MessageRefused as refused:  # a FIFO queue's missing id: the whole batch
            raise _refusal(refused, batch=True) from None
        for (entry_id, _, reply), outcome in zip(ready, outcomes, strict=True):
            if isinstance(outcome, MessageRefused):
                failed[entry_id] = _failure(entry_id, _refusal(outcome, batch=True))
                continue
            item = {"Id": entry_id, "MessageId": message_id(outcome.id), **reply}
            if outcome.sequence_number is not None:  # FIFO only
                item["SequenceNumber"] = outcome.sequence_number
            successful.append(item)
    # failures in the order of the entries, whether the door or the store refused them
    return _batch_reply(successful, [failed[e["Id"]] for e in entries if e["Id"] in failed] if failed else [])


def _render_delivery(env: Env, info: QueueInfo, delivery: Delivery, system_names: set[str],
                     attribute_names: Sequence[str], now: float) -> dict[str, Any]:
    msg = delivery.message
    try:  # a body sent through SQS is UTF-8: its digest is the stored bytes'
        body = msg.body.decode("utf-8")
        digest = md5_of_bytes(msg.body)
    except UnicodeDecodeError:  # another door's bytes: the body and digest of what the client reads
        body = msg.body.decode("utf-8", errors="replace")
        digest = md5_of_body(body)
    stored = msg.attributes or {}
    out: dict[str, Any] = {"MessageId": message_id(msg.id), "ReceiptHandle": wrap_receipt(info.name, delivery.receipt, now),
                           "MD5OfBody": digest, "Body": body}
    selected = checks.filter_names(attribute_names, stored.get("ma") or {})
    if selected:
        out["MD5OfMessageAttributes"] = md5_of_attributes(selected)
        out["MessageAttributes"] = selected
    if not system_names:
        return out
    every = "All" in system_names
    available: dict[str, str | None] = {
        "SenderId": str(stored.get("sender") or ANONYMOUS_SENDER),
        "SentTimestamp": str(int(msg.sent_at * 1000)),
        "ApproximateReceiveCount": str(max(msg.receive_count, 1)),
        "ApproximateFirstReceiveTimestamp": str(int((msg.first_received_at or now) * 1000)),
        "SequenceNumber": msg.sequence_number if info.kind is QueueKind.FIFO else None,
        "MessageDeduplicationId": (stored.get("dd") or msg.dedup_id) if info.kind is QueueKind.FIFO else None,
        "MessageGroupId": msg.group_id,
        "AWSTraceHeader": ((stored.get("sa") or {}).get("AWSTraceHeader") or {}).get("StringValue"),
        "DeadLetterQueueSourceArn": (arn_of_store_name(stored["src"])
                                     if stored.get("src") and stored["src"] != info.name else None),
    }
    out["Attributes"] = {k: v for k, v in available.items() if v is not None and (every or k in system_names)}
    return out


def receive_message(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    limit = optional_int(p, "MaxNumberOfMessages", 1, checks.MAX_RECEIVE, "Must be between 1 and 10, if provided.")
    visibility = optional_int(p, "VisibilityTimeout", 0, checks.MAX_VISIBILITY,
                              "Must be >= 0 and <= 43200, if provided.")
    wait = optional_int(p, "WaitTimeSeconds", 0, checks.MAX_WAIT, "Must be >= 0 and <= 20, if provided.")
    system_names = set(string_list(p, "AttributeNames")) | set(string_list(p, "MessageSystemAttributeNames"))
    attribute_names = string_list(p, "MessageAttributeNames")
    attempt = checks.check_fifo_id("ReceiveRequestAttemptId", optional_str(p, "ReceiveRequestAttemptId"))
    info = env.queue(store_name)
    fifo = info.kind is QueueKind.FIFO
    if fifo and attempt is not None:
        cached = env.attempts.get(store_name, attempt, env.clock())
        if cached is not None:
            return {"Messages": cached} if cached else {}
    ttl = float(info.config.claim_ttl if visibility is None else visibility)
    # visibility 0: received (the receive count moves on) and visible again at once (the store's claim ttl 0)
    deliveries = env.poll(info, limit or 1, ttl, float(info.config.receive_wait if wait is None else wait))
    now = env.clock()
    messages = [_render_delivery(env, info, d, system_names, attribute_names, now) for d in deliveries]
    if fifo and attempt is not None and not (has_request_context() and parking.is_parked(request.environ)):
        env.attempts.put(store_name, attempt, messages, now)
    return {"Messages": messages} if messages else {}


def delete_message(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    info = env.queue(store_name)  # a missing queue is reported before the handle is looked at
    handle = required_str(p, "ReceiptHandle")
    try:
        receipt, _ = unwrap_receipt(store_name, handle)
    except ReceiptHandleIsInvalid:
        raise _not_a_handle(handle) from None
    if info.kind is QueueKind.FIFO and not _in_flight(env, info, receipt):
        # FIFO: a handle whose visibility ended no longer deletes (recorded from AWS)
        raise invalid_value("ReceiptHandle", handle, EXPIRED_HANDLE)
    # standard: the most recent handle deletes (even once visible again); an older one "succeeds but may
    # not delete"
    env.store.ack(info, [receipt])
    return {}


def _not_a_handle(handle: str) -> ReceiptHandleIsInvalid:
    """DeleteMessage(Batch)'s answer to a handle that is no receipt handle of the queue (recorded:
    test_delete_message_with_illegal_receipt_handle)."""
    return ReceiptHandleIsInvalid(f'The input receipt handle "{handle}" is not a valid receipt handle.')


def _in_flight(env: Env, queue: QueueRef, receipt: str) -> bool:
    """Whether the claim ``receipt`` names is still live."""
    return env.store.claimed_until(queue, [receipt])[0] is not None


def delete_message_batch(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    entries = checks.check_entries(p, "DeleteMessageBatchRequestEntry")
    env.queue(store_name)
    receipts: list[tuple[str, str]] = []
    failed: list[dict[str, Any]] = []
    for entry in entries:
        handle = entry.get("ReceiptHandle")
        try:
            receipt, _ = unwrap_receipt(store_name, required_str(entry, "ReceiptHandle"))
        except ReceiptHandleIsInvalid:
            failed.append(_failure(entry["Id"], _not_a_handle(str(handle))))
            continue
        except SqsError as exc:
            failed.append(_failure(entry["Id"], exc))
            continue
        receipts.append((entry["Id"], receipt))
    if receipts:
        env.store.ack(store_name, [r for _, r in receipts])
    return _batch_reply([{"Id": i} for i, _ in receipts], failed)


def _change_visibility(env: Env, store_name: str, entry: Mapping[str, Any]) -> None:
    handle = required_str(entry, "ReceiptHandle")
    if entry.get("VisibilityTimeout") is None:
        raise MissingParameter("VisibilityTimeout")
    timeout = optional_int(entry, "VisibilityTimeout", 0, checks.MAX_VISIBILITY,
                           "Must be >= 0 and <= 43200, if provided.")
    assert timeout is not None
    receipt, received_at = unwrap_receipt(store_name, handle)
    if env.clock() + timeout - received_at > checks.MAX_VISIBILITY:
        raise invalid_value("VisibilityTimeout", timeout,
                            "Total VisibilityTimeout for the message is beyond the limit [43200 seconds]")
    # the handle's own claim, else the message's current claim (received again since): AWS applies
    # any handle of the message while it is in flight
    message = message_id_of(receipt, store_name)
    if timeout == 0:  # only a message in flight is made visible: first the handle's claim, else the message's
        for ref, until in zip((receipt, message), env.store.claimed_until(store_name, [receipt, message]),
                              strict=True):
            if until is not None and env.store.release(store_name, [ref])[0]:
                return
        raise MessageNotInflight()
    # its visibility ended and nobody received it since: AWS hides it again for the new timeout
    # (recorded: test_extend_message_visibility_timeout_set_in_queue); a deleted message is refused
    if not (env.store.set_claim_ttl(store_name, [receipt], float(timeout))[0]
            or env.store.set_claim_ttl(store_name, [message], float(timeout))[0]):
        raise invalid_value("ReceiptHandle", handle, GONE_HANDLE)


def change_message_visibility(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    env.queue(store_name)
    _change_visibility(env, store_name, p)
    env.attempts.forget(store_name)
    return {}


def change_message_visibility_batch(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    env.queue(store_name)
    entries = checks.check_entries(p, "ChangeMessageVisibilityBatchRequestEntry")
    successful: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for entry in entries:
        try:
            _change_visibility(env, store_name, entry)
        except SqsError as exc:
            failed.append(_failure(entry["Id"], exc))
            continue
        successful.append({"Id": entry["Id"]})
    env.attempts.forget(store_name)
    return _batch_reply(successful, failed)
