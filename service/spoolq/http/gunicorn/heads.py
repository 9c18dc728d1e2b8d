"""Connections that cost nothing until they speak: requests read by the worker's event loop.

A gthread worker (:mod:`spoolq.http.gunicorn.worker`) hands a connection to a thread only once the
connection's request head is complete, and its body too when the head declares its length. Until
then the worker's main loop (its selector) owns it, in :class:`HeadReader`:

* **a new connection** is accepted on the main loop and registered with the selector; what the
  client sends is read there, without blocking, into the connection's buffer, until the head ends
  (``CRLF CRLF``; a bare ``LF``, which gunicorn's parser refuses, ends it too, so the refusal comes at
  once). A body whose length the head declares (``Content-Length``, up to ``max_body_bytes``) is
  read the same way, with the same time again from the end of the head. Then the worker's thread
  pool takes the connection: the parser reads the head and the body from the buffer. A client
  that never sends, or sends its head or its body a byte at a time, holds what it sent and a file
  descriptor, no thread. A chunked body, a body the client sends only after ``100 Continue``, and
  one over ``max_body_bytes`` (answered 413 before it is read) are read by the thread;
* **a kept-alive connection** (gthread keeps it in the selector between requests, up to
  ``keepalive`` seconds) comes back here when its next request starts to arrive, and is read the
  same way;
* **the deadline** (``header_timeout``, as nginx's ``client_header_timeout``): the whole head must
  arrive within it, counted from the connection's accept (a new one) or from the first byte of the
  next request (a kept-alive one); a body's, from the end of its head. Every 16 KiB that arrived
  extends it by one second, so that a long request line (an SQS ``SendMessage`` by GET, up to
  4 MiB) or a large body arriving at 16 KiB/s or faster is never cut off, while one dribbled a
  byte at a time is. At the deadline a connection that sent nothing is closed silently
  (``stage="idle"`` in the metrics); one with part of a head (``"head"``) or of a body
  (``"body"``) gets ``408 Request Timeout`` (JSON, or SQS's error format on an SQS path) and is
  closed;
* **TLS** (a port with a certificate): the first byte is looked at (a clear-text request gets a
  ``400`` in clear text, as :mod:`spoolq.access.tls` promises), then the handshake runs here, without
  blocking, within :data:`~spoolq.access.tls.HANDSHAKE_SECONDS` (``"handshake"`` when it does not); the
  head is then read as above, under its own deadline;
* **a lingering close** (RFC 9112 section 9.6: the answer is sent, the write side shut, and what
  the client still sends is read and dropped until it closes, so that unread bytes do not turn
  the close into a reset that cuts the answer off) runs here too, at most
  :data:`LINGER_SECONDS` and :data:`LINGER_DRAIN` bytes; gthread lingers on its main thread,
  blocking every other connection of the worker meanwhile.

A head longer than gunicorn takes (a request line over 4 MiB, a header section over its bound)
is answered here as gunicorn would (414, 431) and closed, without waiting for its end.

Memory: a request being read is held whole (gunicorn's parser needs the head; the body is read
whole by the app anyway); past :data:`BUFFERED_LIMIT` bytes
of requests being read in one worker, the connection that would add more is answered ``503`` and
closed.

Every method runs on the worker's main thread.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import itertools
import logging
import re
import resource
import selectors
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gunicorn import http as gunicorn_http
from gunicorn import sock as gunicorn_sock
from gunicorn.workers.gthread import TConn

from spoolq.access.tls import HANDSHAKE_SECONDS
from spoolq.http.gunicorn import request_line
from spoolq.settings.server import Settings, connections_within, load_settings

log = logging.getLogger("spoolq.http")

#: the bytes of requests being read one worker holds at most (see the module doc)
BUFFERED_LIMIT = 64 << 20
#: every this many bytes of a head or body extend its deadline by a second
GRACE_BYTES = 16 << 10
LINGER_SECONDS = 2.0
LINGER_DRAIN = 64 << 10
#: the first byte of a TLS connection (a handshake record); an HTTP request starts with a letter
TLS_HANDSHAKE_RECORD = b"\x16"
_CHUNK = 64 << 10

_CHECK, _HANDSHAKE, _READING, _BODY, _LINGER, _DONE = range(6)
#: the stage each state times out in (``spoolq_http_connections_timed_out_total{stage}``)
_STAGES = {_CHECK: "idle", _HANDSHAKE: "handshake", _READING: "head", _BODY: "body"}
#: a declared body's length, in a head in lower case
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*([0-9]{1,12})[ \t]*\r\n")


class Connection(TConn):  # type: ignore[misc]
    """gthread's connection; a graceful close lingers in the loop, not on the main thread."""

    def __init__(self, cfg: Any, sock: Any, client: Any, server: Any, heads: HeadReader) -> None:
        super().__init__(cfg, sock, client, server)
        self.heads = heads
        #: the head of the next request is whole in the parser's buffer (a thread may take it)
        self.head_ready = False

    def close(self, graceful: bool = False) -> None:
        if graceful:
            self.heads.linger(self.sock)
        else:
            super().close()


@dataclass(eq=False)
class _Wait:
    """One connection the loop owns: its state, what arrived, since when."""

    conn: Any  # a Connection, or a bare socket while it lingers
    state: int
    started: float
    buf: bytearray
    searched: int = 0
    registered: int = 0  # the selector events it is registered for (0: none)
    drained: int = 0
    whole: int = 0  # reading a body: the bytes of head and body together
    line_end: int = -1  # where the request line ends, once seen
    tracked: bool = False  # counted and given a deadline (not while its first read may finish it)


def _head_end(buf: bytearray, start: int) -> int:
    """Where the head in ``buf`` ends (just past its ``CRLF CRLF``), looking from ``start`` (where
    the last look ended); ``-1``: not yet; ``0``: it has a bare LF, which the parser refuses."""
    end = buf.find(b"\r\n\r\n", max(0, start - 3))
    if end >= 0:
        return end + 4
    at = buf.find(b"\n", start)
    while at >= 0:
        if at == 0 or buf[at - 1] != 0x0D:
            return 0
        at = buf.find(b"\n", at + 1)
    return -1


def body_to_read(head: bytes, limit: int) -> int:
    """The bytes of body the loop reads after ``head`` (0: none, or the thread reads it): the one
    ``Content-Length`` up to ``limit``, unless the body is chunked or waits for ``100 Continue``."""
    lower = head.lower()
    if b"\r\ntransfer-encoding:" in lower or b"\r\nexpect:" in lower:
        return 0
    found = _CONTENT_LENGTH.findall(lower)
    if len(found) != 1:
        return 0  # none, or several: the parser decides
    length = int(found[0])
    return length if length <= limit else 0


def answer(status: int, reason: str, message: str, head: bytes | None = None, retry_after: int = 0) -> bytes:
    """A whole ``Connection: close`` answer, in the format of the door ``head`` names."""
    content_type, body = request_line.error_answer(status, reason, message, head)
    extra = f"Retry-After: {retry_after}\r\n" if retry_after else ""
    return (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: {content_type}\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1") + body


def _send_now(sock: Any, data: bytes) -> None:
    """Send what the socket takes without waiting (an answer of a few hundred bytes: all of it)."""
    with contextlib.suppress(OSError):
        sock.setblocking(False)
        sock.send(data)


class HeadReader:
    """The connections a worker's main loop owns until their request has arrived (see the module
    doc). ``ready(conn)`` hands a connection with a whole request to a thread; ``closed()``
    is called for each connection closed here (the worker's count of open connections);
    ``timed_out(stage)`` and ``refused(reason)`` count for the metrics."""

    def __init__(self, cfg: Any, poller: selectors.BaseSelector, header_timeout: float, max_body: int,
                 ready: Callable[[Any], None], closed: Callable[[], None],
                 timed_out: Callable[[str], None], refused: Callable[[str], None]) -> None:
        self.cfg, self.poller, self.header_timeout, self.max_body = cfg, poller, header_timeout, max_body
        self._ready, self._closed, self._timed_out, self._refused = ready, closed, timed_out, refused
        self._waits: dict[int, _Wait] = {}  # id(conn or socket) -> its wait
        self._timers: list[tuple[float, int, _Wait, int]] = []  # (deadline, seq, wait, state then)
        self._seq = itertools.count()
        self._buffered = 0
        self.reading = 0  # connections whose request (or handshake) is being read
        self.lingering = 0  # closing connections (not counted by the worker any more)
        self.stopping = False

    # ------------------------------------------------------------------ taking a connection

    def take(self, conn: Connection, *, fresh: bool = False, buffered: bytes = b"") -> None:
        """Own ``conn`` until its next request has arrived (``buffered``: what the parser already
        read of it). A new TLS connection is first checked and shaken hands with."""
        now = time.monotonic()
        conn.head_ready = False
        if fresh and self.cfg.is_ssl:
            w = _Wait(conn, _CHECK, now, bytearray())
            self._add(w, now + HANDSHAKE_SECONDS)
            self._want(w, selectors.EVENT_READ)
            return
        w = _Wait(conn, _READING, now, bytearray(buffered))
        self._buffered += len(buffered)
        if buffered and self._arrived(w, _head_end(w.buf, 0)):
            self._complete(w)
            return
        if w.state == _DONE:  # refused
            return
        w.searched = len(w.buf)
        self._read(w)

    def _arrived(self, w: _Wait, head_end: int) -> bool:
        """Whether ``w``'s request is whole (its head, and its declared body): what a thread needs;
        a head just whole with a body to come starts the body's wait."""
        if w.state == _BODY:
            return len(w.buf) >= w.whole
        if head_end < 0:
            refusal = self._too_long(w)
            if refusal is not None:
                self._refuse_request(w, *refusal)
            return False
        if head_end == 0:
            return True
        body = body_to_read(bytes(w.buf[:head_end]), self.max_body)
        if len(w.buf) >= head_end + body:
            return True
        w.state, w.started, w.whole = _BODY, time.monotonic(), head_end + body
        if w.tracked:
            heapq.heappush(self._timers, (w.started + self.header_timeout, next(self._seq), w, _BODY))
        return False

    def _add(self, w: _Wait, deadline: float) -> None:
        """Count ``w`` and give it its deadline: once a request does not arrive at its first read (a
        request read whole at once costs neither)."""
        if id(w.conn) not in self._waits and w.state != _LINGER:
            self.reading += 1
        self._waits[id(w.conn)] = w
        w.tracked = True
        heapq.heappush(self._timers, (deadline, next(self._seq), w, w.state))

    def _want(self, w: _Wait, events: int) -> None:
        sock = w.conn if w.state == _LINGER else w.conn.sock
        try:
            if w.registered == 0:
                self.poller.register(sock, events, lambda _s: self._on_event(w))
            elif w.registered != events:
                self.poller.modify(sock, events, lambda _s: self._on_event(w))
            w.registered = events
        except (OSError, ValueError, KeyError):
            self._close(w)

    def _forget(self, w: _Wait) -> None:
        """Stop owning ``w``'s connection (the caller closes it or hands it on)."""
        if w.registered:
            sock = w.conn if w.state == _LINGER else w.conn.sock
            with contextlib.suppress(OSError, ValueError, KeyError):
                self.poller.unregister(sock)
            w.registered = 0
        if self._waits.get(id(w.conn)) is w:
            del self._waits[id(w.conn)]
            if w.state == _LINGER:
                self.lingering -= 1
            else:
                self.reading -= 1
        self._buffered -= len(w.buf)
        w.buf = bytearray()
        w.state = _DONE

    def _close(self, w: _Wait) -> None:
        lingering = w.state == _LINGER
        self._forget(w)
        with contextlib.suppress(OSError):
            (w.conn if lingering else w.conn.sock).close()
        if not lingering:
            self._closed()

    # ------------------------------------------------------------------ events

    def _on_event(self, w: _Wait) -> None:
        if w.state in (_READING, _BODY):
            self._read(w)
        elif w.state == _CHECK:
            self._check_tls(w)
        elif w.state == _HANDSHAKE:
            self._handshake(w)
        elif w.state == _LINGER:
            self._drain(w)

    def _read(self, w: _Wait) -> None:
        sock = w.conn.sock
        tls = isinstance(sock, ssl.SSLSocket)
        while True:
            try:
                data = sock.recv(_CHUNK)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except OSError:
                self._close(w)
                return
            if not data:
                if w.state == _BODY:  # a body shorter than its length: the app answers 400 (a half close)
                    self._complete(w)
                else:  # the client closed (between requests, or with part of a head)
                    self._close(w)
                return
            w.buf += data
            self._buffered += len(data)
            if self._arrived(w, -1 if w.state == _BODY else _head_end(w.buf, w.searched)):
                self._complete(w)
                return
            if w.state == _DONE:  # refused
                return
            w.searched = len(w.buf)
            if len(data) < _CHUNK and not (tls and sock.pending()):
                break
        if self._buffered > BUFFERED_LIMIT:
            self._refuse_head(w)
            return
        if not w.tracked:
            self._add(w, w.started + self.header_timeout)
        self._want(w, selectors.EVENT_READ)

    def _too_long(self, w: _Wait) -> tuple[int, str, str] | None:
        """gunicorn's refusal of a head already longer than it takes (status, reason, message): a
        request line over :data:`~spoolq.http.gunicorn.request_line.MAX_REQUEST_LINE` (414), or a header
        section over its bound (431); None while it may still end in time."""
        buf = w.buf
        if w.line_end < 0:
            at = buf.find(b"\r\n", max(0, w.searched - 1))
            if at < 0:
                if len(buf) - 2 <= request_line.MAX_REQUEST_LINE:
                    return None
                return 414, "URI Too Long", f"Request Line is too large ({len(buf)} > {request_line.MAX_REQUEST_LINE})"
            w.line_end = at
        fields, field_size = self.cfg.limit_request_fields, self.cfg.limit_request_field_size
        headers = (fields if 0 < fields <= 32768 else 32768) * ((field_size if field_size > 0 else 8190) + 2) + 4
        if len(buf) - w.line_end - 2 <= headers:
            return None
        return 431, "Request Header Fields Too Large", "Error parsing headers: 'max buffer headers'"

    def _refuse_request(self, w: _Wait, status: int, reason: str, message: str) -> None:
        """Answer a request the loop refuses before any thread sees it, and close."""
        sock, head = w.conn.sock, bytes(w.buf[:512])
        self._forget(w)
        self._closed()
        _send_now(sock, answer(status, reason, message, head))
        self.linger(sock)

    def _complete(self, w: _Wait) -> None:
        conn, head = w.conn, bytes(w.buf)
        self._forget(w)
        if conn.parser is None:
            conn.initialized = True
            conn.parser = gunicorn_http.get_parser(self.cfg, conn.sock, conn.client)
        conn.parser.unreader.unread(head)
        conn.data_ready = True
        conn.head_ready = True
        self._ready(conn)

    def _check_tls(self, w: _Wait) -> None:
        """A new connection on a TLS port: its first byte tells a handshake from clear text."""
        sock = w.conn.sock
        try:
            first = sock.recv(1, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            first = b""
        if not first:
            self._close(w)
            return
        if first != TLS_HANDSHAKE_RECORD:
            # drop what the client sent (an unread byte would turn the close into a reset), answer
            with contextlib.suppress(OSError):
                sock.recv(_CHUNK)
            _send_now(sock, answer(400, "Bad Request", "this port speaks HTTPS; use an https:// URL"))
            self._forget(w)
            self._closed()
            self.linger(sock)
            return
        try:
            w.conn.sock = gunicorn_sock.ssl_wrap_socket(sock, self.cfg)  # not yet shaking hands
        except (OSError, ValueError) as e:
            log.debug("TLS with %s failed: %s", w.conn.client, e)
            self._close(w)
            return
        w.state = _HANDSHAKE
        self._handshake(w)

    def _handshake(self, w: _Wait) -> None:
        conn = w.conn
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._want(w, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._want(w, selectors.EVENT_WRITE)
            return
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
            log.debug("TLS handshake with %s failed: %s", conn.client, e)
            self._close(w)
            return
        conn.initialized = True  # the parser is made when the head is whole
        now = time.monotonic()
        w.state, w.started = _READING, now
        heapq.heappush(self._timers, (now + self.header_timeout, next(self._seq), w, w.state))
        self._read(w)

    # ------------------------------------------------------------------ refusing and closing

    def _refuse_head(self, w: _Wait) -> None:
        sock, head = w.conn.sock, bytes(w.buf[:512])
        self._forget(w)
        self._refused("memory")
        _send_now(sock, answer(503, "Service Unavailable", "too many requests are being read; try again",
                               head, retry_after=1))
        self._closed()
        self.linger(sock)

    def refuse(self, sock: socket.socket, reason: str) -> None:
        """A connection accepted over a limit: ``503`` and closed at once, unread."""
        self._refused(reason)
        _send_now(sock, answer(503, "Service Unavailable", "too many connections; try again", retry_after=1))
        with contextlib.suppress(OSError):
            sock.close()

    def linger(self, sock: Any) -> None:
        """Close ``sock`` gracefully in the loop (see the module doc). A connection at a worker
        that stops, or over :data:`LINGER_DRAIN`, is closed at once."""
        try:
            sock.setblocking(False)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            with contextlib.suppress(OSError):
                sock.close()
            return
        if self.stopping:
            sock.close()
            return
        w = _Wait(sock, _LINGER, time.monotonic(), bytearray())
        self._waits[id(sock)] = w
        self.lingering += 1
        heapq.heappush(self._timers, (w.started + LINGER_SECONDS, next(self._seq), w, _LINGER))
        self._want(w, selectors.EVENT_READ)

    def _drain(self, w: _Wait) -> None:
        while w.drained < LINGER_DRAIN:
            try:
                data = w.conn.recv(_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                break
            if not data:
                break
            w.drained += len(data)
        self._close(w)

    # ------------------------------------------------------------------ deadlines

    def next_deadline(self) -> float | None:
        while self._timers:
            _at, _seq, w, state = self._timers[0]
            if w.state == state:
                return self._timers[0][0]
            heapq.heappop(self._timers)
        return None

    def expire(self, now: float) -> None:
        """Close every connection whose deadline has passed (see the module doc)."""
        while self._timers and self._timers[0][0] <= now:
            _at, _seq, w, state = heapq.heappop(self._timers)
            if w.state != state:
                continue
            if state in (_READING, _BODY) and not self.stopping:
                extended = w.started + self.header_timeout + len(w.buf) // GRACE_BYTES
                if extended > now:
                    heapq.heappush(self._timers, (extended, next(self._seq), w, state))
                    continue
            if state == _LINGER:
                self._close(w)
                continue
            stage = "idle" if state == _READING and not w.buf and w.conn.parser is None else _STAGES[state]
            if state in (_READING, _BODY) and w.buf:
                sock, head = w.conn.sock, bytes(w.buf[:512])
                self._forget(w)
                self._closed()
                if not self.stopping:
                    self._timed_out(stage)
                late = "head did not arrive within" if state == _READING else "body did not arrive within"
                _send_now(sock, answer(408, "Request Timeout", f"the request {late} {self.header_timeout:g}s "
                                       f"(and a second per {GRACE_BYTES >> 10} KiB sent)", head))
                self.linger(sock)
                continue
            if not (state == _READING and w.conn.parser is not None) and not self.stopping:
                self._timed_out(stage)  # a kept-alive connection's next request that never came: no timeout
            self._close(w)

    def stop(self, linger: float) -> None:
        """The worker stops: kept-alive connections between requests are closed now; a head being
        read, or a new connection that has sent nothing yet or is shaking hands over TLS (its client
        just connected: its request is on the way, and closing it would answer that request with
        nothing, or cut the handshake off), gets ``linger`` seconds more at most."""
        self.stopping = True
        now = time.monotonic()
        for w in list(self._waits.values()):
            if w.state == _LINGER:
                self._close(w)
            elif w.state in (_CHECK, _HANDSHAKE) or (w.state in (_READING, _BODY)
                                                     and (w.buf or w.conn.parser is None)):
                heapq.heappush(self._timers, (now + linger, next(self._seq), w, w.state))
            else:
                self._close(w)


def settings_of(app: Any) -> Settings:
    """The settings of ``spoolq serve``'s application, else from the environment (gunicorn run
    directly, ``deploy/gunicorn.conf.py``)."""
    settings = getattr(app, "settings", None)
    return settings if isinstance(settings, Settings) else load_settings()


def connection_limit(wanted: int) -> int:
    """``wanted``, lowered to what this process's open-file limit leaves room for."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return connections_within(wanted, None if soft == resource.RLIM_INFINITY else soft)


def out_of_descriptors(e: OSError) -> bool:
    """Whether ``accept`` failed for want of file descriptors or memory (the listener is fine)."""
    return e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
