"""Node-wide group commit: every process of a node that shares a data directory shares flushes.

:class:`~spoolq.store.files.GroupCommit` groups the threads of one process; this module groups
the processes. A gunicorn worker, a CLI ``send``, a second ``spoolq serve`` on the same root:
a sender in any of them waits for *one* ``syncfs`` that started after its rename, whichever
process runs it, instead of each process paying for its own.

The flush sequence lives in a small shared file, one per data directory and machine, mapped
into every process (``/dev/shm/spoolq-flush-<dev>-<ino>`` keyed by the root directory's device
and inode, so two roots never share it and each machine of a shared-file-system cluster has its
own; the system temp dir when ``/dev/shm`` is missing). Layout, little-endian u64 words::

    0 started        number of the last flush a leader began (only a leader writes it)
    1 completed      number of the last flush a leader finished (ok or failed)
    2 last_failed    number of the last flush that failed
    3 last_errno     its errno
    8 + 2*(n % 64)   ring of results: (flush number, errno or 0)

Protocol (:meth:`NodeFlush.flush`), run after the caller's renames:

1. ``need = started + 1``: the first flush that can begin after this read, hence after the
   caller's renames (the read follows them; a leader bumps ``started`` before its syncfs).
2. Take the lock (``flock`` on the shared file, blocking: a leader holds it while it flushes).
   If ``completed >= need``, another process's flush covered the caller and the result of flush
   ``need`` decides (below). Otherwise the caller leads: bump ``started``, run the flush, record
   the result in the ring, then ``completed``, and release the lock. While one leader flushes,
   senders in every process queue on the lock; the next leader's flush covers all of them and
   the others find themselves covered and return at once.

Results and failures (fsyncgate): a caller covered by flush ``need`` gets that flush's result,
never a later one's: after a failed writeback the kernel may have dropped the dirty pages, so a
later successful syncfs proves nothing about them. The ring holds the result of each of the
last 64 flushes; a flush whose leader died before recording (no entry) was followed by a later
flush that began after it, which covers the caller; an entry overwritten by 64 newer flushes
counts as failed if any flush since ``need`` failed (``last_failed >= need``). A failed caller
gets :class:`~spoolq.errors.StorageUnavailable`, retries, and at worst stores a duplicate.

Crashes: ``kill -9`` of a leader in the middle of its syncfs releases the lock (the kernel drops
flock locks with the last descriptor); its flush has no result, ``completed`` stays behind
``started``, and the next leader's flush covers everyone who waited. A half-updated shared file
is safe for the same reason: the result is written before ``completed``. The counters are
monotonic; a fresh file (after a reboot, or a recycled inode number) only starts lower, which
makes waiters wait for a fresh flush, never skip one. Nothing here decides what is durable: only
a completed syncfs does.

With ``flush="fsync"`` (network file systems) each process keeps its own group commit, since a
leader must fsync the very directories its group renamed into. If the shared file cannot be
created (permissions), the process falls back to its own group commit too: correct, only less
sharing.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno as errno_mod
import fcntl
import mmap
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

_WORDS = 8 + 2 * 64
_SIZE = 4096
_RING = 64
_STARTED, _COMPLETED, _LAST_FAILED, _LAST_ERRNO = 0, 1, 2, 3


def shared_path(root: Path) -> str:
    """Where the flush sequence of ``root`` lives on this machine."""
    st = os.stat(root)
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    return f"{base}/spoolq-flush-{st.st_dev:x}-{st.st_ino:x}"


class NodeFlush:
    """The flush sequence shared by every process of this machine using ``root``."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._pid = -1
        self._fd = -1
        self._mm: mmap.mmap | None = None
        self._words: ctypes.Array[ctypes.c_uint64] | None = None
        #: flushes this process ran as the node's leader / waits another process's flush covered
        self.led = 0
        self.covered = 0
        self._unshared = False

    def _open(self) -> ctypes.Array[ctypes.c_uint64]:
        if self._words is not None and self._pid == os.getpid():
            return self._words
        # first use, or first use after a fork: a lock on an inherited descriptor is shared
        # with the parent, so a child opens its own
        self._words, self._mm, self._fd = None, None, -1
        path = shared_path(self._root)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < _SIZE:
                os.ftruncate(fd, _SIZE)  # zero-filled; a concurrent ftruncate to the same size is harmless
            mm = mmap.mmap(fd, _SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._mm, self._pid = fd, mm, os.getpid()
        self._words = (ctypes.c_uint64 * _WORDS).from_buffer(mm)
        return self._words

    def _result(self, w: ctypes.Array[ctypes.c_uint64], need: int) -> int:
        """errno of the flush that covered a caller needing flush ``need`` (0: success)."""
        slot = 8 + 2 * (need % _RING)
        if w[slot] == need:
            return int(w[slot + 1])
        if w[_LAST_FAILED] >= need:
            return int(w[_LAST_ERRNO]) or errno_mod.EIO
        return 0

    @staticmethod
    def _record(w: ctypes.Array[ctypes.c_uint64], seq: int, err: int) -> None:
        slot = 8 + 2 * (seq % _RING)
        w[slot + 1] = err
        w[slot] = seq
        if err:
            w[_LAST_ERRNO] = err
            w[_LAST_FAILED] = seq
        w[_COMPLETED] = seq  # last: a reader that sees it sees the result too

    def flush(self, run: Callable[[], None]) -> None:
        """Return once a flush that began after this call began has succeeded; raise OSError if
        it failed. ``run`` performs a flush when this process has to lead one."""
        if self._unshared:
            run()
            return
        try:
            w = self._open()
        except OSError:  # no shared file here (permissions, no temp dir): this process flushes alone
            self._unshared = True
            run()
            return
        need = w[_STARTED] + 1
        # every decision is made holding the lock (whose syscalls order the shared words)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            if w[_COMPLETED] >= need:  # another process's flush covered us while we queued
                err = self._result(w, need)
                if err:
                    raise OSError(err, f"a flush of the data directory failed: {os.strerror(err)}")
                self.covered += 1
                return
            seq = w[_STARTED] + 1
            w[_STARTED] = seq
            try:
                run()
            except OSError as e:
                self._record(w, seq, e.errno or errno_mod.EIO)
                raise
            # (any other exception records nothing: like a dead leader's, the next flush covers)
            self._record(w, seq, 0)
            self.led += 1
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self._words = None
        if self._mm is not None:
            with contextlib.suppress(BufferError, ValueError):
                self._mm.close()
            self._mm = None
        if self._fd >= 0 and self._pid == os.getpid():
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = -1
