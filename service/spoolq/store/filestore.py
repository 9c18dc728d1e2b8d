"""FileStore: every message a file, every state change an atomic rename.

The on-disk grammar is in :mod:`spoolq.store.layout`, the flush rules in
:mod:`spoolq.store.files`. What each rename means:

==========================================  =========================================
rename                                      meaning
==========================================  =========================================
tmp/x -> ready/<b>/<id>~0~0                 send (visible)
tmp/x -> delayed/<due>/<id>~0~0~<due>~<b>   send with a delay
delayed/... -> ready/<b>/...                the delay is over (maintenance)
ready/<b>/<id>~rc~f -> claimed/<s>/<id>~rc+1~f~exp~tok   poll: a claim, unique to the claimant
claimed/<s>/<n> -> claimed/<s>/<id>~rc~f~exp'~tok'      renew (a fresh token every time)
claimed/<s>/<n> -> ready/<b>/<id>~rc~f      release, claim expiry, unclaim_all
claimed/<s>/<n> -> (unlink)                 ack; archive queues: -> acked/<n>~<t>
ready|claimed|delayed -> other queue ready  move, dead-letter (with a new id)
ready/ claimed/ delayed/ -> trash/          purge (whole directories at once)
queues/<q> -> trash/                        delete queue
==========================================  =========================================

Crash rules: a file is in exactly one place, so a crash between two renames leaves
each message in one state, never zero, never two. Temp files of dead writers are swept;
claims of dead consumers expire (requeued by any process's maintenance); moves resume
(see :mod:`spoolq.store.moves`). Poll never lists a whole queue: each process keeps a
cursor over the oldest bucket and lists the next bucket only when that one is spent.

Maintenance (claim expiry, due delays, retention, dedup-window sweep, archive
compaction, trash and temp sweep, move takeover) runs opportunistically from poll at
most once per ``maintenance_interval`` per queue and process, and from a background
thread in the service; correctness never depends on a separate daemon.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import random
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from spoolq.errors import (
    InvalidArgument,
    MessageTooLarge,
    QueueAlreadyExists,
    QueueKindMismatch,
    QueueNotFound,
    StorageUnavailable,
    storage_error,
)
from spoolq.store import layout as L
from spoolq.store.files import (
    CorruptMessage,
    GroupCommit,
    TempWriter,
    decode_message,
    encode_message,
    listdir,
    read_file,
    read_json,
    rename_into,
    write_json_atomic,
)
from spoolq.store.model import (
    FIFO_DEDUP_WINDOW,
    MAX_BATCH,
    MAX_CLAIM_TTL,
    MAX_DELAY,
    MAX_PEEK_LIMIT,
    MAX_POLL_LIMIT,
    MAX_WAIT,
    DeadLetterPolicy,
    Delivery,
    Message,
    MoveStatus,
    OutgoingMessage,
    QueueConfig,
    QueueCounts,
    QueueInfo,
    QueueKind,
    SendResult,
)
from spoolq.store.watch import Watcher

Clock = Callable[[], float]
#: an empty poll re-runs claim expiry and due delays if they have not run for this long (seconds)
EMPTY_POLL_MAINTENANCE = 0.1


@dataclass
class _Queue:
    info: QueueInfo
    path: str
    stamp: tuple[int, int]
    cursor: _ReadyCursor = field(default_factory=lambda: _ReadyCursor())
    last_maintained: float = 0.0

    @property
    def kind(self) -> QueueKind:
        return self.info.kind

    @property
    def name(self) -> str:
        return self.info.name

    def sub(self, part: str) -> str:
        return f"{self.path}/{part}"


class _ReadyCursor:
    """A process's view of the oldest ready bucket of one standard/dedup queue."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[tuple[str, str]] = []
        self.pos = 0
        self.bucket = ""
        self.checked = 0.0

    def take(self, ready: str, n: int, peers: int) -> list[tuple[str, str]]:
        with self.lock:
            now = time.monotonic()
            if self.pos < len(self.items) and now - self.checked > 1.0:
                # bounded staleness: an older bucket may have reappeared (requeue, other node)
                self.checked = now
                buckets = [b for b in listdir(ready) if L.STD_BUCKET_RE.match(b)]
                if buckets and min(buckets) < self.bucket:
                    self.pos = len(self.items)
            if self.pos >= len(self.items):
                self._refill(ready, peers)
                self.checked = now
            out = self.items[self.pos:self.pos + n]
            self.pos += len(out)
            return out

    def _refill(self, ready: str, peers: int) -> None:
        items: list[tuple[str, str]] = []
        for b in sorted(listdir(ready)):
            if not L.STD_BUCKET_RE.match(b):
                continue
            names = listdir(f"{ready}/{b}")
            if not names:
                with contextlib.suppress(OSError):
                    os.rmdir(f"{ready}/{b}")
                continue
            names.sort()
            items.extend((b, n) for n in names)
            if len(items) >= 64:
                break
        self.bucket = items[0][0] if items else ""
        if peers > 0:
            window = 8 * (peers + 1)
            for i in range(0, len(items), window):
                chunk = items[i:i + window]
                random.shuffle(chunk)
                items[i:i + window] = chunk
        self.items, self.pos = items, 0


def _config_to_json(config: QueueConfig) -> dict[str, Any]:
    data = asdict(config)
    data["extra"] = dict(config.extra)
    return data


def _config_from_json(data: Mapping[str, Any]) -> QueueConfig:
    values = dict(data)
    dl = values.get("dead_letter")
    values["dead_letter"] = DeadLetterPolicy(**dl) if isinstance(dl, dict) else None
    values["extra"] = dict(values.get("extra") or {})
    known = set(QueueConfig.__dataclass_fields__)
    return QueueConfig(**{k: v for k, v in values.items() if k in known})


def _check_number(name: str, value: float, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise InvalidArgument(f"{name} must be a number, got {value!r}")
    if not lo <= value <= hi:
        raise InvalidArgument(f"{name} must be between {lo:g} and {hi:g}, got {value!r}")
    return float(value)


def _check_int(name: str, value: int, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise InvalidArgument(f"{name} must be between {lo} and {hi}, got {value!r}")
    return value


def _check_kind(value: str) -> QueueKind:
    try:
        return QueueKind(value)
    except ValueError:
        raise InvalidArgument(f"unknown queue kind {value!r:.80}: use one of "
                              f"{', '.join(k.value for k in QueueKind)}") from None


def validate_config(config: QueueConfig) -> QueueConfig:
    _check_number("claim_ttl", config.claim_ttl, 0, MAX_CLAIM_TTL)
    _check_number("delay", config.delay, 0, MAX_DELAY)
    _check_number("retention", config.retention, 1, 10 * 365 * 86400)
    _check_int("max_message_bytes", config.max_message_bytes, 1, 64 * 1024 * 1024)
    _check_number("receive_wait", config.receive_wait, 0, MAX_WAIT)
    _check_number("archive_retention", config.archive_retention, 1, 100 * 365 * 86400)
    if config.dead_letter is not None:
        L.check_queue_name(config.dead_letter.queue)
        _check_int("max_receives", config.dead_letter.max_receives, 1, 1_000_000)
    for k, v in config.extra.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise InvalidArgument("queue extra attributes must map strings to strings")
    return config


@dataclass(frozen=True)
class _Prepared:
    message: OutgoingMessage
    meta: dict[str, Any]
    due_ms: int  # 0 = ready now


class FileStore:
    """The file-system store. See the module docstring and :mod:`spoolq.store.layout`."""

    def __init__(self, root: Path | str, *, node_id: str | None = None, fsync: bool = True,
                 clock: Clock = time.time, peers: int = 0, maintenance_interval: float = 1.0) -> None:
        self.root = Path(root)
        self.node_id = node_id or os.uname().nodename or "node"
        self.clock = clock
        self.peers = peers
        self.maintenance_interval = maintenance_interval
        self._ids = L.IdFactory(self.node_id)
        self._queues: dict[str, _Queue] = {}
        self._queues_lock = threading.Lock()
        self._maint_lock = threading.Lock()
        self._closed = False
        self._background: threading.Thread | None = None
        self._bytes_per_entry = 80.0  # directory bytes per entry, recalibrated by exact counts
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            for sub in ("tmp", "queues", "trash", "corrupt", "moves", "archive"):
                (self.root / sub).mkdir(exist_ok=True)
        except OSError as e:
            raise storage_error(e, f"preparing the root {self.root}") from e
        self.queues_dir = str(self.root / "queues")
        self.tmp = TempWriter(self.root / "tmp", self.node_id)
        self.commit = GroupCommit(self.root, enabled=fsync)
        self.fsync = fsync
        self.watcher = Watcher()
        from spoolq.store.moves import MoveRunner  # late import: moves imports this module's types

        self.moves = MoveRunner(self)

    # ================================================================ time, ids

    def tmp_node_prefix(self) -> str:
        return self.tmp.prefix

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # ================================================================ queues

    def _qpath(self, name: str) -> str:
        return f"{self.queues_dir}/{L.queue_dir_name(name)}"

    def _find(self, name: str) -> _Queue | None:
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
                         config=_config_from_json(data.get("config") or {}),
                         tags=dict(data.get("tags") or {}), created_at=float(data["created_at"]),
                         updated_at=float(data["updated_at"]))
        with self._queues_lock:
            if cached is not None:
                cached.info, cached.stamp = info, stamp
                return cached
            q = _Queue(info=info, path=path, stamp=stamp)
            self._queues[name] = q
            return q

    def _require(self, name: str) -> _Queue:
        q = self._find(name)
        if q is None:
            raise QueueNotFound(name)
        return q

    def _meta_json(self, info: QueueInfo) -> dict[str, Any]:
        return {"name": info.name, "kind": info.kind.value, "config": _config_to_json(info.config),
                "tags": dict(info.tags), "created_at": info.created_at, "updated_at": info.updated_at}

    def create_queue(self, name: str, kind: QueueKind = QueueKind.STANDARD, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True) -> QueueInfo:
        L.check_queue_name(name)
        kind = _check_kind(kind)
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
        info = QueueInfo(name=name, kind=kind, config=config or QueueConfig(), tags=tags,
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
            try:
                os.rename(staging, self._qpath(name))
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                shutil.rmtree(staging, ignore_errors=True)
                found = self._find(name)
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
    def _existing(q: _Queue, kind: QueueKind, config: QueueConfig | None, exist_ok: bool) -> QueueInfo:
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
            if entry.startswith(".new~"):
                continue
            if "~" in entry:
                data = read_json(Path(self.queues_dir) / entry / "meta.json")
                name = data.get("name") if data else None
            else:
                name = entry if os.path.exists(f"{self.queues_dir}/{entry}/meta.json") else None
            if isinstance(name, str) and name.startswith(prefix):
                names.append(name)
        return sorted(names)

    def delete_queue(self, name: str) -> None:
        q = self._require(name)
        try:
            os.rename(q.path, f"{self.root}/trash/{L.queue_dir_name(name)}~{L.new_token()}")
        except FileNotFoundError:
            raise QueueNotFound(name) from None
        except OSError as e:
            raise storage_error(e, f"deleting queue {name!r}") from e
        self._queues.pop(name, None)

    # ================================================================ send

    def _prepare(self, q: _Queue, m: OutgoingMessage, now_ms: int) -> _Prepared:
        if not isinstance(m, OutgoingMessage):
            raise InvalidArgument("each message must be an OutgoingMessage")
        if not isinstance(m.body, (bytes, bytearray)):
            raise InvalidArgument("message body must be bytes")
        if len(m.body) > q.info.config.max_message_bytes:
            raise MessageTooLarge(
                f"message of {len(m.body)} bytes is over the limit of {q.info.config.max_message_bytes} bytes")
        delay = q.info.config.delay if m.delay is None else _check_number("delay", m.delay, 0, MAX_DELAY)
        meta: dict[str, Any] = {"t": now_ms}
        if m.ttl is not None:
            meta["x"] = now_ms + int(_check_number("ttl", m.ttl, 0.001, 10 * 365 * 86400) * 1000)
        if m.max_receives is not None:
            meta["m"] = _check_int("max_receives", m.max_receives, 1, 1_000_000)
        if m.at_most_once:
            meta["o"] = 1
        for key, value, short in (("group_id", m.group_id, "g"), ("dedup_id", m.dedup_id, "d")):
            if value is not None:
                if not isinstance(value, str) or not 1 <= len(value) <= 128:
                    raise InvalidArgument(f"{key} must be a string of 1 to 128 characters")
                meta[short] = value
        if q.kind is QueueKind.FIFO:
            if m.group_id is None:
                raise QueueKindMismatch("a message for a FIFO queue needs a group id")
            if m.dedup_id is None and not q.info.config.content_based_dedup:
                raise QueueKindMismatch(
                    "a message for a FIFO queue needs a deduplication id unless content-based deduplication is on")
        if m.attributes:
            if not isinstance(m.attributes, Mapping):
                raise InvalidArgument("attributes must be a mapping")
            meta["a"] = dict(m.attributes)
        try:
            encode_message(meta, b"")
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"attributes must be JSON-serialisable: {e}") from None
        return _Prepared(m, meta, now_ms + int(delay * 1000) if delay > 0 else 0)

    def send(self, queue: str, message: OutgoingMessage, create: QueueKind | None = None) -> SendResult:
        return self.send_batch(queue, [message], create)[0]

    def send_batch(self, queue: str, messages: Sequence[OutgoingMessage],
                   create: QueueKind | None = None) -> list[SendResult]:
        L.check_queue_name(queue)
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidArgument("messages must be a sequence")
        if len(messages) > MAX_BATCH:
            raise InvalidArgument(f"a batch holds at most {MAX_BATCH} messages, got {len(messages)}")
        q = self._find(queue)
        now_ms = self.now_ms()
        if q is None:
            if create is None:
                raise QueueNotFound(queue)
            _check_kind(create)
            prepared_probe = QueueInfo(queue, QueueKind(create), QueueConfig(), {}, 0, 0)
            probe = _Queue(info=prepared_probe, path="", stamp=(0, 0))
            for m in messages:  # validate before creating anything
                self._prepare(probe, m, now_ms)
            if not messages:
                return []
            self.create_queue(queue, create)
            q = self._require(queue)
        prepared = [self._prepare(q, m, now_ms) for m in messages]
        if not prepared:
            return []
        if q.kind is QueueKind.FIFO:
            with self._fifo_lock(q):
                results = self._write_fifo(q, prepared, now_ms)
        elif q.kind is QueueKind.DEDUP:
            results = self._write_dedup(q, prepared)
        else:
            results = self._write(q, [(p, self._ids.new_id(q.name, now_ms)) for p in prepared])
        self.watcher.notify(q.path)
        return results

    def _target(self, q: _Queue, p: _Prepared, message_id: str) -> tuple[str, str]:
        bucket = L.fifo_bucket(p.meta["g"]) if q.kind is QueueKind.FIFO else L.std_bucket(L.id_time_ms(message_id))
        if p.due_ms:
            return q.sub(f"delayed/{p.due_ms // 1000:011d}"), L.delayed_name(message_id, 0, 0, p.due_ms, bucket)
        return q.sub(f"ready/{bucket}"), L.ready_name(message_id, 0, 0)

    def _write(self, q: _Queue, items: Sequence[tuple[_Prepared, str]], flush: bool = True) -> list[SendResult]:
        """Write, place and flush messages; on any storage error undo what was placed."""
        temps: list[str] = []
        placed: list[str] = []
        try:
            for p, _mid in items:
                temps.append(self.tmp.write(encode_message(p.meta, bytes(p.message.body)),
                                            fsync_file=self.commit.per_file))
            for tmp_path, (p, mid) in zip(temps, items, strict=True):
                dst_dir, name = self._target(q, p, mid)
                try:
                    rename_into(tmp_path, dst_dir, name)
                except FileNotFoundError:
                    if not os.path.exists(f"{q.path}/meta.json"):
                        raise QueueNotFound(q.name) from None
                    os.makedirs(dst_dir, exist_ok=True)  # purge raced us: the state dir is being replaced
                    rename_into(tmp_path, dst_dir, name)
                placed.append(f"{dst_dir}/{name}")
                self.commit.note_paths(f"{dst_dir}/{name}", dst_dir)
            if flush:
                self.commit.flush()
        except (OSError, StorageUnavailable, QueueNotFound) as e:
            for path in placed + temps[len(placed):]:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            if isinstance(e, OSError):
                raise storage_error(e, f"storing messages in {q.name!r}") from e
            raise
        return [SendResult(id=mid, sequence_number=L.sequence_number(mid) if q.kind is QueueKind.FIFO else None)
                for _p, mid in items]

    def _write_dedup(self, q: _Queue, prepared: Sequence[_Prepared]) -> list[SendResult]:
        results: list[SendResult] = []
        now_ms = self.now_ms()
        for p in prepared:
            digest = hashlib.sha256(p.message.body).hexdigest()
            marker = q.sub(f"dedup/{digest}")
            pending = self._read_marker_id(marker)
            if pending is not None and not p.due_ms and os.path.exists(
                    q.sub(f"ready/{L.std_bucket(L.id_time_ms(pending))}/{L.ready_name(pending, 0, 0)}")):
                results.append(SendResult(id=pending, duplicate=True))
                continue
            mid = self._ids.new_id(q.name, now_ms)
            results.extend(self._write(q, [(p, mid)], flush=False))
            if not p.due_ms:
                self._write_marker(marker, mid.encode())
        self.commit.flush()
        return results

    def _read_marker_id(self, marker: str) -> str | None:
        try:
            text = read_file(marker).decode("ascii", "replace").strip()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise storage_error(e, "reading a dedup marker") from e
        return text if L.ID_RE.match(text) else None

    def _write_marker(self, marker: str, data: bytes) -> None:
        try:
            t = self.tmp.write(data)
            os.replace(t, marker)
        except OSError as e:
            raise storage_error(e, "writing a dedup marker") from e

    @contextlib.contextmanager
    def _fifo_lock(self, q: _Queue) -> Iterator[None]:
        try:
            fd = os.open(q.sub("lock"), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise storage_error(e, f"locking FIFO queue {q.name!r}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write_fifo(self, q: _Queue, prepared: Sequence[_Prepared], now_ms: int) -> list[SendResult]:
        last_path = q.sub("fifo.last")
        try:
            last: str | None = read_file(last_path).decode().strip() or None
        except FileNotFoundError:
            last = None
        except OSError as e:
            raise storage_error(e, "reading the FIFO sequence") from e
        scope_group = q.info.config.extra.get("DeduplicationScope") == "messageGroup"
        results: list[SendResult | None] = []
        to_write: list[tuple[_Prepared, str]] = []
        markers: list[tuple[str, str]] = []
        seen_in_batch: dict[str, str] = {}
        for p in prepared:
            dedup = p.message.dedup_id or hashlib.sha256(p.message.body).hexdigest()
            key = (p.meta["g"] + "\0" + dedup) if scope_group else dedup
            digest = hashlib.sha256(key.encode()).hexdigest()
            marker = q.sub(f"dedup/{digest}")
            earlier = seen_in_batch.get(digest) or self._recent_fifo_marker(marker, now_ms)
            if earlier is not None:
                results.append(SendResult(id=earlier, sequence_number=L.sequence_number(earlier), duplicate=True))
                continue
            mid = self._ids.next_after(q.name, now_ms, last)
            last = mid
            seen_in_batch[digest] = mid
            to_write.append((p, mid))
            markers.append((marker, mid))
            results.append(None)
        written = iter(self._write(q, to_write, flush=False)) if to_write else iter(())
        for marker, mid in markers:
            self._write_marker(marker, f"{mid} {now_ms}".encode())
        if last is not None:
            self._write_marker(last_path, last.encode())
        self.commit.flush()
        return [r if r is not None else next(written) for r in results]

    def _recent_fifo_marker(self, marker: str, now_ms: int) -> str | None:
        try:
            parts = read_file(marker).decode().split()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise storage_error(e, "reading a FIFO dedup record") from e
        if len(parts) == 2 and L.ID_RE.match(parts[0]) and parts[1].isdigit() \
                and now_ms - int(parts[1]) < FIFO_DEDUP_WINDOW * 1000:
            return parts[0]
        return None

    # ================================================================ poll

    def poll(self, queue: str, limit: int = 10, claim_ttl: float | None = None,
             wait: float = 0.0) -> list[Delivery]:
        L.check_queue_name(queue)
        _check_int("limit", limit, 1, MAX_POLL_LIMIT)
        if claim_ttl is not None:
            _check_number("claim_ttl", claim_ttl, 0, MAX_CLAIM_TTL)
        _check_number("wait", wait, 0, MAX_WAIT)
        deadline = time.monotonic() + wait
        while True:
            q = self._find(queue)
            seen = self.watcher.generation(q.path) if q is not None else 0
            if q is not None:
                self._maybe_maintain(q, self.maintenance_interval)
                ttl = q.info.config.claim_ttl if claim_ttl is None else claim_ttl
                try:
                    got = self._claim(q, limit, ttl)
                    if not got and self._maybe_maintain(q, EMPTY_POLL_MAINTENANCE):
                        got = self._claim(q, limit, ttl)  # expired claims or due delays came back
                except OSError as e:
                    raise storage_error(e, f"polling {queue!r}") from e
                if got:
                    return got
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            if q is None:
                time.sleep(min(remaining, 0.05))
            else:
                self.watcher.wait(q.path, seen, remaining)

    def _claim(self, q: _Queue, limit: int, ttl: float) -> list[Delivery]:
        now_ms = self.now_ms()
        if ttl == 0:  # EmoDB: ttl=0 returns unclaimed messages without claiming them
            return [Delivery(m, receipt="", claimed_until=now_ms / 1000)
                    for m in self._peek(q, limit, include_claimed=False)]
        exp = now_ms + int(ttl * 1000)
        if q.kind is QueueKind.FIFO:
            with self._fifo_lock(q):
                return self._claim_fifo(q, limit, now_ms, exp)
        out: list[Delivery] = []
        ready = q.sub("ready")
        budget = 20 * limit + 2048  # candidates tried per poll: bounds the work of one call
        while len(out) < limit and budget > 0:
            candidates = q.cursor.take(ready, limit - len(out), self.peers)
            if not candidates:
                break
            budget -= len(candidates)
            for bucket, name in candidates:
                d = self._claim_one(q, f"{ready}/{bucket}", name, L.id_shard(name[:40]), now_ms, exp)
                if d is not None:
                    out.append(d)
        if q.kind is QueueKind.DEDUP:
            out.sort(key=lambda d: d.message.body)
        return out

    def _claim_one(self, q: _Queue, src_dir: str, name: str, shard: str, now_ms: int,
                   exp: int) -> Delivery | None:
        parsed = L.parse_ready(name)
        if parsed is None:  # not ours: keep it out of every poller's way
            self._quarantine(f"{src_dir}/{name}", q)
            return None
        frt = parsed.frt or now_ms
        cname = L.claimed_name(parsed.id, parsed.rc + 1, frt, exp, L.new_token())
        cdir = q.sub(f"claimed/{shard}")
        try:
            rename_into(f"{src_dir}/{name}", cdir, cname)
        except FileNotFoundError:
            return None  # another poller won it
        cpath = f"{cdir}/{cname}"
        try:
            meta, body = decode_message(read_file(cpath))
        except FileNotFoundError:
            return None
        except CorruptMessage:
            self._quarantine(cpath, q)
            return None
        expire = meta.get("x")
        if isinstance(expire, int) and expire <= now_ms:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(cpath)
            return None
        rc = parsed.rc + 1
        dl = q.info.config.dead_letter
        max_receives = meta.get("m") or (dl.max_receives if dl else None)
        if isinstance(max_receives, int) and rc > max_receives:
            self._dead_letter(q, cpath, parsed, meta)
            return None
        if q.kind is QueueKind.DEDUP:
            self._surface(q, parsed.id, body)
        if meta.get("o"):
            # at-most-once: the delivery itself is the last state change, made durable first
            with contextlib.suppress(FileNotFoundError):
                os.unlink(cpath)
            self.commit.note_paths(cdir)
            self.commit.flush()
        msg = self._message(parsed.id, meta, body, rc, frt)
        return Delivery(message=msg, receipt=f"{shard}:{cname}", claimed_until=exp / 1000)

    def _claim_fifo(self, q: _Queue, limit: int, now_ms: int, exp: int) -> list[Delivery]:
        ready = q.sub("ready")
        heads: list[tuple[str, str, list[str]]] = []
        for group in listdir(ready):
            if not L.FIFO_BUCKET_RE.match(group):
                continue
            names = sorted(listdir(f"{ready}/{group}"))
            if not names:
                with contextlib.suppress(OSError):
                    os.rmdir(f"{ready}/{group}")
                continue
            if listdir(q.sub(f"claimed/{group}")):
                continue  # one in-flight batch per group
            heads.append((names[0], group, names))
        heads.sort()
        out: list[Delivery] = []
        for _head, group, names in heads:
            for name in names:
                if len(out) >= limit:
                    return out
                d = self._claim_one(q, f"{ready}/{group}", name, group, now_ms, exp)
                if d is not None:  # None: expired or dead-lettered (we hold the lock: nobody else took it)
                    out.append(d)
        return out

    def _message(self, mid: str, meta: Mapping[str, Any], body: bytes, rc: int, frt: int,
                 claimed_until: float | None = None) -> Message:
        return Message(id=mid, body=body, sent_at=int(meta.get("t", L.id_time_ms(mid))) / 1000,
                       receive_count=rc, first_received_at=frt / 1000 if frt else None,
                       attributes=meta.get("a") or {}, group_id=meta.get("g"), dedup_id=meta.get("d"),
                       sequence_number=L.sequence_number(mid) if "g" in meta else None,
                       claimed_until=claimed_until)

    def _surface(self, q: _Queue, mid: str, body: bytes) -> None:
        """Dedup: once peeked or polled, a message no longer absorbs identical sends."""
        marker = q.sub(f"dedup/{hashlib.sha256(body).hexdigest()}")
        if self._read_marker_id(marker) == mid:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(marker)

    def _quarantine(self, path: str, q: _Queue) -> None:
        with contextlib.suppress(OSError):
            os.rename(path, f"{self.root}/corrupt/{L.queue_dir_name(q.name)}~{os.path.basename(path)}")

    def _dead_letter(self, q: _Queue, path: str, parsed: L.Parsed, meta: Mapping[str, Any]) -> None:
        dl = q.info.config.dead_letter
        target = self._find(dl.queue) if dl else None
        if target is None or target.path == q.path:
            if dl is None:  # a per-message max_receives without a DLQ: drop it
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                return
            # the dead-letter queue is missing: keep the message rather than lose it
            bucket = os.path.basename(os.path.dirname(path))
            with contextlib.suppress(FileNotFoundError):
                rename_into(path, q.sub(f"ready/{self._ready_bucket(q, parsed.id, bucket)}"),
                            L.ready_name(parsed.id, parsed.rc, parsed.frt))
            return
        self.transfer(path, target, meta, keep_counts=(parsed.rc + 1, parsed.frt or self.now_ms()))

    def transfer(self, src: str, target: _Queue, meta: Mapping[str, Any],
                 keep_counts: tuple[int, int] | None = None) -> str | None:
        """Rename the message file ``src`` into ``target``'s ready state; the new id, or None if gone."""
        new_id = self._ids.new_id(target.name, self.now_ms())
        if target.kind is QueueKind.FIFO:
            bucket = L.fifo_bucket(str(meta.get("g") or "default"))
        else:
            bucket = L.std_bucket(L.id_time_ms(new_id))
        rc, frt = keep_counts or (0, 0)
        try:
            rename_into(src, target.sub(f"ready/{bucket}"), L.ready_name(new_id, rc, frt))
        except FileNotFoundError:
            return None
        self.watcher.notify(target.path)
        return new_id

    @staticmethod
    def _ready_bucket(q: _Queue, mid: str, shard: str) -> str:
        return shard if q.kind is QueueKind.FIFO else L.std_bucket(L.id_time_ms(mid))

    # ================================================================ ack / renew / release

    def _locate_claimed(self, q: _Queue, ref: L.Ref) -> tuple[str, L.Parsed] | None:
        if ref.claimed_name is not None and ref.shard is not None:
            path = q.sub(f"claimed/{ref.shard}/{ref.claimed_name}")
            if os.path.exists(path):
                parsed = L.parse_claimed(ref.claimed_name)
                assert parsed is not None
                return path, parsed
            prefix = f"{ref.id}~{ref.receive_count}~"
            shards = [ref.shard]
        else:
            prefix = f"{ref.id}~"
            shards = [L.id_shard(ref.id)] if q.kind is not QueueKind.FIFO else listdir(q.sub("claimed"))
        for shard in shards:
            for n in listdir(q.sub(f"claimed/{shard}")):
                if n.startswith(prefix):
                    parsed = L.parse_claimed(n)
                    if parsed is not None:
                        return q.sub(f"claimed/{shard}/{n}"), parsed
        return None

    def _locate_unclaimed(self, q: _Queue, mid: str) -> tuple[str, str, L.Parsed] | None:
        """Find a ready (or delayed) message by id: (directory, name, parsed)."""
        prefix = f"{mid}~"
        buckets = [L.std_bucket(L.id_time_ms(mid))] if q.kind is not QueueKind.FIFO else listdir(q.sub("ready"))
        for b in buckets:
            d = q.sub(f"ready/{b}")
            for n in listdir(d):
                if n.startswith(prefix):
                    parsed = L.parse_ready(n)
                    if parsed is not None:
                        return d, n, parsed
        for b in listdir(q.sub("delayed")):
            d = q.sub(f"delayed/{b}")
            for n in listdir(d):
                if n.startswith(prefix):
                    parsed = L.parse_delayed(n)
                    if parsed is not None:
                        return d, n, parsed
        return None

    def _refs(self, q: _Queue | None, queue: str, refs: Sequence[str]) -> list[L.Ref]:
        if isinstance(refs, (str, bytes)) or not isinstance(refs, Sequence):
            raise InvalidArgument("refs must be a sequence of message ids or receipts")
        return [L.parse_ref(r, queue) for r in refs]

    def ack(self, queue: str, refs: Sequence[str]) -> list[bool]:
        L.check_queue_name(queue)
        q = self._find(queue)
        parsed_refs = self._refs(q, queue, refs)
        if q is None:
            return [False] * len(parsed_refs)
        out = []
        try:
            for ref in parsed_refs:
                out.append(self._ack_one(q, ref))
        except OSError as e:
            raise storage_error(e, f"acknowledging in {queue!r}") from e
        return out

    def _ack_one(self, q: _Queue, ref: L.Ref) -> bool:
        found = self._locate_claimed(q, ref)
        if found is None and ref.claimed_name is None:
            loose = self._locate_unclaimed(q, ref.id)
            if loose is not None:
                return self._finish(q, f"{loose[0]}/{loose[1]}")
            return False
        if found is None:
            return False
        return self._finish(q, found[0])

    def _finish(self, q: _Queue, path: str) -> bool:
        try:
            if q.info.config.archive:
                os.rename(path, q.sub(f"acked/{os.path.basename(path)}~{self.now_ms():x}"))
            else:
                os.unlink(path)
        except FileNotFoundError:
            return False
        return True

    def renew(self, queue: str, refs: Sequence[str], ttl: float, *, extend_only: bool = True,
              claim_unclaimed: bool = False) -> list[bool]:
        L.check_queue_name(queue)
        _check_number("ttl", ttl, 0, MAX_CLAIM_TTL)
        q = self._find(queue)
        parsed_refs = self._refs(q, queue, refs)
        if q is None:
            return [False] * len(parsed_refs)
        if ttl == 0:
            return self.release(queue, refs)
        new_exp = self.now_ms() + int(ttl * 1000)
        out = []
        try:
            for ref in parsed_refs:
                out.append(self._renew_one(q, ref, new_exp, extend_only, claim_unclaimed))
        except OSError as e:
            raise storage_error(e, f"renewing claims in {queue!r}") from e
        return out

    def _renew_one(self, q: _Queue, ref: L.Ref, new_exp: int, extend_only: bool, claim_unclaimed: bool) -> bool:
        found = self._locate_claimed(q, ref)
        if found is not None:
            path, p = found
            if extend_only and p.when >= new_exp:
                return True
            try:
                os.rename(path, f"{os.path.dirname(path)}/"
                                f"{L.claimed_name(p.id, p.rc, p.frt, new_exp, L.new_token())}")
            except FileNotFoundError:
                return False
            return True
        if not claim_unclaimed or ref.claimed_name is not None:
            return False
        loose = self._locate_unclaimed(q, ref.id)
        if loose is None:
            return False
        d, n, p = loose
        shard = os.path.basename(d) if q.kind is QueueKind.FIFO else L.id_shard(p.id)
        try:
            rename_into(f"{d}/{n}", q.sub(f"claimed/{shard}"), L.claimed_name(p.id, p.rc, p.frt, new_exp,
                                                                                L.new_token()))
        except FileNotFoundError:
            return False
        return True

    def release(self, queue: str, refs: Sequence[str]) -> list[bool]:
        L.check_queue_name(queue)
        q = self._find(queue)
        parsed_refs = self._refs(q, queue, refs)
        if q is None:
            return [False] * len(parsed_refs)
        out = []
        try:
            for ref in parsed_refs:
                found = self._locate_claimed(q, ref)
                out.append(found is not None and self._unclaim(q, found[0], found[1]))
        except OSError as e:
            raise storage_error(e, f"releasing claims in {queue!r}") from e
        if any(out):
            self.watcher.notify(q.path)
        return out

    def _unclaim(self, q: _Queue, path: str, p: L.Parsed) -> bool:
        shard = os.path.basename(os.path.dirname(path))
        try:
            rename_into(path, q.sub(f"ready/{self._ready_bucket(q, p.id, shard)}"), L.ready_name(p.id, p.rc, p.frt))
        except FileNotFoundError:
            return False
        return True

    # ================================================================ reads

    def _peek(self, q: _Queue, limit: int, include_claimed: bool = True) -> list[Message]:
        now_ms = self.now_ms()
        entries: list[tuple[str, str, L.Parsed, bool]] = []  # (id, path, parsed, claimed)
        ready = q.sub("ready")
        for b in sorted(listdir(ready)):
            names = listdir(f"{ready}/{b}")
            for n in names:
                p = L.parse_ready(n)
                if p is not None:
                    entries.append((p.id, f"{ready}/{b}/{n}", p, False))
            if q.kind is not QueueKind.FIFO and len(entries) >= limit:
                break
        if include_claimed:
            for shard in listdir(q.sub("claimed")):
                for n in listdir(q.sub(f"claimed/{shard}")):
                    p = L.parse_claimed(n)
                    if p is not None:
                        entries.append((p.id, q.sub(f"claimed/{shard}/{n}"), p, True))
        entries.sort(key=lambda e: e[0])
        out: list[Message] = []
        for mid, path, p, claimed in entries:
            if len(out) >= limit:
                break
            try:
                meta, body = decode_message(read_file(path))
            except FileNotFoundError:
                continue
            except CorruptMessage:
                self._quarantine(path, q)
                continue
            expire = meta.get("x")
            if isinstance(expire, int) and expire <= now_ms:
                continue
            if q.kind is QueueKind.DEDUP and not claimed:
                self._surface(q, mid, body)
            out.append(self._message(mid, meta, body, p.rc, p.frt,
                                     claimed_until=p.when / 1000 if claimed and p.when > now_ms else None))
        return out

    def peek(self, queue: str, limit: int = 10) -> list[Message]:
        L.check_queue_name(queue)
        _check_int("limit", limit, 1, MAX_PEEK_LIMIT)
        q = self._find(queue)
        if q is None:
            return []
        try:
            return self._peek(q, limit)
        except OSError as e:
            raise storage_error(e, f"peeking {queue!r}") from e

    def counts(self, queue: str, limit: int | None = None) -> QueueCounts:
        L.check_queue_name(queue)
        if limit is not None:
            _check_int("limit", limit, 1, 2**63 - 1)
        q = self._find(queue)
        if q is None:
            return QueueCounts(0, 0, 0, True)
        now_ms = self.now_ms()
        claimed = expired = 0
        for shard in listdir(q.sub("claimed")):
            for n in listdir(q.sub(f"claimed/{shard}")):
                p = L.parse_claimed(n)
                if p is None:
                    continue
                if p.when > now_ms:
                    claimed += 1
                else:
                    expired += 1
        delayed = sum(len(listdir(q.sub(f"delayed/{b}"))) for b in listdir(q.sub("delayed")))
        budget = None if limit is None else max(0, limit - expired - claimed - delayed)
        ready, exact = self._count_ready(q, budget)
        return QueueCounts(ready=ready + expired, claimed=claimed, delayed=delayed, exact=exact)

    def _count_ready(self, q: _Queue, budget: int | None) -> tuple[int, bool]:
        """Ready messages: exact up to ``budget`` entries read; beyond it, estimated from the
        sizes of the remaining bucket directories (no directory is read past the budget)."""
        total = 0
        partial: list[tuple[str, int]] = []  # bucket directories not read to the end
        rdir = q.sub("ready")
        for b in sorted(listdir(rdir)):
            path = f"{rdir}/{b}"
            if budget is not None and total >= budget:
                partial.append((path, 0))
                continue
            counted, complete = 0, True
            try:
                with os.scandir(path) as entries:
                    for _entry in entries:
                        counted += 1
                        if budget is not None and total + counted >= budget:
                            complete = next(entries, None) is None
                            break
            except (FileNotFoundError, NotADirectoryError):
                continue
            total += counted
            if not complete:
                partial.append((path, counted))
            elif counted >= 500:
                with contextlib.suppress(OSError):
                    self._bytes_per_entry = os.stat(path).st_size / counted
        if not partial:
            return total, True
        for path, counted in partial:
            with contextlib.suppress(OSError):
                estimate = int(os.stat(path).st_size / max(self._bytes_per_entry, 1.0))
                total += max(estimate - counted, 1 if counted == 0 else 0)
        return total, False

    def size(self, queue: str, limit: int | None = None) -> int:
        return self.counts(queue, limit).total

    def claim_count(self, queue: str) -> int:
        L.check_queue_name(queue)
        q = self._find(queue)
        if q is None:
            return 0
        now_ms = self.now_ms()
        total = 0
        for shard in listdir(q.sub("claimed")):
            for n in listdir(q.sub(f"claimed/{shard}")):
                p = L.parse_claimed(n)
                if p is not None and p.when > now_ms:
                    total += 1
        return total

    # ================================================================ bulk

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
        q.cursor = _ReadyCursor()

    def unclaim_all(self, queue: str) -> None:
        L.check_queue_name(queue)
        q = self._find(queue)
        if q is None:
            return
        try:
            for shard in listdir(q.sub("claimed")):
                for n in listdir(q.sub(f"claimed/{shard}")):
                    p = L.parse_claimed(n)
                    if p is not None:
                        self._unclaim(q, q.sub(f"claimed/{shard}/{n}"), p)
        except OSError as e:
            raise storage_error(e, f"unclaiming {queue!r}") from e
        self.watcher.notify(q.path)

    # ================================================================ moves (see moves.py)

    def move(self, source: str, destination: str, max_per_second: int | None = None) -> str:
        return self.moves.start(source, destination, max_per_second)

    def move_status(self, ref: str) -> MoveStatus:
        return self.moves.status(ref)

    def cancel_move(self, ref: str) -> MoveStatus:
        return self.moves.cancel(ref)

    def list_moves(self, source: str | None = None) -> list[MoveStatus]:
        return self.moves.list_all(source)

    # ================================================================ maintenance

    def _maybe_maintain(self, q: _Queue, interval: float) -> bool:
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

    def maintain(self, now: float | None = None) -> dict[str, int]:
        """One maintenance pass over every queue and the root. Returns counters of what it did."""
        from spoolq.store.maintenance import maintain_all

        return maintain_all(self, int((self.clock() if now is None else now) * 1000))

    def start_background(self, interval: float = 1.0) -> None:
        """Run :meth:`maintain` every ``interval`` seconds in a daemon thread (call after fork)."""
        if self._background is not None and self._background.is_alive():
            return

        def loop() -> None:
            while not self._closed:
                with contextlib.suppress(Exception):
                    self.maintain()
                time.sleep(interval)

        self._background = threading.Thread(target=loop, name="spoolq-maintenance", daemon=True)
        self._background.start()

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
                "flushes": self.commit.flushes}

    def close(self) -> None:
        self._closed = True
        self.watcher.close()
        self.commit.close()


