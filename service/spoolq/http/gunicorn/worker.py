"""``SpoolqThreadWorker``: gunicorn's gthread worker, with long polls that wait without a thread.

Changes to gthread (27.x):

* **Parked long polls** (:mod:`spoolq.http.gunicorn.parked`): a long poll that finds nothing
  waits without a thread, woken by a change to its queue, a re-scan or its deadline.
* **Connections cost nothing until they speak** (:mod:`spoolq.http.gunicorn.heads`): a new connection, and
  a kept-alive one whose next request starts to arrive, stay in the main loop until their request
  head (and a body of declared length) is whole, read without blocking under ``header_timeout``;
  only then does a thread take them (gthread gives a new connection a thread at once, which
  waits up to 5 s for its first bytes and then, for the head and the body, for ever). TLS handshakes and lingering closes run in the loop
  too. A worker holds at most ``max_connections`` connections (parked polls included; lowered to
  what its open-file limit allows): at the limit a new connection closes the longest idle
  kept-alive one, or, with none, is answered ``503`` and closed. Open connections by state,
  refusals and time-outs are counted (:mod:`spoolq.observability.metrics`).
* A stopping worker closes its copies of the listening sockets as soon as it stops accepting
  (:meth:`SpoolqThreadWorker._close_listeners`).
* It stops accepting new connections while every thread is busy, so a new request waits in the
  listen backlog for any worker with a free thread instead of queueing inside this one.
* On a TLS port (:mod:`spoolq.access.tls`), a clear-text HTTP request is answered ``400`` in clear
  text and closed before it is parsed, and a handshake must finish within 10 s (in the loop).
* Request lines up to 4 MiB (:mod:`spoolq.http.gunicorn.request_line`: SQS's query protocol by GET). Protocol
  errors gunicorn answers itself (a longer request line, oversized headers, malformed requests) get
  a JSON body, or SQS's ``<ErrorResponse>`` on an SQS path, never HTML.
"""

from __future__ import annotations

import contextlib
import errno
import io
import socket
import sys
import time
from concurrent import futures
from datetime import datetime
from typing import Any

from gunicorn import http as gunicorn_http
from gunicorn import util as gunicorn_util
from gunicorn.http import wsgi
from gunicorn.workers import gthread
from gunicorn.workers.gthread import ThreadWorker

from spoolq.access.listener_gate import waiting_connections
from spoolq.http.gunicorn import heads as head_reading
from spoolq.http.gunicorn import parking, request_line
from spoolq.http.gunicorn.heads import Connection, HeadReader
from spoolq.http.gunicorn.parked import PARK_LIMIT, Parked, ParkedPolls

#: seconds a worker stops accepting after running out of file descriptors
ACCEPT_PAUSE = 0.1
#: how often a worker updates its connection gauges
GAUGE_SECONDS = 1.0


def _write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's answer to a request it cannot parse (414, 431, 400): JSON, or SQS's XML on an SQS
    path (:mod:`spoolq.http.gunicorn.request_line`), never HTML."""
    content_type, body = request_line.error_answer(status_int, reason, mesg)
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
    gunicorn_util.write_nonblock(sock, head + body)


class SpoolqThreadWorker(ParkedPolls, ThreadWorker):  # type: ignore[misc]
    _busy = 0
    alive: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_connections = self.cfg.worker_connections  # checked in accept, made to fit in init_process
        self.max_keepalived = max(1, self.cfg.worker_connections - self.cfg.threads)
        self.worker_connections = sys.maxsize  # gthread's gate is off: accept refuses over the limit instead
        self.heads: HeadReader | None = None
        self._metrics: Any = None
        self._accept_paused_until = 0.0
        self._next_gauges = 0.0
        self._init_waiting()

    def init_process(self) -> None:
        gunicorn_util.write_error = _write_json_error  # this worker process only
        request_line.install()  # request lines up to 4 MiB (the SQS query protocol by GET)
        self.max_connections = head_reading.connection_limit(self.max_connections)
        if self.max_connections < self.cfg.worker_connections:
            self.log.warning("max_connections %d lowered to %d: the open-file limit is too low for more",
                             self.cfg.worker_connections, self.max_connections)
        super().init_process()

    def load_wsgi(self) -> None:
        """gunicorn's, then the connection loop (the poller exists; the loop has not started)."""
        super().load_wsgi()
        services = getattr(self.wsgi, "extensions", {}).get("spoolq")
        self._metrics = getattr(services, "metrics", None)
        if self._metrics is not None:
            self._metrics.connection_doors()
        settings = head_reading.settings_of(self.app)
        self.heads = HeadReader(self.cfg, self.poller, settings.header_timeout, settings.max_body_bytes,
                                self._head_ready, self._connection_closed, self._timed_out, self._refused)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> Any:
        request_line.remember_failure(exc)  # its answer is in the format of the door it was for
        try:
            return super().handle_error(req, client, addr, exc)
        finally:
            request_line.remember_failure(None)

    # ------------------------------------------------ thread accounting (all on the main thread)

    def enqueue_req(self, conn: Any) -> None:
        if not getattr(conn, "head_ready", True) and self.heads is not None:
            # gthread's finish_request found bytes of the next request read ahead: the loop reads
            # the rest of its head
            self.heads.take(conn, buffered=conn.parser.unreader.take_buffered() if conn.parser else b"")
            return
        self._busy += 1
        conn.spoolq_arrived = time.monotonic()  # a long poll's wait counts from here
        super().enqueue_req(conn)

    def _head_ready(self, conn: Any) -> None:
        self.enqueue_req(conn)

    def _connection_closed(self) -> None:
        self.nr_conns -= 1

    def _timed_out(self, stage: str) -> None:
        if self._metrics is not None:
            self._metrics.connection_timed_out(stage)

    def _refused(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.connection_refused(reason)

    def finish_request(self, conn: Any, fs: Any) -> None:
        self._busy -= 1
        rec: Parked | None = getattr(conn, "spoolq_parked", None)
        if rec is not None:
            conn.spoolq_parked = None
            ok = not fs.cancelled() and fs.exception() is None and fs.result() is True
            if ok and self.alive:
                self._park(rec)
                return
            if ok:  # stopping: send the empty answer now
                self._answer(rec)
                return
            rec.slot.done()
        super().finish_request(conn, fs)

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled and self._busy < self.cfg.threads
                                   and time.monotonic() >= self._accept_paused_until)
        if not self.alive:
            self._close_listeners()

    def _close_listeners(self) -> None:
        """A stopping worker closes its copies of the listening sockets at once (gthread keeps
        them until it exits). The master closed its own first, so once every stopping worker
        has, the port is closed: a client connecting meanwhile is refused at once instead of
        waiting in the backlog for up to the graceful timeout and then being reset. Where
        another process still holds the socket (new workers after a reload, the next
        generation, systemd), connections wait for it, as before.

        Closing the last copy of a listening socket resets the connections waiting in its accept
        queue, whose clients may already have sent their requests: each is accepted first and
        served (its answer says ``Connection: close``). At a final stop the master has gated the
        socket before signalling the workers (:mod:`spoolq.access.listener_gate`), so none
        arrives between the last ``accept`` and the ``close``."""
        for listener in self.sockets:
            with contextlib.suppress(OSError):
                self._take_backlog(listener)
            with contextlib.suppress(OSError):
                listener.close()

    def _take_backlog(self, listener: Any) -> None:
        """Accept every connection already waiting on ``listener`` (a stopping worker)."""
        if self.heads is None or listener.fileno() < 0:
            return
        for sock, addr in waiting_connections(listener):
            self._take_new(sock, addr, listener)

    def accept(self, listener: Any) -> None:
        """gthread's ``accept``, except that the new connection goes to the head reader (no thread
        yet), and over ``max_connections`` or out of file descriptors it is refused cleanly."""
        if self._busy >= self.cfg.threads:
            self.set_accept_enabled(False)  # the run loop re-enables it once a thread is free
            return
        heads = self.heads
        assert heads is not None
        try:
            sock, addr = listener.accept()
        except OSError as e:
            if head_reading.out_of_descriptors(e):
                if not self._close_oldest_idle():
                    self._refused("descriptors")
                    self._accept_paused_until = time.monotonic() + ACCEPT_PAUSE
                    self.set_accept_enabled(False)
                return
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        if self.nr_conns + heads.lingering >= self.max_connections and not self._close_oldest_idle():
            heads.refuse(sock, "limit")
            return
        self._take_new(sock, addr, listener)

    def _take_new(self, sock: socket.socket, addr: Any, listener: Any) -> None:
        """A connection just accepted on ``listener``: counted, and read by the head reader."""
        heads = self.heads
        assert heads is not None
        self.nr_conns += 1
        heads.take(Connection(self.cfg, sock, addr, listener.getsockname(), heads), fresh=True)

    def _close_oldest_idle(self) -> bool:
        """Close the kept-alive connection idle the longest, for a new one (False: none)."""
        if not self.keepalived_conns:
            return False
        conn = self.keepalived_conns.popleft()
        with contextlib.suppress(OSError, KeyError, ValueError):
            self.poller.unregister(conn.sock)
        self.nr_conns -= 1
        conn.close()
        return True

    def on_client_socket_readable(self, conn: Any, client: Any) -> None:
        """A kept-alive connection's next request starts to arrive: the loop reads its head."""
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        assert self.heads is not None
        self.heads.take(conn)

    # ------------------------------------------------ serving a request (worker threads)

    def handle(self, conn: Any) -> Any:
        """gthread's ``handle`` of a connection whose request (its head, and a body of declared
        length) is whole in its parser's buffer (TLS set up, the first bytes waited for:
        :mod:`spoolq.http.gunicorn.heads`)."""
        conn.head_ready = False  # the next request's head is read by the loop again
        return super().handle(conn)

    def handle_request(self, req: Any, conn: Any) -> bool:
        slot = parking.LongPoll(can_park=len(self._all) < PARK_LIMIT, arrived=getattr(conn, "spoolq_arrived", None))
        return self._serve(req, conn, slot, None)

    def _serve(self, req: Any, conn: Any, slot: parking.LongPoll, body: bytes | None) -> bool:
        """gthread's ``handle_request``, except that a parked answer is kept, not sent (a re-run of
        a parked request is given its kept ``body``)."""
        environ: dict[str, Any] = {}
        resp = None
        held = False
        try:
            if body is None:
                self.cfg.pre_request(self, req)
            request_start = datetime.now()
            resp, environ = wsgi.create(req, conn.sock, conn.client, conn.server, self.cfg)
            self._prepare(resp, environ, slot, body)
            slot.start_run()
            respiter = self.wsgi(environ, resp.start_response)
            if slot.parked and self.alive:
                self._keep(conn, req, resp, respiter, environ, slot, body, request_start)
                held = True
                return True
            self._send(req, resp, respiter, environ, request_start)
            if slot.full and slot.key:
                self.method_queue.defer(self._wake, slot.key)  # more may be there for the next waiter
            if resp.should_close():
                return False
        except OSError:
            gunicorn_util.reraise(*sys.exc_info())
        except (Exception, SystemExit):
            if resp and resp.headers_sent:
                self.log.exception("Error handling request")
                gunicorn_util.close_graceful(conn.sock)
                raise StopIteration() from None
            raise
        finally:
            if not held:
                slot.done(expired=slot.parked)
                try:
                    self.cfg.post_request(self, req, environ, resp)
                except Exception:
                    self.log.exception("Exception in post_request hook")
        return True

    def _prepare(self, resp: Any, environ: dict[str, Any], slot: parking.LongPoll, body: bytes | None) -> None:
        """One run's WSGI environ (a re-run reads the kept body), and gthread's rules for closing
        the connection after it (the first run counts toward ``max_requests``)."""
        environ["wsgi.multithread"] = True
        environ[parking.ENVIRON_KEY] = slot
        if body is not None:
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            environ.pop("HTTP_TRANSFER_ENCODING", None)
        else:
            self.nr += 1
            if self.nr >= self.max_requests:
                if self.alive:
                    self.log.info("Autorestarting worker after current request.")
                    self.alive = False
                resp.force_close()
        if not self.alive or not self.cfg.keepalive or len(self.keepalived_conns) >= self.max_keepalived:
            resp.force_close()

    def _keep(self, conn: Any, req: Any, resp: Any, respiter: Any, environ: dict[str, Any],
              slot: parking.LongPoll, body: bytes | None, request_start: datetime) -> None:
        """A run that parked: its empty answer rendered and kept with the request and its body (for
        the re-runs) on the connection, not sent."""
        try:
            answer = b"".join(respiter)
        finally:
            if hasattr(respiter, "close"):
                respiter.close()
        if body is None:
            inp = environ.get("wsgi.input")
            body = inp.getvalue() if isinstance(inp, io.BytesIO) else b""
        req._expected_100_continue = False  # a re-run must not send it again
        conn.spoolq_parked = Parked(conn, req, resp, answer, environ, body, slot, request_start)

    def _send(self, req: Any, resp: Any, respiter: Any, environ: dict[str, Any], request_start: datetime) -> None:
        """A run's answer written as gthread writes it, then logged and its iterator closed."""
        try:
            if isinstance(respiter, environ["wsgi.file_wrapper"]):
                resp.write_file(respiter)
            else:
                for item in respiter:
                    resp.write(item)
            resp.close()
        finally:
            self.log.access(resp, req, environ, datetime.now() - request_start)
            if hasattr(respiter, "close"):
                respiter.close()

    def _serve_again(self, rec: Parked) -> bool:
        """Re-run a parked request (in a worker thread); handled like gthread's ``handle``."""
        try:
            rec.conn.sock.setblocking(True)
            return self._serve(rec.req, rec.conn, rec.slot, rec.body)
        except gunicorn_http.errors.NoMoreData:
            pass
        except StopIteration:
            pass
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.exception("Socket error processing request.")
        except Exception as e:
            self.handle_error(rec.req, rec.conn.sock, rec.conn.client, e)
        return False

    def _finish_kept_alive(self, conn: Any, fut: futures.Future[bool]) -> None:
        super().finish_request(conn, fut)

    def _next_timer(self) -> float | None:
        return self._parked_next_timer(self.heads.next_deadline() if self.heads is not None else None)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        at = self._next_timer()
        if at is not None:
            timeout = max(0.0, min(timeout, at - time.monotonic()))
        super().wait_for_and_dispatch_events(timeout)
        self._run_timers()

    def _run_timers(self) -> None:
        now = time.monotonic()
        heads = self.heads
        if heads is not None:
            if not self.alive and not heads.stopping:
                heads.stop(getattr(gthread, "STOP_KEEPALIVE_LINGER", 2.0))
            heads.expire(now)
            if now >= self._next_gauges:
                self._next_gauges = now + GAUGE_SECONDS
                self._publish_gauges(heads)
        if not self.alive:
            self._answer_every_parked()
            return
        self._run_parked_timers(now)

    def _publish_gauges(self, heads: HeadReader) -> None:
        if self._metrics is None:
            return
        parked = len(self._all)
        self._metrics.connection_states({
            "reading": heads.reading, "idle": len(self.keepalived_conns) + len(self.pending_conns),
            "busy": self._busy, "parked": parked, "closing": heads.lingering})
