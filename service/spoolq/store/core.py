"""The file store's shared core: the per-queue handle, the queue lookup, the shared helpers."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spoolq.errors import (
    QueueNotFound,
    StorageUnavailable,
    storage_error,
)
from spoolq.store import layout as L
from spoolq.store.config import config_from_json
from spoolq.store.cursor import ReadyCursor
from spoolq.store.files import (
    GroupCommit,
    TempWriter,
    Trash,
    listdir,
    read_file,
    read_json,
)
from spoolq.store.making import MessageFiles
from spoolq.store.markerlock import MarkerLocks
from spoolq.store.model import (
    Message,
    QueueConfig,
    QueueInfo,
    QueueKind,
)
from spoolq.store.watch import Watcher

Clock = Callable[[], float]
#: an empty poll re-runs claim expiry and due delays if they have not run for this long (seconds)
EMPTY_POLL_MAINTENANCE = 0.1
#: the write window: senders rename new messages into the ready bucket of the current second, so a
#: poller that finds a bucket (or ksec directory) this recent empty leaves it in place rather than
#: removing it under a sender's feet. Only an optimisation: renames survive any removal
#: (:func:`spoolq.store.files.rename_into`), this just keeps them from having to retry.
WRITE_WINDOW_MS = 2000
_MARKER_LOCKS_GUARD = threading.Lock()
#: per thread: the paths of the FIFO queues whose lock it holds (a nested step does not lock again)
_FIFO_HELD = threading.local()


def _fifo_locks_held() -> set[str]:
    held: set[str] | None = getattr(_FIFO_HELD, "paths", None)
    if held is None:
        held = _FIFO_HELD.paths = set()
    return held


def write_window_start(now_ms: int) -> str:
    """The oldest standard ready bucket still inside the write window at ``now_ms``."""
    return L.std_bucket(now_ms - WRITE_WINDOW_MS)


@dataclass
class QueueHandle:
    info: QueueInfo
    path: str
    stamp: tuple[int, int]
    cursor: ReadyCursor = field(default_factory=lambda: ReadyCursor())
    last_maintained: float = 0.0
    #: FIFO: serialises this process's threads; the POSIX record lock serialises processes and nodes
    fifo_mutex: threading.Lock = field(default_factory=threading.Lock)
    #: dedup: this process's handle on ``dedup.lock`` (created on first use, see markerlock.py)
    _marker_locks: MarkerLocks | None = None

    @property
    def kind(self) -> QueueKind:
        return self.info.kind

    @property
    def name(self) -> str:
        return self.info.name

    def ready_dir(self, bucket: str) -> str:
        return self.sub(L.ready_path(bucket))

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

    def claimed_files(self) -> Iterator[tuple[str, L.Parsed]]:
        """(path, parsed name) of every claimed file, live or expired, across all shards."""
        cdir = self.sub("claimed")
        for shard in listdir(cdir):
            for n in listdir(f"{cdir}/{shard}"):
                p = L.parse_claimed(n)
                if p is not None:
                    yield f"{cdir}/{shard}/{n}", p

    def dedup_marker(self, body: bytes) -> str:
        """Dedup queues: the marker naming the pending, unsurfaced copy of ``body``."""
        return self.sub(f"dedup/{hashlib.sha256(body).hexdigest()}")

    def marker_locks(self) -> MarkerLocks:
        """Dedup queues: the locks that make a marker's check-then-write atomic (markerlock.py)."""
        with _MARKER_LOCKS_GUARD:
            if self._marker_locks is None:
                self._marker_locks = MarkerLocks(self.path)
            return self._marker_locks

    def sub(self, part: str) -> str:
        return f"{self.path}/{part}"


class StoreCore:
    """State and helpers every part of the file store shares. See :class:`~spoolq.store.filestore.FileStore`."""

    root: Path
    node_id: str
    clock: Clock
    peers: int
    maintenance_interval: float
    fsync: bool
    queues_dir: str
    tmp: TempWriter
    files: MessageFiles
    trash: Trash
    commit: GroupCommit
    watcher: Watcher
    _ids: L.IdFactory
    _queues: dict[str, QueueHandle]
    _queues_lock: threading.Lock
    _bytes_per_entry: float  # directory bytes per entry, recalibrated by exact counts (size estimates)

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def tmp_node_prefix(self) -> str:
        return self.tmp.prefix

    def _qpath(self, name: str) -> str:
        return f"{self.queues_dir}/{L.queue_dir_name(name)}"

    def _find(self, name: str) -> QueueHandle | None:
        """The queue named ``name`` (validated), or None; cached while meta.json is unchanged."""
        L.check_queue_name(name)
        path = self._qpath(name)
        try:
            st = os.stat(f"{path}/meta.json")
        except FileNotFoundError:
            self._queues.pop(name, None)
            if not os.path.isdir(self.queues_dir):  # the root vanished (unmounted, deleted)
                raise StorageUnavailable(f"storage unavailable: the root {self.root} is missing") from None
            return None
        except OSError as e:
            raise storage_error(e, f"reading queue {name!r}") from e
        stamp = (st.st_ino, st.st_mtime_ns)
        cached = self._queues.get(name)
        if cached is not None and cached.stamp == stamp:
            return cached
        data = read_json(Path(path) / "meta.json")
        if data is None:
            return None
        info = QueueInfo(name=data["name"], kind=QueueKind(data["kind"]),
                         config=config_from_json(data.get("config") or {}),
                         tags=dict(data.get("tags") or {}), created_at=float(data["created_at"]),
                         updated_at=float(data["updated_at"]))
        with self._queues_lock:
            if cached is not None:
                cached.info, cached.stamp = info, stamp
                return cached
            q = QueueHandle(info=info, path=path, stamp=stamp)
            self._queues[name] = q
            return q

    def _require(self, name: str) -> QueueHandle:
        q = self._find(name)
        if q is None:
            raise QueueNotFound(name)
        return q

    def _message(self, mid: str, meta: Mapping[str, Any], body: bytes, rc: int, frt: int,
                 claimed_until: float | None = None) -> Message:
        return Message(id=mid, body=body, sent_at=int(meta.get("t", L.id_time_ms(mid))) / 1000,
                       receive_count=rc, first_received_at=frt / 1000 if frt else None,
                       attributes=meta.get("a") or {}, group_id=meta.get("g"), dedup_id=meta.get("d"),
                       sequence_number=L.sequence_number(mid) if "g" in meta else None,
                       claimed_until=claimed_until)

    def _quarantine(self, path: str, q: QueueHandle) -> None:
        with contextlib.suppress(OSError):
            os.rename(path, f"{self.root}/corrupt/{L.queue_dir_name(q.name)}~{os.path.basename(path)}")

    def _maybe_maintain(self, q: QueueHandle, interval: float) -> bool:
        """Run this queue's maintenance if it has not run for ``interval`` seconds in this process.

        Returns True if it made messages visible (expired claims, due delays)."""
        now = self.clock()
        if now - q.last_maintained < interval:
            return False
        q.last_maintained = now
        try:
            from spoolq.store.maintenance import maintain_queue

            done = maintain_queue(self, q, int(now * 1000))
        except OSError:
            return False  # maintenance is retried; the operation that triggered it must not fail for it
        return bool(done["claims_expired"] or done["delays_released"])

    def _surface(self, q: QueueHandle, mid: str, body: bytes) -> None:
        """Dedup: once peeked or polled, a message no longer absorbs identical sends. The marker is
        removed under its lock (a concurrent identical send may be replacing it), and only looked
        at without the lock first, so a poll of a message whose marker names another pays nothing."""
        marker = q.dedup_marker(body)
        if self._read_marker_id(marker) != mid:
            return
        try:
            with q.marker_locks().hold([marker]):
                if self._read_marker_id(marker) == mid:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(marker)
        except FileNotFoundError:
            return  # the queue was deleted meanwhile

    def _pending_copy(self, q: QueueHandle, marker: str) -> str | None:
        """The id a dedup marker names, if that message is still pending: never received, so
        still at its first ready name (a stale marker names a claimed or acked message).

        The bucket is listed rather than the name stat'd: on a shared file system a stat may be
        answered from this node's caches (FUSE dentries, GlusterFS md-cache and quick-read) for
        up to a second after another node claimed the message, and the send would be dropped as
        a duplicate of a message already delivered. A directory listing asks the server."""
        pending = self._read_marker_id(marker)
        if pending is not None and L.ready_name(pending, 0, 0) in listdir(
                q.ready_dir(L.std_bucket(L.id_time_ms(pending)))):
            return pending
        return None

    def _read_marker_id(self, marker: str) -> str | None:
        try:
            text = read_file(marker, replaced=True).decode("ascii", "replace").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise storage_error(e, "reading a dedup marker") from e
        return text if L.ID_RE.match(text) else None

    @contextlib.contextmanager
    def _fifo_lock(self, q: QueueHandle) -> Iterator[None]:
        """Exclusive access to a FIFO queue's group state across threads, processes and nodes.

        POSIX record locks (``lockf``) are what NFS (NLM) and GlusterFS (the locks translator)
        enforce between nodes; they are per process, so threads take ``fifo_mutex`` first. A
        thread that already holds the lock (a step nested in a locked operation) does not take
        it again: a second descriptor's close would drop the process's lock."""
        held = _fifo_locks_held()
        if q.path in held:
            yield
            return
        with q.fifo_mutex:
            try:
                fd = os.open(q.sub("lock"), os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise storage_error(e, f"locking FIFO queue {q.name!r}") from e
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX)
                held.add(q.path)
                try:
                    yield
                finally:
                    held.discard(q.path)
            finally:
                os.close(fd)

    @contextlib.contextmanager
    def _renaming_into_groups(self, q: QueueHandle) -> Iterator[None]:
        """Held around a rename into a FIFO group's directory from outside that group (a due
        delayed message, a transfer from another queue): such a rename must not meet the removal
        of the group's directories (:func:`spoolq.store.maintenance.remove_idle_groups`), so it
        takes the queue's lock. Renames within a group (release, claim expiry, renew) need not: the
        message in the other directory keeps the group from looking idle. A thread that holds
        another FIFO queue's lock (dead-lettering from a FIFO claim) does not wait for this one:
        two queues that dead-letter into each other could wait for each other across nodes."""
        held = _fifo_locks_held()
        if q.kind is not QueueKind.FIFO or (held and q.path not in held):
            yield
            return
        with self._fifo_lock(q):
            yield

    def create_queue(self, name: str, kind: QueueKind = QueueKind.STANDARD, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True) -> QueueInfo:
        raise NotImplementedError  # FileStore
