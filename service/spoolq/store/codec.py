"""The message file codec: how a message and its metadata are one file.

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
from collections.abc import Mapping
from typing import Any

MAGIC = b"SPQ1"
_HEADER = struct.Struct(">4sIII")


class CorruptMessage(Exception):
    """A message file that fails its checksum (a torn, never-acknowledged write)."""


def encode_meta(meta: Mapping[str, Any]) -> bytes:
    """The meta part of a message file (TypeError or ValueError for what JSON cannot hold)."""
    sent = meta.get("t")
    if len(meta) == 1 and type(sent) is int:  # a plain message: the same bytes json.dumps makes, without it
        return b'{"t":%d}' % sent
    return json.dumps(meta, separators=(",", ":"), sort_keys=True).encode()


def encode_message(meta: Mapping[str, Any], body: bytes, meta_bytes: bytes | None = None) -> bytes:
    """A whole message file; ``meta_bytes``: ``encode_meta(meta)`` when the caller has it already."""
    if meta_bytes is None:
        meta_bytes = encode_meta(meta)
    crc = zlib.crc32(body, zlib.crc32(meta_bytes))
    return _HEADER.pack(MAGIC, len(meta_bytes), len(body), crc) + meta_bytes + body


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
    meta = json.loads(meta_bytes)
    if not isinstance(meta, dict):
        raise CorruptMessage("bad meta")
    return meta, body
