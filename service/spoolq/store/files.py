"""Durable file primitives: the message codec, temp-file writes, atomic JSON replace, group commit.

Message file format (written once, never rewritten)::

    b"SPQ1" | u32 meta_len | u32 body_len | u32 crc32(meta + body) | meta (JSON, UTF-8) | body

A reader rejects a file whose magic, lengths or CRC do not match: that can only be a
write torn by a power failure, which was never acknowledged (see "what is flushed
when" below), so it is moved to ``<root>/corrupt/`` instead of being delivered.

What is flushed when (``fsync=True``):

* A send writes each message whole and then names it in ``ready/`` (or ``delayed/``;
  :mod:`spoolq.store.making`: an ``O_TMPFILE`` linked into place, or a rename out of the
  process's own temp directory), and then waits in :class:`GroupCommit` for one ``syncfs(2)``
  of the root's file system that *started after* its file got its name. syncfs writes every dirty page and commits
  the journal, so the data and the rename are on stable storage when it returns. While
  one syncfs runs, every other send finishing in the process queues up behind it and
  is made durable by the next one: one flush for many sends (group commit). Across the
  processes of a node, the kernel merges concurrent syncfs calls into the same journal
  commit; serialising them behind a node-wide lock measured slower (docs/performance.md). A message
  may be visible to pollers a few milliseconds before its send is acknowledged; if
  power fails in that window the sender never got success and retries (a duplicate at
  worst, never a loss).
* An at-most-once delivery, a move's progress and queue metadata also wait for a flush.
* Claims, acks, renews and releases do not: losing one to a power failure (not to a
  process crash: the page cache survives kill -9) means one more delivery, which
  at-least-once allows.

Where ``syncfs`` is missing (non-Linux), or with ``flush="fsync"`` (for network file systems,
where syncfs on a FUSE or NFS mount may not reach the server), each message file is fsync'd
as it is written (before it is named) and the leader of a group fsyncs every directory the group
named files in:
still one flush round for many concurrent sends, but only of this store's own files, and per
process (a leader must fsync the very directories its own group renamed into).

A name is durable only if every directory on its way is: an fsync of ``ready/<ksec>/<bucket>/``
makes the names in it durable, not the bucket's own name in ``ready/<ksec>/``. ext4 commits a
directory's creation with its parent in one journal transaction, but POSIX promises nothing of the
kind, and other file systems (XFS's log is ordered, NFS makes ``mkdir`` stable on the server, FUSE
file systems do what their server does) need not. So with per-file fsync the leader also fsyncs
the parent of every directory it flushes whose name it has not made durable before, and up the
chain until a directory it has (:meth:`GroupCommit.note_paths`; remembered per process by path and
inode number, so a bucket removed and made again is flushed again, while a bucket a sender
keeps writing into costs one extra fsync in its life). Buckets are per second and ksec
directories per 1000 s, so that is about one parent fsync a second per busy queue.

With ``flush="journal"`` (where syncfs and a boot id exist; not the default), standard-queue
sends do not wait for a syncfs: each message is also appended to this process's commit
journal, and one ``fdatasync`` of the journal makes a group of sends durable (see
:mod:`spoolq.store.journal`: replay after a power failure, checkpoints). Everything else
that waits for a flush above takes the full flush (a syncfs, which also retires the
process's journal files).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import struct
import threading
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spoolq.store.journal import JournalCommit, boot_id
from spoolq.store.tickets import FlushListener, TicketedFlush

MAGIC = b"SPQ1"
_HEADER = struct.Struct(">4sIII")


class CorruptMessage(Exception):
    """A message file that fails its checksum (a torn, never-acknowledged write)."""


def encode_meta(meta: Mapping[str, Any]) -> bytes:
    """The meta part of a message file (TypeError or ValueError for what JSON cannot hold)."""
    sent = meta.get("t")
    if len(meta) == 1 and type(sent) is int:  # a plain message: the same bytes json.dumps makes, without it
        return b'{"t":%d}' % sent
    return json.dumps(meta, separators=(",", ":"), sort_keys=True).encode()


def encode_message(meta: Mapping[str, Any], body: bytes, meta_bytes: bytes | None = None) -> bytes:
    """A whole message file; ``meta_bytes``: ``encode_meta(meta)`` when the caller has it already."""
    if meta_bytes is None:
        meta_bytes = encode_meta(meta)
    crc = zlib.crc32(body, zlib.crc32(meta_bytes))
    return _HEADER.pack(MAGIC, len(meta_bytes), len(body), crc) + meta_bytes + body


def decode_message(data: bytes) -> tuple[dict[str, Any], bytes]:
    if len(data) < _HEADER.size:
        raise CorruptMessage("short file")
    magic, meta_len, body_len, crc = _HEADER.unpack_from(data)
    if magic != MAGIC or _HEADER.size + meta_len + body_len != len(data):
        raise CorruptMessage("bad header")
    meta_bytes = data[_HEADER.size:_HEADER.size + meta_len]
    body = data[_HEADER.size + meta_len:]
    if zlib.crc32(body, zlib.crc32(meta_bytes)) != crc:
        raise CorruptMessage("checksum mismatch")
    if meta_bytes.startswith(b'{"t":') and meta_bytes.endswith(b"}") and meta_bytes[5:-1].isdigit():
        return {"t": int(meta_bytes[5:-1])}, body  # a plain message (see encode_message)
    meta = json.loads(meta_bytes)
    if not isinstance(meta, dict):
        raise CorruptMessage("bad meta")
    return meta, body


def read_file(path: str, *, replaced: bool = False) -> bytes:
    """The whole file. ESTALE at any step (GlusterFS may report it on open, read or even close
    when another mount replaced or removed the file; see ``GONE``) is FileNotFoundError: the
    file this name led to is gone, which every caller already handles as a race it lost.

    ``replaced``: the name is of a small record that writers replace whole (by rename) rather
    than remove, so after ESTALE the name most likely leads to a newer version: looked up again
    over :data:`_STALE_WAITS` before it counts as gone."""
    for pause in _STALE_WAITS if replaced else (0.0,):
        if pause:
            time.sleep(pause)
        try:
            return _read_whole(path)
        except OSError as e:
            if e.errno != errno.ESTALE:
                raise
    raise FileNotFoundError(errno.ENOENT, "replaced or removed through another mount", path)


def _read_whole(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _load_syncfs() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_SYNCFS = _load_syncfs()


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_path(path: str) -> int | None:
    """fsync a file or directory; its inode number, or None if it is gone (a bucket emptied and
    removed since, by a poller, maybe on another node)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        if e.errno in GONE:
            return None
        raise
    try:
        os.fsync(fd)
        return os.fstat(fd).st_ino
    finally:
        os.close(fd)


def make_dirs_durable(path: str, base: str) -> None:
    """Create the missing directories from ``base`` (which must exist) down to ``path``, each
    one's name fsync'd in its parent before the next is made: for records flushed with ``fsync``
    whose directory may be new (archive segments)."""
    rel = os.path.relpath(path, base)
    at = base
    for part in ([] if rel == "." else rel.split("/")):
        parent, at = at, f"{at}/{part}"
        try:
            os.mkdir(at)
        except FileExistsError:
            continue
        fsync_dir(parent)


class GroupCommit:
    """Makes everything written before :meth:`flush` durable, one flush for many callers
    (group commit by tickets: :class:`~spoolq.store.tickets.TicketedFlush`).

    ``on_flush``, when set, is called by each flush's leader after it succeeded with the flush's
    duration in seconds and the number of tickets (waiting writers) it made durable; the store
    sets it to tell its listeners (metrics). The journal's own flushes report to the journal's
    ``on_flush``.
    """

    def __init__(self, root: Path, enabled: bool, use_syncfs: bool = True, node_id: str = "node",
                 journal: bool = False) -> None:
        self.enabled = enabled
        #: syncfs(2) flushes the whole local file system at once; per-file fsync is for file
        #: systems where syncfs may not reach stable storage (FUSE, NFS) or is missing
        self._syncfs = _SYNCFS if use_syncfs else None
        self._root = root
        self.tickets = TicketedFlush(self._flush_once, "flushing to stable storage")
        self._fd: int | None = None
        self._paths_lock = threading.Lock()
        self._pending_paths: list[str] = []  # only used without syncfs
        #: without syncfs: directories (path -> inode) whose name this process made durable in its parent
        self._named: dict[str, int] = {}
        #: flush="journal": standard sends are made durable by this process's commit journal
        self.journal: JournalCommit | None = None
        boot = boot_id()
        if enabled and journal and self._syncfs is not None and boot is not None:
            node = "".join(c if c.isalnum() else "_" for c in node_id)[:40]
            self.journal = JournalCommit(root, node, boot, self._syncfs_root)
        self.flushes = 0
        self.flush_seconds = 0.0

    @property
    def on_flush(self) -> FlushListener | None:
        return self.tickets.on_flush

    @on_flush.setter
    def on_flush(self, listener: FlushListener | None) -> None:
        self.tickets.on_flush = listener

    @property
    def per_file(self) -> bool:
        """True when each file must be fsync'd as it is written (no syncfs here)."""
        return self.enabled and self._syncfs is None

    def _root_fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self._root, os.O_RDONLY | os.O_DIRECTORY)
        return self._fd

    def note_paths(self, *paths: str) -> None:
        """Without syncfs, remember files and directories the next flush must fsync."""
        if self.enabled and self._syncfs is None:
            with self._paths_lock:
                self._pending_paths.extend(paths)

    def _flush_once(self) -> None:
        """One flush for the tickets its leader covers: the paths noted so far include all of theirs
        (a writer notes its paths before it takes its ticket)."""
        with self._paths_lock:
            paths, self._pending_paths = self._pending_paths, []
        self._do_flush(paths)

    def _do_flush(self, paths: list[str]) -> float:
        start = time.perf_counter()
        if self.journal is not None:
            self.journal.full_flush()  # syncfs, and this process's journal files are retired
        elif self._syncfs is not None:
            self._syncfs_root()
        else:
            for p in dict.fromkeys(paths):
                inode = _fsync_path(p)
                if inode is not None:
                    self._name_durable(p, inode)
        elapsed = time.perf_counter() - start
        self.flushes += 1
        self.flush_seconds += elapsed
        return elapsed

    def _name_durable(self, path: str, inode: int) -> None:
        """Make the name of directory ``path`` (and of the directories above it, up to the root)
        durable: fsync each parent whose child's name this process has not flushed yet."""
        root = str(self._root)
        if len(self._named) > 50_000:
            self._named.clear()
        while path.startswith(root + "/") and self._named.get(path) != inode:
            parent = os.path.dirname(path)
            parent_inode = _fsync_path(parent)
            if parent_inode is None:
                return  # removed since: nothing of ours can be in it
            self._named[path] = inode
            path, inode = parent, parent_inode

    def syncfs_now(self) -> None:
        """One syncfs of the root's file system now (or a full flush round where syncfs is missing)."""
        if self._syncfs is None:
            self.flush()
        else:
            self._syncfs_root()

    def _syncfs_root(self) -> None:
        assert self._syncfs is not None
        if self._syncfs(self._root_fd()) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    def flush(self) -> None:
        if self.enabled:
            self.tickets.flush()

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()  # a clean stop leaves no journal to replay
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None


class TempWriter:
    """Writes complete files under ``<root>/tmp`` with names unique to this process."""

    def __init__(self, tmp_dir: Path, node_id: str) -> None:
        self._dir = str(tmp_dir)
        self._node = "".join(c if c.isalnum() else "_" for c in node_id)[:40]
        self._lock = threading.Lock()
        self._n = 0

    @property
    def prefix(self) -> str:
        """Every temp file this node writes starts with this (then ``<pid>-``)."""
        return f"{self._node}-"

    def write(self, data: bytes, fsync_file: bool = False) -> str:
        with self._lock:
            self._n += 1
            n = self._n
        path = f"{self._dir}/{self._node}-{os.getpid()}-{threading.get_ident():x}-{n}.tmp"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if fsync_file:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            try:
                os.unlink(path)
            except OSError:
                pass
            raise
        os.close(fd)
        return path


#: errnos that mean "that name is not there (any more)": ENOENT, and ESTALE, which a GlusterFS FUSE
#: client returns when another mount removed the file or its directory first (its cached handle is stale)
GONE = (errno.ENOENT, errno.ESTALE)

#: how often :func:`rename_into` re-creates a directory that others keep removing before it gives
#: up; each retry means another process emptied and removed the directory between our ``mkdir``
#: and our ``rename``, which removers avoid for the buckets senders write into (see
#: :data:`spoolq.store.core.WRITE_WINDOW_MS`), so in practice the second attempt succeeds
RENAME_ATTEMPTS = 1000

#: pauses before the retries of a rename that met a stale directory handle (ESTALE): together
#: longer than the FUSE entry timeout (1 s by default), after which the kernel looks the path up again
_STALE_WAITS = (0.0, 0.05, 0.2, 0.5, 1.0)


def rename_into(src: str, dst_dir: str, name: str, *, base: str) -> None:
    """Rename ``src`` to ``dst_dir/name``, re-creating the directories between ``base`` and
    ``dst_dir`` as often as somebody else removes them.

    **Invariant (directories may vanish, renames into them never fail for it).** Any process may
    remove an empty state, shard or bucket directory at any moment (a poller that emptied a bucket,
    maintenance, purge replacing ``ready/``), on this node or another. FIFO group directories are
    the exception: they are removed only under the queue's lock, when their group holds no message
    (see ``maintenance.remove_idle_groups`` for why). Whoever renames a file into a
    directory therefore creates each missing level below ``base`` (the queue's directory, which
    only queue deletion removes) one ``mkdir`` at a time and renames again, until the rename
    succeeds. ``base`` itself is never created: a queue deleted meanwhile is not resurrected.

    On a shared file system the loser of a race may get ESTALE instead of ENOENT (GlusterFS does,
    when another node renamed the file or removed its directory): a fresh listing of ``src``'s
    directory tells a lost race from a stale directory handle, which is retried after the pauses
    of :data:`_STALE_WAITS` (the FUSE cache forgets the handle within about a second).

    Raises FileNotFoundError if ``src`` is gone (someone else moved it first) or ``base`` is gone
    (the queue was deleted); OSError(EAGAIN) after :data:`RENAME_ATTEMPTS` lost races, ESTALE
    when the stale handle outlives the pauses.
    """
    dst = f"{dst_dir}/{name}"
    stale_waits = iter(_STALE_WAITS)
    for _attempt in range(RENAME_ATTEMPTS):
        try:
            os.rename(src, dst)
            return
        except OSError as e:
            if e.errno not in GONE:
                raise
            stale = e.errno == errno.ESTALE
            if not _present(src, stale):
                raise FileNotFoundError(errno.ENOENT, "renamed or removed by someone else", src) from e
        stale = _make_levels(base, dst_dir) or stale
        if stale:
            wait = next(stale_waits, None)
            if wait is None:
                raise OSError(errno.ESTALE, f"{dst_dir} stayed stale while renaming into it")
            time.sleep(wait)
    raise OSError(errno.EAGAIN, f"{dst_dir} was removed {RENAME_ATTEMPTS} times while renaming into it")


class BaseGone(FileNotFoundError):
    """The directory a file was being made or named under (its queue's) was not there: deleted, or
    moved aside for an instant by a delete-if-empty (which may have put it back by now)."""


def _make_levels(base: str, dst_dir: str) -> bool:
    """Create the missing directories from ``base`` (exclusive) down to ``dst_dir``, top first.

    A level removed again right after we made it just ends this pass (the caller's rename fails and
    it comes back). Returns whether a level answered ESTALE (a handle made stale by another mount);
    :class:`BaseGone` when ``base`` itself is gone.
    """
    rel = os.path.relpath(dst_dir, base)
    path = base
    stale = False
    for part in ([] if rel == "." else rel.split("/")):
        path = f"{path}/{part}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        except OSError as e:
            if e.errno not in GONE:
                raise
            stale = e.errno == errno.ESTALE
            break
    if not _present(base, stale):
        raise BaseGone(errno.ENOENT, "queue directory is gone", base)
    return stale


def _present(path: str, stale: bool) -> bool:
    """Whether ``path`` still exists. After ESTALE a stat may be answered from this mount's cache
    (directory listings through FUSE fill it), so the directory is listed: a server round trip."""
    if not stale:
        return os.path.lexists(path)
    return os.path.basename(path) in listdir(os.path.dirname(path))




def write_json_atomic(path: Path, value: Mapping[str, Any], tmp: TempWriter, durable: bool) -> None:
    data = json.dumps(value, indent=1, sort_keys=True).encode()
    t = tmp.write(data, fsync_file=durable)
    os.replace(t, path)
    if durable:
        fsync_dir(str(path.parent))


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file that writers replace whole (:func:`write_json_atomic`): the object, or
    None if the file is missing, not a JSON object, or a directory. It is read as a replaced
    record (see :func:`read_file`): a GlusterFS mount whose cached handle was replaced through
    another mount answers ESTALE until it looks the name up again."""
    try:
        value = json.loads(read_file(str(path), replaced=True))
    except (FileNotFoundError, IsADirectoryError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as e:
        if e.errno == errno.ESTALE:  # removed through another mount (see GONE)
            return []
        raise
