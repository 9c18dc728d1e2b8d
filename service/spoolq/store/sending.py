"""Sending: every message checked first, then each file written unnamed and named in place, one flush.

The path is straight: :meth:`Sending.send_batch` looks the queue up, checks every message
(:mod:`spoolq.store.message_rules`, the one place the store decides a message's rules, each refusal
a :class:`~spoolq.errors.MessageRefused` naming its :class:`~spoolq.errors.MessageRule` and limit),
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

:class:`Sending` is a part of the file store, built with the parts a send needs: the store's queues,
the message file writer, the flush, the id factory, the wake-ups, the trash (a full disk drains it),
the queue writer (dedup and FIFO markers) and the clock.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, NoReturn, overload

from spoolq.errors import (
    MessageRefused,
    QueueNotFound,
    StorageUnavailable,
    storage_error,
)
from spoolq.store import bucket_guard, process
from spoolq.store import layout as L
from spoolq.store.catalog import Clock, QueueCatalog
from spoolq.store.codec import encode_message
from spoolq.store.fileops import BaseGone, read_file
from spoolq.store.group_commit import GroupCommit
from spoolq.store.handle import QueueHandle
from spoolq.store.layout import ID_TIME_HEX, NEW_READY_SUFFIX, IdFactory
from spoolq.store.message_files import MessageFiles, Unnamed
from spoolq.store.message_rules import Prepared, check_all, check_batch
from spoolq.store.model import (
    FIFO_DEDUP_WINDOW,
    MAX_BATCH,
    DedupScope,
    OutgoingMessage,
    QueueInfo,
    QueueKind,
    QueueRef,
    SendResult,
)
from spoolq.store.queue_config import check_kind
from spoolq.store.queue_writer import QueueWriter
from spoolq.store.trash import Trash
from spoolq.store.watch import Watcher

#: with per-file fsync, batches of at least this many messages write their temp files from a small
#: thread pool
PARALLEL_FROM = 8
#: ... this many at a time, each named before the next are written: a file written and not yet
#: named holds a descriptor, and a batch may have 10,000 messages (past a soft limit of 1,024)
PARALLEL_CHUNK = 64
_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """This process's writer pool (a forked child builds its own)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != process.pid():
            _POOL = (process.pid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="spoolq-write"))
        return _POOL[1]


#: a send whose queue is deleted under it (and made again, or put back) tries at least this
#: often, and for at least SEND_RETRY_FOR seconds after it first lost (on busy cores a run of
#: deletions can win ten attempts in a row)
SEND_ATTEMPTS = 10
SEND_RETRY_FOR = 2.0


def _given_up(attempt: int, first_lost: float) -> bool:
    """Whether a send that lost its queue to deletions ``attempt`` times, the first at
    ``first_lost`` (``time.monotonic()``), stops trying."""
    return attempt >= SEND_ATTEMPTS and time.monotonic() - first_lost >= SEND_RETRY_FOR


class Sending:
    """The send path: :meth:`send_batch` checks every message, then hands the batch to the step
    of its queue's kind, which writes, names and flushes the files with :meth:`_store`."""

    def __init__(self, catalog: QueueCatalog, *, files: MessageFiles, commit: GroupCommit, ids: IdFactory,
                 watcher: Watcher, trash: Trash, writer: QueueWriter, clock: Clock) -> None:
        self.catalog = catalog
        self.files = files
        self.commit = commit
        self.ids = ids
        self.watcher = watcher
        self.trash = trash
        self.writer = writer
        self.clock = clock
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
        catalog = self.catalog
        name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
        if (type(messages) is not tuple and type(messages) is not list) or len(messages) > MAX_BATCH:
            check_batch(messages)  # raises unless it is a sequence of at most MAX_BATCH messages
        q = catalog.resolve(queue)
        if q is None and create is None:
            q = catalog.wait_for_comeback(name)  # a delete-if-empty may have it aside for an instant
            if q is None:
                raise QueueNotFound(name)
        now_ms = int(self.clock() * 1000)
        # checked once, against the queue as it is (or as it will be created, before creating anything)
        checked_for = q.info if q is not None else self._to_create(name, create)
        checked = check_all(checked_for, messages, now_ms, each)
        if not checked or (each and Prepared not in map(type, checked)):
            return checked  # type: ignore[return-value]  # nothing to store: [] or only refusals
        first_lost = 0.0  # time.monotonic() when a deletion first won, once one did
        for attempt in itertools.count(1):
            if q is None:
                assert create is not None  # checked above
                catalog.create_queue(name, create)
                q = catalog.find(name)
                if q is None:  # deleted again at once
                    first_lost = first_lost or time.monotonic()
                    if _given_up(attempt, first_lost):
                        raise QueueNotFound(name)
                    continue
            info = q.info
            if info is not checked_for and (info.kind is not checked_for.kind or info.config != checked_for.config):
                checked_for, checked = info, check_all(info, messages, now_ms, each)  # made anew, other rules
            # without ``each`` every message passed (or the first refusal was raised)
            prepared: list[Prepared] = [p for p in checked if type(p) is Prepared] \
                if each and set(map(type, checked)) != {Prepared} else checked  # type: ignore[assignment]
            if not prepared:
                return checked  # type: ignore[return-value]  # nothing to store: [] or only refusals
            try:
                if info.kind is QueueKind.STANDARD:
                    ids = self.ids
                    results = self._store(q, QueueKind.STANDARD, prepared, [ids.new_id(name, now_ms)]
                                          if len(prepared) == 1 else ids.new_ids(name, now_ms, len(prepared)))
                else:
                    results = self._send_special(q, prepared, now_ms)
                break
            except QueueNotFound:
                # deleted while we wrote (nothing of ours stayed): a queue that comes back (a
                # delete-if-empty put it back, see deleting.py) or that this send may create
                # takes the messages; a queue that stays deleted refuses them
                first_lost = first_lost or time.monotonic()
                q = catalog.wait_for_comeback(name)
                if (q is None and create is None) or _given_up(attempt, first_lost):
                    raise
        assert q is not None  # the loop ends only by a break after storing into q
        self.watcher.notify(q.path)
        if len(prepared) == len(checked):
            return results
        stored = iter(results)
        return [next(stored) if isinstance(c, Prepared) else c for c in checked]

    def _to_create(self, name: str, create: QueueKind | None) -> QueueInfo:
        """The queue a send that creates it checks its messages against, before it is created."""
        assert create is not None  # the caller raised QueueNotFound otherwise
        return QueueInfo(name, check_kind(create), self.catalog.default_config, {}, 0, 0)

    def _send_special(self, q: QueueHandle, prepared: list[Prepared], now_ms: int) -> list[SendResult]:
        """Store the checked messages in a dedup or FIFO queue by the step of its kind."""
        if q.info.kind is QueueKind.DEDUP:
            return self._send_dedup(q, prepared, now_ms)
        with q.fifo_lock():
            return self._send_fifo(q, prepared, now_ms)

    def _store(self, q: QueueHandle, kind: QueueKind, prepared: Sequence[Prepared], ids: Sequence[str],
               flush: bool = True, again: bool = True) -> list[SendResult]:
        """Write each message's file unnamed, name it in its bucket, journal it, flush (``flush``: else
        the caller does, under its lock). An error leaves none of the batch (:func:`_raise_storing_error`);
        a full disk first empties this process's trash/ and tries once more (``again``)."""
        datas: list[bytes] = []
        targets: list[tuple[str, str]] = []  # the directory and name of each message's file
        ready = (-1, "")  # the second of the last ready bucket met, and its directory
        for p, mid in zip(prepared, ids, strict=True):
            datas.append(encode_message(p.meta, p.message.body, p.meta_bytes))
            if kind is not QueueKind.FIFO and not p.due_ms:  # the common case, as _target has it
                second = int(mid[ID_TIME_HEX], 16) // 1000  # L.id_second(mid), without its call
                if second != ready[0]:
                    ready = (second, self._ready_dir(q, second))
                targets.append((ready[1], mid + NEW_READY_SUFFIX))  # L.new_ready_name(mid)
            else:
                targets.append(self._target(q, kind, p, mid))
        files, commit = self.files, self.commit
        per_file = commit.per_file
        # the commit journal makes plain sends durable; FIFO, dedup and at-most-once take the full flush
        journal = commit.journal
        if journal is not None and (not flush or kind is not QueueKind.STANDARD
                                    or any(p.meta.get("o") for p in prepared)):
            journal = None
        flusher = journal if journal is not None else commit if flush else None
        # announced before the files are written: a flush leader starting meanwhile waits for this send
        announced = flusher is not None and flusher.announce()
        placed: list[str] = []
        unnamed: list[Unnamed] = []
        try:
            if per_file and len(datas) >= PARALLEL_FROM:  # their fsyncs overlap: 1.6-3x measured
                self._place_parallel(q, datas, targets, placed, unnamed)
            else:  # without per-file fsync the writes are CPU-bound and a pool only costs (0.6-0.7x)
                base = q.path
                for data, (dst_dir, file_name) in zip(datas, targets, strict=True):
                    if not files.make(data, dst_dir, file_name, base=base, fsync_file=per_file):
                        u = files.write(data, dst_dir, base=base, fsync_file=per_file)
                        unnamed.append(u)
                        self._name(q, u, dst_dir, file_name)
                    placed.append(f"{dst_dir}/{file_name}")
                    if per_file:
                        commit.note_paths(dst_dir)  # the file was fsync'd when written
            if journal is not None:
                cut = len(self.catalog.queues_dir) + 1
                journal.append([(path[cut:], data) for path, data in zip(placed, datas, strict=True)])
            if flusher is not None:  # the journal, else the group commit when this send flushes
                was, announced = announced, False
                flusher.flush(was)
        except BaseException as e:
            if announced and flusher is not None:
                flusher.withdraw()
            self._undo(placed, unnamed)
            if again and _disk_full(e) and self.trash.drain():
                return self._store(q, kind, prepared, ids, flush, again=False)  # once more, after the trash went
            _raise_storing_error(q, e)
        if kind is not QueueKind.FIFO:
            return [SendResult(mid) for mid in ids]
        return [SendResult(mid, L.sequence_number(mid)) for mid in ids]

    def _place_parallel(self, q: QueueHandle, datas: list[bytes], targets: list[tuple[str, str]],
                        placed: list[str], unnamed: list[Unnamed]) -> None:
        """Write the files in parallel (each fsync'd), :data:`PARALLEL_CHUNK` at a time, and name
        each chunk in order before the next is written; ``placed`` and ``unnamed`` are filled as it
        goes, for the caller to undo on an error."""
        for start in range(0, len(datas), PARALLEL_CHUNK):
            chunk = targets[start:start + PARALLEL_CHUNK]
            written = _write_parallel(self.files, q.path, datas[start:start + PARALLEL_CHUNK], [d for d, _n in chunk])
            unnamed.extend(written)
            for u, (dst_dir, file_name) in zip(written, chunk, strict=True):
                self._name(q, u, dst_dir, file_name)
                placed.append(f"{dst_dir}/{file_name}")
                self.commit.note_paths(dst_dir)  # the file was fsync'd when written

    def _undo(self, placed: list[str], unnamed: list[Unnamed]) -> None:
        """Unlink the files a failed send named and discard those it wrote unnamed."""
        for path in placed:
            with contextlib.suppress(OSError):
                os.unlink(path)
        for u in unnamed:
            self.files.discard(u)

    def _name(self, q: QueueHandle, unnamed: Unnamed, directory: str, name: str) -> None:
        """Name a file :meth:`MessageFiles.write` wrote; QueueNotFound when its queue is gone. Where
        buckets are guarded (GlusterFS), a file named late after its send began (more than
        :data:`~spoolq.store.bucket_guard.LATE_MS` after the id's time: see bucket_guard.py) holds the
        queue's bucket lock while it is renamed into place."""
        try:
            if q.guarded_buckets and int(self.clock() * 1000) - L.id_time_ms(name) > bucket_guard.LATE_MS:
                with q.renaming_into_buckets():
                    self.files.name(unnamed, directory, name, base=q.path)
                return
            self.files.name(unnamed, directory, name, base=q.path)
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

    def _target(self, q: QueueHandle, kind: QueueKind, p: Prepared, message_id: str) -> tuple[str, str]:
        """The directory and name of a message's file."""
        if kind is QueueKind.FIFO:
            bucket = L.fifo_bucket(p.meta["g"])
        elif not p.due_ms:  # the common case: the ready bucket of the id's second
            return self._ready_dir(q, L.id_second(message_id)), L.new_ready_name(message_id)
        else:
            bucket = L.std_bucket(L.id_time_ms(message_id))
        if p.due_ms:
            return q.sub(f"delayed/{p.due_ms // 1000:011d}"), L.delayed_name(message_id, 0, 0, p.due_ms, bucket)
        return q.ready_dir(bucket), L.ready_name(message_id, 0, 0)

    def _send_dedup(self, q: QueueHandle, prepared: Sequence[Prepared], now_ms: int) -> list[SendResult]:
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
                    mid = self.ids.new_id(q.name, now_ms)
                    results.extend(self._store(q, QueueKind.DEDUP, [p], [mid], flush=False))
                    if not p.due_ms:
                        self.writer.write_marker(q, marker, mid.encode())
                self.commit.flush()
        except FileNotFoundError:
            raise QueueNotFound(q.name) from None  # deleted before we could open its lock file
        return results

    def _send_fifo(self, q: QueueHandle, prepared: Sequence[Prepared], now_ms: int,
                   flush: bool = True) -> list[SendResult]:
        """Under the queue's lock: ids strictly above ``fifo.last``, a message whose deduplication id
        (in its group, with ``dedup_scope`` messageGroup) was sent in the last five minutes dropped
        (``flush``: else the caller flushes, still under the lock)."""
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
        to_write: list[Prepared] = []
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
            mid = self.ids.next_after(q.name, now_ms, last)
            last = mid
            seen_in_batch[digest] = mid
            to_write.append(p)
            ids.append(mid)
            markers.append((marker, mid))
            results.append(None)
        written = iter(self._store(q, QueueKind.FIFO, to_write, ids, flush=False) if to_write else ())
        for marker, mid in markers:
            self.writer.write_marker(q, marker, f"{mid} {now_ms}".encode())
        if last is not None:
            self._write_last(last_path, last.encode())
        if flush:
            self.commit.flush()
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
                if self.commit.per_file:
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


def _raise_storing_error(q: QueueHandle, e: BaseException) -> NoReturn:
    """Raise what a send that failed with ``e`` while storing into ``q`` raises: QueueNotFound if the
    queue was deleted before its files were named (or is aside for an instant and back by now),
    StorageUnavailable for an OSError, ``e`` itself for anything else."""
    if isinstance(e, BaseGone) or (isinstance(e, FileNotFoundError) and not os.path.isdir(q.path)):
        raise QueueNotFound(q.name) from None
    if isinstance(e, OSError):
        raise storage_error(e, f"storing messages in {q.name!r}") from e
    raise e


def _disk_full(e: BaseException) -> bool:
    """Whether a send failed with ``e`` for want of space (an OSError, or the StorageUnavailable it became)."""
    cause = e.__cause__ if isinstance(e, StorageUnavailable) else e
    return isinstance(cause, OSError) and cause.errno == errno.ENOSPC


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
