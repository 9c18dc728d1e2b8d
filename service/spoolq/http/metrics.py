"""Prometheus metrics of the HTTP service (prometheus-client).

Metrics are created per app (never at import) in a private registry. Under gunicorn,
``spoolq serve`` sets ``PROMETHEUS_MULTIPROC_DIR`` before the workers start, which puts
prometheus-client in multiprocess mode: every worker writes its samples to files in that
directory and ``/metrics`` (served by any worker) aggregates all of them, so a scrape sees
the whole service, not one worker. Without that variable (tests, ``flask run``) the numbers
are those of the current process.

Exported:
``spoolq_http_requests_total{door,operation,status}``,
``spoolq_http_request_seconds{door,operation}`` (histogram),
``spoolq_messages_total{door,operation}`` (messages sent / delivered by poll / acked).
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import multiprocess as prom_mp

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0)


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
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        self._message_children: dict[tuple[str, str], Counter] = {}
        self.message_counter = Counter("spoolq_messages", "Messages sent, delivered and acknowledged",
                                       ["door", "operation"], registry=reg)

    def observe(self, door: str, operation: str, status: int, seconds: float) -> None:
        # labelled children are looked up once per label set (``labels()`` validates and locks)
        key = (door, operation, status)
        children = self._children.get(key)
        if children is None:
            children = (self.requests.labels(door, operation, str(status)), self.latency.labels(door, operation))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def messages(self, door: str, operation: str, n: int) -> None:
        if n:
            key = (door, operation)
            child = self._message_children.get(key)
            if child is None:
                child = self._message_children[key] = self.message_counter.labels(door, operation)
            child.inc(n)

    def render(self) -> bytes:
        if self.multiprocess:
            registry = CollectorRegistry()
            prom_mp.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return bytes(generate_latest(registry))
        return bytes(generate_latest(self.registry))
