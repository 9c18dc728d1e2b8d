"""Commit journal (``flush="journal"``, Linux): a send is durable once its message is in this
process's journal and the journal is ``fdatasync``'d.

Why: on the data disk a ``syncfs`` writes back every dirty page of the file system (other
programs' too) and each message file's own blocks; an ``fdatasync`` of one append-only file
writes a few sequential blocks and one file-system journal commit, and the kernel merges the
commits of concurrent fdatasyncs from every process of the node into one. Measured side by side
(``bench/pg_bench.py``, docs/performance.md): the flush alone is 6-30x the syncfs rate, and
per-process journals beat one node-wide journal behind a shared lock; end to end a send still
creates and names its file, so the gain depends on the file system: ``bench/flush_bench.py`` found
it ahead on ext4 with its journal, where it is the default, and behind ``syncfs`` on XFS
(:mod:`spoolq.store.filesystems`).

Layout, in ``<root>/journal/``:

* ``<node>~<boot>~<instance>~<pid>~<n>.jnl``: the journal files, one active file per process.
  ``boot`` is the kernel's boot id and ``instance`` names the mount of the file system the
  process wrote through (:func:`fs_instance`: ``m`` and the mount's unique id where the kernel
  gives one, Linux 6.8 and later; else ``p<pid>``, the process alone). Together they name one
  page cache: what a dead process wrote is still there (in the cache, on its way to the disk)
  only while its instance lives; a power failure, a reboot, or the file system unmounted and
  mounted again (a removable, network or VM disk that lost power, a container given the directory
  anew) all end it.
* ``<boot>~<instance>~<ns>.synced``: a **mark**, an empty file whose name says that a ``syncfs``
  of that instance, begun at ``ns`` (``time.monotonic_ns()``, one clock for the whole boot),
  completed: every message file named before then is on the disk, so every journal record of
  that instance appended before ``ns`` is redundant. A mark is made durable (an fsync of
  ``journal/``) before any journal file is deleted on its strength; a new mark of an instance
  deletes the older ones.

A record::

    b"SPJ2" | u32 payload_len | u32 crc32(payload) | payload
    payload = kind (1 byte) | u64 appended_ns | u16 path_len | path (UTF-8, relative to queues/) | data

``S`` (a send): ``data`` is the message file's bytes, ``path`` where its file was named. ``M``
(moved): a message left its queue for another under a new id (a move, a dead letter): ``path``
is where it was, ``data`` ``<destination queue directory>/<new id>``. Files of the older format
(``SPJ1``: a send's path and bytes, no time) are still read.

A standard-queue send (``sending._write``) writes its files, names them in place (not flushed),
appends one record per message (one ``write`` for the batch), then waits in :meth:`JournalCommit.flush`
for one fdatasync of the journal that started after its append (group commit by tickets,
:class:`~spoolq.store.ticketed_flush.TicketedFlush`, as :class:`~spoolq.store.group_commit.GroupCommit`). A failed fdatasync fails every send it covered, and the
process moves to a new journal file (after a failed writeback the old file's pages may be gone; the
file is kept for replay anyway). A transfer out of a standard queue (a move's batch, a dead letter)
first appends and fdatasyncs its ``M`` records, then renames: a replay never writes back a message
that a transfer took elsewhere, whether or not the power failure kept the rename.

Checkpoints keep the journal small: after ``ROTATE_BYTES`` or ``ROTATE_SECONDS`` the next append
starts a new file; the next group-commit leader fdatasyncs the retired file with the active one and
hands it to a checkpoint thread of the process, which runs a ``syncfs``, makes a mark and deletes
the file; senders never wait for that. A full flush (:meth:`~spoolq.store.group_commit.GroupCommit.flush`:
FIFO, dedup and at-most-once sends, queue metadata, moves) retires the active file, runs the syncfs
itself and leaves the mark and the deletion to the thread. A process that stops sending gets its
last records covered all the same: ``ROTATE_SECONDS`` after its last append the thread runs a
syncfs and makes a mark. So a record outlives the message it journals, at most, by about that long.

Replay after a power failure, and retirement after a process crash: :mod:`spoolq.store.recovery`.
Journals are per node: on a shared file system run ``--flush fsync``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from spoolq.store import process
from spoolq.store.ticketed_flush import FlushListener, TicketedFlush

MAGIC = b"SPJ2"
MAGIC_V1 = b"SPJ1"
_HEAD = struct.Struct(">4sII")
_REC = struct.Struct(">cQH")  # kind, appended_ns, path length
_PATH_V1 = struct.Struct(">H")
SEND = b"S"
MOVED = b"M"
ROTATE_BYTES = 16 << 20
ROTATE_SECONDS = 5.0
MARK_SUFFIX = ".synced"


class Record(NamedTuple):
    """One journal record (see the module docstring)."""

    kind: bytes
    #: ``time.monotonic_ns()`` of its append; None in a file of the older format
    appended_ns: int | None
    path: str
    data: bytes


def boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:16] or None
    except OSError:
        return None


def _load_statx() -> Any:
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).statx
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


_STATX = _load_statx()
_AT_FDCWD = -100
_STATX_MNT_ID_UNIQUE = 0x4000  # Linux 6.8: a mount id never reused while the machine runs
_STATX_MNT_ID_AT = 0x90  # offset of stx_mnt_id in struct statx


def mount_id(path: str) -> int | None:
    """The unique id of the mount ``path`` is on, or None where the kernel has none."""
    if _STATX is None:
        return None
    buf = ctypes.create_string_buffer(256)
    if _STATX(_AT_FDCWD, path.encode(), 0, _STATX_MNT_ID_UNIQUE, buf) != 0:
        return None
    (mask,) = struct.unpack_from("=I", buf, 0)
    if not mask & _STATX_MNT_ID_UNIQUE:
        return None
    (mnt,) = struct.unpack_from("=Q", buf, _STATX_MNT_ID_AT)
    return int(mnt)


def fs_instance(path: str, pid: int) -> str:
    """This process's name for the page cache it writes ``path`` through: ``m<mount id>``, or
    ``p<pid>`` where the kernel gives no unique mount id (then no other process can tell that it
    shares the cache, and a dead process's journal is always replayed)."""
    mnt = mount_id(path)
    return f"m{mnt:x}" if mnt is not None else f"p{pid}"


def encode_record(kind: bytes, appended_ns: int, path: str, data: bytes) -> bytes:
    p = path.encode()
    payload = _REC.pack(kind, appended_ns, len(p)) + p + data
    return _HEAD.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def decode_records(blob: bytes) -> list[Record]:
    """Every whole record of a journal file, in order; stops at the first torn or foreign one."""
    out: list[Record] = []
    pos = 0
    while pos + _HEAD.size <= len(blob):
        magic, length, crc = _HEAD.unpack_from(blob, pos)
        payload = blob[pos + _HEAD.size:pos + _HEAD.size + length]
        if len(payload) != length or zlib.crc32(payload) != crc:
            break
        if magic == MAGIC and length >= _REC.size:
            kind, ns, plen = _REC.unpack_from(payload)
            out.append(Record(kind, ns, payload[_REC.size:_REC.size + plen].decode(), payload[_REC.size + plen:]))
        elif magic == MAGIC_V1 and length >= _PATH_V1.size:
            (plen,) = _PATH_V1.unpack_from(payload)
            out.append(Record(SEND, None, payload[_PATH_V1.size:_PATH_V1.size + plen].decode(),
                              payload[_PATH_V1.size + plen:]))
        else:
            break
        pos += _HEAD.size + length
    return out


def mark_name(boot: str, instance: str, ns: int) -> str:
    return f"{boot}~{instance}~{ns:020d}{MARK_SUFFIX}"


class JournalCommit:
    """This process's journal: appends, the fdatasync group commit, rotation, checkpoints, marks."""

    def __init__(self, root: Path, node: str, boot: str, syncfs: Callable[[], None]) -> None:
        self.dir = root / "journal"
        self._node, self._boot, self._syncfs = node, boot, syncfs
        self._mount = mount_id(str(self.dir))
        self._append_lock = threading.Lock()
        self._path = ""
        self._pid = -1
        self._opened = 0.0
        self._size = 0
        self._n = 0
        self._retired: list[tuple[str, int]] = []  # (path, monotonic ns when retired)
        self.tickets = TicketedFlush(self._flush_once, "flushing the commit journal")
        self._suspect = False  # the next flush must be a syncfs (a failed fdatasync, see retire_active)
        self._unflushed = False  # records appended since the last flush leader took its files
        self._mark_lock = threading.Lock()
        self._last_append_ns = 0
        self._synced_from = 0  # start of the latest syncfs of this process that completed
        self._sealed = 0  # the latest mark this process made durable
        self._checkpointer = _Checkpointer(self._checkpoint, self._idle_due, self.idle_checkpoint)
        self.flushes = 0
        self.checkpoints = 0
        self.flush_seconds = 0.0

    @property
    def on_flush(self) -> FlushListener | None:
        """Called after each successful journal flush: (seconds, tickets it made durable)."""
        return self.tickets.on_flush

    @on_flush.setter
    def on_flush(self, listener: FlushListener | None) -> None:
        self.tickets.on_flush = listener

    @property
    def node(self) -> str:
        return self._node

    @property
    def boot(self) -> str:
        return self._boot

    def instance(self) -> str:
        """See :func:`fs_instance` (computed once; ``p<pid>`` follows a fork)."""
        return f"m{self._mount:x}" if self._mount is not None else f"p{os.getpid()}"

    def prefix(self) -> str:
        return f"{self._node}~{self._boot}~{self.instance()}~"

    def _open_new(self) -> None:
        """Start a new active file (the append lock is held); the old one waits for a checkpoint."""
        if self._path and self._pid == process.pid():
            self._retired.append((self._path, time.monotonic_ns()))
        elif self._pid != process.pid():
            self._retired = []  # a forked child: the parent's files are the parent's
        self._pid = process.pid()
        self._n += 1
        self._path = f"{self.dir}/{self.prefix()}{self._pid}~{self._n}.jnl"
        self._opened, self._size = time.monotonic(), 0

    def append(self, sends: Sequence[tuple[str, bytes]]) -> None:
        """Append send records (path relative to queues/, message bytes) in one write; not yet durable."""
        self._append(SEND, sends)

    def append_moves(self, moves: Sequence[tuple[str, str, str]]) -> None:
        """Append moved records (source path relative to queues/, destination queue directory, new
        id) in one write; not yet durable: :meth:`flush` before the renames."""
        self._append(MOVED, [(src, f"{qdir}/{new_id}".encode()) for src, qdir, new_id in moves])

    def _append(self, kind: bytes, records: Sequence[tuple[str, bytes]]) -> None:
        """No descriptor stays open between calls (an open writable file would keep an operator
        from remounting the root read-only)."""
        with self._append_lock:
            if (not self._path or self._pid != process.pid() or self._size >= ROTATE_BYTES
                    or time.monotonic() - self._opened >= ROTATE_SECONDS):
                self._open_new()
            ns = time.monotonic_ns()  # after every file these records name got its name
            blob = b"".join(encode_record(kind, ns, p, d) for p, d in records)
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(blob)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            self._size += len(blob)
            self._last_append_ns = ns
            self._unflushed = True
        self._checkpointer.wake()  # its idle checkpoint is due ROTATE_SECONDS from now

    def retire_active(self) -> list[tuple[str, int]]:
        """End the active file for a checkpoint: every (file, retired at) to delete once a syncfs
        that began after it completed and a mark says so. Records appended since the last flush
        leader took its files are in files taken here, which no fdatasync will cover: the next
        flush is a syncfs (a sender waiting for it may be acknowledged before the syncfs of the
        full flush that took them has completed)."""
        with self._append_lock:
            if self._path and self._pid == process.pid():
                self._retired.append((self._path, time.monotonic_ns()))
                self._path = ""
            retired, self._retired = self._retired, []
            if retired and self._unflushed:
                self._suspect = True
            return retired

    def _flush_once(self) -> None:
        """fdatasync every file that may hold a record not yet known durable: the active file and
        the files retired since the last flush; the retired ones then go to the checkpoint thread.
        With no active file (a full flush retired it meanwhile, or a forked child) or after a failed
        fdatasync, only a syncfs is known to cover every record: that checkpoint runs here."""
        start = time.perf_counter()
        with self._append_lock:
            path = self._path if self._pid == process.pid() else ""
            retired, self._retired = self._retired, []
            suspect, self._suspect = self._suspect, False
            self._unflushed = False
        if suspect or not path:
            self._checkpoint(retired, force_syncfs=True)
        else:
            try:
                for p in [*(r for r, _ns in retired), path]:
                    _fdatasync_path(p)
            except OSError:
                with self._append_lock:
                    if path == self._path:
                        self._open_new()  # never trust this file's later fdatasyncs
                        self._suspect = True
                raise
            finally:
                if retired:
                    self._checkpointer.submit(retired)  # kept until a syncfs after their last append
        self.flushes += 1
        self.flush_seconds += time.perf_counter() - start

    def _syncfs_now(self) -> None:
        start = time.monotonic_ns()
        self._syncfs()
        with self._mark_lock:
            self._synced_from = max(self._synced_from, start)

    def _checkpoint(self, retired: list[tuple[str, int]], *, force_syncfs: bool = False,
                    upto: int = 0) -> None:
        """Make the records of ``retired`` (and every record appended before ``upto``) redundant
        and say so: a syncfs that began after they were retired (unless one already completed),
        a mark, then the files' deletion. On failure the files wait for the next checkpoint."""
        need = max([upto, *(ns for _p, ns in retired)])
        try:
            if force_syncfs or self._synced_from <= need:
                self._syncfs_now()
            self._seal()
        except OSError:
            self._checkpointer.submit(retired, wake=False)
            raise
        for path, _ns in retired:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.checkpoints += 1

    def _seal(self) -> None:
        """Make a mark for the latest completed syncfs (if newer than the last mark) durable, and
        delete this instance's older marks."""
        with self._mark_lock:
            ns = self._synced_from
            if ns <= self._sealed:
                return
            name = mark_name(self._boot, self.instance(), ns)
            os.close(os.open(self.dir / name, os.O_WRONLY | os.O_CREAT, 0o644))
            _fsync_dir(str(self.dir))
            self._sealed = ns
            mine = name[:-(20 + len(MARK_SUFFIX))]
            for n in os.listdir(self.dir):
                if n.startswith(mine) and n.endswith(MARK_SUFFIX) and n < name:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.dir / n)

    def _idle_due(self) -> float | None:
        """Seconds until the idle checkpoint (every record appended so far covered by a mark) is
        due, 0 if now; None if no record waits for one."""
        last = self._last_append_ns
        if last == 0 or last < self._sealed:
            return None
        return max(0.0, (last - time.monotonic_ns()) / 1e9 + ROTATE_SECONDS)

    def idle_checkpoint(self) -> None:
        """Cover every record appended so far (the checkpoint thread runs it once the process has
        appended nothing for ``ROTATE_SECONDS``)."""
        self._checkpoint([], upto=self._last_append_ns)

    def full_flush(self) -> None:
        """syncfs, retiring the active file (the checkpoint thread marks and deletes it): after it
        every record of this process is redundant."""
        retired = self.retire_active()
        try:
            self._syncfs_now()
        finally:
            if retired:
                self._checkpointer.submit(retired)

    def flush(self) -> None:
        """Return once an fdatasync (or checkpoint) that started after this call has succeeded."""
        self.tickets.flush()

    def close(self) -> None:
        """A clean stop: a checkpoint of every file of this process, then no more appends."""
        with contextlib.suppress(OSError):
            self._checkpoint(self.retire_active() + self._checkpointer.take(), force_syncfs=True)
        with self._append_lock:
            self._path = ""
        self._checkpointer.stop()


def _fdatasync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: guards a checkpoint thread's start (re-made in a forked child, where a copy may be held)
_START_LOCK = threading.Lock()


def _new_start_lock() -> None:
    global _START_LOCK
    _START_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_start_lock)


class _Checkpointer:
    """A thread of this process that checkpoints retired journal files off the send path.

    Retired files were fdatasync'd by the flush that retired them (or covered by the syncfs of the
    full flush that did), so their records are durable; they wait for a ``syncfs`` that makes their
    messages durable too (one begun after their retirement: the full flush's, or the thread's own)
    and a mark, after which they are deleted. Senders never wait for that (a checkpoint in the
    group-commit leader held every sender of the process behind a whole-file-system writeback). A
    file whose checkpoint failed waits for the next one; files left by a process that died are
    handled by :mod:`spoolq.store.recovery`. With nothing retired, it makes the idle checkpoint
    once the process has appended nothing for ``ROTATE_SECONDS``.
    """

    #: pause before a failed checkpoint is tried again
    RETRY_SECONDS = 1.0

    def __init__(self, checkpoint: Callable[[list[tuple[str, int]]], None], idle_due: Callable[[], float | None],
                 idle_checkpoint: Callable[[], None]) -> None:
        self._checkpoint = checkpoint
        self._idle_due = idle_due
        self._idle_checkpoint = idle_checkpoint
        self._pid = -1
        self.thread: threading.Thread | None = None
        self._fresh()

    def _fresh(self) -> None:
        """New locks and no pending files: for the first use, and in a forked child (whose copied
        locks may have been held by a parent thread, and whose parent's files are the parent's)."""
        self._cond = threading.Condition()
        self._running = threading.Lock()  # held while a checkpoint runs
        self._pending: list[tuple[str, int]] = []
        self._stopped = False
        self._untimed = False  # waiting with no idle checkpoint due: an append must wake it

    def _ensure_thread(self) -> None:
        if self._pid != process.pid():
            with _START_LOCK:
                if self._pid != process.pid():
                    self._fresh()
                    self.thread = threading.Thread(target=self._run, name="spoolq-journal-checkpoint", daemon=True)
                    self.thread.start()
                    self._pid = process.pid()

    def submit(self, files: list[tuple[str, int]], wake: bool = True) -> None:
        self._ensure_thread()
        with self._cond:
            self._pending.extend(files)
            if wake:
                self._cond.notify()

    def wake(self) -> None:
        """A record was appended: a thread waiting with no idle checkpoint due looks again."""
        self._ensure_thread()
        with self._cond:
            if self._untimed:
                self._cond.notify()

    def stop(self) -> None:
        """End the thread once nothing is pending (the store is closing)."""
        if self._pid == process.pid():
            with self._cond:
                self._stopped = True
                self._cond.notify()

    def take(self) -> list[tuple[str, int]]:
        """Every pending file, once no checkpoint is running (for a synchronous checkpoint)."""
        if self._pid != process.pid():
            return []
        with self._running, self._cond:
            pending, self._pending = self._pending, []
            return pending

    def _run(self) -> None:
        while True:
            idle = False
            with self._cond:
                while not self._pending and not self._stopped:
                    due = self._idle_due()
                    if due == 0:
                        idle = True
                        break
                    self._untimed = due is None
                    self._cond.wait(due)
                    self._untimed = False
                if self._stopped and not self._pending:
                    return
            with self._running:
                with self._cond:
                    batch, self._pending = self._pending, []
                try:
                    if batch:
                        self._checkpoint(batch)
                    elif idle:
                        self._idle_checkpoint()
                    continue
                except OSError:
                    pass  # the files are pending again
            time.sleep(self.RETRY_SECONDS)
