"""The store's queues and shared state: :class:`StoreCore`, the core every operation is built on.

:class:`StoreCore` owns everything the operations of the store have in common: the root and its
directories, the clock, the temp writer, the trash, the group commit, the watcher, the id
factory and the per-process cache of :class:`~spoolq.store.handle.QueueHandle` s. On top of the
lookup it manages queues (create, get, update, list, purge; :mod:`~spoolq.store.deleting`
deletes them) and holds the helpers that more than one operation needs: the FIFO queue lock, a
dedup marker write, waiting for a queue a delete-if-empty has aside for an instant
(:meth:`StoreCore.wait_for_comeback`), reading the oldest messages (:meth:`StoreCore.peek_queue`:
what a peek and a poll without a claim return) and moving a message file into another queue
(:meth:`StoreCore.transfer`: moves and dead letters).

The operations are parts built on one core (see :mod:`spoolq.store.filestore`); the core knows
none of them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from spoolq.errors import (
    InvalidArgument,
    QueueAlreadyExists,
    QueueDeletedRecently,
    QueueNotFound,
    StorageUnavailable,
    storage_error,
)
from spoolq.store import bucket_guard, markerlock, recordlock
from spoolq.store import layout as L
from spoolq.store.codec import CorruptMessage, decode_message
from spoolq.store.cursor import ReadyCursor
from spoolq.store.fileops import (
    TempWriter,
    fsync_dir,
    listdir,
    read_file,
    read_json,
    rename_into,
    write_json_atomic,
)
from spoolq.store.filesystems import (
    EMPTY_BUCKET_REMOVALS,
    FLUSH_MODES,
    LOCAL_DEFAULT,
    choose_flush,
    empty_bucket_removal,
    requeue_in_two_steps,
)
from spoolq.store.group_commit import GroupCommit
from spoolq.store.handle import QueueHandle, write_window_start
from spoolq.store.message_files import MessageFiles
from spoolq.store.model import Message, QueueConfig, QueueInfo, QueueKind, QueueRef
from spoolq.store.queue_config import check_kind, config_from_json, config_to_json, validate_config
from spoolq.store.trash import Trash
from spoolq.store.watch import Watcher

Clock = Callable[[], float]
#: a queue being deleted if empty is aside as ``queues/.del~<token>~<queue dir>`` (deleting.py)
DELETING_PREFIX = ".del~"
#: how long a send that found its queue aside waits for it to come back (seconds)
COMEBACK_WAIT = 2.0
#: a two-step requeue's own claimed name expires this long after its first rename (ms): a crash
#: between its two renames delays the message by this much
REQUEUE_HOLD_MS = 30_000
#: per thread: the paths of the FIFO queues whose lock it holds (a nested step does not lock again)
_FIFO_HELD = threading.local()


#: what :meth:`StoreCore.renaming_into_buckets` holds where nothing is needed
_NOTHING = contextlib.nullcontext()


def _fifo_locks_held() -> set[str]:
    held: set[str] | None = getattr(_FIFO_HELD, "paths", None)
    if held is None:
        held = _FIFO_HELD.paths = set()
    return held


def _check_tags(tags: Mapping[str, str]) -> None:
    for k, v in tags.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise InvalidArgument("tags must map strings to strings")


class StoreCore:
    """State and helpers every part of the file store shares. See :mod:`spoolq.store.filestore`."""

    def __init__(self, root: Path | str, *, node_id: str, fsync: bool, clock: Clock, peers: int,
                 maintenance_interval: float, flush: str | None, force_flush: bool = False,
                 default_config: QueueConfig | None = None, in_place: bool = True,
                 empty_buckets: str | None = None) -> None:
        self.root = Path(root)
        #: the config of a queue created without one (the config file's ``queue_defaults``)
        self.default_config = validate_config(default_config) if default_config is not None else QueueConfig()
        self.node_id = node_id
        self.clock = clock
        self.peers = peers
        self.maintenance_interval = maintenance_interval
        self.ids = L.IdFactory(self.node_id)
        self._queues: dict[str, QueueHandle] = {}
        self._queues_lock = threading.Lock()
        made: list[Path] = []  # directories this start made: with per-file fsync their names are flushed
        try:
            if not self.root.is_dir():
                self.root.mkdir(parents=True, exist_ok=True)
                made.append(self.root)
            for sub in ("tmp", "queues", "trash", "corrupt", "moves", "archive", "journal"):
                with contextlib.suppress(FileExistsError):
                    (self.root / sub).mkdir()
                    made.append(self.root / sub)
        except OSError as e:
            raise storage_error(e, f"preparing the root {self.root}") from e
        self.queues_dir = str(self.root / "queues")
        self.tmp = TempWriter(self.root / "tmp", self.node_id)
        # how empty standard buckets go: at once, or under the bucket lock (see bucket_guard.py)
        if empty_buckets is not None and empty_buckets not in EMPTY_BUCKET_REMOVALS:
            raise InvalidArgument(f"empty_buckets must be 'immediate' or 'guarded', got {empty_buckets!r}")
        self.empty_buckets = empty_buckets or empty_bucket_removal(self.root)[0]
        self.guarded_buckets = self.empty_buckets == "guarded"
        # claimed messages go back to their ready names in two renames (see requeue)
        self.two_step_requeue = requeue_in_two_steps(self.root)
        # guarded: every message file is named by a rename (MessageFiles.name), which a late send
        # does under the bucket lock; a file made in place is linked without it
        self.files = MessageFiles(str(self.root / "tmp"), self.tmp.prefix,
                                  in_place=in_place and not self.guarded_buckets)
        self.trash = Trash(self.root, self.tmp.prefix)
        # the flush that reaches stable storage where the root lives, or the one asked for (refused
        # where it may not, unless forced): see spoolq.store.filesystems
        if flush is not None and flush not in FLUSH_MODES:
            raise InvalidArgument(f"flush must be 'journal', 'syncfs' or 'fsync', got {flush!r}")
        self.flush_mode = choose_flush(self.root, flush, force_flush).mode if fsync else (flush or LOCAL_DEFAULT)
        self.commit = GroupCommit(self.root, enabled=fsync, use_syncfs=self.flush_mode != "fsync",
                                  node_id=self.node_id, journal=self.flush_mode == "journal")
        self.fsync = fsync
        self.watcher = Watcher()
        if self.commit.per_file:  # as a flush does for the directories it flushes (see group_commit.py)
            try:
                for parent in dict.fromkeys(str(d.parent) for d in made):
                    fsync_dir(parent)
            except OSError as e:
                raise storage_error(e, f"preparing the root {self.root}") from e

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def tmp_node_prefix(self) -> str:
        return self.tmp.prefix

    def queue_path(self, name: str) -> str:
        return f"{self.queues_dir}/{L.queue_dir_name(name)}"

    # ------------------------------------------------------------ lookup

    def find(self, name: str) -> QueueHandle | None:
        """The queue named ``name`` (validated), or None; cached while meta.json is unchanged."""
        held = self._queues.get(name) if type(name) is str else None
        if held is None:
            L.check_queue_name(name)
            path = self.queue_path(name)
        else:  # a name this process holds was checked, and its path made, when it was first found
            path = held.path
        try:
            st = os.stat(f"{path}/meta.json")
        except FileNotFoundError:
            self.forget(name)
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
        info = self._info_of(data)
        with self._queues_lock:
            # looked up again under the lock: threads that race through a first lookup must end
            # with one handle (its dedup lock descriptor and mutexes keep their sends apart)
            current = self._queues.get(name)
            if current is not None:
                current.info, current.stamp = info, stamp
                return current
            q = QueueHandle(info=info, path=path, stamp=stamp, real_path=os.path.realpath(path),
                            guarded_buckets=self.guarded_buckets)
            self._queues[name] = q
            return q

    def resolve(self, queue: QueueRef) -> QueueHandle | None:
        """:meth:`find` by name; for the :class:`QueueInfo` a lookup returned, the handle it came
        from, without a second look at ``meta.json`` while the handle still carries that very info
        (otherwise the queue changed since, or the info is not the store's: found by name)."""
        if not isinstance(queue, QueueInfo):
            return self.find(queue)
        cached = self._queues.get(queue.name)
        if cached is not None and cached.info is queue:
            return cached
        return self.find(queue.name)

    def require(self, name: str) -> QueueHandle:
        """The queue named ``name``; :class:`~spoolq.errors.QueueNotFound` if there is none."""
        q = self.find(name)
        if q is None:
            raise QueueNotFound(name)
        return q

    # ------------------------------------------------------------ queues

    @staticmethod
    def _info_of(data: Mapping[str, Any]) -> QueueInfo:
        return QueueInfo(name=data["name"], kind=QueueKind(data["kind"]),
                         config=config_from_json(data.get("config") or {}),
                         tags=dict(data.get("tags") or {}), created_at=float(data["created_at"]),
                         updated_at=float(data["updated_at"]))

    @staticmethod
    def _meta_json(info: QueueInfo) -> dict[str, Any]:
        return {"name": info.name, "kind": info.kind.value, "config": config_to_json(info.config),
                "tags": dict(info.tags), "created_at": info.created_at, "updated_at": info.updated_at}

    def create_queue(self, name: str, kind: QueueKind = QueueKind.STANDARD, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True, *,
                     not_deleted_within: float = 0.0) -> QueueInfo:
        L.check_queue_name(name)
        kind = check_kind(kind)
        if config is not None:
            validate_config(config)
        tags = dict(tags or {})
        _check_tags(tags)
        existing = self.find(name)
        if existing is not None:
            return self._existing(existing, kind, config, exist_ok)
        now = self.clock()
        if not_deleted_within > 0:
            deleted_at = self.deleted_at(name)
            if deleted_at is not None and now - deleted_at < not_deleted_within:
                raise QueueDeletedRecently(f"You must wait {not_deleted_within:g} seconds after deleting a queue "
                                           "before you can create another with the same name.")
        info = QueueInfo(name=name, kind=kind, config=config or self.default_config, tags=tags,
                         created_at=now, updated_at=now)
        staging = f"{self.queues_dir}/.new~{L.new_token()}"
        try:
            os.mkdir(staging)
            for sub in ("ready", "claimed", "delayed", "dedup", "acked"):
                os.mkdir(f"{staging}/{sub}")
            if kind is not QueueKind.FIFO:
                for shard in "0123456789abcdef":
                    os.mkdir(f"{staging}/claimed/{shard}")
            os.close(os.open(f"{staging}/settings.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            write_json_atomic(Path(staging) / "meta.json", self._meta_json(info), self.tmp, self.fsync)
            for attempt in range(5):
                try:
                    os.rename(staging, self.queue_path(name))
                    break
                except OSError as e:
                    if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        raise
                    found = self.find(name)
                    if found is None and attempt < 4:
                        continue  # deleted since the rename failed: take its place
                    shutil.rmtree(staging, ignore_errors=True)
                    if found is None:
                        raise
                    return self._existing(found, kind, config, exist_ok)
            self.commit.note_paths(self.queues_dir)
            self.commit.flush()
        except OSError as e:
            shutil.rmtree(staging, ignore_errors=True)
            raise storage_error(e, f"creating queue {name!r}") from e
        return info

    @staticmethod
    def _existing(q: QueueHandle, kind: QueueKind, config: QueueConfig | None, exist_ok: bool) -> QueueInfo:
        if not exist_ok:
            raise QueueAlreadyExists(f"queue {q.name!r} already exists")
        if q.kind is not kind or (config is not None and config != q.info.config):
            raise QueueAlreadyExists(f"queue {q.name!r} already exists with a different kind or attributes")
        return q.info

    def get_queue(self, name: str) -> QueueInfo:
        return self.require(name).info

    # --- deletion records: deleted/<queue dir name> holds when the queue of that name was deleted

    def note_deleted(self, name: str) -> None:
        """Record that queue ``name`` was deleted now (read by :meth:`deleted_at` in any process or
        node). Written after the deletion: a crash in between loses only the record."""
        record = self.root / "deleted" / L.queue_dir_name(name)
        try:
            record.parent.mkdir(exist_ok=True)
            write_json_atomic(record, {"queue": name, "deleted_at": self.clock()}, self.tmp, self.fsync)
        except OSError as e:
            raise storage_error(e, f"recording the deletion of queue {name!r}") from e

    def deleted_at(self, name: str) -> float | None:
        """When queue ``name`` was last deleted, if a record says so."""
        data = read_json(self.root / "deleted" / L.queue_dir_name(name))
        value = None if data is None else data.get("deleted_at")
        return float(value) if isinstance(value, int | float) else None

    def update_queue(self, name: str, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None) -> QueueInfo:
        """Replace a queue's config and/or tags (None: keep). A change of some settings computed from
        the ones read earlier is :meth:`change_queue`'s job: this one writes what it is given."""
        if config is not None:
            validate_config(config)
        if tags is not None:
            _check_tags(tags)
        return self.change_queue(name, lambda info: replace(
            info, config=config if config is not None else info.config, tags=tags if tags is not None else info.tags))

    def change_queue(self, name: str, change: Callable[[QueueInfo], QueueInfo]) -> QueueInfo:
        """Change a queue's settings and tags from what they are now, atomically.

        ``change`` gets the queue as its ``meta.json`` holds it now, read under the queue's settings
        lock, and returns it as it should be (``dataclasses.replace`` of its ``config`` and ``tags``;
        its name, kind and creation time stay). The lock is a POSIX record lock on
        ``<queue>/settings.lock`` (what NFS and GlusterFS enforce between nodes), taken after the
        queue handle's mutex (record locks are per process), and held until the new ``meta.json``
        is in place: two changes at the same moment, from any threads, processes or nodes, run one
        after the other, and the second sees the first. Whatever ``change`` raises (a refused
        value) leaves the queue as it was."""
        q = self.require(name)
        with self._settings_lock(q):
            data = read_json(Path(q.path) / "meta.json")
            if data is None:
                raise QueueNotFound(name)
            current = self._info_of(data)
            wanted = change(current)
            if (wanted.name, wanted.kind, wanted.created_at) != (current.name, current.kind, current.created_at):
                raise InvalidArgument("a queue's name, kind and creation time cannot be changed")
            validate_config(wanted.config)
            _check_tags(wanted.tags)
            info = replace(wanted, tags=dict(wanted.tags), updated_at=self.clock())
            try:
                write_json_atomic(Path(q.path) / "meta.json", self._meta_json(info), self.tmp, self.fsync)
            except FileNotFoundError:
                raise QueueNotFound(name) from None
            except OSError as e:
                raise storage_error(e, f"updating queue {name!r}") from e
        return info

    @contextlib.contextmanager
    def _settings_lock(self, q: QueueHandle) -> Iterator[None]:
        """Exclusive access to a queue's ``meta.json`` for a read, change and rewrite (see
        :meth:`change_queue`); QueueNotFound if the queue directory is gone."""
        with contextlib.ExitStack() as lock:
            try:
                lock.enter_context(recordlock.exclusive(q.lock_file("settings.lock")))
            except FileNotFoundError:
                raise QueueNotFound(q.name) from None
            except OSError as e:
                raise storage_error(e, f"locking the settings of {q.name!r}") from e
            yield

    def list_queues(self, prefix: str = "") -> list[str]:
        if not isinstance(prefix, str):
            raise InvalidArgument("prefix must be a string")
        names = []
        for entry in listdir(self.queues_dir):
            if entry.startswith("."):  # .new~ (being created), .del~ (being deleted)
                continue
            if "~" in entry:
                data = read_json(Path(self.queues_dir) / entry / "meta.json")
                name = data.get("name") if data else None
            else:
                name = entry if os.path.exists(f"{self.queues_dir}/{entry}/meta.json") else None
            if isinstance(name, str) and name.startswith(prefix):
                names.append(name)
        return sorted(names)

    def being_deleted(self, name: str) -> bool:
        """Whether a delete-if-empty (:mod:`spoolq.store.deleting`) of ``name`` has the queue aside right now."""
        tail = "~" + L.queue_dir_name(name)
        return any(n.startswith(DELETING_PREFIX) and n.endswith(tail) for n in listdir(self.queues_dir))


    def wait_for_comeback(self, name: str) -> QueueHandle | None:
        """After a write found queue ``name`` missing: wait while a delete-if-empty has it aside.
        The queue once it is back; None when no deletion has it aside (it is gone)."""
        deadline = time.monotonic() + COMEBACK_WAIT
        while True:
            q = self.find(name)
            if q is not None:
                return q
            if not self.being_deleted(name):
                q = self.find(name)  # put back between the two looks?
                if q is not None or not self.being_deleted(name):
                    return q  # back, or gone for good
            if time.monotonic() > deadline:
                return None
            time.sleep(0.002)

    def forget(self, name: str) -> None:
        """Drop this process's handle of a queue that was deleted (or moved aside), and the
        descriptor of its dedup lock file once no thread uses it (markerlock.py)."""
        gone = self._queues.pop(name, None)
        if gone is not None and gone.kind is QueueKind.DEDUP:
            markerlock.forget(gone.real_path)

    def purge(self, queue: str) -> None:
        L.check_queue_name(queue)
        q = self.find(queue)
        if q is None:
            return
        try:
            for sub in ("ready", "delayed", "claimed", "dedup"):
                path = q.sub(sub)
                with contextlib.suppress(FileNotFoundError):
                    os.rename(path, f"{self.root}/trash/{L.queue_dir_name(q.name)}~{sub}~{L.new_token()}")
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path)
                if sub == "claimed" and q.kind is not QueueKind.FIFO:
                    for shard in "0123456789abcdef":
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(f"{path}/{shard}")
        except OSError as e:
            raise storage_error(e, f"purging {queue!r}") from e
        q.cursor = ReadyCursor()

    # ------------------------------------------------------------ shared helpers

    def message(self, mid: str, meta: Mapping[str, Any], body: bytes, rc: int, frt: int,
                claimed_until: float | None = None) -> Message:
        """The :class:`~spoolq.store.model.Message` of a decoded message file."""
        sent = meta.get("t")
        if type(sent) is int and len(meta) == 1:  # a plain message (the common case): no optional field
            return Message(mid, body, sent / 1000, rc, frt / 1000 if frt else None, {}, None, None, None, claimed_until)
        return Message(mid, body, int(meta.get("t", L.id_time_ms(mid))) / 1000, rc, frt / 1000 if frt else None,
                       meta.get("a") or {}, meta.get("g"), meta.get("d"),
                       L.sequence_number(mid) if "g" in meta else None, claimed_until)

    def quarantine(self, path: str, q: QueueHandle) -> None:
        """Move a file that is not a whole message of ours out of every poller's way."""
        with contextlib.suppress(OSError):
            os.rename(path, f"{self.root}/corrupt/{L.queue_dir_name(q.name)}~{os.path.basename(path)}")

    @contextlib.contextmanager
    def fifo_lock(self, q: QueueHandle) -> Iterator[None]:
        """Exclusive access to a FIFO queue's group state across threads, processes and nodes.

        POSIX record locks (``lockf``) are what NFS (NLM) and GlusterFS (the locks translator)
        enforce between nodes; they are per process, so threads take the process's mutex of the
        file first (:mod:`~spoolq.store.recordlock`). A thread that already holds the lock (a step
        nested in a locked operation) does not take it again: a second descriptor's close would
        drop the process's lock."""
        held = _fifo_locks_held()
        if q.path in held:
            yield
            return
        with contextlib.ExitStack() as lock:
            try:
                lock.enter_context(recordlock.exclusive(q.lock_file("lock")))
            except OSError as e:
                raise storage_error(e, f"locking FIFO queue {q.name!r}") from e
            held.add(q.path)
            try:
                yield
            finally:
                held.discard(q.path)

    @contextlib.contextmanager
    def renaming_into_groups(self, q: QueueHandle) -> Iterator[None]:
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
        with self.fifo_lock(q):
            yield

    def requeue(self, q: QueueHandle, claimed: str, p: L.ClaimedName, ready_dir: str) -> None:
        """Rename the claimed message file ``claimed`` back to its ready name in ``ready_dir`` (a
        release, a nack, a claim expiry). FileNotFoundError if another caller (any node) did, or
        took it, first. Where two nodes racing to rename one file to one name can hang the loser
        (``ceph-fuse``: :data:`~spoolq.store.filesystems.SAME_NAME_RENAME_RACE_HANGS`), it is first
        renamed, in its shard, to a claimed name of this call's own (a fresh token, expiring
        :data:`REQUEUE_HOLD_MS` from now), which no one else renames before it expires; the
        racers each race to a name of their own, and only the winner renames it on to the ready
        name. A crash between the two leaves a claim that expires by then: delivered later, never
        lost."""
        if self.two_step_requeue:
            hold = self.now_ms() + REQUEUE_HOLD_MS
            own = f"{os.path.dirname(claimed)}/{L.claimed_name(p.id, p.rc, p.frt, hold, L.new_token())}"
            os.rename(claimed, own)
            claimed = own
        rename_into(claimed, ready_dir, L.ready_name(p.id, p.rc, p.frt), base=q.path)

    def renaming_into_buckets(self, q: QueueHandle,
                              sent_ms: int | None = None) -> contextlib.AbstractContextManager[None]:
        """Held around a rename into a standard queue's old ready or delayed bucket (a release, a
        claim expiry, a due delay, a transfer): on GlusterFS such a rename must not meet the
        removal of that bucket, so it holds the queue's bucket lock shared (see bucket_guard.py).
        ``sent_ms``: a send's start, whose renames hold it only if they come later than
        :data:`~spoolq.store.bucket_guard.LATE_MS` after it. Elsewhere, and for FIFO queues, nothing."""
        if not q.guarded_buckets or q.kind is QueueKind.FIFO:
            return _NOTHING
        if sent_ms is not None and self.now_ms() - sent_ms <= bucket_guard.LATE_MS:
            return _NOTHING
        return bucket_guard.renaming(q.real_path)

    def write_marker(self, q: QueueHandle, marker: str, data: bytes) -> None:
        """Write (or replace) a small record under the queue directory; a purge that is replacing
        ``dedup/`` at the same moment does not make it fail (see :func:`rename_into`). Flushed with
        the send's messages: with per-file fsync its data now and its directory by the group's flush."""
        try:
            t = self.tmp.write(data, fsync_file=self.commit.per_file)
        except OSError as e:
            raise storage_error(e, "writing a dedup marker") from e
        try:
            rename_into(t, os.path.dirname(marker), os.path.basename(marker), base=q.path)
            self.commit.note_paths(os.path.dirname(marker))
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(t)
            if isinstance(e, FileNotFoundError):
                raise QueueNotFound(q.name) from None
            raise storage_error(e, "writing a dedup marker") from e

    def note_departures(self, moves: Sequence[tuple[str, QueueHandle, str]]) -> None:
        """With the commit journal: record durably that the message files ``src`` are about to go
        to queue ``target`` under ``new_id`` (see :mod:`spoolq.store.journal`), before the renames,
        so that a replay never writes back a message a transfer took elsewhere. Only messages of
        standard queues can have journaled sends: the caller leaves the others out."""
        journal = self.commit.journal
        if journal is None or not moves:
            return
        cut = len(self.queues_dir) + 1
        try:
            journal.append_moves([(src[cut:], os.path.basename(target.path), new_id) for src, target, new_id in moves])
        except OSError as e:
            raise storage_error(e, "journaling a transfer") from e
        journal.flush()

    def transfer(self, src: str, target: QueueHandle, meta: Mapping[str, Any],
                 keep_counts: tuple[int, int] | None = None, new_id: str | None = None, *,
                 from_standard: bool = False) -> str | None:
        """Rename the message file ``src`` into ``target``'s ready state under ``new_id`` (a fresh id
        if not given); the new id, or None if ``src`` is gone. ``from_standard``: ``src`` is in a
        standard queue and its departure was not noted yet (:meth:`note_departures`)."""
        if new_id is None:
            new_id = self.ids.new_id(target.name, self.now_ms())
        if from_standard:
            self.note_departures([(src, target, new_id)])
        if target.kind is QueueKind.FIFO:
            bucket = L.fifo_bucket(str(meta.get("g") or "default"))
        else:
            bucket = L.std_bucket(L.id_time_ms(new_id))
        rc, frt = keep_counts or (0, 0)
        try:
            with self.renaming_into_groups(target), self.renaming_into_buckets(target):
                rename_into(src, target.ready_dir(bucket), L.ready_name(new_id, rc, frt), base=target.path)
        except FileNotFoundError:
            return None
        self.commit.note_paths(target.ready_dir(bucket), os.path.dirname(src))
        self.watcher.notify(target.path)
        return new_id

    def peek_queue(self, q: QueueHandle, limit: int, include_claimed: bool = True) -> list[Message]:
        """Up to ``limit`` messages of ``q`` oldest first, without claiming them (and claimed ones
        unless ``include_claimed`` is False); dedup queues surface the ready ones they return."""
        core = self
        now_ms = core.now_ms()
        entries: list[tuple[str, str, L.ReadyName | L.ClaimedName]] = []  # (id, path, parsed name)
        for _bucket, bdir in q.ready_buckets(write_window_start(now_ms)):
            for n in listdir(bdir):
                r = L.parse_ready(n)
                if r is not None:
                    entries.append((r.id, f"{bdir}/{n}", r))
            if q.kind is not QueueKind.FIFO and len(entries) >= limit:
                break
        if include_claimed:
            entries.extend((c.id, path, c) for path, c in q.claimed_files())
        entries.sort(key=lambda e: e[0])
        out: list[Message] = []
        for mid, path, p in entries:
            if len(out) >= limit:
                break
            try:
                meta, body = decode_message(read_file(path, message=True))
            except FileNotFoundError:
                continue
            except CorruptMessage:
                core.quarantine(path, q)
                continue
            expire = meta.get("x")
            if isinstance(expire, int) and expire <= now_ms:
                continue
            if isinstance(p, L.ClaimedName):
                until = p.expires / 1000 if p.expires > now_ms else None
            else:
                until = None
                if q.kind is QueueKind.DEDUP:
                    q.surface(mid, body)
            out.append(core.message(mid, meta, body, p.rc, p.frt, claimed_until=until))
        return out

    def close(self) -> None:
        self.trash.close()
        self.watcher.close()
        self.commit.close()
