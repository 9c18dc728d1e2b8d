"""The message rules: every message a send is given is checked here, once, before anything is stored.

:func:`check` decides a message's rules against its queue (the only place they are decided: each
refusal a :class:`~spoolq.errors.MessageRefused` naming its :class:`~spoolq.errors.MessageRule`
and limit, in the order SQS applies them: its size, with the bytes a door's own metadata counts;
its group and deduplication ids; what its queue's kind needs; its delay, time to live and receive
limit) and makes what a send writes of it: its file's metadata, encoded (:mod:`spoolq.store.codec`),
and when it is due. A message with no option of its own is checked by a shortcut that makes the same
metadata, bytes and due time as the full check. :func:`check_all` checks a batch: the first refusal
raised, or (a send where each message fails alone) each refusal in its message's place.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from spoolq.errors import (
    InvalidArgument,
    MessageRefused,
    MessageRule,
    MessageTooLarge,
    QueueKindMismatch,
)
from spoolq.store.codec import encode_meta, meta_with_attributes, plain_meta
from spoolq.store.model import (
    MAX_BATCH,
    MAX_DELAY,
    MESSAGE_KEY_RE,
    OutgoingMessage,
    QueueInfo,
    QueueKind,
)
from spoolq.store.queue_config import check_int, check_number


class Prepared(NamedTuple):  # a tuple: made once per message sent, cheaper than a frozen dataclass
    message: OutgoingMessage
    meta: dict[str, Any]
    due_ms: int  # 0 = ready now
    meta_bytes: bytes  # encode_meta(meta): encoded once, when the message is checked


_KEY_RULE = "must be 1 to 128 printable ASCII characters without spaces"


class Encoded:
    """What the messages of one batch share, encoded once (they are all checked at one ``now_ms``):
    the metadata of a plain message (its send time alone), and for each attributes object met, by
    identity (the batch keeps them alive), its JSON and the metadata of a message that has it and
    nothing more (a door that gives every message of a batch the same attributes object has them
    encoded once, not once per message)."""

    __slots__ = ("attributes_json", "now_ms", "plain", "with_attributes")

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self.plain = plain_meta(now_ms)
        #: id(attributes) -> encode_meta(attributes)
        self.attributes_json: dict[int, bytes] = {}
        #: id(attributes) -> encode_meta({"a": attributes, "t": now_ms})
        self.with_attributes: dict[int, bytes] = {}


def check(info: QueueInfo, m: OutgoingMessage, now_ms: int, encoded: Encoded | None = None,
          kind_checked: bool = False) -> Prepared:
    """Check ``m`` against the queue ``info`` describes (the only place a message's rules are decided:
    :class:`~spoolq.errors.MessageRule`, in the order SQS applies them); its file's metadata and due
    time. ``kind_checked``: the FIFO presence rules were checked for the whole batch already;
    ``encoded``: what the batch's messages share (see :class:`Encoded`), kept by the caller."""
    if (type(m) is OutgoingMessage and type(m.body) is bytes and m.delay is None and m.ttl is None
            and m.max_receives is None and not m.at_most_once and m.group_id is None and m.dedup_id is None
            and info.kind is not QueueKind.FIFO):
        # no option of its own (the common case): only its size to check, and its metadata its send
        # time and a door's attributes (an SQS message), encoded as the full check encodes them
        config = info.config
        attributes, extra = m.attributes, m.extra_bytes
        if not attributes and not extra:
            if len(m.body) > config.max_message_bytes:
                raise MessageTooLarge(len(m.body), config.max_message_bytes)
            delay = config.delay
            return Prepared(m, {"t": now_ms}, now_ms + int(delay * 1000) if delay > 0 else 0,
                            encoded.plain if encoded is not None else plain_meta(now_ms))
        if type(attributes) is dict and type(extra) is int and extra >= 0:
            if len(m.body) + extra > config.max_message_bytes:
                raise MessageTooLarge(len(m.body) + extra, config.max_message_bytes)
            delay = config.delay
            meta_bytes = encoded.with_attributes.get(id(attributes)) if encoded is not None else None
            if meta_bytes is None:
                meta_bytes = meta_with_attributes(_attributes_json(attributes, attributes, encoded), now_ms)
                if encoded is not None:
                    encoded.with_attributes[id(attributes)] = meta_bytes
            return Prepared(m, {"a": attributes, "t": now_ms}, now_ms + int(delay * 1000) if delay > 0 else 0,
                            meta_bytes)
    return _check_every_rule(info, m, now_ms, encoded, kind_checked)


def _check_every_rule(info: QueueInfo, m: OutgoingMessage, now_ms: int, encoded: Encoded | None,
                      kind_checked: bool) -> Prepared:
    """:func:`check` of a message with options of its own (or of a FIFO queue): every rule."""
    config = info.config
    if not isinstance(m, OutgoingMessage):
        raise InvalidArgument("each message must be an OutgoingMessage")
    if not isinstance(m.body, (bytes, bytearray)):
        raise InvalidArgument("message body must be bytes")
    extra = m.extra_bytes
    if type(extra) is not int or extra < 0:
        raise InvalidArgument("extra_bytes must be an integer >= 0")
    if len(m.body) + extra > config.max_message_bytes:
        raise MessageTooLarge(len(m.body) + extra, config.max_message_bytes)
    group, dedup = m.group_id, m.dedup_id
    if group is not None and (type(group) is not str or not MESSAGE_KEY_RE.match(group)):
        raise MessageRefused(MessageRule.GROUP_ID, f"group_id {_KEY_RULE}", 128, group)
    if dedup is not None and (type(dedup) is not str or not MESSAGE_KEY_RE.match(dedup)):
        raise MessageRefused(MessageRule.DEDUP_ID, f"dedup_id {_KEY_RULE}", 128, dedup)
    fifo = info.kind is QueueKind.FIFO
    if fifo and not kind_checked:
        check_fifo_keys(info, (m,))
    if dedup is not None and not fifo:
        raise QueueKindMismatch(MessageRule.DEDUP_ID_NOT_FIFO, "a deduplication id is for FIFO queues only",
                                value=dedup)
    delay = config.delay if m.delay is None else check_number("delay", m.delay, 0, MAX_DELAY)
    meta = _meta(m, now_ms, fifo)
    if len(meta) == 2 and "a" in meta:  # {"a": ..., "t": ...}: its attributes encoded once a batch
        meta_bytes = meta_with_attributes(_attributes_json(m.attributes, meta["a"], encoded), now_ms)
    else:
        try:  # only attributes can fail: everything else in meta is a number or a checked string
            meta_bytes = encode_meta(meta)
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"attributes must be JSON-serialisable: {e}") from None
    return Prepared(m, meta, now_ms + int(delay * 1000) if delay > 0 else 0, meta_bytes)


def _meta(m: OutgoingMessage, now_ms: int, fifo: bool) -> dict[str, Any]:
    """The metadata of a message file for ``m`` (its group and deduplication ids checked already)."""
    meta: dict[str, Any] = {"t": now_ms}
    if m.ttl is not None:
        meta["x"] = now_ms + int(check_number("ttl", m.ttl, 0.001, 10 * 365 * 86400) * 1000)
    if m.max_receives is not None:
        meta["m"] = check_int("max_receives", m.max_receives, 1, 1_000_000)
    if m.at_most_once:
        meta["o"] = 1
    if m.group_id is not None:
        meta["g"] = m.group_id
    if m.dedup_id is not None:
        meta["d"] = m.dedup_id
    elif fifo:  # content-based deduplication (checked above): the body's digest is the id
        meta["d"] = hashlib.sha256(m.body).hexdigest()
    if m.attributes:
        if not isinstance(m.attributes, Mapping):
            raise InvalidArgument("attributes must be a mapping")
        meta["a"] = dict(m.attributes)
    return meta


def _attributes_json(given: object, attributes: Mapping[str, Any], encoded: Encoded | None) -> bytes:
    """``encode_meta(attributes)``, kept in ``encoded`` by the identity of the object the message was
    ``given`` (see :class:`Encoded`); InvalidArgument for what JSON cannot hold."""
    done = encoded.attributes_json.get(id(given)) if encoded is not None else None
    if done is None:
        try:
            done = encode_meta(attributes)
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"attributes must be JSON-serialisable: {e}") from None
        if encoded is not None:
            encoded.attributes_json[id(given)] = done
    return done


def check_batch(messages: Sequence[OutgoingMessage]) -> None:
    """A batch is a sequence (not a string) of at most :data:`MAX_BATCH` messages (a list or a
    tuple of at most that many needs no call)."""
    if type(messages) is not tuple and type(messages) is not list and (
            isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence)):
        raise InvalidArgument("messages must be a sequence")
    if len(messages) > MAX_BATCH:
        raise InvalidArgument(f"a batch holds at most {MAX_BATCH} messages, got {len(messages)}")


def check_fifo_keys(info: QueueInfo, messages: Sequence[OutgoingMessage]) -> None:
    """A FIFO queue's presence rules over ``messages``: every one has a group id (first), and a
    deduplication id unless the queue deduplicates by content."""
    for m in messages:
        if isinstance(m, OutgoingMessage) and m.group_id is None:
            raise QueueKindMismatch(MessageRule.GROUP_ID_MISSING, "a message for a FIFO queue needs a group id")
    if info.config.content_based_dedup:
        return
    for m in messages:
        if isinstance(m, OutgoingMessage) and m.dedup_id is None:
            raise QueueKindMismatch(
                MessageRule.DEDUP_ID_MISSING,
                "a message for a FIFO queue needs a deduplication id unless content-based deduplication is on")


def check_all(info: QueueInfo, messages: Sequence[OutgoingMessage], now_ms: int,
               each: bool) -> list[Prepared | MessageRefused]:
    """Every message checked against ``info`` (:func:`check`). Without ``each`` the first refusal
    is raised; with it a :class:`MessageRefused` stands in its message's place, but a FIFO queue's
    missing id refuses the whole batch all the same (its caller does not know the queue's kind)."""
    # the messages stay referenced: their attributes' ids are not reused (one message shares nothing)
    encoded = Encoded(now_ms) if len(messages) > 1 else None
    if not each:
        return [check(info, m, now_ms, encoded) for m in messages]
    if info.kind is QueueKind.FIFO:
        check_fifo_keys(info, messages)
    out: list[Prepared | MessageRefused] = []
    for m in messages:
        try:
            out.append(check(info, m, now_ms, encoded, kind_checked=True))
        except MessageRefused as refused:
            out.append(refused)
    return out
