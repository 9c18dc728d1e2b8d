"""Group commit by tickets: one flush makes many callers' writes durable.

Used for both of the store's flushes: :class:`~spoolq.store.group_commit.GroupCommit` (``syncfs`` of
the root, or ``fsync`` of the files and directories a group wrote) and
:class:`~spoolq.store.journal.JournalCommit` (``fdatasync`` of the commit journal).

Each caller of :meth:`TicketedFlush.flush` takes the next ticket after its writes. If no flush
is running, it becomes the *leader*: it notes the highest ticket issued so far, runs the flush
outside the lock and then publishes that ticket as durable. Every caller whose ticket is covered
returns; the others wait, and one of them leads the next flush. So a caller returns only after a
flush that *started after* its call began, and while one flush runs, every caller that arrives
meanwhile is served by the next one.

A writer may :meth:`~TicketedFlush.announce` itself when it begins the writes it will flush (a send,
before it writes its files), and then passes ``announced=True`` to :meth:`~TicketedFlush.flush` (or
calls :meth:`~TicketedFlush.withdraw` if it fails before that). A leader that finds announced writers
waits for them to take their tickets before its flush starts and notes the highest ticket: one flush
then covers writers that would otherwise each wait for the next one. It waits no longer than the
last flush took, nor than ``GATHER_SECONDS`` (a writer that has no core yet must not hold a flush
back longer than the flush itself costs: on a fast disk the wait shrinks with the flush).
The wait comes before the flush starts, so the rule above holds unchanged. Through HTTP (64
connections, 4 workers, ``--flush journal``) it made a flush cover 5.6-5.7 sends instead of 3.8-3.9
(docs/performance.md).

A failed flush fails every caller it covered, with
:class:`~spoolq.errors.StorageUnavailable`, and only those: a later successful flush does not
hide the failure (after an I/O error the kernel may have dropped the dirty pages).

``on_flush``, when set, is called by each leader after a successful flush with the flush's
duration in seconds and how many tickets (waiting writers) it made durable; it runs outside the
lock, and an exception from it is ignored.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from spoolq.errors import storage_error
from spoolq.store import process

FlushListener = Callable[[float, int], None]

#: how long a leader waits, at most, for announced writers to take their tickets before it flushes
#: (a writer announces itself before a few file writes: tens of microseconds when it has a core);
#: never longer than the last flush took
GATHER_SECONDS = 0.001


class TicketedFlush:
    def __init__(self, flush_once: Callable[[], None], doing: str) -> None:
        """``flush_once`` makes everything written before it was called durable (or raises
        ``OSError``); ``doing`` names it in the error (``"flushing to stable storage"``)."""
        self._flush_once = flush_once
        self._doing = doing
        lock = threading.Lock()
        self._cond = threading.Condition(lock)
        #: a leader gathering announced writers waits on this one (same lock): only it is woken
        self._gathered = threading.Condition(lock)
        self._announced = 0
        self._announced_pid = process.pid()  # a forked child starts with none
        self._gathering = False
        self._last_seconds = 0.0  # how long the last successful flush took
        #: tickets handed out, and the highest one known durable
        self.issued = 0
        self.durable = 0
        self._failed_upto = 0
        self._error: OSError | None = None
        self._syncing = False
        self.on_flush: FlushListener | None = None

    def announce(self) -> None:
        """A writer has begun writes it will flush soon: a leader starting meanwhile waits for its
        ticket (at most ``GATHER_SECONDS``). Each announcement ends with ``flush(announced=True)`` or
        :meth:`withdraw`."""
        with self._cond:
            if self._announced_pid != process.pid():
                self._announced, self._announced_pid = 0, process.pid()
            self._announced += 1

    def withdraw(self) -> None:
        """An announced writer will not call :meth:`flush` (its writes failed)."""
        with self._cond:
            self._arrived()

    def _arrived(self) -> None:
        """One announced writer fewer (the lock is held)."""
        if self._announced_pid == process.pid() and self._announced > 0:
            self._announced -= 1
            if self._announced == 0 and self._gathering:
                self._gathered.notify()

    def flush(self, announced: bool = False) -> None:
        """Return once a flush that started after this call has succeeded. ``announced``: this
        caller announced itself (:meth:`announce`)."""
        with self._cond:
            if announced:
                self._arrived()
            self.issued += 1
            ticket = self.issued
            while True:
                # failure first: a later successful flush must not hide the failure of the flush that
                # covered this ticket
                if self._failed_upto >= ticket and self._error is not None:
                    raise storage_error(self._error, self._doing) from self._error
                if self.durable >= ticket:
                    return
                if self._syncing:
                    self._cond.wait()
                    continue
                self._lead()

    def _lead(self) -> None:
        """Run one flush for every ticket issued so far (called with the lock held, returns with it)."""
        self._syncing = True
        if self._announced > 0 and self._announced_pid == process.pid():
            self._gathering = True
            self._gathered.wait_for(lambda: self._announced <= 0, min(GATHER_SECONDS, self._last_seconds))
            self._gathering = False
        target = self.issued
        covered = target - self.durable
        self._cond.release()
        error: OSError | None = None
        try:
            started = time.perf_counter()
            self._flush_once()
            seconds = time.perf_counter() - started
            self._last_seconds = seconds
            listener = self.on_flush
            if listener is not None:
                with contextlib.suppress(Exception):
                    listener(seconds, covered)
        except OSError as e:
            error = e
        finally:
            self._cond.acquire()
            self._syncing = False
            if error is None:
                self.durable = max(self.durable, target)
            else:
                self._failed_upto, self._error = target, error
            self._cond.notify_all()
