"""Reads without side effects (except dedup surfacing): peek, counts, size, claim count, oldest.

:class:`Reading` is a part of the file store built on its :class:`~spoolq.store.queues.StoreCore`.
"""

from __future__ import annotations

import contextlib
import os

from spoolq.errors import (
    storage_error,
)
from spoolq.store import layout as L
from spoolq.store.fileops import listdir
from spoolq.store.handle import QueueHandle, write_window_start
from spoolq.store.model import (
    MAX_PEEK_LIMIT,
    Message,
    QueueCounts,
    QueueKind,
)
from spoolq.store.queue_config import check_int
from spoolq.store.queues import StoreCore


class Reading:
    def __init__(self, core: StoreCore) -> None:
        self.core = core
        self._bytes_per_entry = 80.0  # directory bytes per entry, recalibrated by exact counts

    def peek(self, queue: str, limit: int = 10) -> list[Message]:
        L.check_queue_name(queue)
        check_int("limit", limit, 1, MAX_PEEK_LIMIT)
        q = self.core.find(queue)
        if q is None:
            return []
        try:
            return self.core.peek_queue(q, limit)
        except OSError as e:
            raise storage_error(e, f"peeking {queue!r}") from e

    def counts(self, queue: str, limit: int | None = None) -> QueueCounts:
        L.check_queue_name(queue)
        if limit is not None:
            check_int("limit", limit, 1, 2**63 - 1)
        q = self.core.find(queue)
        if q is None:
            return QueueCounts(0, 0, 0, True)
        now_ms = self.core.now_ms()
        claimed = expired = 0
        for _path, p in q.claimed_files():
            if p.expires > now_ms:
                claimed += 1
            else:
                expired += 1
        delayed = sum(len(listdir(q.sub(f"delayed/{b}"))) for b in listdir(q.sub("delayed")))
        budget = None if limit is None else max(0, limit - expired - claimed - delayed)
        ready, exact = self._count_ready(q, budget)
        return QueueCounts(ready=ready + expired, claimed=claimed, delayed=delayed, exact=exact)

    def _count_ready(self, q: QueueHandle, budget: int | None) -> tuple[int, bool]:
        """Ready messages: exact while the total could still be under ``budget``. Beyond it,
        estimated without reading further: the rest of a partly read bucket from its directory
        size, unread buckets from the average bucket counted so far. Every bucket directory
        holds at least one message, so once ``counted + unread buckets >= budget`` the total is
        known to be over the budget and the rest is estimated (ksec directories give their
        bucket counts through their link counts, without being listed)."""
        if budget is None or q.kind is QueueKind.FIFO:
            return sum(len(listdir(d)) for _b, d in q.ready_buckets(write_window_start(self.core.now_ms()))), True
        ready = q.sub("ready")
        ksecs = [k for k in sorted(listdir(ready)) if L.KSEC_RE.fullmatch(k)]
        later = [self._buckets_in(f"{ready}/{k}") for k in ksecs]  # bucket counts, from link counts
        total = counted_buckets = counted_entries = 0
        partial_estimate = 0.0  # the estimated full size of a bucket read only in part
        unread_buckets = 0
        for n, ksec in enumerate(ksecs):
            kdir = f"{ready}/{ksec}"
            after = sum(later[n + 1:])
            if total >= budget:
                unread_buckets += later[n]
                continue
            buckets = sorted(listdir(kdir))
            for i, b in enumerate(buckets):
                remaining = len(buckets) - i + after
                if total >= budget or (counted_buckets >= 8 and total + remaining >= budget):
                    unread_buckets += len(buckets) - i
                    break
                path = f"{kdir}/{b}"
                counted, complete = 0, True
                try:
                    with os.scandir(path) as entries:
                        for _entry in entries:
                            counted += 1
                            if total + counted >= budget:
                                complete = next(entries, None) is None
                                break
                except (FileNotFoundError, NotADirectoryError):
                    continue
                total += counted
                if complete:
                    if counted:  # an emptied bucket not yet removed says nothing of the others
                        counted_buckets += 1
                        counted_entries += counted
                    if counted >= 500:
                        with contextlib.suppress(OSError):
                            self._bytes_per_entry = os.stat(path).st_size / counted
                else:
                    with contextlib.suppress(OSError):
                        partial_estimate = max(float(counted),
                                               os.stat(path).st_size / max(self._bytes_per_entry, 1.0))
                        total += int(partial_estimate) - counted
            else:
                continue
            # this ksec directory was left early: every later one is unread as well
            unread_buckets += after
            break
        if not unread_buckets and not partial_estimate:
            return total, True
        per_bucket = counted_entries / counted_buckets if counted_buckets else max(partial_estimate, 1.0)
        return total + int(unread_buckets * per_bucket), False

    @staticmethod
    def _buckets_in(kdir: str) -> int:
        """Bucket subdirectories of a ksec directory, from its link count where that is kept."""
        try:
            links = os.stat(kdir).st_nlink
        except OSError:
            return 0
        return links - 2 if links >= 2 else len(listdir(kdir))

    def size(self, queue: str, limit: int | None = None) -> int:
        return self.counts(queue, limit).total

    def claim_count(self, queue: str) -> int:
        L.check_queue_name(queue)
        q = self.core.find(queue)
        if q is None:
            return 0
        now_ms = self.core.now_ms()
        return sum(1 for _path, p in q.claimed_files() if p.expires > now_ms)

    def oldest_ready_at(self, queue: str) -> float | None:
        """When the oldest ready message was sent (seconds since the epoch), or None when none is
        ready. Standard and dedup queues list only up to the first non-empty bucket (a message keeps
        its send-time bucket when released); FIFO queues list each group's directory."""
        L.check_queue_name(queue)
        q = self.core.find(queue)
        if q is None:
            return None
        oldest: int | None = None
        try:
            for bucket, bdir in q.ready_buckets(write_window_start(self.core.now_ms())):
                names = [n for n in listdir(bdir) if L.READY_RE.match(n)]
                if not names:
                    continue
                if q.kind is not QueueKind.FIFO:
                    return int(bucket)
                first = L.id_time_ms(min(names)) // 1000
                oldest = first if oldest is None else min(oldest, first)
        except OSError as e:
            raise storage_error(e, f"reading {queue!r}") from e
        return None if oldest is None else float(oldest)
