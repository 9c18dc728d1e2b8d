"""When an empty standard bucket may be removed: at once (local disks, CephFS), or only under a guard
(GlusterFS). The guard is a record lock on ``<queue>/buckets.lock``.

**The hazard.** On a GlusterFS distributed volume an ``rmdir`` of a directory and a rename into it
at the same moment can wait for each other for good. Each holds one of the volume's internal locks
on the directory that the other needs: the bricks hold back an rmdir while the directory has locks
granted, and hold back new lock requests on a directory with an rmdir pending. This hung the
distributed test volume once, with a FIFO group's directory (``maintenance.remove_idle_groups``). A
local file system orders the two in the kernel. On CephFS the one MDS orders them. There an rmdir
that comes first makes the rename fail with ENOENT, and
:func:`~spoolq.store.fileops.rename_into` makes the directory again and renames once more. So on
those a poller removes an empty ready bucket once it is past the write window
(:data:`~spoolq.store.handle.WRITE_WINDOW_MS`), as soon as it finds it empty (``cursor.py``).

**What renames into an old standard bucket** (a ready bucket ``ready/<ksec>/<second>`` whose
second is past the write window, a ``delayed/<due-second>`` past its due time, or their ``ksec``
directory):

* a release, a claim expiry, a Disque NACK, ``unclaim_all``, and a poll putting back a message it
  could not read or could not dead-letter. Each returns a claimed message to the bucket of its send
  second, which the id carries (``claiming.py``, ``maintenance.expire_claims``). A renew renames
  within ``claimed/`` and never into a bucket.
* a due delayed message, into the ready bucket of its send second (``maintenance.release_due``);
* a transfer (a move, a dead letter) into the bucket of its new id's second. A dead letter keeps
  its id's time, so that bucket may be hours old (``QueueWriter.transfer``).
* a send, whose ids are made at its start. Usually it names its files within a second, but a slow
  or stalled mount can make that late (``sending.py``). Where removal is guarded, every message
  file is written in the process's temp directory and renamed into place (``message_files.py``),
  never made in place, so each naming can take the lock.
* a deletion's merge: a delete-if-empty that finds its queue made again meanwhile renames the old
  queue's messages into the new one's buckets of the same (old) seconds (``deleting._merge``);
* not a restore (the service is stopped), and not a journal replay (the commit journal runs only on
  local disks).

**The guard (GlusterFS).** Pollers and retention never remove a bucket there. Every rename listed
above holds ``buckets.lock`` shared (:func:`renaming`): many at once, on every node. A send holds it
only when it names its files more than :data:`LATE_MS` after its start. Maintenance's shared pass
removes buckets (``maintenance.remove_empty_buckets``) only while it holds the lock exclusive
(:func:`removing`, which never waits: if anyone is renaming into an old bucket, the pass tries again
next time). It removes only buckets older than :data:`REMOVE_AFTER_MS`. That margin covers a send
that started naming its files within :data:`LATE_MS` and so holds no lock. Such a send would have to
keep naming for more than about 8 s for its rename to meet the rmdir.

**Race rule (why a stale listing is safe).** Under the exclusive lock, maintenance lists each
candidate bucket again and removes it only if that listing is empty. The order is: lock first, then
open and list. Every rename that could target the bucket either finished before the lock was
granted (it held the shared lock, released only after the rename returned) or waits for the lock.
GlusterFS answers a directory listing from the bricks, through a directory handle opened after the
lock was granted. So a listing can miss only changes the lock keeps out. An rmdir of a bucket that
still holds a file fails (ENOTEMPTY) and changes nothing. Listing before taking the lock, or listing
``claimed/`` to guess which messages may come back, would be unsafe: a message can go from
``claimed/`` to the bucket and back between two listings.

**Crash rule.** A record lock dies with its process (the kernel, or GlusterFS when the client's
connection drops), so a crash leaves nothing to recover. An rmdir is atomic. A rename waiting for
the lock waits only while one maintenance pass lists and removes a few directories. A node cut off
while it holds the lock makes the others' releases wait until GlusterFS drops its connection, as
for a FIFO queue's lock.

Record locks belong to a process, not a thread, and closing any descriptor of the file drops all of
the process's locks on it. So a process's threads share one session on the file for each queue. The
first of them opens the file and takes the shared lock. The others join while it is held. The last
to leave closes the file. An exclusive attempt is made only while the process has no session of its
own.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator

from spoolq.store import damage

LOCK_FILE = "buckets.lock"
#: a send that names its files later than this after its start (its ids' time) holds the lock (ms)
LATE_MS = 1000
#: guarded removal leaves buckets (and due delayed buckets) younger than this alone (ms): at least
#: LATE_MS, plus the longest a send's naming of a batch may take, plus the nodes' clock skew
REMOVE_AFTER_MS = 10_000
#: how long a shared lock refused with EDEADLK (the kernel's process-level deadlock check, which a
#: thread holding another record lock can trip without a real cycle) is asked for again (seconds)
DEADLOCK_RETRY_FOR = 60.0


class _Guard:
    """One process's view of one queue's ``buckets.lock``."""

    __slots__ = ("acquiring", "cond", "exclusive", "fd", "path", "sharers", "users")

    def __init__(self, path: str) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.path = path
        self.users = 0  # threads inside renaming() or removing() for this queue (the table's guard)
        self.fd = -1
        self.sharers = 0  # threads inside the process's shared session
        self.acquiring = False  # a thread is opening the session (waiting for the record lock)
        self.exclusive = False  # a thread of this process holds or tries the exclusive lock

    def idle(self) -> bool:
        return not (self.sharers or self.acquiring or self.exclusive)


_TABLE: dict[str, _Guard] = {}
_TABLE_GUARD = threading.Lock()


@contextlib.contextmanager
def _entry(queue_dir: str) -> Iterator[_Guard]:
    """The process's one entry for the queue while the caller uses it; the last user removes it,
    so nothing outlives its use (as in recordlock.py)."""
    with _TABLE_GUARD:
        g = _TABLE.get(queue_dir)
        if g is None:
            g = _TABLE[queue_dir] = _Guard(f"{queue_dir}/{LOCK_FILE}")
        g.users += 1
    try:
        yield g
    finally:
        with _TABLE_GUARD:
            g.users -= 1
            if g.users == 0 and _TABLE.get(queue_dir) is g:
                del _TABLE[queue_dir]


def _lock_shared(fd: int) -> None:
    pause = 0.0005
    deadline = time.monotonic() + DEADLOCK_RETRY_FOR
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH)
            return
        except OSError as e:
            if e.errno != errno.EDEADLK or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


@contextlib.contextmanager
def renaming(queue_dir: str) -> Iterator[None]:
    """Hold the queue's bucket lock shared around renames into its old buckets. Waits only while a
    maintenance pass holds it exclusive. ``queue_dir`` is the queue directory's real path.
    FileNotFoundError if the queue is gone."""
    with _entry(queue_dir) as g, _shared(g):
        yield


@contextlib.contextmanager
def _shared(g: _Guard) -> Iterator[None]:
    with g.cond:
        while g.acquiring or g.exclusive:
            g.cond.wait()
        opening = g.sharers == 0
        if opening:
            g.acquiring = True
        else:
            g.sharers += 1
    if opening:
        try:
            fd = os.open(g.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                _lock_shared(fd)
            except BaseException:
                os.close(fd)
                raise
        except BaseException as e:
            with g.cond:
                g.acquiring = False
                g.cond.notify_all()
            if isinstance(e, OSError) and damage.is_damage(e):
                # refused by the file system (a GlusterFS split-brain): no remover can take it
                # exclusive either (:func:`_exclusive`), so the rename goes ahead without it
                damage.report(g.path, "renaming into an old bucket")
                yield
                return
            raise
        with g.cond:
            g.fd, g.sharers, g.acquiring = fd, 1, False
            g.cond.notify_all()
    try:
        yield
    finally:
        with g.cond:
            g.sharers -= 1
            if g.sharers == 0:
                with contextlib.suppress(OSError):
                    os.close(g.fd)  # drops the process's lock: the only descriptor of the file it has open
                g.fd = -1
                g.cond.notify_all()


@contextlib.contextmanager
def removing(queue_dir: str) -> Iterator[bool]:
    """Try to hold the queue's bucket lock exclusive, without waiting: yields True if held (no
    rename into an old bucket runs anywhere until the block ends), False if anyone (this process
    included) is renaming into one now."""
    with _entry(queue_dir) as g, _exclusive(g) as held:
        yield held


@contextlib.contextmanager
def _exclusive(g: _Guard) -> Iterator[bool]:
    with g.cond:
        busy = not g.idle()
        if not busy:
            g.exclusive = True
    if busy:
        yield False
        return
    fd = -1
    try:
        try:
            fd = os.open(g.path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except FileNotFoundError:
            held = False  # the queue is gone
        except OSError as e:
            if damage.is_damage(e):
                damage.report(g.path, "removing empty buckets")  # none removed while it is refused
            elif e.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            held = False
        yield held
    finally:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        with g.cond:
            g.exclusive = False
            g.cond.notify_all()


def _forget_all_in_child() -> None:
    """A forked child holds none of the parent's record locks and runs none of its threads."""
    global _TABLE_GUARD
    _TABLE_GUARD = threading.Lock()
    _TABLE.clear()


os.register_at_fork(after_in_child=_forget_all_in_child)
