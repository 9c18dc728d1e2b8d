"""Group commit: when what the store writes reaches stable storage.

What is flushed when (``fsync=True``):

* A send writes each message whole and then names it in ``ready/`` (or ``delayed/``;
  :mod:`spoolq.store.message_files`: an ``O_TMPFILE`` linked into place, or a rename out of the
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

With ``flush="journal"`` (where syncfs and a boot id exist; the default on ext4 with its journal,
:mod:`spoolq.store.filesystems`), standard-queue
sends do not wait for a syncfs: each message is also appended to this process's commit
journal, and one ``fdatasync`` of the journal makes a group of sends durable (see
:mod:`spoolq.store.journal`: replay after a power failure, checkpoints). Everything else
that waits for a flush above takes the full flush (a syncfs, which also retires the
process's journal files).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from pathlib import Path

from spoolq.store.fileops import GONE
from spoolq.store.filesystems import load_syncfs
from spoolq.store.journal import JournalCommit, boot_id
from spoolq.store.ticketed_flush import FlushListener, TicketedFlush

_SYNCFS = load_syncfs()


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


class GroupCommit:
    """Makes everything written before :meth:`flush` durable, one flush for many callers
    (group commit by tickets: :class:`~spoolq.store.ticketed_flush.TicketedFlush`).

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
        #: True when each file must be fsync'd as it is written (no syncfs here); read on every send
        self.per_file = enabled and self._syncfs is None
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
            self.journal.full_flush()  # syncfs: every record this process wrote before it is redundant
        elif self._syncfs is not None:
            self._syncfs_root()
        else:
            for p in dict.fromkeys(paths):
                inode = _fsync_path(p)
                if inode is not None:
                    self._name_durable(p, inode)
                else:
                    self._flush_nearest_ancestor(p)
        elapsed = time.perf_counter() - start
        self.flushes += 1
        self.flush_seconds += elapsed
        return elapsed

    def _flush_nearest_ancestor(self, path: str) -> None:
        """``path`` was removed after something was renamed into it (an emptied bucket, removed by
        a poller on any node): fsync the nearest directory above it that still exists.

        The rename into it must still be made durable before the sender is acknowledged. The
        removal came after that rename and changed the directory above; a file system whose
        metadata log is ordered (ext4's and XFS's journals) cannot keep the removal and lose the
        rename before it. On CephFS an fsync waits only for this client's own unjournaled changes
        to the directory: it covers a bucket removed through this node's mount (the removal, and
        so the rename journaled before it), not one removed by another node, which stays a gap
        there (pollers remove only buckets past their write window, so it needs a flush that
        waits longer than that window)."""
        root = str(self._root)
        parent = os.path.dirname(path)
        while parent.startswith(root):
            if _fsync_path(parent) is not None:
                return
            parent = os.path.dirname(parent)

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

    def announce(self) -> bool:
        """A send has begun writing files it will flush (:meth:`TicketedFlush.announce`); False
        when flushes are off (nothing announced)."""
        if self.enabled:
            self.tickets.announce()
            return True
        return False

    def withdraw(self) -> None:
        """An announced send failed before its flush."""
        self.tickets.withdraw()

    def flush(self, announced: bool = False) -> None:
        if self.enabled:
            self.tickets.flush(announced)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()  # a clean stop leaves no journal to replay
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
