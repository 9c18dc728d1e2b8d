"""MD5 digests SQS clients check (Java, Go, JS, .NET, Ruby SDKs; botocore does not).

* ``MD5OfMessageBody`` / ``MD5OfBody``: lower-case hex MD5 of the UTF-8 body.
* ``MD5OfMessageAttributes`` / ``MD5OfMessageSystemAttributes``: attributes sorted
  by name; for each, 4-byte big-endian length + UTF-8 name, 4-byte length + data
  type, one transport byte (``1`` for String/Number and their ``.label`` custom
  types, ``2`` for Binary), then 4-byte length + value bytes (UTF-8 of
  ``StringValue`` or the raw bytes of ``BinaryValue``); MD5 of the concatenation.

Attributes are given in their JSON wire form: ``{"DataType": ..., "StringValue": ...}``
or ``{"DataType": ..., "BinaryValue": <base64 text>}``.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Mapping

STRING_TRANSPORT = 1
BINARY_TRANSPORT = 2


def md5_of_body(body: str) -> str:
    return md5_of_bytes(body.encode("utf-8"))


def md5_of_bytes(raw: bytes) -> str:
    """``md5_of_body`` of a body already encoded as UTF-8."""
    return hashlib.md5(raw, usedforsecurity=False).hexdigest()


def _with_length(value: bytes) -> bytes:
    return struct.pack("!I", len(value)) + value


def attribute_value_bytes(value: Mapping[str, str]) -> tuple[int, bytes]:
    """The transport byte and value bytes of one attribute in wire form."""
    if "BinaryValue" in value:
        return BINARY_TRANSPORT, base64.b64decode(value["BinaryValue"])
    return STRING_TRANSPORT, value.get("StringValue", "").encode("utf-8")


def md5_of_attributes(attributes: Mapping[str, Mapping[str, str]]) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    for name in sorted(attributes):
        value = attributes[name]
        transport, raw = attribute_value_bytes(value)
        digest.update(_with_length(name.encode("utf-8")))
        digest.update(_with_length(value["DataType"].encode("utf-8")))
        digest.update(bytes([transport]))
        digest.update(_with_length(raw))
    return digest.hexdigest()
