"""Reading RESP requests under limits: every declared length is checked before anything is allocated.

A request is an array of bulk strings, ``*<n>\\r\\n`` then ``n`` times ``$<len>\\r\\n<bytes>\\r\\n``;
clients pipeline them freely. What a connection may send depends on whether it has authenticated
(``AUTH`` or ``HELLO ... AUTH`` with a configured key; every connection counts as authenticated
when no key is configured), as in Redis (``processMultibulkBuffer`` in its ``networking.c``):

=======================  ================================  =========================================
                          before AUTH                       after AUTH
=======================  ================================  =========================================
elements of a request     10                                1,048,576
bytes of one element      16,384                            the request limit
bytes of one request      163,945 (10 elements of 16 KiB)   ``--max-body-bytes`` + 64 KiB
=======================  ================================  =========================================

Each refusal is a :class:`ProtocolError` carrying Redis's words (``invalid multibulk length``,
``unauthenticated multibulk length``, ``invalid bulk length``, ``unauthenticated bulk length``,
``expected '$', got 'x'``, ``too big mbulk count string`` for a header line that never ends), which
the server answers once before it closes the connection. A request's declared element count and
each element's declared length are refused as soon as their header line has arrived, before
anything is buffered for them; an empty request (``*0``) is skipped, as Redis skips it. Unlike
Redis, inline commands (a line of text) and negative counts or lengths are protocol errors.

How. One grammar, two readers of it:

* :class:`Walker`, in Python, is the reference. It reads header by header, never allocates for a
  declared length (an element is sliced once all its bytes are there; a request's list grows as
  its elements arrive), and can stop at a request boundary or right after a given request.
* hiredis, in C, reads a chunk of small requests five times faster, but allocates for an
  array's declared length as soon as it parses the header: ``*2147483647`` alone costs it a
  16 GiB list that takes 5 s to free, on the event loop every other client waits on. So it only
  reads a chunk of an authenticated connection that starts at a request boundary and in which no
  header could cost it much: no array header of three or more digits (:data:`_BIG_ARRAY`), at
  most :data:`MAX_LINES_PER_CHUNK` lines, no line starting with another RESP type
  (:data:`_OTHER_TYPE_LINE`), no more bytes than one request may have. And what it read is kept
  only if the chunk was exactly whole requests of bulk strings: every element read as ``bytes``,
  the chunk holding as many CRLFs as those requests' headers and elements need (a payload holding
  a CRLF, a request still incomplete, anything hiredis accepts and the grammar does not, all break
  that count) and ending in one. Otherwise the walker reads the chunk again from its start, keeps
  what continues into the next chunk, and hands back to hiredis at the next boundary. A connection
  that has not authenticated is read by the walker alone: it sends little, and the walker can
  stop after its AUTH.

**Holding.** What the walker reads in one go is bounded: it stops after :data:`WALK_BATCH`
requests, and before AUTH right after an ``AUTH`` or ``HELLO`` request, and keeps the rest of the
chunk unread (:attr:`RequestReader.holding`) until the server has answered what it has and asks
for more (:meth:`RequestReader.release`, with the limits that apply by then). So a flood of
pipelined commands costs the loop one batch at a time, between the other connections' turns, and
a client that pipelines ``AUTH`` and a large command is read as Redis would read it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import hiredis

#: Redis's caps for a client that has not authenticated
UNAUTHENTICATED_ARGS = 10
UNAUTHENTICATED_BULK = 16_384
#: the cap on a request's elements (older Redis's: 1024 x 1024)
MAX_ARGS = 1_048_576
#: a header line (``*<n>`` or ``$<len>``) that has not ended after this many bytes is refused
MAX_HEADER_LINE = 32
#: a chunk with more lines than this is read by the walker (hiredis would allocate a list for each
#: array header among them before its requests could be checked)
MAX_LINES_PER_CHUNK = 4096
#: requests the walker reads before it stops and holds the rest of a chunk
WALK_BATCH = 64


class ProtocolError(Exception):
    """The byte stream is not RESP requests within the limits: answer once and close the connection."""


#: what a reader hands over: whole requests, and the protocol error that ends a stream
Parsed = Sequence[bytes] | ProtocolError


@dataclass(frozen=True)
class Limits:
    """What one request may declare and hold."""

    max_args: int
    max_bulk: int
    max_request: int
    authenticated: bool

    @classmethod
    def before_auth(cls) -> Limits:
        request = len(b"*10\r\n") + UNAUTHENTICATED_ARGS * (len(b"$16384\r\n") + UNAUTHENTICATED_BULK + 2)
        return cls(UNAUTHENTICATED_ARGS, UNAUTHENTICATED_BULK, request, authenticated=False)

    @classmethod
    def after_auth(cls, max_request: int) -> Limits:
        return cls(MAX_ARGS, max_request, max_request, authenticated=True)


#: an array header of three or more digits: hiredis would allocate a list that long
_BIG_ARRAY = re.compile(rb"\*[0-9]{3}")
#: the other RESP types hiredis reads as an element (``+``, ``=`` and ``(`` as bytes, the others as
#: sets, maps, pushes ...): a chunk with one of them after a CRLF is the walker's (a payload that
#: starts with one of these bytes is only read more slowly)
_OTHER_TYPES = b"%~>|+=("
_OTHER_TYPE_LINE = re.compile(rb"\r\n[%~>|+=(]")


class Walker:
    """The reference reader: incremental, exact, allocation bounded by the bytes received."""

    __slots__ = ("_args", "_have", "_left", "_need", "_parts", "_size", "limits")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        #: bytes received and not yet read, in the chunks they came in (joined once there are
        #: ``_need`` of them: a large element sent a byte at a time is copied once, not each time)
        self._parts: list[bytes] = []
        self._have = 0
        self._need = 0
        self._args: list[bytes] | None = None  # the request being read
        self._left = 0  # its elements still to come
        self._size = 0  # its bytes read so far

    @property
    def partial(self) -> bool:
        """Part of a request has been received."""
        return self._args is not None or self._have > 0

    def walk(self, data: bytes, out: list[Parsed], *, until_boundary: bool = False, batch: int = 0,
             auth_stops: bool = False) -> int:
        """Read ``data`` after what is buffered, appending each whole request to ``out``. Stops at the
        end of ``data``, or at the first request boundary (``until_boundary``), or after ``batch``
        requests, or right after an AUTH or HELLO request (``auth_stops``); returns how many bytes
        of ``data`` were read (the rest is the caller's)."""
        held = self._have
        buf = self._joined(data)
        if buf is None:  # still within an element's bytes
            return len(data)
        end = len(buf)
        need = 0
        pos = 0
        args, left, size = self._args, self._left, self._size
        find = buf.find
        early = False  # stopped at a boundary with bytes left for the caller
        while True:
            if args is None:
                if pos == end:
                    break
                if until_boundary and pos > 0:
                    early = True
                    break
                nl = find(b"\r\n", pos, pos + MAX_HEADER_LINE)
                if nl < 0:
                    if end - pos >= MAX_HEADER_LINE:
                        raise ProtocolError("too big mbulk count string")
                    break
                if buf[pos] != 42:  # "*"
                    raise ProtocolError(f"expected '*', got '{chr(buf[pos])}'")
                left = self._count(buf[pos + 1:nl])
                size = nl + 2 - pos
                pos = nl + 2
                if left == 0:
                    continue
                args = []
            pos, left, size, need = self._elements(buf, pos, args, left, size)
            if left:
                break
            out.append(args)
            batch -= 1
            if pos < end and (batch == 0 or (auth_stops and args_is_auth(args))):
                args = None
                early = True
                break
            args = None
        self._args, self._left, self._size = args, left, size
        return self._drop(pos, held) if early else self._keep(buf, pos, need, len(data))

    def _joined(self, data: bytes) -> bytes | None:
        """What is to be read now: ``data`` after the bytes held (None: not yet the ``_need`` of them)."""
        if not self._have:
            return data
        self._parts.append(data)
        self._have += len(data)
        if self._have < self._need:
            return None
        return b"".join(self._parts)

    def _elements(self, buf: bytes, pos: int, args: list[bytes], left: int,
                  size: int) -> tuple[int, int, int, int]:
        """Read up to ``left`` elements into ``args`` from ``pos``: the position after them, the
        elements still to come, the request's bytes read so far, and the bytes an incomplete element
        needs from its header on (0: none is incomplete, or its header line is)."""
        end = len(buf)
        find = buf.find
        max_request = self.limits.max_request
        while left:
            nl = find(b"\r\n", pos, pos + MAX_HEADER_LINE)
            if nl < 0:
                if end - pos >= MAX_HEADER_LINE:
                    raise ProtocolError("too big bulk count string")
                return pos, left, size, 0
            if buf[pos] != 36:  # "$"
                raise ProtocolError(f"expected '$', got '{chr(buf[pos])}'")
            length = self._length(buf[pos + 1:nl])
            start = nl + 2
            stop = start + length
            if size + (stop + 2 - pos) > max_request:
                raise ProtocolError("invalid bulk length (request over the size limit)")
            if stop + 2 > end:
                return pos, left, size, stop + 2 - pos
            if buf[stop:stop + 2] != b"\r\n":
                raise ProtocolError("expected CRLF after a bulk string")
            args.append(buf[start:stop])
            size += stop + 2 - pos
            pos = stop + 2
            left -= 1
        return pos, left, size, 0

    def _keep(self, buf: bytes, pos: int, need: int, read: int) -> int:
        """Read to the end: hold what ``buf`` has after ``pos`` (a request not yet whole)."""
        end = len(buf)
        self._parts = [buf[pos:]] if pos < end else []
        self._have, self._need = end - pos, need
        return read

    def _drop(self, pos: int, held: int) -> int:
        """Stopped at a request boundary: nothing is held; the caller keeps the rest of the data."""
        self._parts, self._have, self._need = [], 0, 0
        return pos - held

    def _count(self, digits: bytes) -> int:
        if not digits.isdigit() or (len(digits) > 1 and digits[0] == 48):
            raise ProtocolError("invalid multibulk length")
        count = int(digits)
        if count > self.limits.max_args:
            raise ProtocolError("invalid multibulk length" if self.limits.authenticated
                                else "unauthenticated multibulk length")
        return count

    def _length(self, digits: bytes) -> int:
        if not digits.isdigit() or (len(digits) > 1 and digits[0] == 48):
            raise ProtocolError("invalid bulk length")
        length = int(digits)
        if length > self.limits.max_bulk:
            raise ProtocolError("invalid bulk length" if self.limits.authenticated
                                else "unauthenticated bulk length")
        return length


def args_is_auth(request: Sequence[bytes]) -> bool:
    """Whether ``request`` may authenticate the connection (``AUTH``, ``HELLO``)."""
    return request[0].lower() in (b"auth", b"hello")


class RequestReader:
    """A connection's requests: :meth:`feed` a chunk received, get the whole requests in it."""

    __slots__ = ("_broken", "_held", "_hiredis", "_walker", "limits")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._walker = Walker(limits)
        self._hiredis: hiredis.Reader | None = None
        self._held = b""  # bytes not read yet (see Holding in the module docstring)
        self._broken = False  # a protocol error was answered: nothing more is read

    @property
    def partial(self) -> bool:
        """Part of a request has arrived and not the rest (the deadline of a request runs)."""
        return self._walker.partial and not self._broken

    @property
    def holding(self) -> bool:
        """Bytes are held unread until :meth:`release` is called."""
        return bool(self._held)

    def release(self, limits: Limits) -> list[Parsed]:
        """Read with ``limits`` from now on (the server answered what was read, an AUTH among it
        perhaps): returns what :meth:`feed` returns for the bytes held."""
        self.limits = limits
        self._walker.limits = limits
        held, self._held = self._held, b""
        return self.feed(held) if held else []

    def abandon(self) -> None:
        """Read nothing more and drop what is buffered (the connection is being closed)."""
        self._broken = True
        self._held = b""
        self._walker = Walker(self.limits)
        self._hiredis = None

    def feed(self, data: bytes) -> list[Parsed]:
        """The whole requests that ``data`` completes, in order, then the :class:`ProtocolError`
        that ends the stream if it breaks the grammar or the limits (nothing is read after it)."""
        out: list[Parsed] = []
        if self._broken:
            return out
        if self._held:
            self._held += data
            return out
        try:
            if not self.limits.authenticated:
                read = self._walker.walk(data, out, batch=WALK_BATCH, auth_stops=True)
            else:
                if self._walker.partial:
                    read = self._walker.walk(data, out, until_boundary=True)
                    if read == len(data):
                        return out
                    data = data[read:]
                read = len(data) if self._fast(data, out) else self._walker.walk(data, out, batch=WALK_BATCH)
            if read < len(data):
                self._held = data[read:]
        except ProtocolError as e:
            self._broken = True
            out.append(e)
        return out

    def _fast(self, data: bytes, out: list[Parsed]) -> bool:
        """Read ``data``, which starts at a request boundary, with hiredis, if that is safe and
        ``data`` is whole requests of bulk strings; False (nothing appended) otherwise."""
        lines = data.count(b"\r\n")  # no more arrays than lines, for hiredis to allocate
        if (data[0] != 42 or len(data) > self.limits.max_request or lines > MAX_LINES_PER_CHUNK
                or _BIG_ARRAY.search(data) is not None
                or (len(data.translate(None, _OTHER_TYPES)) != len(data) and _OTHER_TYPE_LINE.search(data))):
            return False
        reader = self._hiredis
        if reader is None:
            reader = self._hiredis = hiredis.Reader()
        got: list[Sequence[bytes]] = []
        crlfs = 0
        whole = True
        try:
            reader.feed(data)
            while (req := reader.gets()) is not False:
                if type(req) is not list:
                    whole = False
                    break
                for arg in req:  # a loop: a third of all()'s instructions over a generator
                    if type(arg) is not bytes:
                        whole = False
                        break
                if not whole:
                    break
                crlfs += 1 + 2 * len(req)
                if req:
                    got.append(req)
        except hiredis.ProtocolError:
            whole = False
        if whole and crlfs == lines and data.endswith(b"\r\n"):
            out.extend(got)
            return True
        self._hiredis = None  # in the middle of something: the walker reads the chunk again
        return False
