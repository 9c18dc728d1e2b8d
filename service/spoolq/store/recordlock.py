"""Whole-file POSIX record locks with one holder per process: a FIFO queue's ``lock`` and every
queue's ``settings.lock``.

A record lock (``lockf``) is what NFS (NLM) and GlusterFS (the locks translator) enforce between
nodes, but it belongs to a process, not to a thread or a descriptor: a second thread of the
holding process is granted it at once, and closing *any* descriptor of the file drops all of the
process's locks on it. So a thread first takes a mutex, then opens the file, locks it, and closes
it when done; while it holds the mutex no other descriptor of the file is open in the process.

The mutex must be the same for every thread of the process that locks the file, whichever queue
handle or store it came through (a queue handle is made again when ``meta.json`` was missing for
an instant, as while a delete-if-empty moves the queue aside, and a thread may still be using
the old one). So the mutexes live in a process-wide table keyed by the lock file's path, with a
count of the threads inside :func:`exclusive`; the last to leave removes the entry, so nothing
outlives its use. Callers pass the real path (absolute, no symlink): two spellings of one file
would get two mutexes.

A crash releases the dead process's locks (the kernel, or GlusterFS when the client's connection
drops); nothing on disk needs recovering. The lock files are empty and never removed while their
queue exists.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator

from spoolq.store import damage


class _Entry:
    __slots__ = ("mutex", "users")

    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.users = 0


_TABLE: dict[str, _Entry] = {}
_TABLE_GUARD = threading.Lock()


@contextlib.contextmanager
def exclusive(lock_file: str) -> Iterator[None]:
    """Hold ``lock_file``'s record lock, excluding every other thread, process and node. Creates
    the file if its directory exists; an ``OSError`` of opening it (``FileNotFoundError`` when the
    directory is gone) reaches the caller, which says what could not be locked."""
    with _TABLE_GUARD:
        entry = _TABLE.get(lock_file)
        if entry is None:
            entry = _TABLE[lock_file] = _Entry()
        entry.users += 1
    try:
        with entry.mutex:
            try:
                fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
            except OSError as e:
                if damage.is_damage(e):
                    damage.report(lock_file, "taking a queue's lock")
                raise
            try:
                yield
            finally:
                os.close(fd)
    finally:
        with _TABLE_GUARD:
            entry.users -= 1
            if entry.users == 0:
                del _TABLE[lock_file]


def _forget_all_in_child() -> None:
    """A forked child holds none of the parent's locks and runs none of its threads: it starts
    with an empty table and a fresh guard (another thread may have held it at the fork)."""
    global _TABLE_GUARD
    _TABLE_GUARD = threading.Lock()
    _TABLE.clear()


os.register_at_fork(after_in_child=_forget_all_in_child)
