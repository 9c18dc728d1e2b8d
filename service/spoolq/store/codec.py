"""The message file codec: how a message and its metadata are one file, and what a reader makes of it.

Message file format (written once, never rewritten)::

    b"SPQ1" | u32 meta_len | u32 body_len | u32 crc32(meta + body) | meta (JSON, UTF-8) | body

A reader rejects a file whose magic, lengths or CRC do not match: that can only be a
write torn by a power failure, which was never acknowledged (see "what is flushed
when" below), so it is moved to ``<root>/corrupt/`` instead of being delivered.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from spoolq.store.layout import id_time_ms, sequence_number
from spoolq.store.model import Message

MAGIC = b"SPQ1"
_HEADER = struct.Struct(">4sIII")


class CorruptMessage(Exception):
    """A message file that fails its checksum (a torn, never-acknowledged write)."""


def encode_meta(meta: Mapping[str, Any]) -> bytes:
    """The meta part of a message file (TypeError or ValueError for what JSON cannot hold); also
    how a value inside it is encoded (``encode_meta(attributes)``: see :func:`meta_with_attributes`)."""
    sent = meta.get("t")
    if len(meta) == 1 and type(sent) is int:  # a plain message: the same bytes json.dumps makes, without it
        return plain_meta(sent)
    return json.dumps(meta, separators=(",", ":"), sort_keys=True).encode()


#: ``plain_meta(sent_ms)``, ``encode_meta({"t": sent_ms})``: the meta of a message with nothing but
#: its send time; a bound ``bytes.__mod__``, which a send calls per message as cheaply as the
#: expression itself
plain_meta: Callable[[int], bytes] = b'{"t":%d}'.__mod__


def meta_with_attributes(attributes_json: bytes, sent_ms: int) -> bytes:
    """``encode_meta({"a": attributes, "t": sent_ms})`` from ``attributes_json``, which is
    ``encode_meta(attributes)`` (a batch's messages that share one attributes object share its
    encoding): the meta of a message with a door's attributes and its send time."""
    return b'{"a":%s,"t":%d}' % (attributes_json, sent_ms)


def encode_message(meta: Mapping[str, Any], body: bytes, meta_bytes: bytes | None = None) -> bytes:
    """A whole message file; ``meta_bytes``: ``encode_meta(meta)`` when the caller has it already."""
    if meta_bytes is None:
        meta_bytes = encode_meta(meta)
    crc = zlib.crc32(body, zlib.crc32(meta_bytes))
    return _HEADER.pack(MAGIC, len(meta_bytes), len(body), crc) + meta_bytes + body


def message_of(mid: str, meta: Mapping[str, Any], body: bytes, rc: int, frt: int,
               claimed_until: float | None = None) -> Message:
    """The :class:`~spoolq.store.model.Message` of a decoded message file: id ``mid``, its metadata
    and body, its receive count and first receive (ms, 0: never), from its file's name."""
    sent = meta.get("t")
    if type(sent) is int and len(meta) == 1:  # a plain message (the common case): no optional field
        return Message(mid, body, sent / 1000, rc, frt / 1000 if frt else None, {}, None, None, None, claimed_until)
    return Message(mid, body, int(meta.get("t", id_time_ms(mid))) / 1000, rc, frt / 1000 if frt else None,
                   meta.get("a") or {}, meta.get("g"), meta.get("d"),
                   sequence_number(mid) if "g" in meta else None, claimed_until)


def decode_message(data: bytes) -> tuple[dict[str, Any], bytes]:
    if len(data) < _HEADER.size:
        raise CorruptMessage("short file")
    magic, meta_len, body_len, crc = _HEADER.unpack_from(data)
    if magic != MAGIC or _HEADER.size + meta_len + body_len != len(data):
        raise CorruptMessage("bad header")
    meta_bytes = data[_HEADER.size:_HEADER.size + meta_len]
    body = data[_HEADER.size + meta_len:]
    if zlib.crc32(body, zlib.crc32(meta_bytes)) != crc:
        raise CorruptMessage("checksum mismatch")
    if meta_bytes.startswith(b'{"t":') and meta_bytes.endswith(b"}") and meta_bytes[5:-1].isdigit():
        return {"t": int(meta_bytes[5:-1])}, body  # a plain message (see encode_message)
    meta = load_meta(meta_bytes)
    if not isinstance(meta, dict):
        raise CorruptMessage("bad meta")
    return meta, body


def load_meta(meta_bytes: bytes) -> Any:
    """``json.loads(meta_bytes)``, read by orjson where that gives the same value: meta orjson reads
    (strict JSON, no lone surrogate, no NaN) without a float anywhere (orjson reads an integer
    beyond 64 bits as a float where ``json`` keeps it an integer). Anything else, errors included,
    is read by ``json.loads``."""
    try:
        value = orjson.loads(meta_bytes)
    except orjson.JSONDecodeError:
        return json.loads(meta_bytes)
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
        elif kind is float:
            return json.loads(meta_bytes)
    return value
