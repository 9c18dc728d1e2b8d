"""One queue as the store holds it: its directory, its cached metadata, its cursor and locks.

A :class:`QueueHandle` is what :meth:`~spoolq.store.catalog.QueueCatalog.find` returns for a queue
whose ``meta.json`` exists; it is cached per process while ``meta.json`` is unchanged (same
inode and mtime), so every operation on a queue shares one ready cursor. Its locks are the
process's, not the handle's (a second handle is made when ``meta.json`` was missing for an
instant, and both may be in use): they are found by the queue's real path. It knows the queue's
directory grammar (:mod:`spoolq.store.layout`) and reads the small per-message records that live
beside the messages: dedup markers and nack counts; it finds a message by id
(:meth:`QueueHandle.locate_claimed`, :meth:`QueueHandle.locate_unclaimed`). It holds the queue's
locks (the FIFO lock, the bucket lock of renames into old buckets), renames a claimed message back
to its ready name (:meth:`QueueHandle.requeue`) and moves a file that is no message aside
(:meth:`QueueHandle.quarantine`); it writes nothing else but the removal of a surfaced dedup
marker, and the origin markers of dead letters.

Dead-letter origins, so that a move can return each message to its source:
``origins/<id>`` inside a dead-letter queue holds the name of the queue that the message with
that id was dead-lettered from. It is written just before the message is renamed into the
dead-letter queue (a marker whose message never arrived is harmless: ids are never reused), read
and removed by a move started with ``to_origins``, and dropped by maintenance once the id is
older than the queue's retention plus an hour (its message is gone by then). Markers are not
flushed: after a power cut one may be missing, and its message then goes to the move's
destination like a message that was never dead-lettered.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from spoolq.errors import storage_error
from spoolq.store import bucket_guard, damage, markerlock, recordlock
from spoolq.store import layout as L
from spoolq.store.cursor import ReadyCursor
from spoolq.store.fileops import listdir, read_file, rename_into
from spoolq.store.model import QueueInfo, QueueKind

ORIGINS = "origins"
#: a marker outlives its queue's retention by this much before maintenance drops it (ms)
PRUNE_MARGIN_MS = 3_600_000
PRUNE_EVERY_MS = 600_000
_pruned_at: dict[str, int] = {}  # queue path -> when this process last looked at its markers

#: the write window: senders rename new messages into the ready bucket of the current second, so a
#: poller that finds a bucket (or ksec directory) this recent empty leaves it in place rather than
#: removing it under a sender's feet. Only an optimisation: renames survive any removal
#: (:func:`spoolq.store.fileops.rename_into`), this just keeps them from having to retry.
WRITE_WINDOW_MS = 2000
#: a two-step requeue's own claimed name expires this long after its first rename (ms): a crash
#: between its two renames delays the message by this much
REQUEUE_HOLD_MS = 30_000
#: per thread: the paths of the FIFO queues whose lock it holds (a nested step does not lock again)
_FIFO_HELD = threading.local()
#: what :meth:`QueueHandle.renaming_into_buckets` holds where nothing is needed
_NOTHING = contextlib.nullcontext()


def _fifo_locks_held() -> set[str]:
    held: set[str] | None = getattr(_FIFO_HELD, "paths", None)
    if held is None:
        held = _FIFO_HELD.paths = set()
    return held


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
    #: empty buckets are removed only under the bucket lock (GlusterFS; see bucket_guard.py), by
    #: maintenance: pollers and listings leave them in place
    guarded_buckets: bool = False
    #: claimed messages go back to their ready names in two renames (ceph-fuse; see :meth:`requeue`)
    two_step_requeue: bool = False
    #: where a file that is not a whole message of ours goes (:meth:`quarantine`): the root's
    #: ``corrupt/`` directory and this queue's directory name, ``<root>/corrupt/<qdir>~``
    corrupt_prefix: str = ""
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
        write window, see :data:`WRITE_WINDOW_MS`), or the queue's buckets are guarded
        (:attr:`guarded_buckets`)."""
        ready = self.sub("ready")
        if self.info.kind is QueueKind.FIFO:
            for group in sorted(listdir(ready)):
                yield group, f"{ready}/{group}"
            return
        for ksec in sorted(listdir(ready)):
            if not L.KSEC_RE.fullmatch(ksec):
                continue
            kdir = f"{ready}/{ksec}"
            buckets = sorted(damage.listing(kdir, "listing ready buckets"))  # refused: passed over, reported
            if not buckets:
                if ksec < L.ksec(keep_from) and not self.guarded_buckets:
                    with contextlib.suppress(OSError):
                        os.rmdir(kdir)
                continue
            for b in buckets:
                if L.STD_BUCKET_RE.fullmatch(b):
                    yield b, f"{kdir}/{b}"

    def removable_before(self, now_ms: int) -> str:
        """The buckets a poller that finds them empty removes: those before this one (the write
        window's start), or none (``""``) where removal is guarded."""
        return "" if self.guarded_buckets else write_window_start(now_ms)

    def claimed_files(self) -> Iterator[tuple[str, L.ClaimedName]]:
        """(path, parsed name) of every claimed file, live or expired, across all shards."""
        cdir = self.sub("claimed")
        for shard in listdir(cdir):
            for n in listdir(f"{cdir}/{shard}"):
                p = L.parse_claimed(n)
                if p is not None:
                    yield f"{cdir}/{shard}/{n}", p

    def locate_claimed(self, ref: L.Ref) -> tuple[str, L.ClaimedName] | None:
        """Find a claim by receipt (its own claim, or a later one of the same receive) or by id:
        (path, parsed name)."""
        if ref.claimed_name is not None and ref.shard is not None:
            path = self.sub(f"claimed/{ref.shard}/{ref.claimed_name}")
            if os.path.exists(path):
                parsed = L.parse_claimed(ref.claimed_name)
                assert parsed is not None
                return path, parsed
            prefix = f"{ref.id}~{ref.receive_count}~"
            shards = [ref.shard]
        else:
            prefix = f"{ref.id}~"
            shards = [L.id_shard(ref.id)] if self.kind is not QueueKind.FIFO else listdir(self.sub("claimed"))
        for shard in shards:
            for n in listdir(self.sub(f"claimed/{shard}")):
                if n.startswith(prefix):
                    parsed = L.parse_claimed(n)
                    if parsed is not None:
                        return self.sub(f"claimed/{shard}/{n}"), parsed
        return None

    def locate_unclaimed(self, mid: str) -> tuple[str, str, L.ReadyName | L.DelayedName] | None:
        """Find a ready (or delayed) message by id: (directory, name, parsed)."""
        prefix = f"{mid}~"
        buckets = [L.std_bucket(L.id_time_ms(mid))] if self.kind is not QueueKind.FIFO else listdir(self.sub("ready"))
        for b in buckets:
            d = self.ready_dir(b)
            for n in listdir(d):
                if n.startswith(prefix):
                    parsed = L.parse_ready(n)
                    if parsed is not None:
                        return d, n, parsed
        for b in listdir(self.sub("delayed")):
            d = self.sub(f"delayed/{b}")
            for n in listdir(d):
                if n.startswith(prefix):
                    delayed = L.parse_delayed(n)
                    if delayed is not None:
                        return d, n, delayed
        return None

    def nacks_file(self, mid: str) -> str:
        """The nack count of message ``mid`` (see :mod:`spoolq.store.jobs`)."""
        return self.sub(f"nacks/{mid}")

    def quarantine(self, path: str) -> None:
        """Move a file that is not a whole message of ours out of every poller's way."""
        with contextlib.suppress(OSError):
            os.rename(path, f"{self.corrupt_prefix}{os.path.basename(path)}")

    # ------------------------------------------------------------ renames back and into buckets

    def requeue(self, claimed: str, p: L.ClaimedName, ready_dir: str, now_ms: int) -> None:
        """Rename the claimed message file ``claimed`` back to its ready name in ``ready_dir`` (a
        release, a nack, a claim expiry). FileNotFoundError if another caller (any node) did, or
        took it, first. Where two nodes racing to rename one file to one name can hang the loser
        (``ceph-fuse``: :data:`~spoolq.store.filesystems.SAME_NAME_RENAME_RACE_HANGS`), it is first
        renamed, in its shard, to a claimed name of this call's own (a fresh token, expiring
        :data:`REQUEUE_HOLD_MS` after ``now_ms``), which no one else renames before it expires; the
        racers each race to a name of their own, and only the winner renames it on to the ready
        name. A crash between the two leaves a claim that expires by then: delivered later, never
        lost."""
        if self.two_step_requeue:
            hold = now_ms + REQUEUE_HOLD_MS
            own = f"{os.path.dirname(claimed)}/{L.claimed_name(p.id, p.rc, p.frt, hold, L.new_token())}"
            os.rename(claimed, own)
            claimed = own
        rename_into(claimed, ready_dir, L.ready_name(p.id, p.rc, p.frt), base=self.path)

    def put_back(self, claimed: str, p: L.ClaimedName, now_ms: int) -> bool:
        """Make the claimed message file ``claimed`` visible again (a release, an unclaim, a claim that
        ran out): back to the ready bucket of its send second (a FIFO queue's: its group), holding the
        bucket lock where buckets are guarded. False if another caller did, or took it, first."""
        shard = os.path.basename(os.path.dirname(claimed))
        try:
            with self.renaming_into_buckets():
                self.requeue(claimed, p, self.ready_dir(self.ready_bucket(p.id, shard)), now_ms)
        except FileNotFoundError:
            return False
        return True

    def renaming_into_buckets(self) -> contextlib.AbstractContextManager[None]:
        """Held around a rename into a standard queue's old ready or delayed bucket (a release, a
        claim expiry, a due delay, a transfer, a send named late): where buckets are guarded
        (GlusterFS) such a rename must not meet the removal of that bucket, so it holds the queue's
        bucket lock shared (see bucket_guard.py). Elsewhere, and for FIFO queues, nothing."""
        if not self.guarded_buckets or self.info.kind is QueueKind.FIFO:
            return _NOTHING
        return bucket_guard.renaming(self.real_path)

    @contextlib.contextmanager
    def fifo_lock(self) -> Iterator[None]:
        """Exclusive access to a FIFO queue's group state across threads, processes and nodes.

        POSIX record locks (``lockf``) are what NFS (NLM) and GlusterFS (the locks translator)
        enforce between nodes; they are per process, so threads take the process's mutex of the
        file first (:mod:`~spoolq.store.recordlock`). A thread that already holds the lock (a step
        nested in a locked operation) does not take it again: a second descriptor's close would
        drop the process's lock."""
        held = _fifo_locks_held()
        if self.path in held:
            yield
            return
        with contextlib.ExitStack() as lock:
            try:
                lock.enter_context(recordlock.exclusive(self.lock_file("lock")))
            except OSError as e:
                raise storage_error(e, f"locking FIFO queue {self.name!r}") from e
            held.add(self.path)
            try:
                yield
            finally:
                held.discard(self.path)

    @contextlib.contextmanager
    def renaming_into_groups(self) -> Iterator[None]:
        """Held around a rename into a FIFO group's directory from outside that group (a due
        delayed message, a transfer from another queue): such a rename must not meet the removal
        of the group's directories (:func:`spoolq.store.maintenance.remove_idle_groups`), so it
        takes the queue's lock. Renames within a group (release, claim expiry, renew) need not: the
        message in the other directory keeps the group from looking idle. A thread that holds
        another FIFO queue's lock (dead-lettering from a FIFO claim) does not wait for this one:
        two queues that dead-letter into each other could wait for each other across nodes."""
        held = _fifo_locks_held()
        if self.info.kind is not QueueKind.FIFO or (held and self.path not in held):
            yield
            return
        with self.fifo_lock():
            yield

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

    # ------------------------------------------------------------ dead-letter origins

    def note_origin(self, message_id: str, origin: str) -> None:
        """Dead-letter queues: record that ``message_id`` (its id here) comes from the queue ``origin``."""
        directory = self.sub(ORIGINS)
        for attempt in range(2):
            try:
                fd = os.open(f"{directory}/{message_id}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                break
            except FileNotFoundError:
                if attempt:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(directory)
        try:
            os.write(fd, origin.encode("utf-8"))
        finally:
            os.close(fd)

    def origin_of(self, message_id: str) -> str | None:
        """The queue ``message_id`` was dead-lettered from into this queue, if recorded."""
        try:
            with open(f"{self.sub(ORIGINS)}/{message_id}", "rb") as f:
                name = f.read(1024).decode("utf-8", "replace")
        except (FileNotFoundError, NotADirectoryError):
            return None
        return name if L.QUEUE_NAME_RE.fullmatch(name) else None

    def forget_origin(self, message_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{self.sub(ORIGINS)}/{message_id}")

    def prune_origins(self, now_ms: int) -> int:
        """Drop the markers whose id is older than the queue's retention (plus a margin); looks at a
        queue's markers at most every ``PRUNE_EVERY_MS`` in this process."""
        if now_ms - _pruned_at.get(self.path, -PRUNE_EVERY_MS) < PRUNE_EVERY_MS:
            return 0
        _pruned_at[self.path] = now_ms
        cutoff = now_ms - int(self.info.config.retention * 1000) - PRUNE_MARGIN_MS
        pruned = 0
        for name in listdir(self.sub(ORIGINS)):
            if not L.ID_RE.fullmatch(name) or L.id_time_ms(name) < cutoff:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self.sub(ORIGINS)}/{name}")
                    pruned += 1
        return pruned
