"""The commit journal's thread (one per process): checkpoints and prepared files, off the send path.

:class:`Checkpointer` runs the work of :class:`~spoolq.store.journal.JournalCommit` that no sender
should wait for:

* **Preparing the next journal file** (:func:`~spoolq.store.fileops.write_zeros`): ``PREPARED_BYTES`` of real zeros
  written, ``fsync``'d, and the directory ``fsync``'d, before the file takes a record. Asked for
  when the process has no prepared file; it runs before any checkpoint that is due (a checkpoint's
  ``syncfs`` may take seconds, a preparation takes one short sequential write).
* **The timed checkpoint**: once the oldest record no mark covers is ``CHECKPOINT_SECONDS`` old, a
  ``syncfs`` (unless one begun after every record already completed), a mark, and the deletion of
  the retired files (full files, already ``fdatasync``'d by the flush that retired them, so their
  records are durable; they wait for a ``syncfs`` that makes their messages durable too). Under
  steady load that is one checkpoint every ``CHECKPOINT_SECONDS``; a process that stops sending
  gets its last records covered ``CHECKPOINT_SECONDS`` after the first of them.

A failed checkpoint keeps its files pending and is tried again after ``RETRY_SECONDS`` (a
preparation may run meanwhile); a failed
preparation leaves the process on an appended file (see the journal's docstring). Files left by a
process that died are handled by :mod:`spoolq.store.recovery`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from spoolq.store import process

#: (path, ``time.monotonic_ns()`` when it was retired)
Retired = tuple[str, int]

#: guards a thread's start (re-made in a forked child, where a copy may be held)
_START_LOCK = threading.Lock()


def _new_start_lock() -> None:
    global _START_LOCK
    _START_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_start_lock)


#: how long a closing store waits for the journal thread's last preparation or checkpoint (seconds)
STOP_WAIT = 30.0


class Checkpointer:
    """The thread of this process that checkpoints and prepares journal files (module docstring).

    ``checkpoint(retired)`` makes every record appended so far and the records of ``retired``
    redundant and deletes those files (raises OSError on failure); ``due()`` says in how many
    seconds the timed checkpoint is due (0: now; None: no record waits for one); ``prepare()``
    writes the next file (it never raises).
    """

    #: pause before a failed checkpoint is tried again
    RETRY_SECONDS = 1.0

    def __init__(self, checkpoint: Callable[[list[Retired]], None], due: Callable[[], float | None],
                 prepare: Callable[[], None]) -> None:
        self._checkpoint = checkpoint
        self._due = due
        self._prepare = prepare
        self._pid = -1
        self.thread: threading.Thread | None = None
        self._fresh()

    def _fresh(self) -> None:
        """New locks and no pending work: for the first use, and in a forked child (whose copied
        locks may have been held by a parent thread, and whose parent's files are the parent's)."""
        self._cond = threading.Condition()
        self._running = threading.Lock()  # held while a checkpoint or a preparation runs
        self._pending: list[Retired] = []
        self._stopped = False
        self._prepare_wanted = False
        self._untimed = False  # waiting with no checkpoint due: an append must wake it
        self._retry_at = 0.0  # monotonic time before which a failed checkpoint is not tried again

    def _ensure_thread(self) -> None:
        if self._pid != process.pid():
            with _START_LOCK:
                if self._pid != process.pid():
                    self._fresh()
                    self.thread = threading.Thread(target=self._run, name="spoolq-journal-checkpoint", daemon=True)
                    self.thread.start()
                    self._pid = process.pid()

    def submit(self, files: list[Retired]) -> None:
        """Files for the next checkpoint (the timed one: a retired file waits for it)."""
        self._ensure_thread()
        with self._cond:
            self._pending.extend(files)
            self._cond.notify()

    def wake(self, prepare: bool) -> None:
        """A record was appended: a thread waiting with no checkpoint due looks again; with
        ``prepare``, the process has no prepared file and none is being made."""
        self._ensure_thread()
        with self._cond:
            if prepare:
                self._prepare_wanted = True
                self._cond.notify()
            elif self._untimed:
                self._cond.notify()

    def stop(self) -> None:
        """End the thread once nothing is pending (the store is closing), and wait for it: a
        preparation asked for before the close may still be running, and it removes its file only
        when it ends (the journal is closing, so the file is not taken)."""
        if self._pid == process.pid():
            with self._cond:
                self._stopped = True
                self._cond.notify()
            thread = self.thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(STOP_WAIT)

    def take(self) -> list[Retired]:
        """Every pending file, once no checkpoint or preparation is running (for a synchronous
        checkpoint)."""
        if self._pid != process.pid():
            return []
        with self._running, self._cond:
            pending, self._pending = self._pending, []
            return pending

    def _next(self) -> str:
        """Wait for work: ``prepare``, ``checkpoint`` or ``stop`` (the condition is held)."""
        while True:
            if self._stopped and not self._pending:
                return "stop"
            if self._prepare_wanted and not self._stopped:
                self._prepare_wanted = False
                return "prepare"
            due = 0.0 if self._stopped else self._due()
            if due == 0 or (due is None and self._pending):
                due = max(0.0, self._retry_at - time.monotonic())
                if due == 0:
                    return "checkpoint"
            self._untimed = due is None
            self._cond.wait(due)
            self._untimed = False

    def _run(self) -> None:
        while True:
            with self._cond:
                work = self._next()
            if work == "stop":
                return
            with self._running:
                if work == "prepare":
                    self._prepare()
                    continue
                with self._cond:
                    batch, self._pending = self._pending, []
                try:
                    self._checkpoint(batch)
                except OSError:  # the files are pending again
                    self._retry_at = time.monotonic() + self.RETRY_SECONDS
