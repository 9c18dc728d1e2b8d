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
    (``SendMessage``, ``ReceiveMessage``, ...; a door names it in ``g.spoolq_operation``).
``spoolq_messages_total{door,operation}``
    messages sent (``send``), delivered by a poll (``poll``) and acknowledged (``ack``), by door.
``spoolq_queue_messages_total{queue,operation}``
    the same per store queue (what the console's rates and sparklines are computed from).
``spoolq_commands_total{door,command,result}``, ``spoolq_command_seconds{door,command}``
    for doors that are not HTTP (the Disque door, ``door="disque"``): :meth:`Metrics.command` per
    command answered; ``command`` is the upper-cased name the door knows (``ADDJOB``, ``GETJOB``,
    ...; any other name counts as ``unknown``), ``result`` is ``ok``, ``error`` or ``auth``
    (refused: not authenticated, or the key lacks the permission).
``spoolq_flush_seconds``, ``spoolq_flush_batch_size``
    group-commit flushes: latency, and how many waiting writers one flush made durable.
``spoolq_long_polls_waiting{door}``
    polls currently waiting for a message (summed over live workers), blocked GETJOBs included.

Computed at scrape time from the store (:mod:`spoolq.http.store_metrics`): per-queue ready /
claimed / delayed / oldest-age gauges, move progress, free space.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import multiprocess as prom_mp

# prometheus_client's CONTENT_TYPE_LATEST of the 0.0.4 text format; one charset parameter
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0)
_FLUSH_BUCKETS = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.0, 2.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class Metrics:
    def __init__(self) -> None:
        self.multiprocess = multiprocess_dir() is not None
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
        #: collectors computed at scrape time (added by create_app: per-queue gauges, moves)
        self.scrape_collectors: list[Any] = []
        # labelled children by label values: ``labels()`` validates and locks on every call
        self._request_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._message_children: dict[tuple[str, str], Any] = {}
        self._queue_children: dict[tuple[str, str], Any] = {}
        self._command_children: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def observe(self, door: str, operation: str, status: int, seconds: float) -> None:
        key = (door, operation, status)
        children = self._request_children.get(key)
        if children is None:
            children = (self.requests.labels(door, operation, str(status)), self.latency.labels(door, operation))
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def messages(self, door: str, operation: str, n: int, queue: str | None = None) -> None:
        if not n:
            return
        child = self._message_children.get((door, operation))
        if child is None:
            child = self._message_children[(door, operation)] = self.message_counter.labels(door, operation)
        child.inc(n)
        if queue is not None:
            qchild = self._queue_children.get((queue, operation))
            if qchild is None:
                if len(self._queue_children) > 100_000:  # deleted queues' children
                    self._queue_children.clear()
                qchild = self._queue_children[(queue, operation)] = self.queue_messages.labels(queue, operation)
            qchild.inc(n)

    def command(self, door: str, command: str, result: str, seconds: float) -> None:
        """The hook of a door that is not HTTP (Disque): one call per command answered;
        ``command`` and ``result`` come from a closed set the door defines (never a client's word)."""
        key = (door, command, result)
        children = self._command_children.get(key)
        if children is None:
            children = (self.commands.labels(door, command, result), self.command_latency.labels(door, command))
            self._command_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def flushed(self, seconds: float, batch: int) -> None:
        """The store's group-commit callback (``GroupCommit.on_flush``)."""
        self.flush_latency.observe(seconds)
        self.flush_batch.observe(batch)

    def waiting(self, door: str) -> Any:
        """A context manager counting one poll as waiting while it runs."""
        return self.polls_waiting.labels(door).track_inprogress()

    def _registry(self) -> CollectorRegistry:
        if self.multiprocess:
            registry = CollectorRegistry()
            prom_mp.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return registry
        return self.registry

    def render(self) -> bytes:
        registry = self._registry()
        extra = CollectorRegistry()
        for collector in self.scrape_collectors:
            extra.register(collector)
        return bytes(generate_latest(registry)) + bytes(generate_latest(extra))

    def samples(self, name: str, predicate: Callable[[dict[str, str]], bool] | None = None
                ) -> list[tuple[dict[str, str], float]]:
        """(labels, value) of every sample called ``name`` (all workers in multiprocess mode)."""
        out: list[tuple[dict[str, str], float]] = []
        for family in self._registry().collect():
            for sample in family.samples:
                if sample.name == name and (predicate is None or predicate(sample.labels)):
                    out.append((dict(sample.labels), float(sample.value)))
        return out
