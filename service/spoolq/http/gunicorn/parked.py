"""Parked long polls: the waiting set of :class:`~spoolq.http.gunicorn.worker.SpoolqThreadWorker`.

A long poll that finds nothing returns from the app as *parked*
(:mod:`spoolq.http.gunicorn.parking`): the worker keeps its connection, the request and the rendered
empty answer, not a thread. Parked requests wait in a set keyed by queue. The main loop
(the selector that gthread already runs) wakes them:

- *a change to the queue*: the store's :class:`~spoolq.store.watch.Watcher` calls a listener
  on every generation bump (a send in this process, or its inotify thread seeing a file land);
  the listener defers a wake-up through gthread's own pipe. A wake-up re-runs the *oldest*
  waiter of that queue in the thread pool, one per wake-up: a re-run that got all the
  messages it asked for wakes the next waiter (more may be there), one that finds nothing
  parks again. A send thus
  costs one re-run, not one per waiter;
- *the re-scan*: at least every ``rescan`` (1 s; 50 ms without inotify) one waiter per queue
  re-runs, so changes made through another node of a shared file system are seen as a
  blocking poll would see them;
- *the deadline*: the kept empty answer is sent from the main loop at the deadline (no
  re-run, no thread), so thousands of waits ending at once cost a few writes;
- *the client leaving*: a parked socket that reads end-of-stream gets its empty answer at
  once (a client that only half-closed still reads it), so no later re-run claims messages
  for a client that is gone.

A re-run is the same request (same parsed headers and buffered body, ``100 Continue`` not
sent again) with the same deadline. A stopping worker sends every kept empty answer at once.
Parked connections count as connections (``max_connections``); at most :data:`PARK_LIMIT` park,
beyond that a long poll blocks its thread as before.

The worker mixes :class:`ParkedPolls` in; everything here runs on its main thread (the selector
loop) but :meth:`ParkedPolls._on_bump`, which any thread may call.
"""

from __future__ import annotations

import heapq
import itertools
import os
import selectors
import socket
import ssl
import time
from collections import deque
from concurrent import futures
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from spoolq.http.gunicorn import parking

#: parked long polls one worker process keeps at most (each holds a socket, no thread)
PARK_LIMIT = 8192

_PARKED, _RUNNING, _DONE = 0, 1, 2


def peek(sock: Any) -> bytes | None:
    """The next byte the client sent, left unread (``b""``: end of stream or a broken connection;
    ``None``: nothing yet). On a TLS socket (which takes no ``MSG_PEEK``) the raw, encrypted
    bytes are looked at, through a second descriptor of the same socket."""
    raw = sock
    if isinstance(sock, ssl.SSLSocket):
        if sock.pending():
            return b"?"  # decrypted bytes wait in the TLS layer
        raw = socket.socket(fileno=os.dup(sock.fileno()))
    try:
        return bytes(raw.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""
    finally:
        if raw is not sock:
            raw.close()


class Parked:
    """A parked request: everything needed to re-run it or to send its kept empty answer."""

    __slots__ = (
        "answer",
        "body",
        "conn",
        "environ",
        "gen",
        "registered",
        "req",
        "resp",
        "slot",
        "started",
        "state",
    )

    def __init__(self, conn: Any, req: Any, resp: Any, answer: bytes, environ: dict[str, Any],
                 body: bytes, slot: parking.LongPoll, started: datetime) -> None:
        self.conn, self.req, self.resp, self.answer = conn, req, resp, answer
        self.environ, self.body, self.slot, self.started = environ, body, slot, started
        self.state, self.gen, self.registered = _RUNNING, 0, False


class ParkedPolls:
    """The waiting set of a gthread worker: parked requests by queue, their deadlines and re-scans.
    Mixed into the worker, before gthread's ``ThreadWorker``, whose parts it uses (declared here)."""

    alive: bool
    cfg: Any
    log: Any
    poller: selectors.BaseSelector
    method_queue: Any
    tpool: futures.ThreadPoolExecutor
    nr_conns: int
    _busy: int

    def _init_waiting(self) -> None:
        self._waiting: dict[str, deque[tuple[Parked, int]]] = {}  # queue key -> waiters, oldest first
        self._all: set[Parked] = set()
        self._deadlines: list[tuple[float, int, Parked, int]] = []
        self._probes: dict[str, tuple[float, float]] = {}  # queue key -> (next re-scan, period)
        self._wakes: set[str] = set()  # keys with a wake-up already deferred
        self._watchers: set[int] = set()
        self._seq = itertools.count()

    if TYPE_CHECKING:  # the worker's (not defined here: gthread's come next in the worker's MRO)
        def _serve_again(self, rec: Parked) -> bool: ...  # a re-run, in a worker thread
        def _finish_kept_alive(self, conn: Any, fut: futures.Future[bool]) -> None: ...  # gthread's finish_request
        def finish_request(self, conn: Any, fs: Any) -> None: ...

    def _park(self, rec: Parked) -> None:
        slot = rec.slot
        key = slot.key
        rec.state, rec.gen = _PARKED, rec.gen + 1
        self._all.add(rec)
        self._waiting.setdefault(key, deque()).append((rec, rec.gen))
        assert slot.deadline is not None
        heapq.heappush(self._deadlines, (slot.deadline, next(self._seq), rec, rec.gen))
        if key not in self._probes:
            self._probes[key] = (time.monotonic() + slot.rescan, slot.rescan)
        watcher = slot.watcher
        if watcher is not None and id(watcher) not in self._watchers:
            self._watchers.add(id(watcher))
            watcher.add_listener(self._on_bump)
        try:
            rec.conn.sock.setblocking(False)
            self.poller.register(rec.conn.sock, selectors.EVENT_READ, partial(self._on_parked_readable, rec))
            rec.registered = True
        except (OSError, ValueError, KeyError):
            self._drop(rec)
            return
        # the queue changed between the generation read and now: the listener may have missed it
        if watcher is not None and watcher.generation(key) != slot.seen:
            self._wake(key)

    def _unpark(self, rec: Parked, state: int) -> None:
        rec.state = state
        self._all.discard(rec)
        if rec.registered:
            rec.registered = False
            try:
                self.poller.unregister(rec.conn.sock)
            except (OSError, ValueError, KeyError):
                pass

    def _on_bump(self, key: str) -> None:
        """Watcher listener (any thread): a queue's generation moved on."""
        if key in self._waiting and key not in self._wakes:
            self._wakes.add(key)
            self.method_queue.defer(self._wake, key)

    def _wake(self, key: str) -> None:
        """Re-run the oldest waiter of ``key``, if any."""
        self._wakes.discard(key)
        waiters = self._waiting.get(key)
        while waiters:
            rec, gen = waiters.popleft()
            if rec.state == _PARKED and rec.gen == gen:
                self._rerun(rec)
                probe = self._probes.get(key)
                if probe is not None:
                    self._probes[key] = (time.monotonic() + probe[1], probe[1])
                break
        if not waiters:
            self._waiting.pop(key, None)

    def _rerun(self, rec: Parked) -> None:
        self._unpark(rec, _RUNNING)
        self._busy += 1
        fut = self.tpool.submit(self._serve_again, rec)
        conn = rec.conn
        fut.add_done_callback(lambda f: self.method_queue.defer(self.finish_request, conn, f))

    def _on_parked_readable(self, rec: Parked, sock: Any) -> None:
        data = peek(sock)
        if data is None:
            return
        if data and isinstance(sock, ssl.SSLSocket):
            # encrypted bytes: a TLS client's close (its close_notify alert) cannot be told from
            # a pipelined request without reading it, so the waiting poll is answered (empty) now
            self._answer(rec)
            return
        if data:  # a pipelined request: it is read after this answer
            rec.registered = False
            self.poller.unregister(sock)
            return
        # end of stream: the client left (or half-closed, still reading): it gets the empty
        # answer now, and no later re-run claims messages for it
        self._answer(rec)

    def _drop(self, rec: Parked) -> None:
        self._unpark(rec, _DONE)
        rec.slot.done()
        self.nr_conns -= 1
        rec.conn.close()

    def _answer(self, rec: Parked) -> None:
        """Send a parked request's kept empty answer (main thread; a few hundred bytes)."""
        self._unpark(rec, _DONE)
        conn, resp = rec.conn, rec.resp
        keep = False
        try:
            conn.sock.settimeout(2.0)
            if rec.answer:
                resp.write(rec.answer)
            resp.close()
            keep = not resp.should_close()
        except OSError:
            pass
        finally:
            arrived = rec.slot.arrived  # the access log shows the whole wait, from arrival
            took = timedelta(seconds=time.monotonic() - arrived) if arrived else datetime.now() - rec.started
            self.log.access(resp, rec.req, rec.environ, took)
            rec.slot.done(expired=True)
            try:
                self.cfg.post_request(self, rec.req, rec.environ, resp)
            except Exception:
                self.log.exception("Exception in post_request hook")
        if not keep and not self._unread(conn):
            # gthread's graceful close lingers on this (main) thread until the client closes;
            # with the whole request read, a plain close loses nothing and does not wait
            self.nr_conns -= 1
            conn.close()
            return
        fut: futures.Future[bool] = futures.Future()
        fut.set_result(keep)
        self._finish_kept_alive(conn, fut)

    @staticmethod
    def _unread(conn: Any) -> bool:
        """Whether the client sent more than the request (bytes wait on the socket)."""
        return bool(peek(conn.sock))

    def _parked_next_timer(self, at: float | None) -> float | None:
        """``at``, or the next parked deadline or re-scan if sooner."""
        if self._deadlines:
            at = self._deadlines[0][0] if at is None else min(at, self._deadlines[0][0])
        for probe, _period in self._probes.values():
            at = probe if at is None else min(at, probe)
        return at

    def _answer_every_parked(self) -> None:
        """A stopping worker: every kept empty answer sent now."""
        for rec in list(self._all):
            self._answer(rec)
        self._waiting.clear()
        self._probes.clear()

    def _run_parked_timers(self, now: float) -> None:
        """Answers whose deadline came; one re-run per queue whose re-scan is due."""
        while self._deadlines and self._deadlines[0][0] <= now:
            _at, _seq, rec, gen = heapq.heappop(self._deadlines)
            if rec.state == _PARKED and rec.gen == gen:
                self._answer(rec)
        for key, (at, period) in list(self._probes.items()):
            if at > now:
                continue
            if self._waiting.get(key):
                self._probes[key] = (now + period, period)
                self._wake(key)
            else:
                del self._probes[key]
