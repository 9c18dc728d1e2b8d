"""``Producer``: batched, retried sends to one queue.

::

    with Producer(SpoolqClient(url, key), "jobs", max_batch=100, linger=0.01) as producer:
        for job in jobs:
            producer.send(job)           # a Future: done once the message is durably stored
    # leaving the block flushes and waits

* Batching: a background thread collects messages until ``max_batch`` messages or
  ``max_bytes`` of JSON are waiting, or ``linger`` seconds have passed since the first one, and
  sends them in one ``sendbatch`` call (all or nothing on the server).
* Retries: a 503 (waiting at least its ``Retry-After``), any 5xx and a connection that could not
  be opened are retried with capped, jittered exponential back-off, up to ``max_attempts``. spoolq
  stores nothing of a request it rejects, so these retries never duplicate.
* The at-least-once consequence: when the request may have reached the server but no answer came
  back (a read timeout, a connection dropped mid-request), the batch may or may not be stored.
  Retrying can then store it twice; not retrying can lose it. ``on_ambiguous="retry"`` (default)
  retries: **messages may be duplicated, never lost**; each such retry is logged at WARNING and
  counted in ``stats.ambiguous_retries`` / ``stats.possibly_duplicated``, so a duplicate is never
  silent. ``on_ambiguous="fail"`` fails the batch's futures with :class:`AmbiguousSend` instead
  and leaves the decision to the caller. On a dedup queue (``dedup=True``) a duplicate of a
  message that is still pending and unclaimed collapses into one on the server.
* A 4xx (bad payload, bad key) fails the futures of that batch with the
  :class:`~spoolq_client.errors.SpoolqApiError`; later batches go on.
* Back-pressure: at most ``max_pending`` messages wait in memory; :meth:`send` blocks beyond.
"""

from __future__ import annotations

import json
import logging
import queue as queue_mod
import threading
import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any, Literal

from spoolq_client.client import SpoolqClient
from spoolq_client.retry import Backoff, ambiguous, retryable

log = logging.getLogger("spoolq_client.producer")

AmbiguousPolicy = Literal["retry", "fail"]


class AmbiguousSend(Exception):
    """The batch may or may not have been stored (no answer after the request was sent)."""


@dataclass
class ProducerStats:
    sent: int = 0
    batches: int = 0
    failed: int = 0
    retries: int = 0
    ambiguous_retries: int = 0
    possibly_duplicated: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class _Item:
    payload: Any
    size: int
    future: Future[None]


_FLUSH = object()


class Producer:
    def __init__(self, client: SpoolqClient, queue: str, *, dedup: bool = False, max_batch: int = 100,
                 max_bytes: int = 1_000_000, linger: float = 0.01, max_attempts: int = 10,
                 on_ambiguous: AmbiguousPolicy = "retry", backoff_cap: float = 30.0, max_pending: int = 10_000,
                 delay: float | None = None, ttl: float | None = None, at_most_once: bool = False) -> None:
        if max_batch < 1 or max_bytes < 1 or max_attempts < 1:
            raise ValueError("max_batch, max_bytes and max_attempts must be >= 1")
        if on_ambiguous not in ("retry", "fail"):
            raise ValueError("on_ambiguous must be 'retry' or 'fail'")
        self.client = client
        self.queue = queue
        self.dedup = dedup
        self.max_batch = max_batch
        self.max_bytes = max_bytes
        self.linger = linger
        self.max_attempts = max_attempts
        self.on_ambiguous = on_ambiguous
        self.backoff_cap = backoff_cap
        self.options: dict[str, Any] = {"delay": delay, "ttl": ttl, "at_most_once": at_most_once}
        self.stats = ProducerStats()
        self._inbox: queue_mod.Queue[_Item | tuple[object, Future[None]]] = queue_mod.Queue(max_pending)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"spoolq-producer-{queue}", daemon=True)
        self._thread.start()

    # --- public -------------------------------------------------------------------------

    def send(self, payload: Any) -> Future[None]:
        """Queue one JSON value for sending; the future completes when it is stored (or failed)."""
        if self._closed:
            raise RuntimeError("producer is closed")
        size = len(json.dumps(payload, separators=(",", ":")))  # also rejects what is not JSON now
        future: Future[None] = Future()
        self._inbox.put(_Item(payload, size, future))
        return future

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued so far and wait until it is stored or failed."""
        marker: Future[None] = Future()
        self._inbox.put((_FLUSH, marker))
        marker.result(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Flush, then stop the background thread."""
        if self._closed:
            return
        self.flush(timeout)
        self._closed = True
        self._inbox.put((None, Future()))
        self._thread.join(timeout)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- background ---------------------------------------------------------------------

    def _run(self) -> None:
        pending: _Item | tuple[object, Future[None]] | None = None
        while True:
            first = pending if pending is not None else self._inbox.get()
            pending = None
            if isinstance(first, tuple):
                kind, future = first
                future.set_result(None)
                if kind is None:
                    return
                continue
            batch, size = [first], first.size
            deadline = time.monotonic() + self.linger
            markers: list[tuple[object, Future[None]]] = []
            while len(batch) < self.max_batch:
                remaining = deadline - time.monotonic()
                try:
                    item = self._inbox.get(timeout=remaining) if remaining > 0 else self._inbox.get_nowait()
                except queue_mod.Empty:
                    break
                if isinstance(item, tuple):
                    markers.append(item)  # send what we have now, then answer the marker
                    break
                if size + item.size > self.max_bytes:
                    pending = item
                    break
                batch.append(item)
                size += item.size
            self._send(batch)
            for kind, future in markers:
                future.set_result(None)
                if kind is None:
                    return

    def _send(self, batch: list[_Item]) -> None:
        payloads = [item.payload for item in batch]
        backoff = Backoff(cap=self.backoff_cap)
        error: BaseException | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                self.client.send_batch(self.queue, payloads, dedup=self.dedup, **self.options)
            except Exception as e:
                error = e
                if not retryable(e) or attempt == self.max_attempts:
                    break
                if ambiguous(e):
                    if self.on_ambiguous == "fail":
                        error = AmbiguousSend(f"{len(batch)} messages to {self.queue!r} may or may not be "
                                              f"stored: {e}")
                        break
                    self.stats.ambiguous_retries += 1
                    self.stats.possibly_duplicated += len(batch)
                    log.warning("sendbatch of %d messages to %r got no answer (%s); retrying, which may "
                                "store them twice", len(batch), self.queue, e)
                self.stats.retries += 1
                wait = backoff.delay(e)
                log.info("sendbatch to %r failed (%s); retry %d in %.2fs", self.queue, e, attempt, wait)
                time.sleep(wait)
            else:
                self.stats.sent += len(batch)
                self.stats.batches += 1
                for item in batch:
                    item.future.set_result(None)
                return
        assert error is not None
        self.stats.failed += len(batch)
        log.error("sendbatch of %d messages to %r failed: %s", len(batch), self.queue, error)
        for item in batch:
            item.future.set_exception(error)
