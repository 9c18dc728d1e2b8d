"""The Disque door's command table and what every connection of the listener shares.

:class:`Door` dispatches one request (``argv``) to its command: it checks the arity as Disque's
table gives it, refuses a command other than AUTH, PING, QUIT, HELLO, CLIENT and COMMAND with
``-NOAUTH`` while the connection acts as nobody (keys configured, no ``anonymous`` grant, no AUTH
yet), runs the commands that touch the store in the thread pool, blocks GETJOB without a thread
(:mod:`spoolq.disque.blocking`), writes consecutive pipelined ADDJOBs as one store batch, counts
every command (:mod:`spoolq.disque.meter`), and says which request limits apply to a connection
(:meth:`Door.limits`: :mod:`spoolq.disque.reader`'s before and after AUTH). The connections and
the process are :mod:`spoolq.disque.server`'s.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from spoolq import job_ids as ids
from spoolq.auth import Authenticator, Principal
from spoolq.disque import args as A
from spoolq.disque.blocking import Dispatcher, Waiter
from spoolq.disque.info import Introspection
from spoolq.disque.jobs import JobCommands
from spoolq.disque.meter import CommandMeter, count_messages
from spoolq.disque.protocol import NULL_ARRAY, OK, Error
from spoolq.disque.queues import QueueCommands
from spoolq.disque.reader import Limits
from spoolq.disque.session import Session
from spoolq.errors import SpoolqError
from spoolq.metrics import Metrics
from spoolq.server_settings import Settings
from spoolq.store.contract import QueueStore

log = logging.getLogger("spoolq.disque")
#: commands allowed before AUTH when keys are configured
PRE_AUTH = {"auth", "ping", "quit", "hello", "client", "command"}


#: a command's handler: the caller and the request
Handler = Callable[[Principal, Sequence[bytes]], Any]
#: the handler of a command about the connection itself (HELLO, CLIENT): the session and the request
SessionHandler = Callable[[Session, Sequence[bytes]], Any]
#: GETJOB (and the seed's GETJOBS) blocks without a thread: :meth:`Door._getjob`
GETJOB = frozenset({"getjob", "getjobs"})
GETJOB_ARITY = -2


class Command(NamedTuple):
    """A command of the table: Disque's arity (n: exactly n words, -n: at least n) and its handler,
    which runs in the thread pool unless ``in_pool`` is false (it touches no store)."""

    arity: int
    handler: Handler
    in_pool: bool = True


class SessionCommand(NamedTuple):
    """A command about the connection: its handler takes the session, and runs on the event loop."""

    arity: int
    handler: SessionHandler


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
        self.commands: dict[str, Command | SessionCommand] = {
            "addjob": Command(-4, self.jobs.addjob),
            "ackjob": Command(-1, self.jobs.ackjob),
            "fastack": Command(-1, self.jobs.ackjob),
            "deljob": Command(-1, self.jobs.ackjob),
            "nack": Command(-1, self.jobs.nack),
            "enqueue": Command(-1, self.jobs.enqueue),
            "queue": Command(-1, self.jobs.enqueue),  # the seed's name for ENQUEUE
            "dequeue": Command(-1, self.jobs.dequeue),
            "working": Command(2, self.jobs.working),
            "qlen": Command(2, self.queues.qlen),
            "qpeek": Command(3, self.queues.qpeek),
            "qstat": Command(2, self.queues.qstat),
            "qscan": Command(-1, self.queues.qscan),
            "scanqueues": Command(-1, self.queues.qscan),  # the seed's name
            "jscan": Command(-1, self.queues.jscan),
            "scanjobs": Command(-1, self.queues.jscan),  # the seed's name
            "show": Command(2, self.queues.show),
            "pause": Command(-3, self.queues.pause),
            "info": Command(-1, self.info.info),
            "hello": SessionCommand(-1, self.info.hello),
            "client": SessionCommand(-2, self.info.client),
            "ping": Command(-1, self.info.ping, in_pool=False),
            "config": Command(-2, self.info.config, in_pool=False),
            "command": Command(0, self.info.command, in_pool=False),
            "time": Command(1, self.info.time, in_pool=False),
        }
        self.meter = CommandMeter(metrics, [*self.commands, "getjob", "getjobs", "auth", "quit"])
        self.authenticated_limits = Limits.after_auth(settings.max_body_bytes + 65_536)
        self.unauthenticated_limits = Limits.before_auth()

    def limits(self, session: Session) -> Limits:
        """What ``session``'s requests may declare (:mod:`spoolq.disque.reader`)."""
        return self.authenticated_limits if session.authenticated else self.unauthenticated_limits

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
        if entry is None and name not in GETJOB:
            shown = argv[0].decode("utf-8", "replace")[:128]
            return Error(f"unknown command '{shown}'")
        arity = GETJOB_ARITY if entry is None else entry.arity
        if (arity > 0 and arity != len(argv)) or (arity < 0 and len(argv) < -arity):
            return Error(f"wrong number of arguments for '{name}' command")
        who = session.principal
        if who is None:
            if name not in PRE_AUTH:
                return Error("Authentication required.", "NOAUTH")
            who = Principal("anonymous", ())
        try:
            return await self._run(entry, session, who, argv)
        except Error as e:
            return e
        except SpoolqError as e:  # StorageUnavailable among them
            return Error(e.message)
        except Exception as e:  # a bug must not take the connection down
            log.exception("disque: %s failed", name)
            return Error(f"internal error: {type(e).__name__}")

    async def _run(self, entry: Command | SessionCommand | None, session: Session, who: Principal,
                   argv: Sequence[bytes]) -> Any:
        """Run a command that may run (``entry`` None: GETJOB)."""
        if entry is None:
            return await self._getjob(session, who, argv)
        if isinstance(entry, SessionCommand):
            return entry.handler(session, argv)
        if entry.in_pool:
            return await self.loop.run_in_executor(self.pool, entry.handler, who, argv)
        return entry.handler(who, argv)

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
        session.authenticated = True
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
