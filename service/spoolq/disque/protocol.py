"""RESP, the Redis protocol Disque speaks: replies encoded here (requests are read by :mod:`.reader`).

A request is an array of bulk strings (``*2\\r\\n$4\\r\\nQLEN\\r\\n$1\\r\\nq\\r\\n``); clients
pipeline them freely. A stream that is not such requests, or breaks their limits, is a
:class:`~spoolq.disque.reader.ProtocolError`, which the server answers with
``-ERR Protocol error: ...`` and then closes the connection, as Redis and Disque do. Any other bad
request gets an error reply and the connection stays.

Replies are Python values encoded by :func:`encode`: ``bytes``/``str`` bulk strings, ``int``
integers, ``None`` the null bulk string, lists arrays, :class:`Status` simple strings,
:class:`Error` errors, :data:`NULL_ARRAY` the null array (``*-1``, GETJOB's timeout),
:class:`Map` a map and :class:`Verbatim` a verbatim text string.

A connection speaks RESP2 until ``HELLO 3`` and RESP3 after it (``HELLO 2`` goes back), as a Redis
server does; only the reply encoding changes. In RESP3 both nulls are ``_``, a :class:`Map` is a
``%`` map and a :class:`Verbatim` a ``=`` verbatim string; in RESP2 a map is the flat array of its
keys and values and a verbatim string a bulk string. Replies whose shape Disque defines (QSTAT, SHOW,
GETJOB, JSCAN ...) stay arrays in both, so a Disque client that pairs QSTAT's fields itself works
over either protocol; the replies Redis defines as maps (HELLO, CONFIG GET) are maps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


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


@dataclass(frozen=True)
class Map:
    """A map reply (RESP3 ``%``; in RESP2 the flat array of keys and values)."""

    items: Sequence[tuple[Any, Any]]


@dataclass(frozen=True)
class Verbatim:
    """Text for a person (RESP3 ``=`` with format ``txt``; in RESP2 a bulk string), as INFO replies."""

    text: bytes


def encode(value: Any, out: bytearray, resp3: bool = False) -> None:
    """Append the encoding of ``value`` to ``out``: RESP3 when ``resp3``, else RESP2."""
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
        out += b"_\r\n" if resp3 else b"$-1\r\n"
    elif isinstance(value, Status):
        out += b"+" + value.text.encode("utf-8", "replace") + b"\r\n"
    elif isinstance(value, Error):
        out += value.line()
    elif isinstance(value, _NullArray):
        out += b"_\r\n" if resp3 else b"*-1\r\n"
    elif isinstance(value, (list, tuple)):
        out += b"*%d\r\n" % len(value)
        for item in value:
            encode(item, out, resp3)
    elif isinstance(value, Map):
        out += (b"%%%d\r\n" % len(value.items)) if resp3 else (b"*%d\r\n" % (2 * len(value.items)))
        for key, item in value.items:
            encode(key, out, resp3)
            encode(item, out, resp3)
    elif isinstance(value, Verbatim):
        if resp3:
            out += b"=%d\r\ntxt:" % (len(value.text) + 4)
            out += value.text
            out += b"\r\n"
        else:
            encode(value.text, out)
    else:  # pragma: no cover - a bug in a command, not client input
        raise TypeError(f"cannot encode {type(value).__name__}")
