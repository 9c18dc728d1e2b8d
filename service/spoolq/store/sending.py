"""Sending: validation of every message first, then each file written and named in place, group commit.

Standard queues write and flush. Dedup queues skip a message whose identical body is
still pending and unsurfaced (``dedup/<sha256>`` names it); the check, the write and the flush run
under the marker's record lock (``dedup.lock``, see markerlock.py). FIFO queues take the queue's
flock, issue ids strictly above ``fifo.last`` and drop a message whose deduplication id was
seen in the last five minutes (in its message group, when the queue's ``dedup_scope`` says so).

:class:`Sending` is a part of the file store built on its :class:`~spoolq.store.queues.StoreCore`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from spoolq.errors import (
    InvalidArgument,
    MessageTooLarge,
    QueueKindMismatch,
    QueueNotFound,
    StorageUnavailable,
    storage_error,
)
from spoolq.store import layout as L
from spoolq.store import process
from spoolq.store.codec import encode_message, encode_meta
from spoolq.store.fileops import BaseGone, read_file
from spoolq.store.handle import QueueHandle
from spoolq.store.message_files import Unnamed
from spoolq.store.model import (
    FIFO_DEDUP_WINDOW,
    MAX_BATCH,
    MAX_DELAY,
    DedupScope,
    OutgoingMessage,
    QueueInfo,
    QueueKind,
    QueueRef,
    SendResult,
)
from spoolq.store.queue_config import check_int, check_kind, check_number
from spoolq.store.queues import StoreCore

#: with per-file fsync, batches of at least this many messages write their temp files from a small
#: thread pool
PARALLEL_FROM = 8
_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """This process's writer pool (a forked child builds its own)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != process.pid():
            _POOL = (process.pid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="spoolq-write"))
        return _POOL[1]


class _Prepared(NamedTuple):  # a tuple: made once per message sent, cheaper than a frozen dataclass
    message: OutgoingMessage
    meta: dict[str, Any]
    due_ms: int  # 0 = ready now
    meta_bytes: bytes  # encode_meta(meta): encoded once, when the message is checked


#: a send whose queue is deleted under it (and made again, or put back) tries this often
SEND_ATTEMPTS = 10


class Sending:
    def __init__(self, core: StoreCore) -> None:
        self.core = core
        #: queue directory -> (second, the directory of its ready bucket): the target of a send
        self._ready_dirs: dict[str, tuple[int, str]] = {}

    @staticmethod
    def _prepare(info: QueueInfo, m: OutgoingMessage, now_ms: int,
                 encoded: dict[int, bytes] | None = None) -> _Prepared:
        """Check ``m`` against the queue ``info`` describes; its file's metadata and due time.

        ``encoded``, kept by the caller for one batch: the JSON of each ``attributes`` object met
        so far, by identity (a door that gives every message of a batch the same attributes
        object has them encoded once, not once per message)."""
        if (type(m) is OutgoingMessage and type(m.body) is bytes and m.delay is None and m.ttl is None
                and m.max_receives is None and not m.at_most_once and m.group_id is None and m.dedup_id is None
                and not m.attributes and info.kind is not QueueKind.FIFO):
            # a plain message (the common case): only its size to check, its metadata its send time
            config = info.config
            if len(m.body) > config.max_message_bytes:
                raise MessageTooLarge(
                    f"message of {len(m.body)} bytes is over the limit of {config.max_message_bytes} bytes")
            delay = config.delay
            return _Prepared(m, {"t": now_ms}, now_ms + int(delay * 1000) if delay > 0 else 0,
                             b'{"t":%d}' % now_ms)  # as encode_meta({"t": now_ms})
        if not isinstance(m, OutgoingMessage):
            raise InvalidArgument("each message must be an OutgoingMessage")
        if not isinstance(m.body, (bytes, bytearray)):
            raise InvalidArgument("message body must be bytes")
        config = info.config
        if len(m.body) > config.max_message_bytes:
            raise MessageTooLarge(
                f"message of {len(m.body)} bytes is over the limit of {config.max_message_bytes} bytes")
        delay = config.delay if m.delay is None else check_number("delay", m.delay, 0, MAX_DELAY)
        meta: dict[str, Any] = {"t": now_ms}
        if m.ttl is not None:
            meta["x"] = now_ms + int(check_number("ttl", m.ttl, 0.001, 10 * 365 * 86400) * 1000)
        if m.max_receives is not None:
            meta["m"] = check_int("max_receives", m.max_receives, 1, 1_000_000)
        if m.at_most_once:
            meta["o"] = 1
        for key, value, short in (("group_id", m.group_id, "g"), ("dedup_id", m.dedup_id, "d")):
            if value is not None:
                if not isinstance(value, str) or not 1 <= len(value) <= 128:
                    raise InvalidArgument(f"{key} must be a string of 1 to 128 characters")
                meta[short] = value
        if info.kind is QueueKind.FIFO:
            if m.group_id is None:
                raise QueueKindMismatch("a message for a FIFO queue needs a group id")
            if m.dedup_id is None and not config.content_based_dedup:
                raise QueueKindMismatch(
                    "a message for a FIFO queue needs a deduplication id unless content-based deduplication is on")
        if m.attributes:
            if not isinstance(m.attributes, Mapping):
                raise InvalidArgument("attributes must be a mapping")
            meta["a"] = dict(m.attributes)
        try:  # only attributes can fail: everything else in meta is a number or a checked string
            if encoded is not None and len(meta) == 2 and "a" in meta:  # {"a": ..., "t": ...}
                attributes = encoded.get(id(m.attributes))
                if attributes is None:
                    attributes = encoded[id(m.attributes)] = encode_meta(meta["a"])
                meta_bytes = b'{"a":%s,"t":%d}' % (attributes, now_ms)  # as encode_meta(meta) would
            else:
                meta_bytes = encode_meta(meta)
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"attributes must be JSON-serialisable: {e}") from None
        return _Prepared(m, meta, now_ms + int(delay * 1000) if delay > 0 else 0, meta_bytes)

    def send(self, queue: QueueRef, message: OutgoingMessage, create: QueueKind | None = None) -> SendResult:
        return self.send_batch(queue, [message], create)[0]

    def send_batch(self, queue: QueueRef, messages: Sequence[OutgoingMessage],
                   create: QueueKind | None = None) -> list[SendResult]:
        name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidArgument("messages must be a sequence")
        if len(messages) > MAX_BATCH:
            raise InvalidArgument(f"a batch holds at most {MAX_BATCH} messages, got {len(messages)}")
        q = self.core.resolve(queue)
        if q is None and create is None:
            q = self.core.wait_for_comeback(name)  # a delete-if-empty may have it aside for an instant
        now_ms = self.core.now_ms()
        if q is None:
            if create is None:
                raise QueueNotFound(name)
            # validate against the queue as it will be created, before creating anything
            to_be = QueueInfo(name, check_kind(create), self.core.default_config, {}, 0, 0)
            for m in messages:
                self._prepare(to_be, m, now_ms)
            if not messages:
                return []
        for attempt in range(1, SEND_ATTEMPTS + 1):
            if q is None:
                assert create is not None  # checked above
                self.core.create_queue(name, create)
                q = self.core.find(name)
                if q is None:  # deleted again at once
                    continue
            encoded: dict[int, bytes] = {}  # the messages stay referenced: their ids are not reused
            prepared = [self._prepare(q.info, m, now_ms, encoded) for m in messages]
            if not prepared:
                return []
            try:
                results = self._write_kind(q, prepared, now_ms)
                break
            except QueueNotFound:
                # deleted while we wrote (nothing of ours stayed): a queue that comes back (a
                # delete-if-empty put it back, see deleting.py) or that this send may create
                # takes the messages; a queue that stays deleted refuses them
                q = self.core.wait_for_comeback(name)
                if attempt == SEND_ATTEMPTS or (q is None and create is None):
                    raise
        else:
            raise QueueNotFound(name)
        self.core.watcher.notify(q.path)
        return results

    def _write_kind(self, q: QueueHandle, prepared: list[_Prepared], now_ms: int) -> list[SendResult]:
        if q.kind is QueueKind.FIFO:
            with self.core.fifo_lock(q):
                return self._write_fifo(q, prepared, now_ms)
        if q.kind is QueueKind.DEDUP:
            return self._write_dedup(q, prepared)
        return self._write(q, [(p, self.core.ids.new_id(q.name, now_ms)) for p in prepared])

    def _target(self, q: QueueHandle, p: _Prepared, message_id: str) -> tuple[str, str]:
        if q.kind is QueueKind.FIFO:
            bucket = L.fifo_bucket(p.meta["g"])
        elif not p.due_ms:  # the common case: the ready bucket of the id's second, kept per queue
            second = int(message_id[:12], 16) // 1000
            kept = self._ready_dirs.get(q.path)
            if kept is None or kept[0] != second:
                if len(self._ready_dirs) >= 10_000:  # deleted queues' entries: forget them all
                    self._ready_dirs.clear()
                kept = self._ready_dirs[q.path] = (second, q.ready_dir(L.std_bucket(second * 1000)))
            return kept[1], f"{message_id}~0~0"  # L.ready_name(message_id, 0, 0)
        else:
            bucket = L.std_bucket(L.id_time_ms(message_id))
        if p.due_ms:
            return q.sub(f"delayed/{p.due_ms // 1000:011d}"), L.delayed_name(message_id, 0, 0, p.due_ms, bucket)
        return q.ready_dir(bucket), L.ready_name(message_id, 0, 0)

    def _write(self, q: QueueHandle, items: Sequence[tuple[_Prepared, str]], flush: bool = True) -> list[SendResult]:
        """Write, place and flush messages; on any storage error undo what was placed. A full disk
        first unlinks the acked files this process still holds in trash/, then tries once more."""
        try:
            return self._write_once(q, items, flush)
        except StorageUnavailable as e:
            cause = e.__cause__
            if not (isinstance(cause, OSError) and cause.errno == errno.ENOSPC and self.core.trash.drain()):
                raise
        return self._write_once(q, items, flush)

    def _write_once(self, q: QueueHandle, items: Sequence[tuple[_Prepared, str]],
                    flush: bool) -> list[SendResult]:
        placed: list[str] = []
        unnamed: list[Unnamed] = []
        # the commit journal makes plain sends durable; FIFO, dedup and at-most-once take the full flush
        journal = self.core.commit.journal if flush and q.kind is QueueKind.STANDARD \
            and not any(p.meta.get("o") for p, _ in items) else None
        datas: list[bytes] = []
        try:
            datas = [encode_message(p.meta, p.message.body, p.meta_bytes) for p, _mid in items]
            targets = [self._target(q, p, mid) for p, mid in items]
            unnamed = self._write_unnamed(q, datas, [d for d, _n in targets])
            for u, (dst_dir, name) in zip(unnamed, targets, strict=True):
                try:
                    self.core.files.name(u, dst_dir, name, base=q.path)
                except FileNotFoundError:
                    raise QueueNotFound(q.name) from None  # deleted meanwhile (our unnamed file is ours alone)
                placed.append(f"{dst_dir}/{name}")
                self.core.commit.note_paths(dst_dir)  # per-file mode: the file was fsync'd when written
            if journal is not None:
                cut = len(self.core.queues_dir) + 1
                journal.append([(path[cut:], data) for path, data in zip(placed, datas, strict=True)])
                journal.flush()
            elif flush:
                self.core.commit.flush()
        except (OSError, StorageUnavailable, QueueNotFound) as e:
            for path in placed:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            for u in unnamed:
                self.core.files.discard(u)
            if isinstance(e, BaseGone) or (isinstance(e, FileNotFoundError) and not os.path.isdir(q.path)):
                # deleted before its files were named (or aside for an instant and back by now)
                raise QueueNotFound(q.name) from None
            if isinstance(e, OSError):
                raise storage_error(e, f"storing messages in {q.name!r}") from e
            raise
        return [SendResult(id=mid, sequence_number=L.sequence_number(mid) if q.kind is QueueKind.FIFO else None)
                for _p, mid in items]

    def _write_unnamed(self, q: QueueHandle, datas: list[bytes], dirs: list[str]) -> list[Unnamed]:
        """The files of ``datas``, written whole but not yet named (see message_files.py). With per-file
        fsync (``flush="fsync"``) a batch is written by a few threads at once, so its fsyncs overlap
        (1.6-3x measured); without, the writes are CPU-bound and a pool only costs (0.6-0.7x). On
        failure none of the files is left behind."""
        per_file = self.core.commit.per_file
        if not per_file or len(datas) < PARALLEL_FROM:
            out: list[Unnamed] = []
            try:
                for data, d in zip(datas, dirs, strict=True):
                    out.append(self.core.files.write(data, d, base=q.path, fsync_file=per_file))
            except BaseException:
                for u in out:
                    self.core.files.discard(u)
                raise
            return out
        futures = [_pool().submit(self.core.files.write, data, d, base=q.path, fsync_file=per_file)
                   for data, d in zip(datas, dirs, strict=True)]
        written: list[Unnamed] = []
        error: BaseException | None = None
        for f in futures:
            try:
                written.append(f.result())
            except BaseException as e:
                error = error or e
        if error is not None:
            for u in written:
                self.core.files.discard(u)
            raise error
        return written

    def _write_dedup(self, q: QueueHandle, prepared: Sequence[_Prepared]) -> list[SendResult]:
        """Check, write and flush under the locks of the batch's markers (markerlock.py), so
        identical sends racing through any threads, processes or nodes leave one pending copy."""
        results: list[SendResult] = []
        now_ms = self.core.now_ms()
        markers = [q.dedup_marker(p.message.body) for p in prepared]
        try:
            with q.hold_marker_locks(m for p, m in zip(prepared, markers, strict=True) if not p.due_ms):
                for p, marker in zip(prepared, markers, strict=True):
                    pending = None if p.due_ms else q.pending_copy(marker)
                    if pending is not None:
                        results.append(SendResult(id=pending, duplicate=True))
                        continue
                    mid = self.core.ids.new_id(q.name, now_ms)
                    results.extend(self._write(q, [(p, mid)], flush=False))
                    if not p.due_ms:
                        self.core.write_marker(q, marker, mid.encode())
                self.core.commit.flush()
        except FileNotFoundError:
            raise QueueNotFound(q.name) from None  # deleted before we could open its lock file
        return results

    def _write_last(self, path: str, data: bytes) -> None:
        """Rewrite ``fifo.last`` in place (under the queue lock), never by rename: a file replaced
        through one mount leaves a stale handle in the other mounts' caches (ESTALE on GlusterFS
        for up to the FUSE entry timeout), while a file rewritten in place keeps its inode. A
        40-byte write at offset 0 is not torn; an unreadable value only loses the hint."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, data, 0)
                os.ftruncate(fd, len(data))
                if self.core.commit.per_file:
                    os.fsync(fd)
            finally:
                os.close(fd)  # on FUSE, close flushes the client's write-behind before the lock is released
        except OSError as e:
            raise storage_error(e, "writing the FIFO sequence") from e

    def _write_fifo(self, q: QueueHandle, prepared: Sequence[_Prepared], now_ms: int) -> list[SendResult]:
        last_path = q.sub("fifo.last")
        try:
            last: str | None = read_file(last_path).decode("ascii", "replace").strip() or None
            if last is not None and not L.ID_RE.fullmatch(last):
                last = None
        except FileNotFoundError:
            last = None
        except OSError as e:
            raise storage_error(e, "reading the FIFO sequence") from e
        by_group = q.info.config.dedup_scope is DedupScope.MESSAGE_GROUP
        results: list[SendResult | None] = []
        to_write: list[tuple[_Prepared, str]] = []
        markers: list[tuple[str, str]] = []
        seen_in_batch: dict[str, str] = {}
        for p in prepared:
            dedup = p.message.dedup_id or hashlib.sha256(p.message.body).hexdigest()
            if by_group:  # the id within its group (the same digest the SQS door made before the store did)
                dedup = hashlib.sha256(f"{p.meta['g']}\n{dedup}".encode()).hexdigest()
            key = (p.meta["g"] + "\0" + dedup) if by_group else dedup
            digest = hashlib.sha256(key.encode()).hexdigest()
            marker = q.sub(f"dedup/{digest}")
            earlier = seen_in_batch.get(digest) or self._recent_fifo_marker(marker, now_ms)
            if earlier is not None:
                results.append(SendResult(id=earlier, sequence_number=L.sequence_number(earlier), duplicate=True))
                continue
            mid = self.core.ids.next_after(q.name, now_ms, last)
            last = mid
            seen_in_batch[digest] = mid
            to_write.append((p, mid))
            markers.append((marker, mid))
            results.append(None)
        written = iter(self._write(q, to_write, flush=False)) if to_write else iter(())
        for marker, mid in markers:
            self.core.write_marker(q, marker, f"{mid} {now_ms}".encode())
        if last is not None:
            self._write_last(last_path, last.encode())
        self.core.commit.flush()
        return [r if r is not None else next(written) for r in results]

    def _recent_fifo_marker(self, marker: str, now_ms: int) -> str | None:
        try:
            parts = read_file(marker, replaced=True).decode().split()  # fresh after another node's rename
        except FileNotFoundError:
            return None
        except OSError as e:
            raise storage_error(e, "reading a FIFO dedup record") from e
        if len(parts) == 2 and L.ID_RE.match(parts[0]) and parts[1].isdigit() \
                and now_ms - int(parts[1]) < FIFO_DEDUP_WINDOW * 1000:
            return parts[0]
        return None
