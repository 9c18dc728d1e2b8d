"""What the service knows about its queues, cheaply: one cached snapshot for /metrics and the console.

Each row names the queue's door and the name that door's users know
(:func:`spoolq.queues.names.door_and_name`).

:class:`Overview` takes a :class:`Snapshot` of every queue at most every ``ttl`` seconds per
process (3 s by default): ``list_queues``, then per queue its meta (cached by the store), its
:meth:`~spoolq.store.model.QueueStore.counts` with a limit (exact up to ``COUNT_LIMIT`` ready
messages, estimated beyond, never a walk of every message) and the age of its oldest ready
message (a listing up to the first non-empty bucket). The moves in progress and the store's
health (free space, node) come with it. A scrape or a console refresh between two snapshots
costs nothing; concurrent callers share one refresh.

:class:`StoreCollector` exports the snapshot to Prometheus at scrape time:
``spoolq_queue_ready|claimed|delayed{queue,door,name}``, ``spoolq_queue_oldest_message_seconds``,
``spoolq_queue_dead_letter_messages`` (ready messages in the queue's dead-letter queue),
``spoolq_move_moved{ref,source,destination}``, ``spoolq_moves_in_progress``,
``spoolq_store_free_bytes``, ``spoolq_store_free_inodes`` and ``spoolq_store_inodes`` (one message
is one inode; both 0 where the file system has no fixed inode count), ``spoolq_store_up`` (the store can be read: the snapshot
succeeded), ``spoolq_store_writable`` (the store's probe file could be written and a message of the
largest accepted size fits, bytes and inodes, its journal record included: 0 on a full or
read-only file system, while reads still work; :mod:`spoolq.observability.readiness`), ``spoolq_store_space_low``
(1 below the warning thresholds, ``low_space_percent`` and ``low_inodes_percent``, or full), and
``spoolq_journal_bytes`` and ``spoolq_journal_limit_bytes`` (what the commit journal's files of
every process of the node take, and the most they may: :mod:`spoolq.store.journal`; 0 without a
journal).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from spoolq.errors import QueueNotFound, SpoolqError
from spoolq.observability.readiness import Headroom, Limits, judge, root_health
from spoolq.queues.names import door_and_name
from spoolq.store.contract import QueueStore
from spoolq.store.model import MoveState, MoveStatus, QueueConfig

#: the limit every depth shown is counted with (``/metrics``, the overview, the console, the SQS
#: attributes): each bucket is listed on every call below it; beyond, only the buckets that changed
#: (the store's kept ready count, true within seconds at any depth)
COUNT_LIMIT = 10_000
DEFAULT_TTL = 3.0

@dataclass(frozen=True)
class QueueRow:
    store_name: str
    door: str
    name: str
    kind: str
    ready: int
    claimed: int
    delayed: int
    exact: bool
    oldest_at: float | None
    config: QueueConfig
    dead_letter_sources: tuple[str, ...] = ()

    def oldest_age(self, now: float) -> float:
        return max(0.0, now - self.oldest_at) if self.oldest_at is not None else 0.0


@dataclass(frozen=True)
class Snapshot:
    taken_at: float
    queues: dict[str, QueueRow]
    moves: list[MoveStatus]
    health: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class Overview:
    def __init__(self, store: Callable[[], QueueStore], ttl: float = DEFAULT_TTL, root: Path | None = None,
                 limits: Limits | None = None) -> None:
        self._store = store
        self._root = root  # for the free space when the store's probe could not say
        self.limits = limits  # what the headroom is judged against (None: not judged)
        self.ttl = ttl
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None

    def snapshot(self, max_age: float | None = None) -> Snapshot:
        """A snapshot at most ``max_age`` (default ``ttl``) seconds old."""
        limit = self.ttl if max_age is None else max_age
        snap = self._snapshot
        if snap is not None and time.monotonic() - snap.taken_at < limit:
            return snap
        with self._lock:
            snap = self._snapshot
            if snap is not None and time.monotonic() - snap.taken_at < limit:
                return snap
            snap = self._take()
            self._snapshot = snap
            return snap

    def invalidate(self) -> None:
        self._snapshot = None

    def _take(self) -> Snapshot:
        taken = time.monotonic()
        try:
            store = self._store()
            rows: dict[str, QueueRow] = {}
            for name in store.list_queues():
                with contextlib.suppress(QueueNotFound):  # deleted since it was listed
                    info = store.get_queue(name)
                    c = store.counts(name, limit=COUNT_LIMIT)
                    oldest = store.oldest_ready_at(name)
                    door, shown = door_and_name(name)
                    rows[name] = QueueRow(name, door, shown, info.kind.value, c.ready, c.claimed, c.delayed,
                                          c.exact, oldest, info.config)
            sources: dict[str, list[str]] = {}
            for row in rows.values():
                if row.config.dead_letter is not None:
                    sources.setdefault(row.config.dead_letter.queue, []).append(row.store_name)
            for target, names in sources.items():
                if target in rows:
                    r = rows[target]
                    rows[target] = QueueRow(**{**r.__dict__, "dead_letter_sources": tuple(sorted(names))})
            moves = store.list_moves()
            health = dict(store.health())
            if "free_bytes" not in health and self._root is not None:
                with contextlib.suppress(OSError):  # a full disk fails the probe write, not statvfs
                    health.update(root_health(self._root, journal=(self._root / "journal").is_dir()))
        except SpoolqError as e:
            return Snapshot(taken, {}, [], {"ok": False}, error=str(e))
        except OSError as e:
            return Snapshot(taken, {}, [], {"ok": False}, error=f"{type(e).__name__}: {e}")
        return Snapshot(taken, rows, moves, health)


class StoreCollector(Collector):
    """Prometheus gauges from :meth:`Overview.snapshot`, computed at scrape time."""

    def __init__(self, overview: Overview) -> None:
        self.overview = overview

    def collect(self) -> Iterator[GaugeMetricFamily]:
        snap = self.overview.snapshot()
        now = time.time()
        labels = ["queue", "door", "name"]
        gauges = {
            "ready": GaugeMetricFamily("spoolq_queue_ready", "Messages ready to be polled", labels=labels),
            "claimed": GaugeMetricFamily("spoolq_queue_claimed", "Messages claimed (in flight)", labels=labels),
            "delayed": GaugeMetricFamily("spoolq_queue_delayed", "Messages not visible yet", labels=labels),
            "oldest": GaugeMetricFamily("spoolq_queue_oldest_message_seconds",
                                        "Age of the oldest ready message (0 when none)", labels=labels),
            "dead": GaugeMetricFamily("spoolq_queue_dead_letter_messages",
                                      "Messages waiting in the queue's dead-letter queue", labels=labels),
        }
        for row in snap.queues.values():
            values = [row.store_name, row.door, row.name]
            gauges["ready"].add_metric(values, row.ready)
            gauges["claimed"].add_metric(values, row.claimed)
            gauges["delayed"].add_metric(values, row.delayed)
            gauges["oldest"].add_metric(values, row.oldest_age(now))
            dlq = row.config.dead_letter
            if dlq is not None:
                target = snap.queues.get(dlq.queue)
                gauges["dead"].add_metric(values, target.ready + target.delayed if target else 0)
        yield from gauges.values()
        moved = GaugeMetricFamily("spoolq_move_moved", "Messages moved so far by a move in progress",
                                  labels=["ref", "source", "destination"])
        running = 0
        for m in snap.moves:
            if m.state is MoveState.IN_PROGRESS:
                running += 1
                moved.add_metric([m.ref, m.source, m.destination], m.moved)
        yield moved
        yield GaugeMetricFamily("spoolq_moves_in_progress", "Moves in progress", value=running)
        free = snap.health.get("free_bytes")
        yield GaugeMetricFamily("spoolq_store_free_bytes", "Free bytes on the root's file system",
                                value=float(free) if isinstance(free, int) else 0.0)
        for key, name, what in (("free_inodes", "spoolq_store_free_inodes", "Free inodes"),
                                ("inodes", "spoolq_store_inodes", "Inodes")):
            count = snap.health.get(key)
            yield GaugeMetricFamily(name, f"{what} on the root's file system (one message is one inode; 0 "
                                    "where the file system has no fixed inode count)",
                                    value=float(count) if isinstance(count, int) else 0.0)
        yield GaugeMetricFamily("spoolq_store_up", "1 when the store can be read (the last snapshot of every "
                                "queue succeeded)", value=1.0 if snap.error is None else 0.0)
        limits = self.overview.limits
        headroom = judge(snap.health, limits).headroom if limits and "free_bytes" in snap.health else Headroom.OK
        writable = snap.error is None and bool(snap.health.get("ok")) and headroom is not Headroom.FULL
        yield GaugeMetricFamily("spoolq_store_writable", "1 when a message of the largest accepted size can be "
                                "stored in the root now (0: file system full, out of inodes or read-only; sends "
                                "answer 503)", value=1.0 if writable else 0.0)
        yield GaugeMetricFamily("spoolq_store_space_low", "1 when the root's free space or inodes are under the "
                                "warning thresholds (or exhausted)", value=0.0 if headroom is Headroom.OK else 1.0)
        for key, name, what in (("journal_bytes", "spoolq_journal_bytes", "Bytes the commit journal's files take"),
                                ("journal_limit_bytes", "spoolq_journal_limit_bytes",
                                 "Bytes the commit journal's files may take")):
            count = snap.health.get(key)
            yield GaugeMetricFamily(name, f"{what} (every process of the node; 0 without a journal)",
                                    value=float(count) if isinstance(count, int) else 0.0)
