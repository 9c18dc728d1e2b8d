"""The lock that makes a dedup queue's check-then-write atomic across threads, processes and nodes.

A dedup send reads ``dedup/<sha256>`` (the marker naming the pending copy of that body), checks
that the copy is still pending, and if not writes a new message and a new marker. Two identical
sends that run those steps at the same moment would each miss the other's marker and both store
a copy; a peek or poll that removes the marker of the copy it surfaces could remove the marker a
concurrent send has just written. So every such step runs under the marker's lock:

* ``<queue>/dedup.lock`` is one file per dedup queue. A marker's lock is one byte of it, at the
  offset given by the first 16 bits of the marker's hash (65,536 stripes: unrelated bodies almost
  never wait for each other). POSIX record locks (``lockf``) are what NFS (NLM) and GlusterFS
  (the locks translator) enforce between nodes.
* Record locks belong to a process, not a thread: two threads of one process never wait for
  each other's byte, and closing *any* descriptor of the file drops all of the process's locks
  on it. So a process has exactly one :class:`MarkerLocks` per queue directory, whatever number
  of queue handles it makes (a handle is made again whenever ``meta.json`` is missing for an
  instant, as while a delete-if-empty moves the queue aside): :func:`hold` finds it in a
  process-wide table. Its threads first take one of :data:`MUTEXES` in-process mutexes (the
  stripe modulo that number), then the byte through the one descriptor. :func:`forget` closes
  that descriptor only while no thread is inside :func:`hold` for the queue.
* A sender locks all the stripes of its batch at once, in increasing order (mutexes first, then
  bytes), so two batches never wait for each other in a cycle. The kernel's deadlock check
  knows processes, not threads, and refuses some waits as cycles that are not: those are asked
  for again after a pause. It holds them until its flush is
  done: an identical send that waited is told "duplicate of X" only once X is durable.
* A crash releases the dead process's record locks (the kernel, or GlusterFS when the client's
  connection drops); nothing on disk needs recovering.
* If the queue is deleted and created again, the descriptor points at the old file: after taking
  a byte the holder checks that the path still names the file it locked, and reopens if not.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterable, Iterator

from spoolq.errors import storage_error
from spoolq.store import damage

#: in-process mutexes per queue (threads of one process first serialise on stripe % MUTEXES)
MUTEXES = 64
#: how long a lock refused with EDEADLK (a false positive, see :func:`_lock_byte`) is asked for again
DEADLOCK_RETRY_FOR = 60.0
LOCK_FILE = "dedup.lock"
#: what a lock on a descriptor answers when the file system no longer honours it (a GlusterFS client that
#: reconnected to a brick refuses the descriptors that held locks there)
_STALE_DESCRIPTOR = (errno.EIO, errno.EBADFD, errno.EBADF)


def _lock_byte(fd: int, offset: int) -> None:
    """Wait for one byte. The kernel's deadlock check sees processes, not threads: thread 1 of A
    holding byte x while thread 2 of A waits for B, which waits for x, looks like a cycle and
    gets EDEADLK although thread 1 is about to let go. Locks are taken in one order (see the
    module docstring), so a real cycle cannot form: wait a moment and ask again."""
    pause = 0.0005
    deadline = time.monotonic() + DEADLOCK_RETRY_FOR
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX, 1, offset)
            return
        except OSError as e:
            if e.errno != errno.EDEADLK or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def stripe_of(marker: str) -> int:
    """The byte of ``dedup.lock`` that guards ``marker`` (``.../dedup/<sha256 hex>``)."""
    return int(os.path.basename(marker)[:4], 16)


#: this process's MarkerLocks by the queue directory's real path (callers pass it: two roots
#: spelled differently, through a symlink or relative, must still share one)
_TABLE: dict[str, MarkerLocks] = {}
_TABLE_GUARD = threading.Lock()


@contextlib.contextmanager
def hold(queue_dir: str, markers: Iterable[str]) -> Iterator[None]:
    """Hold the locks of every marker in ``markers`` of the dedup queue at ``queue_dir`` (none:
    a no-op), through this process's one :class:`MarkerLocks` of that queue."""
    stripes = sorted({stripe_of(m) for m in markers})
    if not stripes:
        yield
        return
    with _TABLE_GUARD:
        locks = _TABLE.get(queue_dir)
        if locks is None:
            locks = _TABLE[queue_dir] = MarkerLocks(queue_dir)
        locks.users += 1
    try:
        with locks.hold_stripes(stripes):
            yield
    finally:
        with _TABLE_GUARD:
            locks.users -= 1
            if locks.users == 0:
                if locks.forgotten:
                    _drop(locks)
                else:
                    locks.close_retired()


def forget(queue_dir: str) -> None:
    """This process no longer knows a queue at ``queue_dir`` (its ``meta.json`` is missing): close
    its lock descriptor now, or as the last thread inside :func:`hold` for it leaves."""
    with _TABLE_GUARD:
        locks = _TABLE.get(queue_dir)
        if locks is None:
            return
        if locks.users:
            locks.forgotten = True
        else:
            _drop(locks)


def _drop(locks: MarkerLocks) -> None:
    """Under the table's guard, with no thread inside :func:`hold` for ``locks``."""
    if _TABLE.get(locks.queue_dir) is locks:
        del _TABLE[locks.queue_dir]
    locks.close()


class MarkerLocks:
    """One process's handle on one dedup queue's ``dedup.lock`` (see the module docstring); made
    and found by :func:`hold`, never by a caller."""

    def __init__(self, queue_dir: str) -> None:
        self.queue_dir = queue_dir
        self.path = f"{queue_dir}/{LOCK_FILE}"
        #: threads inside :func:`hold` with this object, and whether :func:`forget` asked for it to
        #: be dropped as the last of them leaves (both guarded by the table's guard)
        self.users = 0
        self.forgotten = False
        self._mutexes = [threading.Lock() for _ in range(MUTEXES)]
        self._fd_guard = threading.Lock()
        self._fd: int | None = None
        self._retired: list[int] = []

    @contextlib.contextmanager
    def hold_stripes(self, stripes: list[int]) -> Iterator[None]:
        """Hold the bytes ``stripes`` (sorted, distinct) and their mutexes."""
        mutexes = sorted({s % MUTEXES for s in stripes})
        for i in mutexes:
            self._mutexes[i].acquire()
        try:
            fd = self._lock_bytes(stripes)
            try:
                yield
            finally:
                self._unlock(fd, stripes)
        finally:
            for i in reversed(mutexes):
                self._mutexes[i].release()

    def _lock_bytes(self, stripes: list[int]) -> int:
        """Lock ``stripes`` on a descriptor of the file the path names now; return the descriptor."""
        for _attempt in range(100):
            fd = self._descriptor()
            taken: list[int] = []
            try:
                for s in stripes:
                    _lock_byte(fd, s)
                    taken.append(s)
                if self._still_current(fd):
                    return fd
            except OSError as e:
                self._unlock(fd, taken)
                if e.errno in _STALE_DESCRIPTOR and _attempt == 0:
                    self._reopen(fd)  # a descriptor a reconnected GlusterFS client refuses: once more, afresh
                    continue
                if damage.is_damage(e):
                    damage.report(self.path, "locking a dedup queue's markers")
                raise storage_error(e, f"locking {self.path}") from e
            except BaseException:
                self._unlock(fd, taken)
                raise
            self._unlock(fd, taken)
            self._reopen(fd)
        raise storage_error(OSError(errno.EAGAIN, "the lock file keeps being replaced", self.path),
                            f"locking {self.path}")

    def _descriptor(self) -> int:
        with self._fd_guard:
            if self._fd is None:
                try:
                    self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                except FileNotFoundError:
                    raise  # the queue is gone: the caller says which
                except OSError as e:
                    if damage.is_damage(e):
                        damage.report(self.path, "opening a dedup queue's marker lock")
                    raise storage_error(e, f"opening {self.path}") from e
            return self._fd

    def _still_current(self, fd: int) -> bool:
        try:
            st = os.stat(self.path)
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ESTALE):
                return False
            raise
        held = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)

    def _reopen(self, stale_fd: int) -> None:
        """Forget a descriptor of a replaced file. Other threads may still hold bytes on it (they
        protect nothing any more) or be about to use it, so it is kept open until :meth:`close`:
        a closed number could be reused by an unrelated file."""
        with self._fd_guard:
            if self._fd == stale_fd:
                self._fd = None
                self._retired.append(stale_fd)

    @staticmethod
    def _unlock(fd: int, stripes: list[int]) -> None:
        for s in stripes:
            with contextlib.suppress(OSError):
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, s)

    def close_retired(self) -> None:
        """Close the descriptors of replaced files; only when no thread is inside :func:`hold`."""
        with self._fd_guard:
            self._close(self._retired)
            self._retired = []

    def close(self) -> None:
        """Close every descriptor; only when no thread can be using them (in a forked child, or
        when :func:`forget` drops this object)."""
        self._close([*self._retired, *([self._fd] if self._fd is not None else [])])
        self._fd, self._retired = None, []

    @staticmethod
    def _close(fds: list[int]) -> None:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _forget_all_in_child() -> None:
    """A forked child holds no record lock (they belong to the parent) and none of its threads
    runs: close its copies of the descriptors (closing them drops nothing of the parent's) and
    start with an empty table and a fresh guard (another thread may have held it at the fork)."""
    global _TABLE_GUARD
    _TABLE_GUARD = threading.Lock()
    for locks in _TABLE.values():
        locks.close()
    _TABLE.clear()


os.register_at_fork(after_in_child=_forget_all_in_child)
