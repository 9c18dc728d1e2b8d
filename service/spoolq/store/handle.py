"""One queue as the store holds it: its directory, its cached metadata, its cursor and locks.

A :class:`QueueHandle` is what :meth:`~spoolq.store.core.StoreCore.find` returns for a queue
whose ``meta.json`` exists; it is cached per process while ``meta.json`` is unchanged (same
inode and mtime), so every operation on a queue shares one ready cursor. Its locks are the
process's, not the handle's (a second handle is made when ``meta.json`` was missing for an
instant, and both may be in use): they are found by the queue's real path. It knows the queue's
directory grammar (:mod:`spoolq.store.layout`) and reads the small per-message records that live
beside the messages: dedup markers and nack counts. It writes nothing but the removal of a
surfaced dedup marker.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from spoolq.errors import storage_error
from spoolq.store import layout as L
from spoolq.store import markerlock
from spoolq.store.cursor import ReadyCursor
from spoolq.store.files import listdir, read_file
from spoolq.store.model import QueueInfo, QueueKind

#: the write window: senders rename new messages into the ready bucket of the current second, so a
#: poller that finds a bucket (or ksec directory) this recent empty leaves it in place rather than
#: removing it under a sender's feet. Only an optimisation: renames survive any removal
#: (:func:`spoolq.store.files.rename_into`), this just keeps them from having to retry.
WRITE_WINDOW_MS = 2000


def write_window_start(now_ms: int) -> str:
    """The oldest standard ready bucket still inside the write window at ``now_ms``."""
    return L.std_bucket(now_ms - WRITE_WINDOW_MS)


def read_marker_id(marker: str) -> str | None:
    """The message id a dedup marker file names, or None if there is no (valid) marker."""
    try:
        text = read_file(marker, replaced=True).decode("ascii", "replace").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise storage_error(e, "reading a dedup marker") from e
    return text if L.ID_RE.match(text) else None


@dataclass
class QueueHandle:
    info: QueueInfo
    path: str
    stamp: tuple[int, int]
    #: the queue directory's real path: what this process's lock tables know it by
    #: (recordlock.py, markerlock.py), so that every handle of the queue shares its locks
    real_path: str
    cursor: ReadyCursor = field(default_factory=lambda: ReadyCursor())
    last_maintained: float = 0.0

    @property
    def kind(self) -> QueueKind:
        return self.info.kind

    @property
    def name(self) -> str:
        return self.info.name

    def sub(self, part: str) -> str:
        return f"{self.path}/{part}"

    def ready_dir(self, bucket: str) -> str:
        return self.sub(L.ready_path(bucket))

    def ready_bucket(self, mid: str, shard: str) -> str:
        """The ready bucket a message returns to from its claim shard (FIFO: its group)."""
        return shard if self.info.kind is QueueKind.FIFO else L.std_bucket(L.id_time_ms(mid))

    def ready_buckets(self, keep_from: str) -> Iterator[tuple[str, str]]:
        """(bucket, directory) of every ready bucket, oldest first, listed lazily: a caller that
        stops early lists only ``ready/`` and the ksec directories it reached. An empty ksec
        directory is removed on the way unless it holds buckets at or after ``keep_from`` (the
        write window, see :data:`WRITE_WINDOW_MS`)."""
        ready = self.sub("ready")
        if self.info.kind is QueueKind.FIFO:
            for group in sorted(listdir(ready)):
                yield group, f"{ready}/{group}"
            return
        for ksec in sorted(listdir(ready)):
            if not L.KSEC_RE.fullmatch(ksec):
                continue
            kdir = f"{ready}/{ksec}"
            buckets = sorted(listdir(kdir))
            if not buckets:
                if ksec < keep_from[:8]:
                    with contextlib.suppress(OSError):
                        os.rmdir(kdir)
                continue
            for b in buckets:
                if L.STD_BUCKET_RE.fullmatch(b):
                    yield b, f"{kdir}/{b}"

    def claimed_files(self) -> Iterator[tuple[str, L.ClaimedName]]:
        """(path, parsed name) of every claimed file, live or expired, across all shards."""
        cdir = self.sub("claimed")
        for shard in listdir(cdir):
            for n in listdir(f"{cdir}/{shard}"):
                p = L.parse_claimed(n)
                if p is not None:
                    yield f"{cdir}/{shard}/{n}", p

    def nacks_file(self, mid: str) -> str:
        """The nack count of message ``mid`` (see :mod:`spoolq.store.jobs`)."""
        return self.sub(f"nacks/{mid}")

    # ------------------------------------------------------------ dedup markers

    def dedup_marker(self, body: bytes) -> str:
        """Dedup queues: the marker naming the pending, unsurfaced copy of ``body``."""
        return self.sub(f"dedup/{hashlib.sha256(body).hexdigest()}")

    def hold_marker_locks(self, markers: Iterable[str]) -> contextlib.AbstractContextManager[None]:
        """Dedup queues: hold the locks that make the check-then-write of ``markers`` atomic
        (markerlock.py: one per process per queue, whichever handle asks)."""
        return markerlock.hold(self.real_path, markers)

    def lock_file(self, name: str) -> str:
        """The real path of the queue's lock file ``name`` (``lock``, ``settings.lock``)."""
        return f"{self.real_path}/{name}"

    def pending_copy(self, marker: str) -> str | None:
        """The id a dedup marker names, if that message is still pending: never received, so
        still at its first ready name (a stale marker names a claimed or acked message).

        The bucket is listed rather than the name stat'd: on a shared file system a stat may be
        answered from this node's caches (FUSE dentries, GlusterFS md-cache and quick-read) for
        up to a second after another node claimed the message, and the send would be dropped as
        a duplicate of a message already delivered. A directory listing asks the server."""
        pending = read_marker_id(marker)
        if pending is not None and L.ready_name(pending, 0, 0) in listdir(
                self.ready_dir(L.std_bucket(L.id_time_ms(pending)))):
            return pending
        return None

    def surface(self, mid: str, body: bytes) -> None:
        """Dedup: once peeked or polled, a message no longer absorbs identical sends. The marker is
        removed under its lock (a concurrent identical send may be replacing it), and only looked
        at without the lock first, so a poll of a message whose marker names another pays nothing."""
        marker = self.dedup_marker(body)
        if read_marker_id(marker) != mid:
            return
        try:
            with self.hold_marker_locks([marker]):
                if read_marker_id(marker) == mid:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(marker)
        except FileNotFoundError:
            return  # the queue was deleted meanwhile
