"""The Disque listener: one asyncio process serving RESP connections over the shared store.

Every connection is an :class:`asyncio.Protocol` (:class:`Connection`); its requests (pipelined
or not) run one at a time, in order, through the command table (:class:`~spoolq.disque.door.Door`).
Commands that touch the store run in a thread pool (the store blocks on the file system and on
group commits); a blocked GETJOB holds no thread (see :mod:`spoolq.disque.blocking`). ``spoolq serve --disque-port N`` (and ``--disque-tls-port M``: RESP over TLS, :mod:`spoolq.access.tls`)
binds the sockets, then starts
this module as a child process that inherits them, dies with its parent (``PR_SET_PDEATHSIG``) and
is started again by :class:`~spoolq.disque.supervisor.Supervisor` if it dies alone. The socket may
also come from systemd or from an older generation of the service (:mod:`spoolq.cli.listen_sockets`).

A stop (SIGTERM) is graceful (:func:`_drain`): the listener stops accepting, blocked GETJOBs are
answered with a null reply, as at their timeout, each connection is closed once it has answered
what it read (one that has sent nothing yet gets :data:`FRESH_SECONDS` for its first command); a
client reconnects to whichever process serves the socket next. At a final stop, where no process
serves the socket next, the master has gated it (:mod:`spoolq.access.listener_gate`) and the
listener first serves the connections waiting in its accept queue (:func:`_take_backlog`), which
closing the port would reset.

Metrics: every command answered, the messages it moved and the GETJOBs blocked are counted
into the multiprocess directory the HTTP workers' ``/metrics`` reads (:mod:`spoolq.disque.meter`).

Authentication: with API keys configured, a connection acts as the config's ``anonymous``
principal until ``AUTH <key>`` (or ``HELLO <proto> AUTH <user> <key>``); without one every command
but AUTH, PING, QUIT, HELLO, CLIENT and COMMAND answers ``-NOAUTH Authentication required.``
(:mod:`spoolq.disque.door`). Permissions are the HTTP doors' ``queue|<action>|<disque queue name>``.

Limits (so that no client can stall the loop every connection shares, or hold memory for
nothing): requests are read under :mod:`spoolq.disque.reader`'s limits, Redis's small ones until
the connection authenticates (when keys are configured); a request must arrive whole within
:data:`REQUEST_SECONDS_BEFORE_AUTH` of its first byte before AUTH, :data:`REQUEST_SECONDS` after
(else ``-ERR Protocol error: ...`` and the connection is closed); a connection that has not
authenticated is closed after :data:`UNAUTHENTICATED_IDLE_SECONDS` without a request to answer,
or as long without reading its replies.
Once a second :func:`_sweep` checks every connection's clocks, so the reading path pays one clock
read per chunk.

Protocol: a connection speaks RESP2 until ``HELLO 3`` (:mod:`spoolq.disque.protocol`), which
redis-py 8 and the Disque clients built on it send on connect.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import ssl
import struct
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from spoolq.access.auth import OPEN, Authenticator
from spoolq.access.listener_gate import is_gated, waiting_connections
from spoolq.access.tls import HANDSHAKE_SECONDS, server_context
from spoolq.disque.door import Door
from spoolq.disque.protocol import Error, encode
from spoolq.disque.reader import Parsed, ProtocolError, RequestReader
from spoolq.disque.session import Session
from spoolq.disque.supervisor import GRACEFUL_SECONDS, die_with_parent, settings_from_json
from spoolq.observability.metrics import Metrics
from spoolq.observability.rates import RateHistory
from spoolq.queues.serving import open_store
from spoolq.settings.server import Settings

log = logging.getLogger("spoolq.disque")
#: requests parsed but not yet answered before the connection stops reading (back-pressure)
MAX_QUEUED_REQUESTS = 1024
#: consecutive pipelined ADDJOBs written with one store batch (one group commit)
MAX_ADDJOB_BATCH = 256
#: seconds of the loop one connection's requests may take in a row before the loop turns to the
#: other connections (commands answered without the thread pool, such as PING or a NOAUTH refusal,
#: would otherwise be answered a whole pipeline at a time)
TURN_SECONDS = 0.001
#: seconds a request may take to arrive whole, from its first byte: before AUTH, and after
REQUEST_SECONDS_BEFORE_AUTH = 10.0
REQUEST_SECONDS = 60.0
#: seconds a connection that has not authenticated may stay without a request to answer
UNAUTHENTICATED_IDLE_SECONDS = 10.0
#: seconds a connection being closed may take to flush its last replies to a client not reading them
LINGER_SECONDS = 10.0
#: how often the deadlines are checked
SWEEP_SECONDS = 1.0
#: seconds a stopping listener waits for the first command of a connection that has sent nothing
#: (gunicorn's wait for a kept-alive connection at a stop)
FRESH_SECONDS = 2.0


class Connection(asyncio.Protocol):
    def __init__(self, door: Door, live: set[Connection] | None = None) -> None:
        self.door = door
        self.live = live if live is not None else set()  # every open connection of the listener
        open_mode = door.auth.open
        self.session = Session(OPEN if open_mode else door.auth.principal(None, None), authenticated=open_mode)
        self.reader = RequestReader(door.limits(self.session))
        self.requests: deque[Parsed] = deque()
        self.transport: asyncio.Transport | None = None
        self.task: asyncio.Task[None] | None = None
        self.paused = False
        self.writable = asyncio.Event()  # cleared while the client is not reading its replies
        self.writable.set()
        self.heard_at = door.loop.time()  # the last bytes received (or the connection made)
        self.heard = False  # any bytes received: a connection that has sent nothing yet is on its way
        self.request_started: float | None = None  # the first byte of a request still partial
        self.stalled_since: float | None = None  # since when the client has not read its replies
        self.closed_at = 0.0  # when the connection was asked to close

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.door.clients += 1
        self.live.add(self)
        if self.door.stopping:
            self.close_when_idle()

    def data_received(self, data: bytes) -> None:
        self.heard = True
        if self.session.closed or (self.requests and isinstance(self.requests[-1], ProtocolError)):
            return
        parsed = self.reader.feed(data)
        self._take(parsed)
        if (len(self.requests) > MAX_QUEUED_REQUESTS or self.reader.holding) and self.transport is not None \
                and not self.paused:
            self.paused = True
            self.transport.pause_reading()

    def _take(self, parsed: list[Parsed]) -> None:
        """Queue what the reader read, restart the clock of a partial request, serve."""
        now = self.heard_at = self.door.loop.time()
        if not self.reader.partial:
            self.request_started = None
        elif parsed or self.request_started is None:
            self.request_started = now
        self.requests.extend(parsed)
        if self.task is None and self.requests:
            self.task = self.door.loop.create_task(self._serve())

    def check_clocks(self, now: float) -> None:
        """Close the connection if a request has been arriving too long (with a protocol error),
        or it has not authenticated and has had nothing to answer, or not read its replies, for
        too long (silently)."""
        if self.session.closed:  # closing: its last replies are flushed, unless it does not read them
            if now - self.closed_at > LINGER_SECONDS:
                self._drop()
            return
        started = self.request_started
        deadline = REQUEST_SECONDS if self.session.authenticated else REQUEST_SECONDS_BEFORE_AUTH
        if started is not None and now - started > deadline:
            self.request_started = None
            self.reader.abandon()
            self._take([ProtocolError(f"request not received whole within {deadline:g} s")])
        elif not self.session.authenticated and now - self.heard_at > UNAUTHENTICATED_IDLE_SECONDS:
            if self.task is None and not self.requests:  # nothing to answer
                self._close()
            elif self.stalled_since is not None and now - self.stalled_since > UNAUTHENTICATED_IDLE_SECONDS:
                self._drop()  # replies it has not read for as long

    async def _serve(self) -> None:
        out = bytearray()
        clock = self.door.loop.time
        turn_ends = clock() + TURN_SECONDS
        try:
            while self.requests and not self.session.closed:
                await self.writable.wait()  # a client that does not read its replies is not served more
                req = self.requests.popleft()
                if isinstance(req, ProtocolError):
                    encode(Error(f"Protocol error: {req}"), out)
                    self._write(out)
                    self._close()
                    return
                if req[0].lower() == b"addjob" and self.requests and self._is_addjob(self.requests[0]):
                    batch = [req]
                    while self.requests and len(batch) < MAX_ADDJOB_BATCH and self._is_addjob(self.requests[0]):
                        batch.append(self.requests.popleft())  # type: ignore[arg-type]
                    for reply in await self.door.handle_addjobs(self.session, batch):
                        encode(reply, out, self.session.protocol == 3)
                else:
                    reply = await self.door.handle(self.session, req)
                    encode(reply, out, self.session.protocol == 3)  # after HELLO 3: its own reply too
                turn_over = clock() > turn_ends
                if not self.requests or len(out) > 65_536 or turn_over:
                    self._write(out)
                    out = bytearray()
                    if turn_over:
                        await asyncio.sleep(0)  # a pipeline of cheap commands does not hold the loop
                        turn_ends = clock() + TURN_SECONDS
                if req[0].lower() == b"quit":
                    self._close()
                    return
                if not self.requests and (self.reader.holding or self.reader.limits.authenticated
                                          is not self.session.authenticated):
                    # all it read is answered (an AUTH among it perhaps): read on, with the limits due
                    self._take(self.reader.release(self.door.limits(self.session)))
                if self.paused and len(self.requests) < MAX_QUEUED_REQUESTS // 2 and not self.reader.holding \
                        and self.transport is not None:
                    self.paused = False
                    self.transport.resume_reading()
            self._write(out)
        finally:
            self.task = None
            if self.requests and not self.session.closed:
                self.task = self.door.loop.create_task(self._serve())
            elif self.door.stopping:
                self._close()

    def close_when_idle(self, *, now: bool = False) -> None:
        """Close the connection now if it has nothing to answer (or ``now``), else once it has.
        One that has sent nothing yet is left open: its client just connected and its first
        command is on the way (closing it would answer that command with nothing, or with a reset
        when it has arrived unread); :func:`_drain` closes it after :data:`FRESH_SECONDS`."""
        if now or (self.task is None and not self.requests and self.heard):
            self._close()

    @staticmethod
    def _is_addjob(req: Parsed) -> bool:
        return not isinstance(req, ProtocolError) and req[0].lower() == b"addjob"

    def _write(self, out: bytearray) -> None:
        if out and self.transport is not None and not self.transport.is_closing():
            self.transport.write(bytes(out))
        out.clear()

    def _drop(self) -> None:
        """Close now with a reset, dropping what the client has not read (its buffers too)."""
        self.session.closed = True
        if self.transport is not None:
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.transport.abort()

    def _close(self) -> None:
        self.session.closed = True
        self.closed_at = self.door.loop.time()
        if self.transport is not None:
            self.transport.close()

    def pause_writing(self) -> None:
        self.writable.clear()
        self.stalled_since = self.door.loop.time()

    def resume_writing(self) -> None:
        self.writable.set()
        self.stalled_since = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.door.clients -= 1
        self.live.discard(self)
        self.writable.set()
        self.session.closed = True
        self.requests.clear()
        if self.session.waiter is not None:
            self.door.dispatcher.cancel(self.session.waiter)


# ---------------------------------------------------------------------- process

async def run(settings: Settings, sock: socket.socket | None, ready: Callable[[], None] | None = None,
              tls_sock: socket.socket | None = None) -> None:
    """Serve RESP on ``sock`` (clear text) and ``tls_sock`` (TLS, :mod:`spoolq.access.tls`) until SIGTERM."""
    loop = asyncio.get_running_loop()
    auth = Authenticator.from_settings(settings)
    store = open_store(settings)
    pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="spoolq-disque")
    loop.set_default_executor(pool)
    metrics = Metrics()
    RateHistory(metrics).start()  # the console's rate history also fills when only Disque is used
    door = Door(settings, store, auth, pool, loop, metrics)
    connections: set[Connection] = set()

    def connect() -> Connection:
        return Connection(door, connections)

    listeners: list[tuple[socket.socket, ssl.SSLContext | None]] = []
    if sock is not None:
        listeners.append((sock, None))
    if tls_sock is not None:
        listeners.append((tls_sock, server_context(settings)))
    servers = [await loop.create_server(connect, sock=listener, ssl=context,
                                        ssl_handshake_timeout=HANDSHAKE_SECONDS if context else None)
               for listener, context in listeners]
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    sweeper = loop.create_task(_sweep(connections))
    if ready is not None:
        ready()
    try:
        await stop.wait()
        await _take_backlog(listeners, connect)
        await _drain(servers, door, connections)
    finally:
        sweeper.cancel()
        for server in servers:
            server.close()
        pool.shutdown(wait=False, cancel_futures=True)
        store.close()


async def _sweep(connections: set[Connection]) -> None:
    """Check every connection's clocks once a :data:`SWEEP_SECONDS` (:meth:`Connection.check_clocks`)."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(SWEEP_SECONDS)
        now = loop.time()
        for connection in list(connections):
            connection.check_clocks(now)


async def _take_backlog(listeners: Sequence[tuple[socket.socket, ssl.SSLContext | None]],
                        connect: Callable[[], Connection]) -> None:
    """At a final stop (the master gated the sockets: nobody takes them after this process, and
    no new connection arrives), accept every connection waiting in their accept queues, which
    closing them would reset, and serve it like any other (:mod:`spoolq.access.listener_gate`).
    Otherwise the next process holding the socket serves them."""
    loop = asyncio.get_running_loop()
    handshakes = []
    for listener, context in listeners:
        if not is_gated(listener):
            continue
        for conn, _addr in waiting_connections(listener):
            conn.setblocking(False)
            handshakes.append(loop.create_task(loop.connect_accepted_socket(
                connect, conn, ssl=context, ssl_handshake_timeout=HANDSHAKE_SECONDS if context else None)))
    if handshakes:
        await asyncio.wait(handshakes, timeout=HANDSHAKE_SECONDS)


async def _drain(servers: Sequence[asyncio.Server], door: Door, connections: set[Connection]) -> None:
    """A graceful stop: stop accepting (another process holding the socket takes new clients),
    answer every blocked GETJOB as its timeout would (a null reply: the client asks again), let
    each connection finish the commands it sent (up to :data:`GRACEFUL_SECONDS`) and close it
    once it has nothing left to answer."""
    for server in servers:
        server.close()  # this process's copy of the listening socket
    door.stopping = True
    door.dispatcher.stop()
    for c in list(connections):
        c.close_when_idle()
    started = time.monotonic()
    while connections and time.monotonic() < started + GRACEFUL_SECONDS:
        await asyncio.sleep(0.02)
        if time.monotonic() > started + FRESH_SECONDS:
            for c in list(connections):
                if not c.heard:
                    c.close_when_idle(now=True)
    for c in list(connections):
        c.close_when_idle(now=True)
    await asyncio.sleep(0.05)  # let the transports flush and close


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spoolq-disque")
    p.add_argument("--fd", type=int, help="clear-text listening socket inherited from spoolq serve")
    p.add_argument("--tls-fd", type=int, help="TLS listening socket inherited from spoolq serve")
    p.add_argument("--parent", type=int, default=0, help="exit if this process is gone")
    a = p.parse_args(argv)
    die_with_parent()
    if a.parent and os.getppid() != a.parent:
        return 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [disque] %(levelname)s %(message)s")
    settings = settings_from_json(os.environ["SPOOLQ_DISQUE_SETTINGS"])
    sock = socket.socket(fileno=a.fd) if a.fd is not None else None
    tls_sock = socket.socket(fileno=a.tls_fd) if a.tls_fd is not None else None
    ports = ([f"{settings.disque_port}"] if sock is not None else []) + \
        ([f"{settings.disque_tls_port} (TLS)"] if tls_sock is not None else [])
    log.info("serving Disque on %s port %s root=%s", settings.disque_host, " and ".join(ports), settings.root)
    asyncio.run(run(settings, sock, tls_sock=tls_sock))
    return 0


if __name__ == "__main__":
    sys.exit(main())
