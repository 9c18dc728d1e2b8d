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
(:data:`~spoolq.store.queues.WRITE_WINDOW_MS`) so that senders rarely need the retry.

Crash rules: a file is in exactly one place, so a crash between two renames leaves
each message in one state, never zero, never two. Temp files of dead writers are swept;
claims of dead consumers expire (requeued by any process's maintenance); moves resume
(see :mod:`spoolq.store.moves`). Poll never lists a whole queue: each process keeps a
cursor over the oldest bucket and lists the next bucket only when that one is spent.

The store is built in floors (stated in ``pyproject.toml``'s import-linter contracts and
explained in ``docs/architecture.md``): this module, :class:`FileStore`, builds one core
(:class:`~spoolq.store.queues.StoreCore`) and its parts (the operations: reading, sending,
claiming, moves, jobs, deleting, recovery), hands each call to the part that does it,
orchestrates the calls that take two parts, and runs the store's life cycle (background
maintenance, health, close). No part imports another.

Maintenance (claim expiry, due delays, retention, dedup-window sweep, archive
compaction, trash and temp sweep, move takeover) runs opportunistically from poll at
most once per ``maintenance_interval`` per queue and process, and from a background
thread in the service; correctness never depends on a separate daemon.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from spoolq.errors import MessageRefused, StorageUnavailable, storage_error
from spoolq.store import deleting, recovery
from spoolq.store.claiming import Claiming
from spoolq.store.contract import QueueStore
from spoolq.store.events import Listeners, MessageEvent, StoreListener
from spoolq.store.filesystems import inode_counts
from spoolq.store.jobs import Jobs
from spoolq.store.maintenance import maintain_all, maybe_maintain
from spoolq.store.model import (
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
    queue_name_of,
)
from spoolq.store.moves import MoveRunner
from spoolq.store.queues import Clock, StoreCore
from spoolq.store.reading import Reading
from spoolq.store.sending import Sending
from spoolq.store.watch import Watcher


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
        self._core = core = StoreCore(root, node_id=node_id or os.uname().nodename or "node", fsync=fsync,
                                     clock=clock, peers=peers, maintenance_interval=maintenance_interval,
                                     flush=flush, force_flush=force_flush, default_config=default_config,
                                     in_place=in_place, empty_buckets=empty_buckets)
        self._reading = Reading(core)
        self._sending = Sending(core)
        self._claiming = Claiming(core, functools.partial(maybe_maintain, core))
        self._jobs = Jobs(core)
        self._moves = MoveRunner(core)
        self._listeners = Listeners()
        core.commit.on_flush = self._listeners.flushed
        if core.commit.journal is not None:
            core.commit.journal.on_flush = self._listeners.flushed
        self._closed = False
        self._background: threading.Thread | None = None
        with contextlib.suppress(StorageUnavailable):  # e.g. a read-only root: reads still work
            self.recover_journals()  # maintenance retries

    # ------------------------------------------------------------ what the contract reads

    @property
    def default_config(self) -> QueueConfig:
        """The config of a queue created without one."""
        return self._core.default_config

    @property
    def watcher(self) -> Watcher:
        return self._core.watcher

    # ------------------------------------------------------------ queues

    def create_queue(self, name: str, kind: QueueKind = QueueKind.STANDARD, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True, *,
                     not_deleted_within: float = 0.0) -> QueueInfo:
        return self._core.create_queue(name, kind, config, tags, exist_ok, not_deleted_within=not_deleted_within)

    def get_queue(self, name: str) -> QueueInfo:
        return self._core.get_queue(name)

    def update_queue(self, name: str, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None) -> QueueInfo:
        return self._core.update_queue(name, config, tags)

    def change_queue(self, name: str, change: Callable[[QueueInfo], QueueInfo]) -> QueueInfo:
        return self._core.change_queue(name, change)

    def list_queues(self, prefix: str = "") -> list[str]:
        return self._core.list_queues(prefix)

    def delete_queue(self, name: str, *, if_empty: bool = False) -> None:
        deleting.delete_queue(self._core, name, holds_messages=(
            (lambda queue: self._reading.counts(queue, limit=1).total > 0) if if_empty else None))

    def purge(self, queue: str) -> None:
        self._core.purge(queue)

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

    def poll(self, queue: QueueRef, limit: int = 10, claim_ttl: float | None = None,
             wait: float = 0.0) -> list[Delivery]:
        deliveries = self._claiming.poll(queue, limit, claim_ttl, wait)
        self._listeners.messages(MessageEvent.POLLED, queue_name_of(queue), len(deliveries))
        return deliveries

    def wait_point(self, queue: QueueRef) -> tuple[str, int, float]:
        return self._claiming.wait_point(queue)

    def ack(self, queue: QueueRef, refs: Sequence[str], *, released_too: bool = False) -> list[bool]:
        done = self._claiming.ack(queue, refs, released_too=released_too)
        self._listeners.messages(MessageEvent.ACKED, queue_name_of(queue), sum(done))
        return done

    def renew(self, queue: QueueRef, refs: Sequence[str], ttl: float, *, extend_only: bool = True,
              claim_unclaimed: bool = False, live_only: bool = False) -> list[bool]:
        return self._claiming.renew(queue, refs, ttl, extend_only=extend_only, claim_unclaimed=claim_unclaimed,
                                   live_only=live_only)

    def release(self, queue: QueueRef, refs: Sequence[str], *, live_only: bool = False) -> list[bool]:
        return self._claiming.release(queue, refs, live_only=live_only)

    def unclaim_all(self, queue: str) -> None:
        self._claiming.unclaim_all(queue)

    def peek(self, queue: str, limit: int = 10) -> list[Message]:
        return self._reading.peek(queue, limit)

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

    def requeue(self, queue: str, refs: Sequence[str], *, nack: bool = False) -> list[bool]:
        released = self._claiming.release(queue, refs)
        if nack:
            self._jobs.count_nacks(queue, refs, released)
        return released

    def nack(self, queue: str, refs: Sequence[str]) -> list[bool]:
        return self.requeue(queue, refs, nack=True)

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
        return maintain_all(self._core, int((self._core.clock() if now is None else now) * 1000), shared_interval,
                            recover_journals=self.recover_journals, resume_moves=self._moves.resume_stale)

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
        return recovery.recover_journals(self._core)

    def health(self) -> dict[str, Any]:
        core = self._core
        probe = core.root / "tmp"
        try:
            t = core.tmp.write(b"health")
            os.unlink(t)
            st = os.statvfs(probe)
        except OSError as e:
            return {"ok": False, "error": str(storage_error(e, "probing the root"))}
        free_inodes, inodes = inode_counts(st)
        return {"ok": True, "root": str(core.root), "node": core.node_id,
                "free_bytes": st.f_bavail * st.f_frsize, "fsync": core.fsync,
                "free_inodes": free_inodes, "inodes": inodes,
                "flushes": core.commit.flushes + (core.commit.journal.flushes if core.commit.journal else 0)}

    def flush(self) -> bool:
        if not self._core.commit.enabled:
            return False
        self._core.commit.flush()
        return True

    def close(self) -> None:
        self._closed = True
        self._claiming.close()
        self._core.close()
