"""The Disque listener: one asyncio process serving RESP connections over the shared store.

Every connection is an :class:`asyncio.Protocol`; its requests (pipelined or not) run one at
a time, in order. Commands that touch the store run in a thread pool (the store blocks on
the file system and on group commits); a blocked GETJOB holds no thread (see
:mod:`spoolq.disque.blocking`). ``spoolq serve --disque-port N`` (and ``--disque-tls-port M``: RESP over TLS, :mod:`spoolq.tls`)
binds the sockets, then starts
this module as a child process that inherits them, dies with its parent (``PR_SET_PDEATHSIG``) and
is started again by :class:`~spoolq.disque.supervisor.Supervisor` if it dies alone. The socket may
also come from systemd or from an older generation of the service (:mod:`spoolq.cli.listen_sockets`).

A stop (SIGTERM) is graceful (:func:`_drain`): the listener stops accepting, blocked GETJOBs are
answered with a null reply, as at their timeout, each connection is closed once it has answered
what it read; a client reconnects to whichever process serves the socket next.

Metrics: every command answered, the messages it moved and the GETJOBs blocked are counted
into the multiprocess directory the HTTP workers' ``/metrics`` reads (:mod:`spoolq.disque.meter`).

Authentication: with API keys configured, a connection acts as the config's ``anonymous``
principal until ``AUTH <key>`` (or ``HELLO <proto> AUTH <user> <key>``); without one every command
but AUTH, PING, QUIT, HELLO, CLIENT and COMMAND answers ``-NOAUTH Authentication required.``.
Permissions are the HTTP doors' ``queue|<action>|<disque queue name>``.

Protocol: a connection speaks RESP2 until ``HELLO 3`` (:mod:`spoolq.disque.protocol`), which
redis-py 8 and the Disque clients built on it send on connect.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import logging
import os
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from spoolq import job_ids as ids
from spoolq.auth import OPEN, Authenticator, Principal
from spoolq.disque import args as A
from spoolq.disque.blocking import Dispatcher, Waiter
from spoolq.disque.info import Introspection
from spoolq.disque.jobs import JobCommands
from spoolq.disque.meter import CommandMeter, count_messages
from spoolq.disque.protocol import NULL_ARRAY, OK, Error, ProtocolError, RequestReader, encode
from spoolq.disque.queues import QueueCommands
from spoolq.disque.session import Session
from spoolq.disque.supervisor import GRACEFUL_SECONDS, die_with_parent, settings_from_json
from spoolq.errors import SpoolqError, StorageUnavailable
from spoolq.metrics import Metrics
from spoolq.rates import RateHistory
from spoolq.server_settings import Settings
from spoolq.serving import open_store
from spoolq.store.contract import QueueStore
from spoolq.tls import HANDSHAKE_SECONDS, server_context

log = logging.getLogger("spoolq.disque")
#: requests parsed but not yet answered before the connection stops reading (back-pressure)
MAX_QUEUED_REQUESTS = 1024
#: consecutive pipelined ADDJOBs written with one store batch (one group commit)
MAX_ADDJOB_BATCH = 256
#: commands allowed before AUTH when keys are configured
PRE_AUTH = {"auth", "ping", "quit", "hello", "client", "command"}


class Door:
    """The command table and everything a connection shares."""

    def __init__(self, settings: Settings, store: QueueStore, auth: Authenticator, pool: ThreadPoolExecutor,
                 loop: asyncio.AbstractEventLoop, metrics: Metrics | None = None) -> None:
        self.settings = settings
        self.store = store
        self.auth = auth
        self.pool = pool
        self.loop = loop
        prefix = ids.node_prefix(settings.node_id)
        self.node_name = prefix + hashlib.sha1(settings.node_id.encode()).hexdigest()[:32]
        metrics = metrics if metrics is not None else Metrics()
        self.stop_counting = count_messages(store, metrics)
        self.jobs = JobCommands(store, prefix)
        self.dispatcher = Dispatcher(loop, self._fetch_for, self.jobs.release_unsent, store.watcher.rescan)
        store.watcher.add_listener(self.dispatcher.wake)
        self.queues = QueueCommands(self.jobs, self.node_name, self.dispatcher.blocked)
        self.info = Introspection(self)
        self.clients = 0
        self.started = time.time()
        self.stopping = False  # a graceful stop began: connections close once answered
        self.commands: dict[str, tuple[int, Callable[..., Any], bool]] = {
            # name: (arity as Disque's table: n exact, -n at least n; handler; runs in the pool)
            "addjob": (-4, self.jobs.addjob, True),
            "ackjob": (-1, self.jobs.ackjob, True),
            "fastack": (-1, self.jobs.ackjob, True),
            "deljob": (-1, self.jobs.ackjob, True),
            "nack": (-1, self.jobs.nack, True),
            "enqueue": (-1, self.jobs.enqueue, True),
            "queue": (-1, self.jobs.enqueue, True),  # the seed's name for ENQUEUE
            "dequeue": (-1, self.jobs.dequeue, True),
            "working": (2, self.jobs.working, True),
            "qlen": (2, self.queues.qlen, True),
            "qpeek": (3, self.queues.qpeek, True),
            "qstat": (2, self.queues.qstat, True),
            "qscan": (-1, self.queues.qscan, True),
            "scanqueues": (-1, self.queues.qscan, True),  # the seed's name
            "jscan": (-1, self.queues.jscan, True),
            "scanjobs": (-1, self.queues.jscan, True),  # the seed's name
            "show": (2, self.queues.show, True),
            "pause": (-3, self.queues.pause, True),
            "info": (-1, self.info.info, True),
            "hello": (-1, self.info.hello, False),  # takes the session: see _dispatch
            "client": (-2, self.info.client, False),  # takes the session
            "ping": (-1, self.info.ping, False),
            "config": (-2, self.info.config, False),
            "command": (0, self.info.command, False),
            "time": (1, self.info.time, False),
        }
        self.meter = CommandMeter(metrics, [*self.commands, "getjob", "getjobs", "auth", "quit"])
        self.with_session = {"hello", "client"}

    def _watch(self, queues: Sequence[str]) -> None:
        """Tell the dispatcher where the store wakes the waiters of ``queues`` (in a thread)."""
        for queue in queues:
            self.dispatcher.watching(queue, *self.store.wait_point(queue))

    async def _fetch_for(self, w: Waiter, queue: str) -> list[list[Any]]:
        def run() -> list[list[Any]]:
            self._watch([queue])  # before the poll: a send after it wakes the waiter
            return self.jobs.fetch([queue], w.count, w.withcounters)
        return await self.loop.run_in_executor(self.pool, run)

    async def handle(self, session: Session, argv: Sequence[bytes]) -> Any:
        """The reply to one request, counted (:mod:`spoolq.disque.meter`)."""
        started = time.perf_counter()
        reply = await self._dispatch(session, argv)
        self._count(self.meter.label(argv[0]), [reply], time.perf_counter() - started)
        return reply

    def _count(self, label: str, replies: Sequence[Any], seconds: float) -> None:
        """Count answered commands; a metrics failure (its directory gone) never costs a reply."""
        try:
            for reply in replies:
                self.meter.record(label, reply, seconds)
        except OSError as e:
            log.warning("disque: metrics not recorded: %s", e)

    async def _dispatch(self, session: Session, argv: Sequence[bytes]) -> Any:
        name = argv[0].decode("utf-8", "replace").lower()
        if name == "quit":
            return OK
        if name == "auth":
            return self._auth(session, argv)
        entry = self.commands.get(name)
        if name == "getjob" or name == "getjobs":
            arity = -2
        elif entry is None:
            shown = argv[0].decode("utf-8", "replace")[:128]
            return Error(f"unknown command '{shown}'")
        else:
            arity = entry[0]
        if (arity > 0 and arity != len(argv)) or (arity < 0 and len(argv) < -arity):
            return Error(f"wrong number of arguments for '{name}' command")
        who = session.principal
        if who is None:
            if name not in PRE_AUTH:
                return Error("Authentication required.", "NOAUTH")
            who = Principal("anonymous", ())
        try:
            if name in ("getjob", "getjobs"):
                return await self._getjob(session, who, argv)
            assert entry is not None
            _arity, handler, in_pool = entry
            if name in self.with_session:
                return handler(session, argv)
            if in_pool:
                return await self.loop.run_in_executor(self.pool, handler, who, argv)
            return handler(who, argv)
        except Error as e:
            return e
        except StorageUnavailable as e:
            return Error(e.message)
        except SpoolqError as e:
            return Error(e.message)
        except Exception as e:  # a bug must not take the connection down
            log.exception("disque: %s failed", name)
            return Error(f"internal error: {type(e).__name__}")

    async def handle_addjobs(self, session: Session, reqs: Sequence[Sequence[bytes]]) -> list[Any]:
        """Consecutive pipelined ADDJOBs of one connection: one store batch, replies in order."""
        started = time.perf_counter()
        replies = await self._addjobs(session, reqs)
        self._count("ADDJOB", replies, time.perf_counter() - started)
        return replies

    async def _addjobs(self, session: Session, reqs: Sequence[Sequence[bytes]]) -> list[Any]:
        if session.principal is None:
            return [Error("Authentication required.", "NOAUTH")] * len(reqs)
        out: list[Any] = [Error("wrong number of arguments for 'addjob' command") if len(r) < 4 else None
                          for r in reqs]
        good = [r for r in reqs if len(r) >= 4]
        try:
            replies = iter(await self.loop.run_in_executor(self.pool, self.jobs.addjobs, session.principal, good))
        except SpoolqError as e:
            replies = iter([Error(e.message)] * len(good))
        except Exception as e:
            log.exception("disque: pipelined ADDJOB failed")
            replies = iter([Error(f"internal error: {type(e).__name__}")] * len(good))
        return [o if o is not None else next(replies) for o in out]

    def _auth(self, session: Session, argv: Sequence[bytes]) -> Any:
        if len(argv) not in (2, 3):
            return Error("wrong number of arguments for 'auth' command")
        return self.authenticate(session, argv[-1]) or OK

    def authenticate(self, session: Session, raw_key: bytes) -> Error | None:
        """AUTH's check (the user name, if any, is ignored): None when ``session`` now acts as the
        key's principal, else the error to answer."""
        if self.auth.open:
            return Error("Client sent AUTH, but no password is set")
        key = raw_key.decode("utf-8", "replace")
        who = self.auth.principal(key, None) if key else None
        if who is None:
            return Error("invalid password")
        session.principal = who
        return None

    async def _getjob(self, session: Session, who: Principal, argv: Sequence[bytes]) -> Any:
        opts = A.parse_getjob(argv)
        for q in opts.queues:
            self.jobs.authorize(who, "poll", q)
        rows = await self.loop.run_in_executor(self.pool, self.jobs.fetch, opts.queues, opts.count,
                                               opts.withcounters)
        if rows or opts.nohang:
            if session.closed and rows:
                await self.loop.run_in_executor(self.pool, self.jobs.release_unsent, rows)
            return rows or NULL_ARRAY
        await self.loop.run_in_executor(self.pool, self._watch, opts.queues)
        w = self.dispatcher.block(opts.queues, opts.count, opts.withcounters,
                                  opts.timeout_ms / 1000 if opts.timeout_ms else None)
        session.waiter = w
        try:
            with self.meter.waiting(opts.queues):
                got = await w.future
        finally:
            session.waiter = None
        return got if got else NULL_ARRAY


class Connection(asyncio.Protocol):
    def __init__(self, door: Door, live: set[Connection] | None = None) -> None:
        self.door = door
        self.live = live if live is not None else set()  # every open connection of the listener
        self.reader = RequestReader(door.settings.max_body_bytes + 65_536)
        self.requests: deque[Sequence[bytes] | ProtocolError] = deque()
        self.transport: asyncio.Transport | None = None
        self.session = Session(OPEN if door.auth.open else door.auth.principal(None, None))
        self.task: asyncio.Task[None] | None = None
        self.paused = False
        self.writable = asyncio.Event()  # cleared while the client is not reading its replies
        self.writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.door.clients += 1
        self.live.add(self)
        if self.door.stopping:
            self.close_when_idle()

    def data_received(self, data: bytes) -> None:
        if self.session.closed or (self.requests and isinstance(self.requests[-1], ProtocolError)):
            return
        try:
            self.reader.feed(data)
            while (req := self.reader.next()) is not None:
                if req:
                    self.requests.append(req)
        except ProtocolError as e:
            self.requests.append(e)
        if len(self.requests) > MAX_QUEUED_REQUESTS and self.transport is not None and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        if self.task is None and self.requests:
            self.task = self.door.loop.create_task(self._serve())

    async def _serve(self) -> None:
        out = bytearray()
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
                if not self.requests or len(out) > 65_536:
                    self._write(out)
                    out = bytearray()
                if req[0].lower() == b"quit":
                    self._close()
                    return
                if self.paused and len(self.requests) < MAX_QUEUED_REQUESTS // 2 and self.transport is not None:
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
        """Close the connection now if it has nothing to answer (or ``now``), else once it has."""
        if now or (self.task is None and not self.requests):
            self._close()

    @staticmethod
    def _is_addjob(req: Sequence[bytes] | ProtocolError) -> bool:
        return not isinstance(req, ProtocolError) and req[0].lower() == b"addjob"

    def _write(self, out: bytearray) -> None:
        if out and self.transport is not None and not self.transport.is_closing():
            self.transport.write(bytes(out))
        out.clear()

    def _close(self) -> None:
        self.session.closed = True
        if self.transport is not None:
            self.transport.close()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

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
    """Serve RESP on ``sock`` (clear text) and ``tls_sock`` (TLS, :mod:`spoolq.tls`) until SIGTERM."""
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

    servers = []
    if sock is not None:
        servers.append(await loop.create_server(connect, sock=sock))
    if tls_sock is not None:
        servers.append(await loop.create_server(connect, sock=tls_sock, ssl=server_context(settings),
                                                ssl_handshake_timeout=HANDSHAKE_SECONDS))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready()
    try:
        await stop.wait()
        await _drain(servers, door, connections)
    finally:
        for server in servers:
            server.close()
        pool.shutdown(wait=False, cancel_futures=True)
        store.close()


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
    deadline = time.monotonic() + GRACEFUL_SECONDS
    while connections and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
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
