"""Reads without side effects (except dedup surfacing): peek, counts, size, claim count, oldest.

A peek reads the oldest messages of a queue without claiming them: ready ones (the oldest buckets
first, listed as far as the limit needs) and, for ``peek``, the claimed ones; a file that is no
whole message is quarantined on the way, a message past its time to live left out. Dedup queues
surface the ready messages a peek returns (they no longer absorb identical sends).

A count without a limit lists every ready bucket. A count with a limit (what the SQS attributes,
``/metrics``, the overview and the console ask) reads the ready count :mod:`spoolq.store.ready_counts`
keeps per process from directory times: true at any depth a few seconds after the last change, at a
cost that does not grow with the number of messages; ``exact`` says whether every bucket was
listed on this call.

:class:`Reading` is a part of the file store, built with the store's queues and clock.
"""

from __future__ import annotations

from spoolq.errors import (
    storage_error,
)
from spoolq.store import layout as L
from spoolq.store.catalog import Clock, QueueCatalog
from spoolq.store.codec import CorruptMessage, decode_message, message_of
from spoolq.store.fileops import listdir, read_file
from spoolq.store.handle import QueueHandle, write_window_start
from spoolq.store.model import (
    MAX_PEEK_LIMIT,
    Message,
    QueueCounts,
    QueueKind,
)
from spoolq.store.queue_config import check_int
from spoolq.store.ready_counts import ReadyCounts


class Reading:
    def __init__(self, catalog: QueueCatalog, clock: Clock) -> None:
        self.catalog = catalog
        self.clock = clock
        #: ready counts kept from directory times, for counts with a limit (ready_counts.py)
        self._ready_counts = ReadyCounts()

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def peek(self, queue: str, limit: int = 10) -> list[Message]:
        L.check_queue_name(queue)
        check_int("limit", limit, 1, MAX_PEEK_LIMIT)
        q = self.catalog.find(queue)
        if q is None:
            return []
        try:
            return self._peek(q, limit)
        except OSError as e:
            raise storage_error(e, f"peeking {queue!r}") from e

    def peek_ready(self, q: QueueHandle, limit: int) -> list[Message]:
        """Up to ``limit`` visible messages of ``q``, without claiming them (``limit`` checked)."""
        return self._peek(q, limit, include_claimed=False)

    def _peek(self, q: QueueHandle, limit: int, include_claimed: bool = True) -> list[Message]:
        """Up to ``limit`` messages of ``q`` oldest first, without claiming them (and claimed ones
        unless ``include_claimed`` is False); dedup queues surface the ready ones they return."""
        now_ms = self._now_ms()
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
                q.quarantine(path)
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
            out.append(message_of(mid, meta, body, p.rc, p.frt, claimed_until=until))
        return out

    def counts(self, queue: str, limit: int | None = None) -> QueueCounts:
        L.check_queue_name(queue)
        if limit is not None:
            check_int("limit", limit, 1, 2**63 - 1)
        q = self.catalog.find(queue)
        if q is None:
            return QueueCounts(0, 0, 0, True)
        now_ms = self._now_ms()
        claimed = expired = 0
        claims: list[str] = []
        for path, p in q.claimed_files():
            claims.append(path[path.rindex("/") + 1:])
            if p.expires > now_ms:
                claimed += 1
            else:
                expired += 1
        delays = [n for b in listdir(q.sub("delayed")) for n in listdir(q.sub(f"delayed/{b}"))]
        delayed = len(delays)
        if limit is None:
            ready, exact = self._count_ready(q), True
        elif q.kind is QueueKind.FIFO:
            ready, exact = self._ready_counts.fifo(q.sub("ready"))
        else:
            budget = max(1, limit - expired - claimed - delayed)
            ready, exact = self._ready_counts.standard(q.sub("ready"), claims, delays, budget)
        return QueueCounts(ready=ready + expired, claimed=claimed, delayed=delayed, exact=exact)

    def _count_ready(self, q: QueueHandle) -> int:
        """Ready messages, every bucket listed (a count without a limit)."""
        return sum(len(listdir(d)) for _b, d in q.ready_buckets(write_window_start(self._now_ms())))

    def size(self, queue: str, limit: int | None = None) -> int:
        return self.counts(queue, limit).total

    def claim_count(self, queue: str) -> int:
        L.check_queue_name(queue)
        q = self.catalog.find(queue)
        if q is None:
            return 0
        now_ms = self._now_ms()
        return sum(1 for _path, p in q.claimed_files() if p.expires > now_ms)

    def oldest_ready_at(self, queue: str) -> float | None:
        """When the oldest ready message was sent (seconds since the epoch), or None when none is
        ready. Standard and dedup queues list only up to the first non-empty bucket (a message keeps
        its send-time bucket when released); FIFO queues list each group's directory."""
        L.check_queue_name(queue)
        q = self.catalog.find(queue)
        if q is None:
            return None
        oldest: int | None = None
        try:
            for bucket, bdir in q.ready_buckets(write_window_start(self._now_ms())):
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
