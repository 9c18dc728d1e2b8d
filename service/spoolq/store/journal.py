"""Commit journal (``flush="journal"``, Linux): a send is durable once its message is in this
process's journal and the journal is ``fdatasync``'d.

Why: on the data disk a ``syncfs`` writes back every dirty page of the file system (other
programs' too) and each message file's own blocks; an ``fdatasync`` of one journal file writes a
few sequential blocks, and the kernel merges the flushes of concurrent fdatasyncs from every
process of the node. Measured side by side (``bench/pg_bench.py``, docs/performance.md): the flush
alone is 6-30x the syncfs rate, and per-process journals beat one node-wide journal behind a shared
lock; end to end a send still creates and names its file, so the gain depends on the file system:
``bench/flush_bench.py`` found it ahead on ext4 with its journal, where it is the default, and
behind ``syncfs`` on XFS (:mod:`spoolq.store.filesystems`).

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
  that instance written before ``ns`` is redundant. A mark is made durable (an fsync of
  ``journal/``) before any journal file is deleted on its strength; a new mark of an instance
  deletes the older ones.

A journal file is one of two kinds, read the same way (records from the start, up to the first
that is not whole):

* **prepared** (the usual one): ``PREPARED_BYTES`` of real zeros, written, ``fsync``'d with its
  directory by the process's journal thread (:mod:`spoolq.store.journal_thread`) before the file
  takes its first record; records are written over the zeros with ``pwrite`` at the end of the
  last one. The file's size and blocks never change after that, so an ``fdatasync`` writes the
  record's data blocks and a cache flush, and commits nothing through ext4's own journal.
* **appended** (the older kind, still written where no prepared file is ready: a process's first
  records, a preparation that failed, say for a full disk, a batch larger than a prepared file):
  records appended (``O_APPEND``), each ``fdatasync`` also committing the file's new size.

A record::

    b"SPJ2" | u32 payload_len | u32 crc32(payload) | payload
    payload = kind (1 byte) | u64 appended_ns | u16 path_len | path (UTF-8, relative to queues/) | data

``S`` (a send): ``data`` is the message file's bytes, ``path`` where its file was named. ``M``
(moved): a message left its queue for another under a new id (a move, a dead letter): ``path``
is where it was, ``data`` ``<destination queue directory>/<new id>``. Files of the older format
(``SPJ1``: a send's path and bytes, no time) are still read.

A standard-queue send (``sending._write``) writes its files, names them in place (not flushed),
writes one record per message (one write for the batch), then waits in :meth:`JournalCommit.flush`
for one fdatasync of the journal that started after its write (group commit by tickets,
:class:`~spoolq.store.ticketed_flush.TicketedFlush`, as :class:`~spoolq.store.group_commit.GroupCommit`).
A failed fdatasync fails every send it covered, and the process moves to a new journal file (after
a failed writeback the old file's pages may be gone; the file is kept for replay anyway). A transfer
out of a standard queue (a move's batch, a dead letter) first writes and fdatasyncs its ``M``
records, then renames: a replay never writes back a message that a transfer took elsewhere,
whether or not the power failure kept the rename.

What a power failure can leave in a journal file, and why the replay is still right:

* **Records, then the first one that is not whole, then anything.** An acknowledged record was
  covered by an fdatasync that began after its write, and that fdatasync wrote every dirty page of
  the file, so every record before it as well (records are written in file order, under one lock).
  So whatever follows the first record that is not whole was never acknowledged: the replay stops
  there. What it sees there: zeros (a prepared file's, where nothing was written yet: the header's
  magic does not match), or a torn record (some of its sectors on the disk and the others still
  zeros or missing, in any order, since a disk writes its cache out in any order: the crc does not
  match, or the header itself is zeros), or the end of an appended file.
* **No stale record past the tail.** A file is created (``O_EXCL``) once, written full of zeros
  once, written over once from its start, and deleted: never reused. So past its last record there
  are only the zeros of its preparation (durable before its first record: blocks the file system
  took back from a deleted journal are overwritten by them) and unacknowledged records of the file
  itself. A preparation cut short holds no record (zeros, or blocks never written, which read as
  zeros): replayed as empty.
* **A failed write.** A prepared file's next record goes where the failed one began (its sends
  failed; whatever it left is written over by the next records). An appended file is ended by a
  failed write (a later append would land after the partial record, where the replay never reads).

Rotation and checkpoints keep the journal small. The next record starts a new file when it does
not fit in the active prepared file (an appended one: after ``ROTATE_BYTES``, or as soon as a
prepared file is ready); the journal thread prepares the next file while the active one fills,
so no sender waits for zeroing (if none is ready in time, an appended file takes the records). The
next group-commit leader fdatasyncs the retired file with the active one and hands it to the thread.
The thread's checkpoint, once the oldest record that no mark covers is ``CHECKPOINT_SECONDS`` old,
runs a ``syncfs``, makes a mark and deletes the retired files; senders never wait for it. A full
flush (:meth:`~spoolq.store.group_commit.GroupCommit.flush`: FIFO, dedup and at-most-once sends,
queue metadata, moves) runs a syncfs, which the next checkpoint's mark stands on (the active file
stays in use). So a record outlives the message it journals, at most, by about
``CHECKPOINT_SECONDS``, and a process that stops sending gets its last records covered all the same.

Disk use: a process that sends to standard queues keeps its active file and the next one, prepared:
``2 x PREPARED_BYTES`` (8 MiB; a node of 8 server workers about 64 MiB), plus the full files
waiting for the next checkpoint. A prepared file takes its whole size on the disk from the start
(written zeros, not a sparse file): ``du`` of ``journal/`` shows it. **The journal's share of the
disk is bounded**: a file is prepared only while ``journal/`` (every process's files,
:func:`journal_bytes`) and it stay within :data:`JOURNAL_SHARE` of the file system's size
(:attr:`JournalCommit.limit_bytes`; otherwise records go to an appended file, which holds only
what was written); on a file system too small for four files of ``PREPARED_BYTES`` in that share
(under 80 MiB), prepared files and appended ones are an eighth of it (at least 64 KiB), so that
they rotate and their checkpoints give the space back sooner; a file that rotates while the
journal is over its share makes the next checkpoint due at once. So the journal exceeds its share
only by records written since the last checkpoint.

Replay after a power failure, and retirement after a process crash: :mod:`spoolq.store.recovery`.
Journals are per node: on a shared file system run ``--flush fsync``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import math
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from spoolq.store import process
from spoolq.store.fileops import fdatasync_path, fsync_dir, write_zeros
from spoolq.store.journal_thread import Checkpointer, Retired
from spoolq.store.ticketed_flush import FlushListener, TicketedFlush

MAGIC = b"SPJ2"
MAGIC_V1 = b"SPJ1"
_HEAD = struct.Struct(">4sII")
_REC = struct.Struct(">cQH")  # kind, appended_ns, path length
_PATH_V1 = struct.Struct(">H")
SEND = b"S"
MOVED = b"M"
#: size of a prepared journal file: zeros are written as fast as records (a file is only ended when
#: full), so this sets the disk use (two files per sending process) and how often files rotate
#: (every 1.5 s at the fastest rate measured, batches of 10 from 8 processes)
PREPARED_BYTES = 4 << 20
#: an appended file (no prepared one ready) is ended after this many bytes
ROTATE_BYTES = 16 << 20
#: the share of the file system's size the journal's files may take (see the module doc)
JOURNAL_SHARE = 0.2
#: the smallest prepared or appended file on a small file system
SMALL_FILE_BYTES = 64 << 10
#: the journal thread's checkpoint is due once the oldest record no mark covers is this old
CHECKPOINT_SECONDS = 5.0
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
    """Every whole record of a journal file, in order; stops at the first header that is not a
    record's (the zeros past the last record of a prepared file, or foreign bytes) and at the first
    torn record (its payload short or its crc wrong)."""
    out: list[Record] = []
    pos = 0
    while pos + _HEAD.size <= len(blob):
        magic, length, crc = _HEAD.unpack_from(blob, pos)
        if magic not in (MAGIC, MAGIC_V1):
            break
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


def journal_bytes(directory: Path | str) -> int:
    """The disk space the files in ``directory`` (``journal/``) take, of every process."""
    total = 0
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                total += entry.stat(follow_symlinks=False).st_blocks * 512
    return total


def journal_limit(root: Path | str) -> int:
    """The bytes the journal may take on ``root``'s file system (:data:`JOURNAL_SHARE` of its size)."""
    st = os.statvfs(root)
    return int(st.f_blocks * st.f_frsize * JOURNAL_SHARE)


def file_bytes(full: int, limit_bytes: int) -> int:
    """The size of a prepared file (``full``: ``PREPARED_BYTES``) or of an appended one before it
    rotates (``full``: ``ROTATE_BYTES``) for a journal that may take ``limit_bytes``
    (:func:`journal_limit`; see the module doc)."""
    if limit_bytes >= 4 * PREPARED_BYTES:
        return full
    return min(full, max(SMALL_FILE_BYTES, limit_bytes // 8))


def mark_name(boot: str, instance: str, ns: int) -> str:
    return f"{boot}~{instance}~{ns:020d}{MARK_SUFFIX}"


class JournalCommit:
    """This process's journal: records, the fdatasync group commit, prepared files, rotation,
    checkpoints, marks."""

    def __init__(self, root: Path, node: str, boot: str, syncfs: Callable[[], None]) -> None:
        self.dir = root / "journal"
        self._node, self._boot, self._syncfs = node, boot, syncfs
        #: the bytes the journal's files may take (see the module doc)
        self.limit_bytes = journal_limit(root)
        self._over_limit = False  # a file rotated while the journal was over its share: checkpoint now
        self._mount = mount_id(str(self.dir))
        self._append_lock = threading.Lock()
        self._path = ""
        self._pid = -1
        self._capacity = 0  # PREPARED_BYTES for a prepared active file, 0 for an appended one
        self._offset = 0  # where the next record goes (an appended file: its size)
        self._n = 0
        self._retired: list[Retired] = []  # (path, monotonic ns when retired)
        self._prepared = ""  # the next file, prepared and not yet in use
        self._preparing = False  # a preparation is asked for or running
        self._prepare_failed = -math.inf  # monotonic time of the last failed preparation
        self._closing = False
        self.tickets = TicketedFlush(self._flush_once, "flushing the commit journal")
        self._suspect = False  # the next flush must be a syncfs (a failed fdatasync, see retire_active)
        self._unflushed = False  # records written since the last flush leader took its files
        self._mark_lock = threading.Lock()
        self._last_append_ns = 0
        self._oldest_unmarked_ns = 0  # the first record written after the mark before it (if newer than _sealed)
        self._synced_from = 0  # start of the latest syncfs of this process that completed
        self._sealed = 0  # the latest mark this process made durable
        self._thread = Checkpointer(self._timed_checkpoint, self._checkpoint_due, self._prepare_next)
        self.flushes = 0
        self.checkpoints = 0
        self.prepared_files = 0
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

    def _file_bytes(self, full: int) -> int:
        return file_bytes(full, self.limit_bytes)

    def _next_path(self) -> str:
        """A new journal file's name (the append lock is held)."""
        self._n += 1
        return f"{self.dir}/{self.prefix()}{process.pid()}~{self._n}.jnl"

    def _open_new(self, need: int) -> None:
        """Start a new active file for a write of ``need`` bytes (the append lock is held): the
        prepared one if it is ready and large enough, else an appended one; the old one waits for a
        checkpoint."""
        if self._path and self._pid == process.pid():
            self._retired.append((self._path, time.monotonic_ns()))
            self._over_limit = self._over_limit or journal_bytes(self.dir) > self.limit_bytes
        elif self._pid != process.pid():  # a forked child: the parent's files are the parent's
            self._retired, self._prepared, self._preparing = [], "", False
        self._pid = process.pid()
        size = self._file_bytes(PREPARED_BYTES)
        if self._prepared and need <= size:
            self._path, self._capacity, self._prepared = self._prepared, size, ""
        else:
            self._path, self._capacity = self._next_path(), 0
        self._offset = 0

    def append(self, sends: Sequence[tuple[str, bytes]]) -> None:
        """Write send records (path relative to queues/, message bytes) in one write; not yet durable."""
        self._append(SEND, sends)

    def append_moves(self, moves: Sequence[tuple[str, str, str]]) -> None:
        """Write moved records (source path relative to queues/, destination queue directory, new
        id) in one write; not yet durable: :meth:`flush` before the renames."""
        self._append(MOVED, [(src, f"{qdir}/{new_id}".encode()) for src, qdir, new_id in moves])

    def _append(self, kind: bytes, records: Sequence[tuple[str, bytes]]) -> None:
        """No descriptor stays open between calls (an open writable file would keep an operator
        from remounting the root read-only)."""
        with self._append_lock:
            ns = time.monotonic_ns()  # after every file these records name got its name
            blob = b"".join(encode_record(kind, ns, p, d) for p, d in records)
            if (not self._path or self._pid != process.pid()
                    or (self._offset + len(blob) > self._capacity if self._capacity
                        else self._offset >= self._file_bytes(ROTATE_BYTES)
                        or (bool(self._prepared) and len(blob) <= self._file_bytes(PREPARED_BYTES)))):
                self._open_new(len(blob))
            if self._capacity:
                fd = os.open(self._path, os.O_WRONLY)
                try:
                    view, at = memoryview(blob), self._offset
                    while view:
                        n = os.pwrite(fd, view, at)
                        view, at = view[n:], at + n
                finally:
                    os.close(fd)  # on failure the offset stays: the next record is written over this one
            else:
                fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    view = memoryview(blob)
                    while view:
                        view = view[os.write(fd, view):]
                except OSError:
                    self._offset = ROTATE_BYTES  # ended (past any rotation size): a later record would follow the torn one
                    raise
                finally:
                    os.close(fd)
            self._offset += len(blob)
            if self._oldest_unmarked_ns <= self._sealed:
                self._oldest_unmarked_ns = ns
            self._last_append_ns = ns
            self._unflushed = True
            prepare = (not self._prepared and not self._preparing and not self._closing
                       and time.monotonic() - self._prepare_failed >= CHECKPOINT_SECONDS)
            self._preparing = self._preparing or prepare
        self._thread.wake(prepare)  # its checkpoint may be due CHECKPOINT_SECONDS from now

    def _prepare_next(self) -> None:
        """Prepare the next file (the journal thread, when asked): never raises; after a failure the
        process keeps writing appended files and asks again ``CHECKPOINT_SECONDS`` later."""
        size = self._file_bytes(PREPARED_BYTES)
        with self._append_lock:
            path = self._next_path()
        try:
            if journal_bytes(self.dir) + size > self.limit_bytes:
                raise OSError(errno.ENOSPC, "the journal is at its share of the disk")
            write_zeros(path, size)
        except OSError:
            with self._append_lock:
                self._preparing, self._prepare_failed = False, time.monotonic()
            return
        with self._append_lock:
            self._preparing = False
            if not self._closing and self._pid == process.pid() and not self._prepared:
                self._prepared, path = path, ""
                self.prepared_files += 1
        if path:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def retire_active(self) -> list[Retired]:
        """End the active file for a checkpoint: every (file, retired at) to delete once a syncfs
        that began after it completed and a mark says so. Records written since the last flush
        leader took its files are in files taken here, which no fdatasync will cover: the next
        flush is a syncfs (a sender waiting for it may be acknowledged before the syncfs of the
        checkpoint that took them has completed)."""
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
        the files retired since the last flush; the retired ones then go to the journal thread.
        With no active file (a close retired it meanwhile, or a forked child) or after a failed
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
                    fdatasync_path(p)
            except OSError:
                with self._append_lock:
                    if path == self._path:
                        self._open_new(0)  # never trust this file's later fdatasyncs
                        self._suspect = True
                raise
            finally:
                if retired:
                    self._thread.submit(retired)  # kept until a syncfs after their last record
        self.flushes += 1
        self.flush_seconds += time.perf_counter() - start

    def _syncfs_now(self) -> None:
        start = time.monotonic_ns()
        self._syncfs()
        with self._mark_lock:
            self._synced_from = max(self._synced_from, start)

    def _checkpoint(self, retired: list[Retired], *, force_syncfs: bool = False, upto: int = 0) -> None:
        """Make the records of ``retired`` (and every record written before ``upto``) redundant
        and say so: a syncfs that began after they were retired (unless one already completed),
        a mark, then the files' deletion. On failure the files wait for the next checkpoint."""
        need = max([upto, *(ns for _p, ns in retired)])
        self._over_limit = False
        try:
            if force_syncfs or self._synced_from <= need:
                self._syncfs_now()
            self._seal()
        except OSError:
            self._thread.submit(retired)
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
            fsync_dir(str(self.dir))
            self._sealed = ns
            mine = name[:-(20 + len(MARK_SUFFIX))]
            for n in os.listdir(self.dir):
                if n.startswith(mine) and n.endswith(MARK_SUFFIX) and n < name:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.dir / n)

    def _checkpoint_due(self) -> float | None:
        """Seconds until the timed checkpoint is due (``CHECKPOINT_SECONDS`` after the oldest
        record no mark covers), 0 if now; None if no record waits for one."""
        last, sealed = self._last_append_ns, self._sealed
        if last == 0 or last < sealed:
            return None
        if self._over_limit:
            return 0.0
        since = max(self._oldest_unmarked_ns, sealed)  # records written during the last syncfs: its start
        return max(0.0, (since - time.monotonic_ns()) / 1e9 + CHECKPOINT_SECONDS)

    def _timed_checkpoint(self, retired: list[Retired]) -> None:
        self._checkpoint(retired, upto=self._last_append_ns)

    def idle_checkpoint(self) -> None:
        """Cover every record written so far (the journal thread's timed checkpoint, with no file
        retired)."""
        self._timed_checkpoint([])

    def full_flush(self) -> None:
        """syncfs: after it every record this process wrote before it is redundant (the next
        checkpoint's mark says so; the active file, maybe prepared, stays in use)."""
        self._syncfs_now()

    def announce(self) -> bool:
        """A send has begun writing files whose records it will append and flush
        (:meth:`TicketedFlush.announce`); always True."""
        self.tickets.announce()
        return True

    def withdraw(self) -> None:
        """An announced send failed before its flush."""
        self.tickets.withdraw()

    def flush(self, announced: bool = False) -> None:
        """Return once an fdatasync (or checkpoint) that started after this call has succeeded
        (``announced``: the caller announced itself)."""
        self.tickets.flush(announced)

    def close(self) -> None:
        """A clean stop: a checkpoint of every file of this process (the prepared one too), then
        no more records."""
        with self._append_lock:
            self._closing = True
        pending = self._thread.take()  # once a running checkpoint or preparation has finished
        with self._append_lock:
            prepared = [(self._prepared, time.monotonic_ns())] if self._prepared and self._pid == process.pid() else []
            self._prepared = ""
        with contextlib.suppress(OSError):
            self._checkpoint(self.retire_active() + pending + prepared, force_syncfs=True)
        with self._append_lock:
            self._path = ""
        self._thread.stop()
