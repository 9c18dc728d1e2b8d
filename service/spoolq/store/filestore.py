"""FileStore: every message a file, every state change an atomic rename.

The on-disk grammar is in :mod:`spoolq.store.layout`, the flush rules in
:mod:`spoolq.store.group_commit`. What each rename means:

==========================================  =========================================
rename                                      meaning
==========================================  =========================================
(unnamed) -> ready/<b>/<id>~0~0             send (visible): an O_TMPFILE linked, or a rename
(unnamed) -> delayed/<due>/<id>~0~0~<due>~<b>  from the process's own tmp/<node>-<pid>/ (message_files.py)
delayed/... -> ready/<b>/...                the delay is over (maintenance)
ready/<b>/<id>~rc~f -> claimed/<s>/<id>~rc+1~f~exp~tok   poll: a claim, unique to the claimant
claimed/<s>/<n> -> claimed/<s>/<id>~rc~f~exp'~tok'      renew (a fresh token every time)
claimed/<s>/<n> -> ready/<b>/<id>~rc~f      release, claim expiry, unclaim_all
claimed/<s>/<n> -> trash/ack~...            ack (unlinked later, in batches); archive: -> acked/<n>~<t>
ready|claimed|delayed -> other queue ready  move (with a new id), dead-letter (the id's head kept; origins/<id> names its source)
ready/ claimed/ delayed/ -> trash/          purge (whole directories at once)
queues/<q> -> trash/                        delete queue
queues/<q> -> .del~<t>~<q> -> trash/        delete queue if empty (put back if a message landed)
==========================================  =========================================

Concurrency never refuses work: directories come and go under every operation. Any process may
remove an empty state, ksec, bucket or shard directory (pollers clean up buckets they emptied,
maintenance and retention drop old ones, purge replaces ``ready/ claimed/ delayed/ dedup/``
whole; on GlusterFS only maintenance removes buckets, under a lock: :mod:`~spoolq.store.bucket_guard`). So nobody relies on a directory staying: every rename into the queue
(:func:`~spoolq.store.fileops.rename_into`) re-creates the missing levels below the queue
directory and renames again until it succeeds, and fails only if its own file was taken by
someone else (a lost claim race) or the queue directory itself is gone (deleted). A send,
requeue, release or move therefore never fails because of a concurrent poll, ack, maintenance
pass, move or purge, in any process or node; 503 means the storage itself is in trouble.
Removers leave the buckets of the current write window alone
(:data:`~spoolq.store.handle.WRITE_WINDOW_MS`) so that senders rarely need the retry.

Crash rules: a file is in exactly one place, so a crash between two renames leaves
each message in one state, never zero, never two. Temp files of dead writers are swept;
claims of dead consumers expire (requeued by any process's maintenance); moves resume
(see :mod:`spoolq.store.moves`). Poll never lists a whole queue: each process keeps a
cursor over the oldest bucket and lists the next bucket only when that one is spent.

The store is built in floors (stated in ``pyproject.toml``'s import-linter contracts and
explained in ``docs/architecture.md``): this module, :class:`FileStore`, is the composition root.
It reads the root's on-disk format first (:func:`~spoolq.store.root_format.check_format`: a newer
format is refused before a directory is made or a byte written), makes the root's directories and
brings an older format up to this version's (:func:`~spoolq.store.root_format.record_format`); then
it builds the shared parts (the temp writer, the message file writer, the
trash, the flush, the wake-ups, the id factory, the queues: :class:`~spoolq.store.catalog.QueueCatalog`,
the queue writer, the claims this process made) and the operations (reading, sending, claiming,
the claims' ends, moves, jobs, archive, maintenance), each given the parts it uses in its
constructor; it hands each call to the
operation that does it, orchestrates the calls that take two (a delete-if-empty reads the counts,
a nack releases and then counts, a ``peek_ready`` waits as a poll does), and runs the store's
life cycle (background maintenance, health, close). No operation imports another.

Maintenance (claim expiry, due delays, retention, dedup-window sweep, archive
compaction, trash and temp sweep, move takeover) runs opportunistically from poll at
most once per ``maintenance_interval`` per queue and process, and from a background
thread in the service; correctness never depends on a separate daemon.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from spoolq.errors import InvalidArgument, MessageRefused, SpoolqError, StorageUnavailable, storage_error
from spoolq.store import damage, deleting, recovery, root_format
from spoolq.store.archive import Archive
from spoolq.store.catalog import Clock, QueueCatalog
from spoolq.store.claim_ends import ClaimEnds
from spoolq.store.claiming import Claiming
from spoolq.store.contract import QueueStore
from spoolq.store.events import Listeners, MessageEvent, StoreListener
from spoolq.store.fanout import FanOut
from spoolq.store.fileops import TempWriter, fsync_dir
from spoolq.store.filesystems import (
    EMPTY_BUCKET_REMOVALS,
    FLUSH_MODES,
    LOCAL_DEFAULT,
    choose_flush,
    empty_bucket_removal,
    inode_counts,
    requeue_in_two_steps,
)
from spoolq.store.group_commit import GroupCommit
from spoolq.store.jobs import Jobs
from spoolq.store.journal import journal_bytes
from spoolq.store.layout import IdFactory
from spoolq.store.maintenance import Maintenance
from spoolq.store.message_files import MessageFiles
from spoolq.store.model import (
    MAX_PEEK_LIMIT,
    Delivery,
    JobView,
    Message,
    MoveStatus,
    OutgoingMessage,
    QueueConfig,
    QueueCounts,
    QueueInfo,
    QueueKind,
    QueueRef,
    SendResult,
    check_queue_name,
    queue_name_of,
)
from spoolq.store.moves import MoveRunner
from spoolq.store.queue_config import check_int, validate_config
from spoolq.store.queue_writer import QueueWriter
from spoolq.store.reading import Reading
from spoolq.store.remembered_claims import RememberedClaims
from spoolq.store.sending import Sending
from spoolq.store.trash import Trash
from spoolq.store.watch import Watcher

#: the directories of a root, made at start-up where missing
ROOT_DIRS = ("tmp", "queues", "trash", "corrupt", "moves", "archive", "journal")


def _prepare_root(root: Path) -> list[Path]:
    """Make the root and its directories where missing; the directories this start made."""
    made: list[Path] = []
    try:
        if not root.is_dir():
            root.mkdir(parents=True, exist_ok=True)
            made.append(root)
        for sub in ROOT_DIRS:
            with contextlib.suppress(FileExistsError):
                (root / sub).mkdir()
                made.append(root / sub)
    except OSError as e:
        raise storage_error(e, f"preparing the root {root}") from e
    return made


def _flush(root: Path, node_id: str, fsync: bool, flush: str | None, force_flush: bool,
           made: list[Path]) -> tuple[str, GroupCommit]:
    """The flush mode and the group commit of a store: the flush that reaches stable storage where
    the root lives, or the one asked for (refused where it may not, unless forced; see
    :mod:`spoolq.store.filesystems`). With per-file fsync, the directories this start ``made`` are
    flushed as a flush does for the directories it flushes (see group_commit.py)."""
    if flush is not None and flush not in FLUSH_MODES:
        raise InvalidArgument(f"flush must be 'journal', 'syncfs' or 'fsync', got {flush!r}")
    mode = choose_flush(root, flush, force_flush).mode if fsync else (flush or LOCAL_DEFAULT)
    commit = GroupCommit(root, enabled=fsync, use_syncfs=mode != "fsync", node_id=node_id, journal=mode == "journal")
    if commit.per_file:
        try:
            for parent in dict.fromkeys(str(d.parent) for d in made):
                fsync_dir(parent)
        except OSError as e:
            raise storage_error(e, f"preparing the root {root}") from e
    return mode, commit


class FileStore(QueueStore):
    """The file-system store: :class:`~spoolq.store.contract.QueueStore` on files. See the module
    docstring and :mod:`spoolq.store.layout`."""

    def __init__(self, root: Path | str, *, node_id: str | None = None, fsync: bool = True,
                 clock: Clock = time.time, peers: int = 0, maintenance_interval: float = 1.0,
                 flush: str | None = None, force_flush: bool = False,
                 default_config: QueueConfig | None = None, in_place: bool = True,
                 empty_buckets: str | None = None) -> None:
        """``empty_buckets``: ``immediate`` or ``guarded`` (see :mod:`spoolq.store.bucket_guard`);
        by default what the root's file system needs (guarded on GlusterFS)."""
        self._root = root = Path(root)
        self._node_id = node_id = node_id or os.uname().nodename or "node"
        self._fsync = fsync
        found = root_format.check_format(root)  # before anything is touched: a newer format is refused
        if default_config is not None:  # the config of a queue created without one, checked before too
            default_config = validate_config(default_config)
        made = _prepare_root(root)
        self._tmp = tmp = TempWriter(root / "tmp", node_id)
        #: the root's on-disk format, brought up to this version's (see root_format.py)
        self._format = root_format.record_format(root, found, tmp)
        # how empty standard buckets go: at once, or under the bucket lock (see bucket_guard.py)
        if empty_buckets is not None and empty_buckets not in EMPTY_BUCKET_REMOVALS:
            raise InvalidArgument(f"empty_buckets must be 'immediate' or 'guarded', got {empty_buckets!r}")
        guarded = (empty_buckets or empty_bucket_removal(root)[0]) == "guarded"
        # guarded: every message file is named by a rename (MessageFiles.name), which a late send
        # does under the bucket lock; a file made in place is linked without it
        files = MessageFiles(str(root / "tmp"), tmp.prefix, in_place=in_place and not guarded)
        self._trash = trash = Trash(root, tmp.prefix)
        self._flush_mode, commit = _flush(root, node_id, fsync, flush, force_flush, made)
        self._commit = commit
        self._watcher = watcher = Watcher()
        ids = IdFactory(node_id)
        self._catalog = catalog = QueueCatalog(root, tmp=tmp, commit=commit, clock=clock, fsync=fsync,
                                               default_config=default_config, guarded_buckets=guarded,
                                               two_step_requeue=requeue_in_two_steps(root))
        writer = QueueWriter(queues_dir=catalog.queues_dir, ids=ids, tmp=tmp, commit=commit, watcher=watcher,
                             clock=clock)
        self._reading = Reading(catalog, clock)
        self._sending = Sending(catalog, files=files, commit=commit, ids=ids, watcher=watcher, trash=trash,
                                writer=writer, clock=clock)
        self._fanout = FanOut(catalog, self._sending, commit=commit, ids=ids, watcher=watcher, clock=clock)
        self._jobs = Jobs(catalog, tmp, clock)
        self._moves = MoveRunner(catalog, ids=ids, commit=commit, writer=writer, tmp=tmp, fsync=fsync,
                                 clock=clock, node_id=node_id)
        self._archive = archive = Archive(catalog, tmp, fsync)
        self._maintenance = Maintenance(catalog, trash=trash, watcher=watcher, archive=archive, clock=clock,
                                        tmp_prefix=tmp.prefix, recover_journals=self.recover_journals,
                                        resume_moves=self._moves.resume_stale)
        claimed_here = RememberedClaims()  # the claims this process made: a poll's, for an ack by id
        self._claiming = Claiming(catalog, commit=commit, watcher=watcher, trash=trash, writer=writer,
                                  claimed_here=claimed_here, clock=clock, maintain=self._maintenance.maybe,
                                  maintenance_interval=maintenance_interval, peers=peers,
                                  lanes_file=f"{root}/pollers.lock")
        self._ends = ClaimEnds(catalog, watcher=watcher, trash=trash, claimed_here=claimed_here, clock=clock)
        self._clock = clock
        self._listeners = Listeners()
        commit.on_flush = self._listeners.flushed
        if commit.journal is not None:
            commit.journal.on_flush = self._listeners.flushed
        self._closed = False
        self._background: threading.Thread | None = None
        with contextlib.suppress(StorageUnavailable):  # e.g. a read-only root: reads still work
            self.recover_journals()  # maintenance retries

    # ------------------------------------------------------------ what the contract reads

    @property
    def default_config(self) -> QueueConfig:
        """The config of a queue created without one."""
        return self._catalog.default_config

    @property
    def watcher(self) -> Watcher:
        return self._watcher

    # ------------------------------------------------------------ queues

    def create_queue(self, name: str, kind: QueueKind = QueueKind.STANDARD, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True) -> QueueInfo:
        return self._catalog.create_queue(name, kind, config, tags, exist_ok)

    def get_queue(self, name: str) -> QueueInfo:
        return self._catalog.get_queue(name)

    def update_queue(self, name: str, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None) -> QueueInfo:
        return self._catalog.update_queue(name, config, tags)

    def change_queue(self, name: str, change: Callable[[QueueInfo], QueueInfo]) -> QueueInfo:
        return self._catalog.change_queue(name, change)

    def list_queues(self, prefix: str = "") -> list[str]:
        return self._catalog.list_queues(prefix)

    def delete_queue(self, name: str, *, if_empty: bool = False) -> None:
        deleting.delete_queue(self._catalog, name, holds_messages=self._holds_messages if if_empty else None)

    def _holds_messages(self, queue: str) -> bool:
        """Whether ``queue`` holds a message: the kept count, and a listing of every bucket where
        that count is 0 but not exact (buckets this process never listed)."""
        counts = self._reading.counts(queue, limit=1)
        return counts.total > 0 or (not counts.exact and self._reading.counts(queue).total > 0)

    def deleted_at(self, name: str) -> float | None:
        return self._catalog.deleted_at(name)

    def purge(self, queue: str) -> None:
        self._catalog.purge(queue)

    # ------------------------------------------------------------ messages

    def send(self, queue: QueueRef, message: OutgoingMessage, create: QueueKind | None = None) -> SendResult:
        result = self._sending.send_batch(queue, (message,), create)[0]
        self._listeners.messages(MessageEvent.SENT, queue if isinstance(queue, str) else queue.name, 1)
        return result

    def send_batch(self, queue: QueueRef, messages: Sequence[OutgoingMessage],
                   create: QueueKind | None = None) -> list[SendResult]:
        results = self._sending.send_batch(queue, messages, create)
        self._listeners.messages(MessageEvent.SENT, queue_name_of(queue), len(results))
        return results

    def send_each(self, queue: QueueRef, messages: Sequence[OutgoingMessage]) -> list[SendResult | MessageRefused]:
        outcomes = self._sending.send_batch(queue, messages, None, True)
        sent = list(map(type, outcomes)).count(SendResult)  # the outcomes that are no refusal
        if sent:
            self._listeners.messages(MessageEvent.SENT, queue_name_of(queue), sent)
        return outcomes

    def fan_out(self, deliveries: Sequence[tuple[QueueRef, OutgoingMessage]]) -> list[SendResult | SpoolqError]:
        outcomes = self._fanout.fan_out(deliveries)
        for (queue, _message), outcome in zip(deliveries, outcomes, strict=True):
            if type(outcome) is SendResult:
                self._listeners.messages(MessageEvent.SENT, queue_name_of(queue), 1)
        return outcomes

    def poll(self, queue: QueueRef, limit: int = 10, claim_ttl: float | None = None,
             wait: float = 0.0) -> list[Delivery]:
        deliveries = self._claiming.poll(queue, limit, claim_ttl, wait)
        self._listeners.messages(MessageEvent.POLLED, queue_name_of(queue), len(deliveries))
        return deliveries

    def wait_point(self, queue: QueueRef) -> tuple[str, int, float]:
        return self._claiming.wait_point(queue)

    def claimed_until(self, queue: QueueRef, refs: Sequence[str]) -> list[float | None]:
        return self._ends.claimed_until(queue, refs)

    def ack(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        done = self._ends.ack(queue, refs)
        self._listeners.messages(MessageEvent.ACKED, queue_name_of(queue), sum(done))
        return done

    def renew(self, queue: QueueRef, refs: Sequence[str], ttl: float) -> list[bool]:
        return self._ends.renew(queue, refs, ttl)

    def set_claim_ttl(self, queue: QueueRef, refs: Sequence[str], ttl: float) -> list[bool]:
        return self._ends.set_claim_ttl(queue, refs, ttl)

    def release(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        return self._ends.release(queue, refs)

    def nack(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        released = self._ends.release(queue, refs)
        self._jobs.count_nacks(queue_name_of(queue), refs, released)
        return released

    def unclaim_all(self, queue: str) -> None:
        self._ends.unclaim_all(queue)

    def peek(self, queue: str, limit: int = 10) -> list[Message]:
        return self._reading.peek(queue, limit)

    def peek_ready(self, queue: QueueRef, limit: int = 10, wait: float = 0.0) -> list[Message]:
        name = queue.name if isinstance(queue, QueueInfo) else check_queue_name(queue)
        check_int("limit", limit, 1, MAX_PEEK_LIMIT)
        return self._claiming.waiting(queue, wait, lambda q: self._reading.peek_ready(q, limit), "peeking", name)

    def counts(self, queue: str, limit: int | None = None) -> QueueCounts:
        return self._reading.counts(queue, limit)

    def size(self, queue: str, limit: int | None = None) -> int:
        return self._reading.size(queue, limit)

    def claim_count(self, queue: str) -> int:
        return self._reading.claim_count(queue)

    def oldest_ready_at(self, queue: str) -> float | None:
        return self._reading.oldest_ready_at(queue)

    # ------------------------------------------------------------ jobs

    def find_job(self, queue: str, message_id: str) -> JobView | None:
        return self._jobs.find_job(queue, message_id)

    def list_jobs(self, queue: str) -> Iterator[tuple[str, str]]:
        return self._jobs.list_jobs(queue)

    # ------------------------------------------------------------ moves

    def move(self, source: str, destination: str, max_per_second: int | None = None, *,
             to_origins: bool = False) -> str:
        return self._moves.start(source, destination, max_per_second, to_origins=to_origins)

    def move_status(self, ref: str) -> MoveStatus:
        return self._moves.status(ref)

    def cancel_move(self, ref: str) -> MoveStatus:
        return self._moves.cancel(ref)

    def list_moves(self, source: str | None = None) -> list[MoveStatus]:
        return self._moves.list_all(source)

    # ------------------------------------------------------------ life cycle

    def subscribe(self, listener: StoreListener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    def maintain(self, now: float | None = None, *, shared_interval: float | None = None) -> dict[str, int]:
        """One maintenance pass over every queue and the root. Returns counters of what it did.
        ``shared_interval``: skip queues that any process maintained less than that many seconds
        ago (the background loop's passes; see :mod:`spoolq.store.maintenance`)."""
        return self._maintenance.run(int((self._clock() if now is None else now) * 1000), shared_interval)

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
        :mod:`spoolq.store.recovery`): (files retired, messages restored). Run at start-up and
        by maintenance."""
        return recovery.recover_journals(self._catalog, self._commit, self._tmp)

    def health(self) -> dict[str, Any]:
        probe = self._root / "tmp"
        try:
            t = self._tmp.write(b"health")
            os.unlink(t)
            st = os.statvfs(probe)
        except OSError as e:
            return {"ok": False, "error": str(storage_error(e, "probing the root"))}
        free_inodes, inodes = inode_counts(st)
        journal = self._commit.journal
        return {"ok": True, "root": str(self._root), "node": self._node_id, "format": self._format.format,
                "damaged": [d.as_json() for d in damage.recent()],  # files the file system refuses
                "free_bytes": st.f_bavail * st.f_frsize, "fsync": self._fsync,
                "free_inodes": free_inodes, "inodes": inodes,
                "size_bytes": st.f_blocks * st.f_frsize, "block_bytes": st.f_frsize,
                "journal": journal is not None,
                "journal_bytes": journal_bytes(journal.dir) if journal else 0,
                "journal_limit_bytes": journal.limit_bytes if journal else 0,
                "flushes": self._commit.flushes + (journal.flushes if journal else 0)}

    def flush(self) -> bool:
        if not self._commit.enabled:
            return False
        self._commit.flush()
        return True

    def close(self) -> None:
        self._closed = True
        self._claiming.close()
        self._trash.close()
        self._watcher.close()
        self._commit.close()
