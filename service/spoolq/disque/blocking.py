"""Blocked GETJOBs: waiting costs a future and a list entry, never a thread.

A GETJOB that found nothing registers a :class:`Waiter` under each of its queues. The store's
watcher calls :meth:`Dispatcher.wake` (from whatever thread sent, or from its inotify thread
for sends by other processes); the event loop then *drains* that queue: it polls for the
oldest waiter not already being served, hands it what it got, and goes on while jobs keep
coming. One poll runs per queue at a time, so a thousand clients blocked on one queue cost
one poll per wake-up, not a thousand. A waiter on several queues is polled for one of them at a
time; a drain of another of its queues that finds it busy is taken up again when that poll ends
(never left to the next tick, whose drain could find it busy again). Before each poll for its
waiters the dispatcher reads the queue's :meth:`~spoolq.store.contract.QueueStore.wait_point`:
the key the store wakes it by, and how often it must poll without a wake-up. A tick re-drains
every queue with waiters that often (sends from other nodes of a shared file system, claims that
expired in other processes, delays that came due): ``rescan`` seconds, or 50 ms while a queue
that has waiters needs it (inotify missing, or the queue does not exist yet).

A waiter whose client disconnected while its poll was in flight gets its jobs released. When
the listener stops (:meth:`Dispatcher.stop`), every waiter is answered as its timeout would: a
null reply, after which the client asks again (and reaches the process now serving the socket).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("spoolq.disque")
Fetch = Callable[["Waiter", str], Awaitable[list[list[Any]]]]


@dataclass(eq=False)
class Waiter:
    queues: tuple[str, ...]
    count: int
    withcounters: bool
    future: asyncio.Future[list[list[Any]] | None]
    busy: bool = False
    expired: bool = False
    gone: bool = False  # the client disconnected
    handle: asyncio.TimerHandle | None = field(default=None, repr=False)


class Dispatcher:
    def __init__(self, loop: asyncio.AbstractEventLoop, fetch: Fetch, release: Callable[[list[list[Any]]], Any],
                 rescan: float = 1.0) -> None:
        self.loop = loop
        self.fetch = fetch
        self.release = release  # called (in a thread) with rows claimed for a client that went away
        self.rescan = rescan
        self.by_queue: dict[str, list[Waiter]] = {}
        #: the store's wake-up key of each queue with waiters (``QueueStore.wait_point``), both ways
        self.by_key: dict[str, str] = {}
        self.key_of: dict[str, str] = {}
        self.dirty: set[str] = set()
        self.draining: set[str] = set()
        #: queues whose drain found only waiters busy with a poll of another of their queues: each is
        #: drained again as soon as such a poll ends (else a waiter on several queues could have its
        #: later queues passed over at every tick while its first one is polled)
        self.deferred: set[str] = set()
        #: how often each queue with waiters must be re-polled without a wake-up (the store's
        #: answer for it); the tick runs as often as the shortest of them asks
        self.step_of: dict[str, float] = {}
        self.stopping = False
        self._tick_task: asyncio.Task[None] | None = None

    def tick_step(self) -> float:
        """How long the tick sleeps now: ``rescan``, or less while a queue with waiters asks for
        less (one that does not exist yet: 50 ms), and ``rescan`` again once none does."""
        return min(self.step_of.values(), default=self.rescan)

    def blocked(self, queue: str) -> int:
        return len(self.by_queue.get(queue, ()))

    def total_blocked(self) -> int:
        return len({id(w) for ws in self.by_queue.values() for w in ws})

    # called from any thread
    def watching(self, queue: str, key: str, _generation: int, step: float) -> None:
        """Where the store wakes waiters of ``queue`` (its :meth:`QueueStore.wait_point`, read
        before each poll for them) and how often they must poll without a wake-up."""
        old = self.key_of.get(queue)
        if old != key:
            if old is not None:
                self.by_key.pop(old, None)
            self.by_key[key], self.key_of[queue] = queue, key
        self.loop.call_soon_threadsafe(self._note_step, queue, step)

    def _note_step(self, queue: str, step: float) -> None:
        if queue in self.by_queue:  # in the loop's thread: a queue whose waiters are gone keeps none
            self.step_of[queue] = step

    def wake(self, key: str) -> None:
        name = self.by_key.get(key)
        if name is not None:
            self.loop.call_soon_threadsafe(self.kick, name)

    def kick(self, queue: str) -> None:
        if queue not in self.by_queue:
            return
        self.dirty.add(queue)
        if queue not in self.draining:
            self.draining.add(queue)
            self.loop.create_task(self._drain(queue))

    async def _drain(self, queue: str) -> None:
        try:
            while queue in self.dirty:
                self.dirty.discard(queue)
                while True:
                    waiting = [w for w in self.by_queue.get(queue, ()) if not w.future.done()]
                    w = next((w for w in waiting if not w.busy), None)
                    if w is None:
                        if waiting:
                            self.deferred.add(queue)
                        break
                    w.busy = True
                    try:
                        rows = await self.fetch(w, queue)
                    except Exception:  # storage trouble: the waiter keeps waiting, the tick retries
                        log.exception("disque: fetch for a blocked GETJOB failed")
                        rows = []
                    finally:
                        w.busy = False
                        self._kick_deferred(w.queues)
                    if rows:
                        self._finish(w, rows)
                        continue
                    if w.expired or w.gone:
                        self._finish(w, None)
                        continue
                    break
        finally:
            self.draining.discard(queue)

    def _kick_deferred(self, queues: tuple[str, ...]) -> None:
        """A waiter's poll ended: drain again those of its queues a drain passed over meanwhile."""
        for q in queues:
            if q in self.deferred:
                self.deferred.discard(q)
                self.kick(q)

    def _finish(self, w: Waiter, rows: list[list[Any]] | None) -> None:
        for q in w.queues:
            ws = self.by_queue.get(q)
            if ws is not None:
                with contextlib.suppress(ValueError):
                    ws.remove(w)
                if not ws:
                    del self.by_queue[q]
                    self.deferred.discard(q)
                    self.by_key.pop(self.key_of.pop(q, ""), None)
                    self.step_of.pop(q, None)
        if w.handle is not None:
            w.handle.cancel()
        if w.gone and rows:
            self.loop.run_in_executor(None, self.release, rows)
            rows = None
        if not w.future.done():
            w.future.set_result(rows)

    def stop(self) -> None:
        """The listener is stopping: every waiter is answered as its timeout would (no jobs), and so
        is every GETJOB that would block from now on."""
        self.stopping = True
        for w in {id(w): w for ws in self.by_queue.values() for w in ws}.values():
            self._expire(w)

    def block(self, queues: tuple[str, ...], count: int, withcounters: bool, timeout: float | None) -> Waiter:
        w = Waiter(queues, count, withcounters, self.loop.create_future())
        if self.stopping:
            w.expired = True
            w.future.set_result(None)
            return w
        for q in queues:
            self.by_queue.setdefault(q, []).append(w)
        if timeout:
            w.handle = self.loop.call_later(timeout, self._expire, w)
        for q in queues:  # a job may have landed between the first fetch and now
            self.kick(q)
        if self._tick_task is None:
            self._tick_task = self.loop.create_task(self._tick())
        return w

    def _expire(self, w: Waiter) -> None:
        w.expired = True
        if not w.busy:
            self._finish(w, None)

    def cancel(self, w: Waiter) -> None:
        """The client went away: drop the waiter (jobs claimed for it meanwhile are released)."""
        w.gone = True
        if not w.busy:
            self._finish(w, None)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.tick_step())
            for q in list(self.by_queue):
                self.kick(q)
