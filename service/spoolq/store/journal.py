"""Commit journal (``flush="journal"``, Linux): a send is durable once its message is in this
process's journal and the journal is ``fdatasync``'d.

Why: on the data disk a ``syncfs`` writes back every dirty page of the file system (other
programs' too) and each message file's own blocks; an ``fdatasync`` of one append-only file
writes a few sequential blocks and one file-system journal commit, and the kernel merges the
commits of concurrent fdatasyncs from every process of the node into one. Measured side by side
(``bench/pg_bench.py``, docs/performance.md): the flush alone is 6-30x the syncfs rate, and
per-process journals beat one node-wide journal behind a shared lock; end to end a send still
creates and renames its file, and the gain was not consistent (so ``syncfs`` stays the default).

Layout: ``<root>/journal/<node>~<boot>~<pid>~<n>.jnl``, one active file per process (``boot`` is
the kernel's boot id, so a start-up can tell a process crash from a power failure). A record::

    b"SPJ1" | u32 payload_len | u32 crc32(payload) | payload
    payload = u16 path_len | path (UTF-8, relative to queues/) | the message file's bytes

A standard-queue send (``sending._write``) writes its temp files, renames them into place (not
flushed), appends one record per message (one ``write`` for the batch), then waits in
:class:`JournalCommit` for one fdatasync of the journal that started after its append (group
commit by tickets, :class:`~spoolq.store.tickets.TicketedFlush`, as
:class:`~spoolq.store.files.GroupCommit`). A failed fdatasync fails every
send it covered, and the process moves to a new journal file (after a failed writeback the old
file's pages may be gone; the file is kept for replay anyway).

Checkpoints keep the journal small: after ``ROTATE_BYTES`` or ``ROTATE_SECONDS`` the next append
starts a new file. The next group-commit leader fdatasyncs the retired file along with the
active one (so every record in either is durable) and hands the retired file to a checkpoint
thread of the process, which runs a ``syncfs`` (making every rename, ack and message file
durable) and then deletes it; senders never wait for that syncfs. A full flush
(:meth:`~spoolq.store.files.GroupCommit.flush`: queue metadata, moves, at-most-once
deliveries) retires the active file and runs the syncfs itself.

Start-up and maintenance (:func:`recover`), under an flock on ``journal/.lock``, for this node's
files that no live process of this boot owns:

* written in an earlier boot (power failure or reboot): replay. A record whose message is
  nowhere in its queue (ready, claimed, delayed, acked) is written back under its original ready
  name; one whose file is torn (fails its CRC) gets its journaled bytes back. Then one syncfs and
  the files are deleted. A replayed message may be one that was acked (or moved) in the last
  seconds before the failure: one more delivery, which at-least-once allows (acks are never
  flushed). At-most-once messages, FIFO and dedup queues never use the journal (their sends take
  the full flush), so a replay cannot deliver them twice or break their order or dedup state.
* written in this boot by a process that died (``kill -9``): the page cache survived, so
  nothing is replayed; one syncfs makes its renames durable, then the files are deleted.

A torn tail (power failed during an append that was never fdatasync'd, so never acknowledged)
ends a file's replay. Journals are per node: on a shared file system run ``--flush fsync``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

from spoolq.store.tickets import FlushListener, TicketedFlush

MAGIC = b"SPJ1"
_HEAD = struct.Struct(">4sII")
_PATH = struct.Struct(">H")
ROTATE_BYTES = 16 << 20
ROTATE_SECONDS = 5.0


def boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:16] or None
    except OSError:
        return None


def encode_record(rel_path: str, data: bytes) -> bytes:
    p = rel_path.encode()
    payload = _PATH.pack(len(p)) + p + data
    return _HEAD.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def decode_records(blob: bytes) -> list[tuple[str, bytes]]:
    """Every whole record of a journal file, in order; stops at the first torn or foreign one."""
    out: list[tuple[str, bytes]] = []
    pos = 0
    while pos + _HEAD.size <= len(blob):
        magic, length, crc = _HEAD.unpack_from(blob, pos)
        payload = blob[pos + _HEAD.size:pos + _HEAD.size + length]
        if magic != MAGIC or len(payload) != length or zlib.crc32(payload) != crc or length < _PATH.size:
            break
        (plen,) = _PATH.unpack_from(payload)
        out.append((payload[_PATH.size:_PATH.size + plen].decode(), payload[_PATH.size + plen:]))
        pos += _HEAD.size + length
    return out


class JournalCommit:
    """This process's journal: appends, the fdatasync group commit, rotation and retirement."""

    def __init__(self, root: Path, node: str, boot: str, syncfs: Callable[[], None]) -> None:
        self.dir = root / "journal"
        self._node, self._boot, self._syncfs = node, boot, syncfs
        self._append_lock = threading.Lock()
        self._path = ""
        self._pid = -1
        self._opened = 0.0
        self._size = 0
        self._n = 0
        self._retired: list[str] = []
        self.tickets = TicketedFlush(self._flush_once, "flushing the commit journal")
        self._suspect = False  # an fdatasync failed: the next flush is a syncfs
        self._checkpointer = _Checkpointer(self._checkpoint)
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

    def prefix(self) -> str:
        return f"{self._node}~{self._boot}~"

    def _open_new(self) -> None:
        """Start a new active file (the append lock is held); the old one waits for a checkpoint."""
        if self._path and self._pid == os.getpid():
            self._retired.append(self._path)
        elif self._pid != os.getpid():
            self._retired = []  # a forked child: the parent's files are the parent's
        self._pid = os.getpid()
        self._n += 1
        self._path = f"{self.dir}/{self.prefix()}{self._pid}~{self._n}.jnl"
        self._opened, self._size = time.monotonic(), 0

    def append(self, records: Sequence[tuple[str, bytes]]) -> None:
        """Append records (path relative to queues/, message bytes) in one write; not yet durable.

        No descriptor stays open between calls (an open writable file would keep an operator
        from remounting the root read-only)."""
        blob = b"".join(encode_record(p, d) for p, d in records)
        with self._append_lock:
            if (not self._path or self._pid != os.getpid() or self._size >= ROTATE_BYTES
                    or time.monotonic() - self._opened >= ROTATE_SECONDS):
                self._open_new()
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(blob)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            self._size += len(blob)

    def retire_active(self) -> list[str]:
        """End the active file for a checkpoint: every file to delete once a syncfs succeeds."""
        with self._append_lock:
            if self._path and self._pid == os.getpid():
                self._retired.append(self._path)
                self._path = ""
            retired, self._retired = self._retired, []
            return retired

    def _flush_once(self) -> None:
        """fdatasync every file that may hold a record not yet known durable: the active file and
        the files retired since the last flush; the retired ones then go to the checkpoint thread.
        With no active file (a full flush retired it meanwhile, or a forked child) or after a failed
        fdatasync, only a syncfs is known to cover every record: that checkpoint runs here."""
        start = time.perf_counter()
        with self._append_lock:
            path = self._path if self._pid == os.getpid() else ""
            retired, self._retired = self._retired, []
            suspect, self._suspect = self._suspect, False
        if suspect or not path:
            self._checkpoint(retired)
        else:
            try:
                for p in [*retired, path]:
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

    def _checkpoint(self, retired: list[str]) -> None:
        """syncfs, then delete ``retired`` (on failure they wait for the next checkpoint)."""
        try:
            self._syncfs()
        except OSError:
            self._checkpointer.submit(retired, wake=False)
            raise
        for path in retired:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.checkpoints += 1

    def full_flush(self) -> None:
        """syncfs, retiring the active file: after it no journal of this process holds a record."""
        self._checkpoint(self.retire_active() + self._checkpointer.take())

    def flush(self) -> None:
        """Return once an fdatasync (or checkpoint) that started after this call has succeeded."""
        self.tickets.flush()

    def close(self) -> None:
        with self._append_lock:
            self._path = ""
        self._checkpointer.stop()


def _fdatasync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
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

    Retired files were fdatasync'd by the flush that retired them, so their records are durable;
    they only wait for a ``syncfs`` that makes their messages' renames durable too, after which
    they are deleted. Senders never wait for that syncfs (a checkpoint in the group-commit leader
    held every sender of the process behind a whole-file-system writeback). A file whose
    checkpoint failed waits for the next one; files left by a process that died are checkpointed
    by :func:`recover`.
    """

    #: pause before a failed checkpoint is tried again
    RETRY_SECONDS = 1.0

    def __init__(self, checkpoint: Callable[[list[str]], None]) -> None:
        self._checkpoint = checkpoint
        self._pid = -1
        self.thread: threading.Thread | None = None
        self._fresh()

    def _fresh(self) -> None:
        """New locks and no pending files: for the first use, and in a forked child (whose copied
        locks may have been held by a parent thread, and whose parent's files are the parent's)."""
        self._cond = threading.Condition()
        self._running = threading.Lock()  # held while a checkpoint runs
        self._pending: list[str] = []
        self._stopped = False

    def submit(self, paths: list[str], wake: bool = True) -> None:
        if self._pid != os.getpid():
            with _START_LOCK:
                if self._pid != os.getpid():
                    self._fresh()
                    self.thread = threading.Thread(target=self._run, name="spoolq-journal-checkpoint", daemon=True)
                    self.thread.start()
                    self._pid = os.getpid()
        with self._cond:
            self._pending.extend(paths)
            if wake:
                self._cond.notify()

    def stop(self) -> None:
        """End the thread once nothing is pending (the store is closing)."""
        if self._pid == os.getpid():
            with self._cond:
                self._stopped = True
                self._cond.notify()

    def take(self) -> list[str]:
        """Every pending file, once no checkpoint is running (for a synchronous full flush)."""
        if self._pid != os.getpid():
            return []
        with self._running, self._cond:
            pending, self._pending = self._pending, []
            return pending

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopped:
                    self._cond.wait()
                if not self._pending:
                    return
            with self._running:
                with self._cond:
                    batch, self._pending = self._pending, []
                try:
                    if batch:
                        self._checkpoint(batch)
                    continue
                except OSError:
                    pass  # the files are pending again
            time.sleep(self.RETRY_SECONDS)


def _pid_alive(pid: int) -> bool:
    return pid == os.getpid() or os.path.exists(f"/proc/{pid}")


def recover(root: Path, node: str, boot: str, syncfs: Callable[[], None],
            restore: Callable[[str, bytes], bool]) -> tuple[int, int]:
    """Replay this node's journals of earlier boots, retire those of dead processes of this boot.

    ``restore(rel_path, data)`` puts one message back if it is missing or torn (True if it did).
    Returns (files retired, messages restored)."""
    jdir = root / "journal"
    try:
        names = os.listdir(jdir)
    except FileNotFoundError:
        return 0, 0
    def orphaned(n: str) -> bool:
        parts = n[:-4].split("~")
        return len(parts) == 4 and parts[2].isdigit() and (parts[1] != boot or not _pid_alive(int(parts[2])))

    mine = [n for n in names if n.endswith(".jnl") and n.startswith(f"{node}~") and orphaned(n)]
    if not mine:
        return 0, 0
    lock_fd = os.open(jdir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        done: list[str] = []
        restored = 0
        for n in sorted(mine):
            parts = n[:-4].split("~")
            if len(parts) != 4 or not parts[2].isdigit():
                continue
            path = f"{jdir}/{n}"
            if parts[1] == boot:
                done.append(path)  # a crashed process of this boot: the page cache has it all
                continue
            try:
                with open(path, "rb") as f:
                    blob = f.read()
            except FileNotFoundError:
                continue
            for rel, data in decode_records(blob):
                restored += restore(rel, data)
            done.append(path)
        if done:
            syncfs()
            for path in done:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        return len(done), restored
    finally:
        os.close(lock_fd)
