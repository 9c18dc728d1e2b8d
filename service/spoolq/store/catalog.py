"""The queues of a store: :class:`QueueCatalog` finds them by name and keeps their configuration.

It looks a queue up (:meth:`QueueCatalog.find`, cached per process in a
:class:`~spoolq.store.handle.QueueHandle` while its ``meta.json`` is unchanged), creates, changes,
lists and purges queues, records deletions (:mod:`~spoolq.store.deleting` deletes them) and waits
for a queue a delete-if-empty has aside for an instant (:meth:`QueueCatalog.wait_for_comeback`).
It knows the root's directories a queue lives in and the facts of the root's file system that
every handle carries (how empty buckets go, how a claim goes back to its ready name). The
operations are built with it, beside the other parts they need (see :mod:`spoolq.store.filestore`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from spoolq.errors import (
    InvalidArgument,
    QueueAlreadyExists,
    QueueNotFound,
    StorageUnavailable,
    storage_error,
)
from spoolq.store import layout as L
from spoolq.store import markerlock, recordlock, root_format
from spoolq.store.cursor import ReadyCursor
from spoolq.store.fileops import TempWriter, listdir, read_json, stat_listed, write_json_atomic
from spoolq.store.group_commit import GroupCommit
from spoolq.store.handle import QueueHandle
from spoolq.store.model import QueueConfig, QueueInfo, QueueKind, QueueRef
from spoolq.store.queue_config import check_kind, config_from_json, config_to_json, validate_config

Clock = Callable[[], float]
#: a queue being deleted if empty is aside as ``queues/.del~<token>~<queue dir>`` (deleting.py)
DELETING_PREFIX = ".del~"
#: how long a send that found its queue aside waits for it to come back (seconds)
COMEBACK_WAIT = 2.0
#: looks in a row (2 ms apart) that must see neither the queue nor its ``.del~`` directory before a
#: write gives the queue up: one directory listing can miss both names while a deletion renames the
#: queue aside or back (readdir during a rename in the same directory), and a deleter that runs
#: again at once can do so between two looks
GONE_LOOKS = 3


def _check_tags(tags: Mapping[str, str]) -> None:
    for k, v in tags.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise InvalidArgument("tags must map strings to strings")


class QueueCatalog:
    """The queues of one store (see the module docstring)."""

    def __init__(self, root: Path, *, tmp: TempWriter, commit: GroupCommit, clock: Clock, fsync: bool,
                 default_config: QueueConfig | None = None, guarded_buckets: bool = False,
                 two_step_requeue: bool = False) -> None:
        self.root = root
        self.queues_dir = str(root / "queues")
        #: the config of a queue created without one (the config file's ``queue_defaults``)
        self.default_config = validate_config(default_config) if default_config is not None else QueueConfig()
        self.clock = clock
        self.fsync = fsync
        #: empty buckets are removed under the bucket lock (GlusterFS; see bucket_guard.py)
        self.guarded_buckets = guarded_buckets
        #: claimed messages go back to their ready names in two renames (QueueHandle.requeue)
        self.two_step_requeue = two_step_requeue
        self._tmp = tmp
        self._commit = commit
        self._corrupt_dir = f"{root}/corrupt"
        self._queues: dict[str, QueueHandle] = {}
        self._queues_lock = threading.Lock()

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
            st = stat_listed(f"{path}/meta.json")  # another node may be replacing it (its settings)
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
        data = read_json(Path(path) / "meta.json", present=True)
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
                            guarded_buckets=self.guarded_buckets, two_step_requeue=self.two_step_requeue,
                            corrupt_prefix=f"{self._corrupt_dir}/{L.queue_dir_name(info.name)}~")
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
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True) -> QueueInfo:
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
            root_format.make_lock_files(staging, root_format.queue_lock_files(kind))  # made once, here
            write_json_atomic(Path(staging) / "meta.json", self._meta_json(info), self._tmp, self.fsync)
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
            self._commit.note_paths(self.queues_dir)
            self._commit.flush()
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
            write_json_atomic(record, {"queue": name, "deleted_at": self.clock()}, self._tmp, self.fsync)
        except OSError as e:
            raise storage_error(e, f"recording the deletion of queue {name!r}") from e

    def deleted_at(self, name: str) -> float | None:
        """When queue ``name`` was last deleted, if a record says so."""
        data = read_json(self.root / "deleted" / L.queue_dir_name(L.check_queue_name(name)))
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
            data = read_json(Path(q.path) / "meta.json", present=True)
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
                write_json_atomic(Path(q.path) / "meta.json", self._meta_json(info), self._tmp, self.fsync)
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
                data = read_json(Path(self.queues_dir) / entry / "meta.json", present=True)
                name = data.get("name") if data else None
            else:
                name = entry if _has_meta(f"{self.queues_dir}/{entry}") else None
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
        absent = 0  # looks in a row that saw neither the queue nor a deletion holding it aside
        while True:
            q = self.find(name)
            if q is not None:
                return q
            if self.being_deleted(name):
                absent = 0
            else:
                absent += 1  # a listing may miss a name renamed while it is read: look again
                if absent >= GONE_LOOKS:
                    return None  # gone for good
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


def _has_meta(queue_dir: str) -> bool:
    """Whether a listed queue directory holds its ``meta.json``, found even while another node
    replaces it (a queue's directory is made whole as ``.new~`` and renamed into place)."""
    try:
        stat_listed(f"{queue_dir}/meta.json")
    except OSError:
        return False
    return True
