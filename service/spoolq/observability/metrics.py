"""Prometheus metrics of the service (prometheus-client).

Metrics are created per app (never at import) in a private registry. Under gunicorn,
``spoolq serve`` sets ``PROMETHEUS_MULTIPROC_DIR`` before the workers start, which puts
prometheus-client in multiprocess mode: every worker writes its samples to files in that
directory and ``/metrics`` (served by any worker) aggregates all of them, so a scrape sees
the whole service, not one worker. Without that variable (tests, ``flask run``) the numbers
are those of the current process.

Counted as they happen (every worker):

``spoolq_http_requests_total{door,operation,status}``, ``spoolq_http_request_seconds{door,operation}``
    every HTTP request; ``operation`` is the endpoint, or for the SQS door the action
    (``SendMessage``, ``ReceiveMessage``, ...; a door names it in ``environ["spoolq.operation"]``).
``spoolq_messages_total{door,operation}``
    messages sent (``send``), delivered by a poll (``poll``) and acknowledged (``ack``), by door:
    counted from the store's events (:mod:`spoolq.observability.counting`), not by the doors.
``spoolq_queue_messages_total{queue,operation}``
    the same per store queue (what the console's rates and sparklines are computed from).
``spoolq_topic_messages_total{topic,outcome}``
    SNS topics (``sns:<account>:<region>:<name>``): messages published (``published``), and per
    subscription a copy delivered to its queue (``delivered``), left out by its filter policy
    (``filtered``), put in its dead-letter queue (``dead_lettered``) or dropped because neither
    queue exists (``failed``): :meth:`Metrics.topic_messages`, counted by the SNS door.
``spoolq_commands_total{door,command,result}``, ``spoolq_command_seconds{door,command}``
    for doors that are not HTTP (the Disque door, ``door="disque"``): :meth:`Metrics.command` per
    command answered; ``command`` is the upper-cased name the door knows (``ADDJOB``, ``GETJOB``,
    ...; any other name counts as ``unknown``), ``result`` is ``ok``, ``error`` or ``auth``
    (refused: not authenticated, or the key lacks the permission).
``spoolq_flush_seconds``, ``spoolq_flush_batch_size``
    group-commit flushes (of the file system, and of the commit journal with ``--flush journal``):
    latency, and how many waiting writers one flush made durable.
``spoolq_long_polls_waiting{door}``
    polls currently waiting for a message (summed over live workers), blocked GETJOBs included;
    every door that long-polls shows it from the start, at 0 (:meth:`Metrics.long_poll_doors`).
``spoolq_queue_polls_waiting{queue,door}``
    the same per store queue (a GETJOB blocked on several queues counts in each): who is
    consuming a queue right now (the console's "consumers").
``spoolq_queue_last_poll_time_seconds{queue,door}``
    Unix time of the latest poll of a queue through a door, empty polls included (a waiting long
    poll polls again when it wakes, at least once a second): the newest of every process's
    (``max``), kept after a worker exits. Counted in the process and published with the counters.

``spoolq_http_connections{state}``
    open HTTP connections (summed over live workers, updated by each every second) by what they
    wait for: ``reading`` (a request arriving, a TLS handshake), ``idle`` (kept alive between
    requests), ``busy`` (a thread serves them), ``parked`` (a long poll waiting), ``closing`` (an
    answer sent, the close lingering); see :mod:`spoolq.http.gunicorn.heads`.
``spoolq_http_connections_refused_total{reason}``
    connections a worker answered ``503`` and closed at once: at ``max_connections`` with no idle
    kept-alive connection to close instead (``limit``), out of file descriptors (``descriptors``:
    the next connections wait in the listen backlog for a moment), or past the bytes of requests
    being read a worker holds (``memory``).
``spoolq_http_connections_timed_out_total{stage}``
    connections closed at ``header_timeout``: ``idle`` (not a byte sent), ``head`` (part of a
    request head), ``body`` (part of a body of declared length; both answered ``408``),
    ``handshake`` (a TLS handshake not finished in 10 s).

Computed at scrape time from the store (:mod:`spoolq.http.overview`): per-queue ready /
claimed / delayed / oldest-age gauges, move progress, free space.

**Counted in the process, published in batches.** A request does not touch prometheus-client:
the counters and histograms above (all but the ``spoolq_long_polls_waiting`` gauge) are added up
in plain dictionaries under one lock (:class:`_Pending`), and :meth:`Metrics.publish` adds what
accumulated to the Prometheus metrics in one go (one ``inc`` per label set and bucket, not one
per request: in multiprocess mode every ``inc`` is a write to a memory-mapped file). Every read
of this process's metrics (``/metrics``, :meth:`Metrics.samples`, the console) publishes first,
so within one process the figures are exact; in multiprocess mode each worker also publishes
from a daemon thread every :data:`PUBLISH_INTERVAL` seconds (started on its first count, after
the fork), at once when it counts a label set for the first time (so every series exists in
the next scrape), and at exit; a scrape served by one worker sees the others' counts at most
that much later. Nothing is lost: a count is either pending in its worker or published.

**A scrape skips the files a process is creating at that moment.** prometheus-client creates a
process's file empty and only then sizes it (64 KiB) and writes its header; its own collector
reads every ``*.db`` file and fails on an empty one (prometheus/client_python#1199), so a scrape
that met a worker's or the Disque listener's first count of a metric kind answered 500, and a
process killed between the two steps left an empty file that failed every scrape after it.
:class:`_SettledFilesCollector` leaves out files shorter than the header: such a file holds no
values yet, and files never shrink.
"""

from __future__ import annotations

import atexit
import bisect
import contextlib
import glob
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import multiprocess as prom_mp

log = logging.getLogger("spoolq.http")

# prometheus_client's CONTENT_TYPE_LATEST of the 0.0.4 text format; one charset parameter
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0)
_FLUSH_BUCKETS = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.0, 2.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: seconds between two publications of a worker's counts in multiprocess mode
PUBLISH_INTERVAL = 1.0
#: the label values of the connection metrics (``spoolq_http_connections*``)
CONNECTION_STATES = ("reading", "idle", "busy", "parked", "closing")
CONNECTION_REFUSALS = ("limit", "descriptors", "memory")
CONNECTION_TIMEOUTS = ("idle", "head", "body", "handshake")


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


#: a metric and the values of its labels
_Key = tuple[Any, tuple[str, ...]]


class _Pending:
    """Counter increments and histogram observations not yet added to their Prometheus metrics,
    keyed by (metric, label values). Thread-safe; :meth:`take` hands everything over at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: label sets this process has counted before (see :meth:`Metrics._counted`)
        self.seen: set[tuple[Any, tuple[str, ...]]] = set()
        self._counts: dict[tuple[Any, tuple[str, ...]], float] = {}
        #: (metric, labels) -> [count in each bucket (the last one +Inf)..., sum]
        self._hists: dict[tuple[Any, tuple[str, ...]], list[float]] = {}
        #: (gauge, labels) -> the latest value to set it to
        self._latest: dict[tuple[Any, tuple[str, ...]], float] = {}

    def add(self, counts: tuple[_Key, ...], n: float = 1, hist: _Key | None = None,
            bounds: tuple[float, ...] = (), value: float = 0.0, latest: _Key | None = None,
            latest_value: float = 0.0) -> bool:
        """Under one taking of the lock: add ``n`` to each of ``counts``; observe ``value`` in the
        histogram ``hist`` (``bounds``: its finite upper bounds, ascending; a value lands in the
        first bucket whose bound is >= it, prometheus-client's rule, past the last one in +Inf);
        set the gauge ``latest`` to ``latest_value`` at the next publication. Returns whether
        any of these label sets is new to this process."""
        i = bisect.bisect_left(bounds, value) if hist is not None else 0
        with self._lock:
            pending = self._counts
            for key in counts:
                pending[key] = pending.get(key, 0) + n
            if hist is not None:
                slots = self._hists.get(hist)
                if slots is None:
                    slots = self._hists[hist] = [0.0] * (len(bounds) + 2)
                slots[i] += 1
                slots[-1] += value
            if latest is not None:
                self._latest[latest] = latest_value
            seen = self.seen
            new = False
            keys: tuple[_Key | None, ...] = (*counts, hist, latest)
            for label_set in keys:
                if label_set is not None and label_set not in seen:
                    new = True
                    if len(seen) >= 100_000:  # deleted queues' label sets: forget them all, start over
                        seen.clear()
                    seen.add(label_set)
            return new

    def count(self, counts: tuple[_Key, ...], n: float) -> bool:
        """``add(counts, n)``: counter increments alone, the message counts of every send, poll
        and ack."""
        with self._lock:
            pending, seen = self._counts, self.seen
            new = False
            for key in counts:
                pending[key] = pending.get(key, 0) + n
                if key not in seen:
                    new = True
                    if len(seen) >= 100_000:  # as in add
                        seen.clear()
                    seen.add(key)
            return new

    def take(self) -> tuple[dict[tuple[Any, tuple[str, ...]], float], dict[tuple[Any, tuple[str, ...]], list[float]],
                            dict[tuple[Any, tuple[str, ...]], float]]:
        with self._lock:
            counts, hists, latest = self._counts, self._hists, self._latest
            self._counts, self._hists, self._latest = {}, {}, {}
        return counts, hists, latest


#: bytes of a prometheus-client value file's header (4 bytes "used", 4 of padding)
_HEADER_BYTES = 8


class _SettledFilesCollector(prom_mp.MultiProcessCollector):
    """prometheus-client's multiprocess collector without the files still being created (see
    the module doc). A file gone by the time it is read (a dead worker's live gauges) is left
    to prometheus-client, which skips those."""

    def __init__(self, registry: CollectorRegistry, path: str) -> None:
        self._directory = path
        super().__init__(registry, path)  # type: ignore[no-untyped-call]

    def collect(self) -> Any:
        settled = []
        for path in glob.glob(os.path.join(self._directory, "*.db")):
            try:
                if os.stat(path).st_size >= _HEADER_BYTES:
                    settled.append(path)
            except FileNotFoundError:
                continue
        return self.merge(settled, accumulate=True)  # type: ignore[no-untyped-call]


class Metrics:
    def __init__(self) -> None:
        #: prometheus-client's multiprocess directory, if any (see the module doc)
        self.directory = multiprocess_dir()
        # In multiprocess mode values live in the shared files; register nothing locally.
        self.registry = CollectorRegistry(auto_describe=True)
        reg = None if self.multiprocess else self.registry
        self.requests = Counter("spoolq_http_requests", "HTTP requests answered",
                                ["door", "operation", "status"], registry=reg)
        self.latency = Histogram("spoolq_http_request_seconds", "HTTP request latency",
                                 ["door", "operation"], buckets=_BUCKETS, registry=reg)
        self.message_counter = Counter("spoolq_messages", "Messages sent, delivered and acknowledged",
                                       ["door", "operation"], registry=reg)
        self.queue_messages = Counter("spoolq_queue_messages", "Messages sent, delivered and acknowledged "
                                      "per store queue", ["queue", "operation"], registry=reg)
        self.topic_counter = Counter("spoolq_topic_messages", "SNS messages published, and copies delivered, "
                                      "filtered out, dead-lettered and failed, per topic", ["topic", "outcome"],
                                      registry=reg)
        self.commands = Counter("spoolq_commands", "Commands answered by a non-HTTP door",
                                ["door", "command", "result"], registry=reg)
        self.command_latency = Histogram("spoolq_command_seconds", "Command latency of a non-HTTP door",
                                         ["door", "command"], buckets=_BUCKETS, registry=reg)
        self.flush_latency = Histogram("spoolq_flush_seconds", "Group-commit flush latency",
                                       buckets=_FLUSH_BUCKETS, registry=reg)
        self.flush_batch = Histogram("spoolq_flush_batch_size", "Writers made durable by one flush",
                                     buckets=_BATCH_BUCKETS, registry=reg)
        self.polls_waiting = Gauge("spoolq_long_polls_waiting", "Polls waiting for a message",
                                   ["door"], registry=reg, multiprocess_mode="livesum")
        self.queue_polls_waiting = Gauge("spoolq_queue_polls_waiting", "Polls waiting for a message, per queue",
                                         ["queue", "door"], registry=reg, multiprocess_mode="livesum")
        self.queue_last_poll = Gauge("spoolq_queue_last_poll_time_seconds",
                                     "Unix time of the latest poll of the queue (empty polls too)",
                                     ["queue", "door"], registry=reg, multiprocess_mode="max")
        self.connections = Gauge("spoolq_http_connections", "Open HTTP connections, by what they wait for",
                                 ["state"], registry=reg, multiprocess_mode="livesum")
        self.connections_refused = Counter("spoolq_http_connections_refused", "HTTP connections refused (503, "
                                           "closed at once)", ["reason"], registry=reg)
        self.connections_timed_out = Counter("spoolq_http_connections_timed_out", "HTTP connections closed at "
                                             "the request head's deadline", ["stage"], registry=reg)
        #: collectors computed at scrape time (added by create_app: per-queue gauges, moves)
        self.scrape_collectors: list[Any] = []
        self._pending = _Pending()
        self._publishing = threading.Lock()  # one publication at a time: a read sees all of it
        self._publisher: threading.Thread | None = None
        if self.multiprocess:
            os.register_at_fork(after_in_child=self._forget_publisher)
            atexit.register(self._publish_at_exit)

    @property
    def multiprocess(self) -> bool:
        return self.directory is not None

    def observe(self, door: str, operation: str, status: int, seconds: float) -> None:
        """One HTTP request answered (its counter and its latency, in one go)."""
        self._counted(self._pending.add(((self.requests, (door, operation, str(status))),),
                                        hist=(self.latency, (door, operation)), bounds=_BUCKETS, value=seconds))

    def messages(self, door: str, operation: str, n: int, queue: str | None = None) -> None:
        if not n:
            return
        counts: tuple[_Key, ...] = ((self.message_counter, (door, operation)),) if queue is None \
            else ((self.message_counter, (door, operation)), (self.queue_messages, (queue, operation)))
        new = self._pending.count(counts, n)
        if self.directory is not None and (new or self._publisher is None):  # as _counted(new)
            self._counted(new)

    def topic_messages(self, topic: str, outcome: str, n: int) -> None:
        """``n`` messages of an SNS topic with this outcome (``published``, ``delivered``, ``filtered``,
        ``dead_lettered``, ``failed``)."""
        if n:
            self._counted(self._pending.count(((self.topic_counter, (topic, outcome)),), n))

    def polled(self, door: str, queue: str, n: int = 0) -> None:
        """A poll of ``queue`` through ``door`` (found something or not): its time is the queue's
        latest poll (``spoolq_queue_last_poll_time_seconds``); the ``n`` messages it delivered
        are counted like :meth:`messages` (``poll``)."""
        counts: tuple[_Key, ...] = ((self.message_counter, (door, "poll")), (self.queue_messages, (queue, "poll"))) \
            if n else ()
        self._counted(self._pending.add(counts, n, latest=(self.queue_last_poll, (queue, door)),
                                        latest_value=time.time()))

    def command(self, door: str, command: str, result: str, seconds: float) -> None:
        """The hook of a door that is not HTTP (Disque): one call per command answered;
        ``command`` and ``result`` come from a closed set the door defines (never a client's word)."""
        self._counted(self._pending.add(((self.commands, (door, command, result)),),
                                        hist=(self.command_latency, (door, command)), bounds=_BUCKETS, value=seconds))

    def flushed(self, seconds: float, batch: int) -> None:
        """The store's group-commit callback (``GroupCommit.on_flush``)."""
        new = self._pending.add((), hist=(self.flush_latency, ()), bounds=_FLUSH_BUCKETS, value=seconds)
        new |= self._pending.add((), hist=(self.flush_batch, ()), bounds=_BATCH_BUCKETS, value=batch)
        self._counted(new)

    def _counted(self, new: bool) -> None:
        """In multiprocess mode: start this worker's publisher, and publish at once when a label
        set is counted for the first time, so every series shows up in the next scrape, whichever
        worker serves it (its later counts follow within :data:`PUBLISH_INTERVAL`)."""
        if not self.multiprocess:
            return
        if self._publisher is None:
            self._start_publisher()
        if new:
            self.publish()

    def publish(self) -> None:
        """Add every pending count and observation to the Prometheus metrics (see the module doc)."""
        with self._publishing:
            counts, hists, latest = self._pending.take()
            for (metric, labels), n in counts.items():
                (metric.labels(*labels) if labels else metric).inc(n)
            for (metric, labels), value in latest.items():
                metric.labels(*labels).set(value)
            for (metric, labels), slots in hists.items():
                child = metric.labels(*labels) if labels else metric
                # prometheus-client keeps one value per bucket (non-cumulative) and the sum; add to
                # them what ``observe`` would have added for each of these observations
                child._sum.inc(slots[-1])
                for bucket, n in zip(child._buckets, slots[:-1], strict=True):
                    if n:
                        bucket.inc(n)

    def _start_publisher(self) -> None:
        with self._publishing:
            if self._publisher is not None:
                return
            self._publisher = threading.Thread(target=self._publish_forever, name="spoolq-metrics", daemon=True)
            self._publisher.start()

    def _publish_forever(self) -> None:
        while True:
            time.sleep(PUBLISH_INTERVAL)
            try:
                self.publish()
            except Exception:  # kept pending counts are published by the next read or round
                log.exception("publishing metrics failed")

    def _publish_at_exit(self) -> None:
        try:
            self.publish()
        except OSError:  # the metrics directory went first (the server is gone): nobody reads them
            pass

    def _forget_publisher(self) -> None:
        """After a fork: the parent's publisher thread does not exist in the child."""
        self._publisher = None
        self._publishing = threading.Lock()
        self._pending = _Pending()

    def long_poll_doors(self, *doors: str) -> None:
        """Show ``spoolq_long_polls_waiting`` for these doors from the start, at 0: a dashboard or an
        alert on the gauge sees the series before the first long poll, not "no data"."""
        for door in doors:
            self.polls_waiting.labels(door)

    def connection_doors(self) -> None:
        """Show the connection metrics from the start, at 0 (as :meth:`long_poll_doors`)."""
        for reason in CONNECTION_REFUSALS:
            self.connections_refused.labels(reason)
        for stage in CONNECTION_TIMEOUTS:
            self.connections_timed_out.labels(stage)
        self.connection_states(dict.fromkeys(CONNECTION_STATES, 0))

    def connection_states(self, counts: Mapping[str, int]) -> None:
        """This worker's open HTTP connections by state (:data:`CONNECTION_STATES`)."""
        for state, n in counts.items():
            self.connections.labels(state).set(n)

    def connection_refused(self, reason: str) -> None:
        self._counted(self._pending.count(((self.connections_refused, (reason,)),), 1))

    def connection_timed_out(self, stage: str) -> None:
        self._counted(self._pending.count(((self.connections_timed_out, (stage,)),), 1))

    @contextlib.contextmanager
    def waiting(self, door: str, queues: Iterable[str] = ()) -> Iterator[None]:
        """Count one poll as waiting while the block runs, for the door and for each of ``queues``."""
        done = self.start_waiting(door, queues)
        try:
            yield
        finally:
            done()

    def start_waiting(self, door: str, queues: Iterable[str] = ()) -> Callable[[], None]:
        """Count one poll as waiting from now; returns what ends it (call it once)."""
        gauges = [self.polls_waiting.labels(door), *(self.queue_polls_waiting.labels(q, door) for q in set(queues))]
        for g in gauges:
            g.inc()

        def done() -> None:
            for g in gauges:
                g.dec()
        return done

    def _registry(self) -> CollectorRegistry:
        if self.directory is not None:
            registry = CollectorRegistry()
            _SettledFilesCollector(registry, self.directory)
            return registry
        return self.registry

    def render(self) -> bytes:
        self.publish()
        registry = self._registry()
        extra = CollectorRegistry()
        for collector in self.scrape_collectors:
            extra.register(collector)
        return bytes(generate_latest(registry)) + bytes(generate_latest(extra))

    def samples(self, name: str, predicate: Callable[[dict[str, str]], bool] | None = None
                ) -> list[tuple[dict[str, str], float]]:
        """(labels, value) of every sample called ``name`` (all workers in multiprocess mode)."""
        self.publish()
        out: list[tuple[dict[str, str], float]] = []
        for family in self._registry().collect():
            for sample in family.samples:
                if sample.name == name and (predicate is None or predicate(sample.labels)):
                    out.append((dict(sample.labels), float(sample.value)))
        return out
