"""Parked long polls: the contract between a door's poll and the gunicorn worker.

A long poll (EmoDB/MQ ``wait``, SQS ``WaitTimeSeconds``) that finds nothing does not block a
thread when the worker can *park* it. The worker
(:class:`~spoolq.http.gunicorn.worker.SpoolqThreadWorker`) puts a :class:`LongPoll` in the WSGI
environ under :data:`ENVIRON_KEY`; a door polls through
:func:`spoolq.http.longpoll.poll` (``Services.poll``), which then

1. fixes the request's deadline on its first run (``wait`` after the worker saw the request
   arrive, so time spent queued for a thread counts; later runs keep it);
2. arms the queue's watch and reads its generation (:meth:`LongPoll.park` records both), then
   polls once without waiting: reading the generation first means a message that lands after
   this poll always bumps it, so no wake-up is lost;
3. returns what it found; if that is nothing and the deadline is still ahead, it marks the
   request *parked* and the door renders its ordinary empty answer.

The worker does not send a parked request's answer. It keeps the connection (no thread) in a
waiting set keyed by queue and re-runs the whole request, in its thread pool, when the queue's
generation moves on (a send in this process, or inotify), when the queue's periodic re-scan is
due (changes made through other nodes are invisible to inotify), or it sends the kept empty
answer at the deadline. A re-run is the same request with the same deadline, so its answer is
exactly the one a blocking poll would have given at that moment. A door must therefore do
nothing irreversible after an empty poll of a parked request (SQS FIFO: the receive-attempt
cache is not filled; see :func:`is_parked`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spoolq.store.contract import Wakeups

#: where the worker puts the request's :class:`LongPoll` in the WSGI environ
ENVIRON_KEY = "spoolq.longpoll"


@dataclass
class LongPoll:
    """One HTTP request's long-poll state, kept across its re-runs."""

    can_park: bool = True
    arrived: float | None = None  # time.monotonic() when the worker saw the request come in
    deadline: float | None = None  # time.monotonic() at which the wait ends
    started: float | None = None  # time.perf_counter() of the first run (for request metrics)
    parked: bool = False  # this run found nothing and parked
    full: bool = False  # the last run's poll returned as many messages as it asked for
    key: str = ""  # the queue's watch key (its path)
    seen: int = 0  # the queue's generation before the last poll
    rescan: float = 1.0  # re-poll the queue at least this often while parked
    watcher: Wakeups | None = None  # the store's wake-ups, None while not parked
    on_done: Callable[[], None] | None = None  # called once when the request is finally answered
    on_expiry: Callable[[], None] | None = None  # called when the kept empty answer is sent

    def start_run(self) -> None:
        self.parked = False
        self.full = False

    def remaining(self) -> float:
        return 0.0 if self.deadline is None else self.deadline - time.monotonic()

    def park(self, key: str, seen: int, watcher: Wakeups, rescan: float) -> None:
        self.parked, self.key, self.seen, self.watcher, self.rescan = True, key, seen, watcher, rescan

    def done(self, *, expired: bool = False) -> None:
        hooks = (self.on_done, self.on_expiry if expired else None)
        self.on_done = self.on_expiry = None
        for hook in hooks:
            if hook is not None:
                hook()


def of(environ: dict[str, Any]) -> LongPoll | None:
    slot = environ.get(ENVIRON_KEY)
    return slot if isinstance(slot, LongPoll) else None


def is_parked(environ: dict[str, Any]) -> bool:
    """Whether the current run of this request parked (its empty answer will not be sent)."""
    slot = of(environ)
    return slot is not None and slot.parked

