"""FileStore: every message a file, every state change an atomic rename.

The on-disk grammar is in :mod:`spoolq.store.layout`, the flush rules in
:mod:`spoolq.store.files`. What each rename means:

==========================================  =========================================
rename                                      meaning
==========================================  =========================================
(unnamed) -> ready/<b>/<id>~0~0             send (visible): an O_TMPFILE linked, or a rename
(unnamed) -> delayed/<due>/<id>~0~0~<due>~<b>  from the process's own tmp/<node>-<pid>/ (making.py)
delayed/... -> ready/<b>/...                the delay is over (maintenance)
ready/<b>/<id>~rc~f -> claimed/<s>/<id>~rc+1~f~exp~tok   poll: a claim, unique to the claimant
claimed/<s>/<n> -> claimed/<s>/<id>~rc~f~exp'~tok'      renew (a fresh token every time)
claimed/<s>/<n> -> ready/<b>/<id>~rc~f      release, claim expiry, unclaim_all
claimed/<s>/<n> -> trash/ack~...            ack (unlinked later, in batches); archive: -> acked/<n>~<t>
ready|claimed|delayed -> other queue ready  move, dead-letter (with a new id)
ready/ claimed/ delayed/ -> trash/          purge (whole directories at once)
queues/<q> -> trash/                        delete queue
queues/<q> -> .del~<t>~<q> -> trash/        delete queue if empty (put back if a message landed)
==========================================  =========================================

Concurrency never refuses work: directories come and go under every operation. Any process may
remove an empty state, ksec, bucket or shard directory (pollers clean up buckets they emptied,
maintenance and retention drop old ones, purge replaces ``ready/ claimed/ delayed/ dedup/``
whole). So nobody relies on a directory staying: every rename into the queue
(:func:`~spoolq.store.files.rename_into`) re-creates the missing levels below the queue
directory and renames again until it succeeds, and fails only if its own file was taken by
someone else (a lost claim race) or the queue directory itself is gone (deleted). A send,
requeue, release or move therefore never fails because of a concurrent poll, ack, maintenance
pass, move or purge, in any process or node; 503 means the storage itself is in trouble.
Removers leave the buckets of the current write window alone
(:data:`~spoolq.store.core.WRITE_WINDOW_MS`) so that senders rarely need the retry.

Crash rules: a file is in exactly one place, so a crash between two renames leaves
each message in one state, never zero, never two. Temp files of dead writers are swept;
claims of dead consumers expire (requeued by any process's maintenance); moves resume
(see :mod:`spoolq.store.moves`). Poll never lists a whole queue: each process keeps a
cursor over the oldest bucket and lists the next bucket only when that one is spent.

The operations live in parts: :mod:`~spoolq.store.sending` (send, send_batch),
:mod:`~spoolq.store.claiming` (poll, ack, renew, release, unclaim_all, dead letters),
:mod:`~spoolq.store.reading` (peek, counts, size, claim_count), :mod:`~spoolq.store.jobs` (find a
message by id, nack counts), :mod:`~spoolq.store.moves`,
:mod:`~spoolq.store.archive` and :mod:`~spoolq.store.maintenance`; this module holds queue
management and the store's life cycle.

Maintenance (claim expiry, due delays, retention, dedup-window sweep, archive
compaction, trash and temp sweep, move takeover) runs opportunistically from poll at
most once per ``maintenance_interval`` per queue and process, and from a background
thread in the service; correctness never depends on a separate daemon.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
import time
from collections.abc import Mapping
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
from spoolq.store.config import check_kind, config_to_json, validate_config
from spoolq.store.core import Clock, QueueHandle
from spoolq.store.cursor import ReadyCursor
from spoolq.store.deleting import delete_if_empty
from spoolq.store.files import (
    GroupCommit,
    TempWriter,
    Trash,
    listdir,
    read_json,
    write_json_atomic,
)
from spoolq.store.filesystems import FLUSH_MODES, LOCAL_DEFAULT, choose_flush
from spoolq.store.jobs import JobLookup
from spoolq.store.making import MessageFiles
from spoolq.store.model import (
    MoveStatus,
    QueueConfig,
    QueueInfo,
    QueueKind,
)
from spoolq.store.sending import Sending
from spoolq.store.watch import Watcher


class FileStore(Sending, JobLookup):
    """The file-system store. See the module docstring and :mod:`spoolq.store.layout`."""

    def __init__(self, root: Path | str, *, node_id: str | None = None, fsync: bool = True,
                 clock: Clock = time.time, peers: int = 0, maintenance_interval: float = 1.0,
                 flush: str | None = None, force_flush: bool = False,
                 default_config: QueueConfig | None = None, in_place: bool = True) -> None:
        self.root = Path(root)
        #: the config of a queue created without one (the config file's ``queue_defaults``)
        self.default_config = validate_config(default_config) if default_config is not None else QueueConfig()
        self.node_id = node_id or os.uname().nodename or "node"
        self.clock = clock
        self.peers = peers
        self.maintenance_interval = maintenance_interval
        self._ids = L.IdFactory(self.node_id)
        self._queues: dict[str, QueueHandle] = {}
        self._queues_lock = threading.Lock()
        self._closed = False
        self._background: threading.Thread | None = None
        self._bytes_per_entry = 80.0  # directory bytes per entry, recalibrated by exact counts
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            for sub in ("tmp", "queues", "trash", "corrupt", "moves", "archive", "journal"):
                (self.root / sub).mkdir(exist_ok=True)
        except OSError as e:
            raise storage_error(e, f"preparing the root {self.root}") from e
        self.queues_dir = str(self.root / "queues")
        self.tmp = TempWriter(self.root / "tmp", self.node_id)
        self.files = MessageFiles(str(self.root / "tmp"), self.tmp.prefix, in_place=in_place)
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
        from spoolq.store.moves import MoveRunner  # late import: moves imports this module's types

        self.moves = MoveRunner(self)
        with contextlib.suppress(StorageUnavailable):  # e.g. a read-only root: reads still work
            self.recover_journals()  # maintenance retries

    def _meta_json(self, info: QueueInfo) -> dict[str, Any]:
        return {"name": info.name, "kind": info.kind.value, "config": config_to_json(info.config),
                "tags": dict(info.tags), "created_at": info.created_at, "updated_at": info.updated_at}

    def create_queue(self, name: str, kind: QueueKind = QueueKind.STANDARD, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True) -> QueueInfo:
        L.check_queue_name(name)
        kind = check_kind(kind)
        if config is not None:
            validate_config(config)
        tags = dict(tags or {})
        for k, v in tags.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise InvalidArgument("tags must map strings to strings")
        existing = self._find(name)
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
            write_json_atomic(Path(staging) / "meta.json", self._meta_json(info), self.tmp, self.fsync)
            for attempt in range(5):
                try:
                    os.rename(staging, self._qpath(name))
                    break
                except OSError as e:
                    if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        raise
                    found = self._find(name)
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
        return self._require(name).info

    def update_queue(self, name: str, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None) -> QueueInfo:
        q = self._require(name)
        if config is not None:
            validate_config(config)
        if tags is not None:
            for k, v in tags.items():
                if not isinstance(k, str) or not isinstance(v, str):
                    raise InvalidArgument("tags must map strings to strings")
        info = QueueInfo(name=q.name, kind=q.kind, config=config if config is not None else q.info.config,
                         tags=dict(tags) if tags is not None else dict(q.info.tags),
                         created_at=q.info.created_at, updated_at=self.clock())
        try:
            write_json_atomic(Path(q.path) / "meta.json", self._meta_json(info), self.tmp, self.fsync)
        except OSError as e:
            raise storage_error(e, f"updating queue {name!r}") from e
        return info

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

    def delete_queue(self, name: str, *, if_empty: bool = False) -> None:
        if if_empty:
            return delete_if_empty(self, name)  # see spoolq.store.deleting
        q = self._require(name)
        try:
            os.rename(q.path, f"{self.root}/trash/{L.queue_dir_name(name)}~{L.new_token()}")
        except FileNotFoundError:
            raise QueueNotFound(name) from None
        except OSError as e:
            raise storage_error(e, f"deleting queue {name!r}") from e
        self._queues.pop(name, None)

    def purge(self, queue: str) -> None:
        L.check_queue_name(queue)
        q = self._find(queue)
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

    def move(self, source: str, destination: str, max_per_second: int | None = None) -> str:
        return self.moves.start(source, destination, max_per_second)

    def move_status(self, ref: str) -> MoveStatus:
        return self.moves.status(ref)

    def cancel_move(self, ref: str) -> MoveStatus:
        return self.moves.cancel(ref)

    def list_moves(self, source: str | None = None) -> list[MoveStatus]:
        return self.moves.list_all(source)

    def maintain(self, now: float | None = None, *, shared_interval: float | None = None) -> dict[str, int]:
        """One maintenance pass over every queue and the root. Returns counters of what it did.
        ``shared_interval``: skip queues that any process maintained less than that many seconds
        ago (the background loop's passes; see :mod:`spoolq.store.maintenance`)."""
        from spoolq.store.maintenance import maintain_all

        return maintain_all(self, int((self.clock() if now is None else now) * 1000), shared_interval)

    def start_background(self, interval: float = 1.0) -> None:
        """Run :meth:`maintain` every ``interval`` seconds in a daemon thread (call after fork)."""
        if self._background is not None and self._background.is_alive():
            return

        def loop() -> None:
            while not self._closed:
                with contextlib.suppress(Exception):
                    self.maintain(shared_interval=interval)
                time.sleep(interval)

        self._background = threading.Thread(target=loop, name="spoolq-maintenance", daemon=True)
        self._background.start()

    def recover_journals(self) -> tuple[int, int]:
        """Replay or retire this node's commit journals that no live process owns (see
        :mod:`spoolq.store.journal`): (files retired, messages restored). Run at start-up and
        by maintenance."""
        j = self.commit.journal
        if j is None:
            return 0, 0
        from spoolq.store.journal import recover

        try:
            return recover(self.root, j.node, j.boot, self.commit.syncfs_now, self._restore_journaled)
        except OSError as e:
            raise storage_error(e, "recovering the commit journal") from e

    def _restore_journaled(self, rel: str, data: bytes) -> bool:
        """Put a journaled message back at ``queues/<rel>`` unless it is whole somewhere in its queue."""
        from spoolq.store.files import CorruptMessage, decode_message, read_file, rename_into

        parts = rel.split("/")
        if len(parts) < 3 or ".." in parts or not L.ID_RE.match(parts[-1][:40]):
            return False
        qpath = f"{self.queues_dir}/{parts[0]}"
        if not os.path.exists(f"{qpath}/meta.json"):
            return False  # the queue was deleted since
        mid = parts[-1][:40]
        prefix = f"{mid}~"
        dirs = [os.path.dirname(f"{self.queues_dir}/{rel}"), f"{qpath}/claimed/{L.id_shard(mid)}", f"{qpath}/acked"]
        dirs += [f"{qpath}/delayed/{b}" for b in listdir(f"{qpath}/delayed")]
        for d in dirs:
            for n in listdir(d):
                if n.startswith(prefix):
                    try:
                        decode_message(read_file(f"{d}/{n}"))
                        return False  # whole: nothing to do
                    except CorruptMessage:
                        os.replace(self.tmp.write(data), f"{d}/{n}")  # torn by the power failure
                        return True
                    except FileNotFoundError:
                        continue
        rename_into(self.tmp.write(data), os.path.dirname(f"{self.queues_dir}/{rel}"), parts[-1], base=qpath)
        return True

    def health(self) -> dict[str, Any]:
        probe = self.root / "tmp"
        try:
            t = self.tmp.write(b"health")
            os.unlink(t)
            st = os.statvfs(probe)
        except OSError as e:
            return {"ok": False, "error": str(storage_error(e, "probing the root"))}
        return {"ok": True, "root": str(self.root), "node": self.node_id,
                "free_bytes": st.f_bavail * st.f_frsize, "fsync": self.fsync,
                "flushes": self.commit.flushes + (self.commit.journal.flushes if self.commit.journal else 0)}

    def close(self) -> None:
        self._closed = True
        self.trash.close()
        self.watcher.close()
        self.commit.close()
