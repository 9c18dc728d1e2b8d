"""Sending: every message checked first, then each file written unnamed and named in place, one flush.

The path is straight: :meth:`Sending.send_batch` looks the queue up, checks every message
(:func:`_check`, the one place the store decides a message's rules, each refusal a
:class:`~spoolq.errors.MessageRefused` naming its :class:`~spoolq.errors.MessageRule` and limit),
then hands the batch to its queue kind's step, and each step writes with :meth:`Sending._store`.

* Standard queues write and flush (through the commit journal when the store keeps one).
* Dedup queues skip a message whose identical body is still pending and unsurfaced
  (``dedup/<sha256>`` names it); the check, the write and the flush run under the marker's record
  lock (``dedup.lock``, see markerlock.py).
* FIFO queues take the queue's flock, issue ids strictly above ``fifo.last`` and drop a message
  whose deduplication id (given, or the body's SHA-256 with content-based deduplication) was seen
  in the last five minutes (in its message group, when the queue's ``dedup_scope`` says so).

Crash rules (those of message_files.py and group_commit.py): a message file is written whole
before it gets its name (``O_TMPFILE`` in its directory, or a per-process ``tmp/`` directory),
so a crash leaves no partial message under a ready or delayed name; a send returns only after a
flush that began after its files (and FIFO's dedup records and ``fifo.last``) got their names, as
the store's flush mode defines durable. On an error before that, every file the batch named is
unlinked and every file written but not yet named discarded: none of the batch stays (a crash at
that moment may leave named files of a send never acknowledged: at least once, never a loss). A
missing queue refuses the batch with nothing stored, or the send is tried again once a queue that
a delete-if-empty had aside comes back.

:class:`Sending` is a part of the file store built on its :class:`~spoolq.store.queues.StoreCore`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import os
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, NamedTuple, overload

from spoolq.errors import (
    InvalidArgument,
    MessageRefused,
    MessageRule,
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
from spoolq.store.message_files import MessageFiles, Unnamed
from spoolq.store.model import (
    FIFO_DEDUP_WINDOW,
    MAX_BATCH,
    MAX_DELAY,
    MESSAGE_KEY_RE,
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


#: a send whose queue is deleted under it (and made again, or put back) tries at least this
#: often, and for at least SEND_RETRY_FOR seconds after it first lost (on busy cores a run of
#: deletions can win ten attempts in a row)
SEND_ATTEMPTS = 10
SEND_RETRY_FOR = 2.0
_KEY_RULE = "must be 1 to 128 printable ASCII characters without spaces"


def _given_up(attempt: int, first_lost: float) -> bool:
    """Whether a send that lost its queue to deletions ``attempt`` times, the first at
    ``first_lost`` (``time.monotonic()``), stops trying."""
    return attempt >= SEND_ATTEMPTS and time.monotonic() - first_lost >= SEND_RETRY_FOR


def _check(info: QueueInfo, m: OutgoingMessage, now_ms: int, encoded: dict[int, bytes] | None = None,
           kind_checked: bool = False) -> _Prepared:
    """Check ``m`` against the queue ``info`` describes (the only place a message's rules are decided:
    :class:`~spoolq.errors.MessageRule`, in the order SQS applies them); its file's metadata and due
    time. ``kind_checked``: the FIFO presence rules were checked for the whole batch already.

    ``encoded``, kept by the caller for one batch: the JSON of each ``attributes`` object met
    so far, by identity (a door that gives every message of a batch the same attributes
    object has them encoded once, not once per message)."""
    config = info.config
    if (type(m) is OutgoingMessage and type(m.body) is bytes and m.delay is None and m.ttl is None
            and m.max_receives is None and not m.at_most_once and m.group_id is None and m.dedup_id is None
            and info.kind is not QueueKind.FIFO):
        attributes, extra = m.attributes, m.extra_bytes
        if not attributes and not extra:
            # a plain message (the common case): only its size to check, its metadata its send time
            if len(m.body) > config.max_message_bytes:
                raise MessageTooLarge(len(m.body), config.max_message_bytes)
            delay = config.delay
            return _Prepared(m, {"t": now_ms}, now_ms + int(delay * 1000) if delay > 0 else 0,
                             b'{"t":%d}' % now_ms)  # as encode_meta({"t": now_ms})
        if type(attributes) is dict and type(extra) is int and extra >= 0:
            # a door's own metadata and nothing else (an SQS message): its size, and the metadata
            # the general path below makes, {"a": attributes, "t": now_ms}, encoded the same way
            if len(m.body) + extra > config.max_message_bytes:
                raise MessageTooLarge(len(m.body) + extra, config.max_message_bytes)
            delay = config.delay
            encoded_attributes = encoded.get(id(attributes)) if encoded is not None else None
            if encoded_attributes is None:
                try:
                    encoded_attributes = encode_meta(attributes)
                except (TypeError, ValueError) as e:
                    raise InvalidArgument(f"attributes must be JSON-serialisable: {e}") from None
                if encoded is not None:
                    encoded[id(attributes)] = encoded_attributes
            return _Prepared(m, {"a": attributes, "t": now_ms}, now_ms + int(delay * 1000) if delay > 0 else 0,
                             b'{"a":%s,"t":%d}' % (encoded_attributes, now_ms))  # as encode_meta would
    if not isinstance(m, OutgoingMessage):
        raise InvalidArgument("each message must be an OutgoingMessage")
    if not isinstance(m.body, (bytes, bytearray)):
        raise InvalidArgument("message body must be bytes")
    extra = m.extra_bytes
    if type(extra) is not int or extra < 0:
        raise InvalidArgument("extra_bytes must be an integer >= 0")
    if len(m.body) + extra > config.max_message_bytes:
        raise MessageTooLarge(len(m.body) + extra, config.max_message_bytes)
    group, dedup = m.group_id, m.dedup_id
    if group is not None and (type(group) is not str or not MESSAGE_KEY_RE.match(group)):
        raise MessageRefused(MessageRule.GROUP_ID, f"group_id {_KEY_RULE}", 128, group)
    if dedup is not None and (type(dedup) is not str or not MESSAGE_KEY_RE.match(dedup)):
        raise MessageRefused(MessageRule.DEDUP_ID, f"dedup_id {_KEY_RULE}", 128, dedup)
    fifo = info.kind is QueueKind.FIFO
    if fifo and not kind_checked:
        _check_fifo_keys(info, (m,))
    if dedup is not None and not fifo:
        raise QueueKindMismatch(MessageRule.DEDUP_ID_NOT_FIFO, "a deduplication id is for FIFO queues only",
                                value=dedup)
    delay = config.delay if m.delay is None else check_number("delay", m.delay, 0, MAX_DELAY)
    meta: dict[str, Any] = {"t": now_ms}
    if m.ttl is not None:
        meta["x"] = now_ms + int(check_number("ttl", m.ttl, 0.001, 10 * 365 * 86400) * 1000)
    if m.max_receives is not None:
        meta["m"] = check_int("max_receives", m.max_receives, 1, 1_000_000)
    if m.at_most_once:
        meta["o"] = 1
    if group is not None:
        meta["g"] = group
    if dedup is not None:
        meta["d"] = dedup
    elif fifo:  # content-based deduplication (checked above): the body's digest is the id
        meta["d"] = hashlib.sha256(m.body).hexdigest()
    if m.attributes:
        if not isinstance(m.attributes, Mapping):
            raise InvalidArgument("attributes must be a mapping")
        meta["a"] = dict(m.attributes)
    try:  # only attributes can fail: everything else in meta is a number or a checked string
        if encoded is not None and len(meta) == 2 and "a" in meta:  # {"a": ..., "t": ...}
            attributes_json = encoded.get(id(m.attributes))
            if attributes_json is None:
                attributes_json = encoded[id(m.attributes)] = encode_meta(meta["a"])
            meta_bytes = b'{"a":%s,"t":%d}' % (attributes_json, now_ms)  # as encode_meta(meta) would
        else:
            meta_bytes = encode_meta(meta)
    except (TypeError, ValueError) as e:
        raise InvalidArgument(f"attributes must be JSON-serialisable: {e}") from None
    return _Prepared(m, meta, now_ms + int(delay * 1000) if delay > 0 else 0, meta_bytes)


def _check_fifo_keys(info: QueueInfo, messages: Sequence[OutgoingMessage]) -> None:
    """A FIFO queue's presence rules over ``messages``: every one has a group id (first), and a
    deduplication id unless the queue deduplicates by content."""
    for m in messages:
        if isinstance(m, OutgoingMessage) and m.group_id is None:
            raise QueueKindMismatch(MessageRule.GROUP_ID_MISSING, "a message for a FIFO queue needs a group id")
    if info.config.content_based_dedup:
        return
    for m in messages:
        if isinstance(m, OutgoingMessage) and m.dedup_id is None:
            raise QueueKindMismatch(
                MessageRule.DEDUP_ID_MISSING,
                "a message for a FIFO queue needs a deduplication id unless content-based deduplication is on")


def _check_all(info: QueueInfo, messages: Sequence[OutgoingMessage], now_ms: int,
               each: bool) -> list[_Prepared | MessageRefused]:
    """Every message checked against ``info`` (:func:`_check`). Without ``each`` the first refusal
    is raised; with it a :class:`MessageRefused` stands in its message's place, but a FIFO queue's
    missing id refuses the whole batch all the same (its caller does not know the queue's kind)."""
    encoded: dict[int, bytes] = {}  # the messages stay referenced: their ids are not reused
    if not each:
        return [_check(info, m, now_ms, encoded) for m in messages]
    if info.kind is QueueKind.FIFO:
        _check_fifo_keys(info, messages)
    out: list[_Prepared | MessageRefused] = []
    for m in messages:
        try:
            out.append(_check(info, m, now_ms, encoded, kind_checked=True))
        except MessageRefused as refused:
            out.append(refused)
    return out


class Sending:
    """The send path: :meth:`send_batch` checks every message, then hands the batch to the step
    of its queue's kind, which writes, names and flushes the files with :meth:`_store`."""

    def __init__(self, core: StoreCore) -> None:
        self.core = core
        #: queue directory -> (second, the directory of its ready bucket): the target of a send
        self._ready_dirs: dict[str, tuple[int, str]] = {}

    @overload
    def send_batch(self, queue: QueueRef, messages: Sequence[OutgoingMessage], create: QueueKind | None = None,
                   each: Literal[False] = False) -> list[SendResult]: ...

    @overload
    def send_batch(self, queue: QueueRef, messages: Sequence[OutgoingMessage], create: QueueKind | None,
                   each: Literal[True]) -> list[SendResult | MessageRefused]: ...

    def send_batch(self, queue: QueueRef, messages: Sequence[OutgoingMessage], create: QueueKind | None = None,
                   each: bool = False) -> list[SendResult] | list[SendResult | MessageRefused]:
        """The contract's ``send_batch`` (``each``: its ``send_each``)."""
        core = self.core
        name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
        if type(messages) is not tuple and type(messages) is not list and (
                isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence)):
            raise InvalidArgument("messages must be a sequence")
        if len(messages) > MAX_BATCH:
            raise InvalidArgument(f"a batch holds at most {MAX_BATCH} messages, got {len(messages)}")
        q = core.resolve(queue)
        if q is None and create is None:
            q = core.wait_for_comeback(name)  # a delete-if-empty may have it aside for an instant
            if q is None:
                raise QueueNotFound(name)
        now_ms = int(core.clock() * 1000)  # as core.now_ms()
        # checked once, against the queue as it is (or as it will be created, before creating anything)
        if q is not None:
            checked_for = q.info
        else:
            assert create is not None  # checked above
            checked_for = QueueInfo(name, check_kind(create), core.default_config, {}, 0, 0)
        checked = _check_all(checked_for, messages, now_ms, each)
        if not checked or (each and _Prepared not in map(type, checked)):
            return checked  # type: ignore[return-value]  # nothing to store: [] or only refusals
        first_lost = 0.0  # time.monotonic() when a deletion first won, once one did
        for attempt in itertools.count(1):
            if q is None:
                assert create is not None  # checked above
                core.create_queue(name, create)
                q = core.find(name)
                if q is None:  # deleted again at once
                    first_lost = first_lost or time.monotonic()
                    if _given_up(attempt, first_lost):
                        raise QueueNotFound(name)
                    continue
            info = q.info
            if info is not checked_for and (info.kind is not checked_for.kind or info.config != checked_for.config):
                checked_for, checked = info, _check_all(info, messages, now_ms, each)  # made anew, other rules
            # without ``each`` every message passed (or the first refusal was raised)
            prepared: list[_Prepared] = [p for p in checked if type(p) is _Prepared] \
                if each and set(map(type, checked)) != {_Prepared} else checked  # type: ignore[assignment]
            if not prepared:
                return checked  # type: ignore[return-value]  # nothing to store: [] or only refusals
            kind = info.kind
            try:
                if kind is QueueKind.STANDARD:
                    results = self._store(q, kind, prepared, [core.ids.new_id(name, now_ms)] if len(prepared) == 1
                                          else core.ids.new_ids(name, now_ms, len(prepared)))
                elif kind is QueueKind.DEDUP:
                    results = self._send_dedup(q, prepared, now_ms)
                else:
                    with core.fifo_lock(q):
                        results = self._send_fifo(q, prepared, now_ms)
                break
            except QueueNotFound:
                # deleted while we wrote (nothing of ours stayed): a queue that comes back (a
                # delete-if-empty put it back, see deleting.py) or that this send may create
                # takes the messages; a queue that stays deleted refuses them
                first_lost = first_lost or time.monotonic()
                q = core.wait_for_comeback(name)
                if (q is None and create is None) or _given_up(attempt, first_lost):
                    raise
        assert q is not None  # the loop ends only by a break after storing into q
        core.watcher.notify(q.path)
        if len(prepared) == len(checked):
            return results
        stored = iter(results)
        return [next(stored) if isinstance(c, _Prepared) else c for c in checked]

    def _store(self, q: QueueHandle, kind: QueueKind, prepared: Sequence[_Prepared], ids: Sequence[str],
               flush: bool = True) -> list[SendResult]:
        """Write each message's file unnamed, name it in its bucket, then flush (``flush``: else the
        caller flushes, under its lock). On any error every file named is unlinked and every file
        written discarded, so none of the batch stays. A full disk first unlinks the acked files
        this process still holds in trash/ (:class:`~spoolq.store.trash.Trash`) and tries once more."""
        core = self.core
        files, commit = core.files, core.commit
        per_file = commit.per_file
        base = q.path
        datas: list[bytes] = []
        targets: list[tuple[str, str]] = []
        ready = (-1, "")  # the second of the last ready bucket met, and its directory
        for p, mid in zip(prepared, ids, strict=True):
            datas.append(encode_message(p.meta, p.message.body, p.meta_bytes))
            if kind is not QueueKind.FIFO and not p.due_ms:  # the common case, as _target has it
                second = int(mid[:12], 16) // 1000
                if second != ready[0]:
                    ready = (second, self._ready_dir(q, second))
                targets.append((ready[1], f"{mid}~0~0"))  # L.ready_name(mid, 0, 0)
            else:
                targets.append(self._target(q, kind, p, mid))
        # the commit journal makes plain sends durable; FIFO, dedup and at-most-once take the full flush
        journal = commit.journal
        if journal is not None and (not flush or kind is not QueueKind.STANDARD
                                    or any(p.meta.get("o") for p in prepared)):
            journal = None
        # announced before the files are written: a flush leader starting meanwhile waits for this send
        flusher = journal if journal is not None else commit if flush else None
        announced = flusher is not None and flusher.announce()
        for retry in (False, True):
            placed: list[str] = []
            unnamed: list[Unnamed] = []
            try:
                if per_file and len(datas) >= PARALLEL_FROM:  # their fsyncs overlap: 1.6-3x measured
                    unnamed = _write_parallel(files, base, datas, [d for d, _n in targets])
                    for u, (dst_dir, file_name) in zip(unnamed, targets, strict=True):
                        self._name(q, u, dst_dir, file_name)
                        placed.append(f"{dst_dir}/{file_name}")
                        commit.note_paths(dst_dir)  # the file was fsync'd when written
                else:  # without per-file fsync the writes are CPU-bound and a pool only costs (0.6-0.7x)
                    for data, (dst_dir, file_name) in zip(datas, targets, strict=True):
                        if not files.make(data, dst_dir, file_name, base=base, fsync_file=per_file):
                            u = files.write(data, dst_dir, base=base, fsync_file=per_file)
                            unnamed.append(u)
                            self._name(q, u, dst_dir, file_name)
                        placed.append(f"{dst_dir}/{file_name}")
                        if per_file:
                            commit.note_paths(dst_dir)  # the file was fsync'd when written
                if journal is not None:
                    cut = len(core.queues_dir) + 1
                    journal.append([(path[cut:], data) for path, data in zip(placed, datas, strict=True)])
                if flusher is not None:  # the journal, else the group commit when this send flushes
                    was, announced = announced, False
                    flusher.flush(was)
            except BaseException as e:
                if announced and flusher is not None:
                    announced = False
                    flusher.withdraw()
                for path in placed:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                for u in unnamed:
                    files.discard(u)
                if isinstance(e, BaseGone) or (isinstance(e, FileNotFoundError) and not os.path.isdir(q.path)):
                    # deleted before its files were named (or aside for an instant and back by now)
                    raise QueueNotFound(q.name) from None
                if not isinstance(e, OSError | StorageUnavailable):
                    raise
                error = storage_error(e, f"storing messages in {q.name!r}") if isinstance(e, OSError) else e
                cause = error.__cause__ if error is e else e
                if retry or not (isinstance(cause, OSError) and cause.errno == errno.ENOSPC and core.trash.drain()):
                    raise error from cause
                continue
            if kind is not QueueKind.FIFO:
                return [SendResult(mid) for mid in ids]
            return [SendResult(mid, L.sequence_number(mid)) for mid in ids]
        raise AssertionError("unreachable: the second try returns or raises")

    def _name(self, q: QueueHandle, unnamed: Unnamed, directory: str, name: str) -> None:
        """Name a file :meth:`MessageFiles.write` wrote; QueueNotFound when its queue is gone. Where
        buckets are guarded (GlusterFS), a file named late after its send began (the id's time: see
        bucket_guard.py) holds the queue's bucket lock while it is renamed into place."""
        try:
            if q.guarded_buckets:
                with self.core.renaming_into_buckets(q, L.id_time_ms(name)):
                    self.core.files.name(unnamed, directory, name, base=q.path)
                return
            self.core.files.name(unnamed, directory, name, base=q.path)
        except FileNotFoundError:
            raise QueueNotFound(q.name) from None  # deleted meanwhile (our unnamed file is ours alone)

    def _ready_dir(self, q: QueueHandle, second: int) -> str:
        """The directory of ``q``'s ready bucket of ``second``, kept per queue for the current second."""
        kept = self._ready_dirs.get(q.path)
        if kept is None or kept[0] != second:
            if len(self._ready_dirs) >= 10_000:  # deleted queues' entries: forget them all
                self._ready_dirs.clear()
            kept = self._ready_dirs[q.path] = (second, q.ready_dir(L.std_bucket(second * 1000)))
        return kept[1]

    def _target(self, q: QueueHandle, kind: QueueKind, p: _Prepared, message_id: str) -> tuple[str, str]:
        """The directory and name of a message's file."""
        if kind is QueueKind.FIFO:
            bucket = L.fifo_bucket(p.meta["g"])
        elif not p.due_ms:  # the common case: the ready bucket of the id's second
            return self._ready_dir(q, int(message_id[:12], 16) // 1000), f"{message_id}~0~0"  # L.ready_name
        else:
            bucket = L.std_bucket(L.id_time_ms(message_id))
        if p.due_ms:
            return q.sub(f"delayed/{p.due_ms // 1000:011d}"), L.delayed_name(message_id, 0, 0, p.due_ms, bucket)
        return q.ready_dir(bucket), L.ready_name(message_id, 0, 0)

    def _send_dedup(self, q: QueueHandle, prepared: Sequence[_Prepared], now_ms: int) -> list[SendResult]:
        """Check, write and flush under the locks of the batch's markers (markerlock.py), so
        identical sends racing through any threads, processes or nodes leave one pending copy."""
        results: list[SendResult] = []
        markers = [q.dedup_marker(p.message.body) for p in prepared]
        try:
            with q.hold_marker_locks(m for p, m in zip(prepared, markers, strict=True) if not p.due_ms):
                for p, marker in zip(prepared, markers, strict=True):
                    pending = None if p.due_ms else q.pending_copy(marker)
                    if pending is not None:
                        results.append(SendResult(id=pending, duplicate=True))
                        continue
                    mid = self.core.ids.new_id(q.name, now_ms)
                    results.extend(self._store(q, QueueKind.DEDUP, [p], [mid], flush=False))
                    if not p.due_ms:
                        self.core.write_marker(q, marker, mid.encode())
                self.core.commit.flush()
        except FileNotFoundError:
            raise QueueNotFound(q.name) from None  # deleted before we could open its lock file
        return results

    def _send_fifo(self, q: QueueHandle, prepared: Sequence[_Prepared], now_ms: int) -> list[SendResult]:
        """Under the queue's lock: ids strictly above ``fifo.last``, a message whose deduplication id
        (in its group, with ``dedup_scope`` messageGroup) was sent in the last five minutes dropped."""
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
        to_write: list[_Prepared] = []
        ids: list[str] = []
        markers: list[tuple[str, str]] = []
        seen_in_batch: dict[str, str] = {}
        for p in prepared:
            dedup = p.meta["d"]  # given, or the body's digest (content-based deduplication)
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
            to_write.append(p)
            ids.append(mid)
            markers.append((marker, mid))
            results.append(None)
        written = iter(self._store(q, QueueKind.FIFO, to_write, ids, flush=False) if to_write else ())
        for marker, mid in markers:
            self.core.write_marker(q, marker, f"{mid} {now_ms}".encode())
        if last is not None:
            self._write_last(last_path, last.encode())
        self.core.commit.flush()
        return [r if r is not None else next(written) for r in results]

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


def _write_parallel(files: MessageFiles, base: str, datas: list[bytes], dirs: list[str]) -> list[Unnamed]:
    """The files of ``datas`` written unnamed by this process's writer pool (per-file fsync: a
    batch's fsyncs overlap). On failure none of the files is left behind."""
    futures = [_pool().submit(files.write, data, d, base=base, fsync_file=True)
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
            files.discard(u)
        raise error
    return written
