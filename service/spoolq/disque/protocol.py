"""RESP2, the Redis protocol Disque speaks: requests parsed by hiredis, replies encoded here.

A request is an array of bulk strings (``*2\\r\\n$4\\r\\nQLEN\\r\\n$1\\r\\nq\\r\\n``); clients
pipeline them freely. Parsing is hiredis's reader (the C parser every Redis client trusts);
this module only bounds it: a request still incomplete after ``max_request`` buffered bytes,
a reply type other than an array of bulk strings, or anything hiredis calls a protocol error
(bad lengths, nesting deeper than it allows, binary garbage) is a :class:`ProtocolError`,
which the server answers with ``-ERR Protocol error: ...`` and then closes the connection,
as Redis and Disque do. Any other bad request gets an error reply and the connection stays.

Replies are Python values encoded by :func:`encode`: ``bytes``/``str`` bulk strings, ``int``
integers, ``None`` the null bulk string, lists arrays, :class:`Status` simple strings,
:class:`Error` errors, :data:`NULL_ARRAY` the null array (``*-1``, GETJOB's timeout).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import hiredis


class ProtocolError(Exception):
    """The byte stream is not RESP requests: answer once and close the connection."""


@dataclass(frozen=True)
class Status:
    text: str


class Error(Exception):
    """An error reply: ``-<code> <message>``. ``code`` is ERR, BADID, NOJOB, PAUSED, NOREPL, ..."""

    def __init__(self, message: str, code: str = "ERR") -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def line(self) -> bytes:
        text = f"{self.code} {self.message}".replace("\r", " ").replace("\n", " ")
        return b"-" + text.encode("utf-8", "replace") + b"\r\n"


class _NullArray:
    pass


NULL_ARRAY = _NullArray()
OK = Status("OK")


def encode(value: Any, out: bytearray) -> None:
    if isinstance(value, (bytes, bytearray, memoryview)):
        out += b"$%d\r\n" % len(value)
        out += value
        out += b"\r\n"
    elif isinstance(value, str):
        data = value.encode("utf-8")
        out += b"$%d\r\n%s\r\n" % (len(data), data)
    elif isinstance(value, bool):
        out += b":1\r\n" if value else b":0\r\n"
    elif isinstance(value, int):
        out += b":%d\r\n" % value
    elif value is None:
        out += b"$-1\r\n"
    elif isinstance(value, Status):
        out += b"+" + value.text.encode("utf-8", "replace") + b"\r\n"
    elif isinstance(value, Error):
        out += value.line()
    elif isinstance(value, _NullArray):
        out += b"*-1\r\n"
    elif isinstance(value, (list, tuple)):
        out += b"*%d\r\n" % len(value)
        for item in value:
            encode(item, out)
    else:  # pragma: no cover - a bug in a command, not client input
        raise TypeError(f"cannot encode {type(value).__name__}")


class RequestReader:
    """Incremental request parser: ``feed`` bytes, then take requests until ``next`` is None."""

    def __init__(self, max_request: int) -> None:
        self._reader = hiredis.Reader()
        self._max = max_request
        self._pending = 0  # bytes fed since the last complete request

    def feed(self, data: bytes) -> None:
        self._pending += len(data)
        try:
            self._reader.feed(data)
        except hiredis.ProtocolError as e:
            raise ProtocolError(str(e)) from None

    def next(self) -> Sequence[bytes] | None:
        try:
            req = self._reader.gets()
        except hiredis.ProtocolError as e:
            raise ProtocolError(str(e)) from None
        if req is False:
            if self._pending > self._max:
                raise ProtocolError("invalid bulk length (request over the size limit)")
            return None
        self._pending = self._reader.len()
        if not isinstance(req, list) or not all(isinstance(a, bytes) for a in req):
            raise ProtocolError("expected an array of bulk strings")
        return req
