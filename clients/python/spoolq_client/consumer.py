"""``Consumer``: an SQS-style poll loop over one spoolq queue.

::

    def handle(message: Message) -> None:
        ...                                   # raise to report failure

    Consumer(SpoolqClient(url, key), "jobs", handle, concurrency=8).run()   # until SIGTERM / SIGINT

What it does, and what each option changes:

* ``concurrency`` worker threads, each a loop of *poll* (up to ``batch_size`` messages, claimed
  for ``claim_ttl`` seconds, long-polling up to ``wait`` seconds with the ``wait`` extension) →
  *handle* each message in order → *ack* the ones the handler returned from. At most
  ``concurrency`` handlers run at once and at most ``concurrency * batch_size`` messages are
  claimed by this consumer at any time. Acks are sent in one call per batch (and every
  ``ack_interval`` seconds inside a slow batch).
* A handler that raises: ``on_failure="release"`` (default) gives the message back at once
  (``renew`` with ``ttl=0``) so it is redelivered promptly; ``"expire"`` leaves the claim to run
  out, so it comes back after ``claim_ttl`` (a natural back-off).
* Heartbeats: one thread renews every claimed, not yet finished message every ``heartbeat``
  seconds (default ``claim_ttl / 3``), so a handler slower than ``claim_ttl`` keeps its claim.
* Max receives: with ``max_receives=N``, a message delivered more than N times is not handed to
  the handler again: it is sent to ``dead_letter_queue`` (if given) and then acknowledged, or,
  without a dead-letter queue, acknowledged and logged at ERROR. The count is the server's: a poll
  asks the EmoDB door for ``meta=true``, whose ``receiveCount`` counts every delivery of the
  message (this one included) to any consumer, in any process, and claims that ran out, so a
  poison message reaches the handlers of all consumers together at most N times. A server that
  reports no receive count (an older release) leaves the guard off, with one WARNING.
* Errors: 503 (honouring ``Retry-After``), 5xx and transport errors are retried with capped,
  jittered exponential back-off, forever while running. A 4xx on poll (bad key, bad name) is
  fatal: the consumer stops and :meth:`run` raises it.
* Shutdown (:meth:`stop`, or SIGTERM / SIGINT while :meth:`run` runs in the main thread): no new
  polls; each worker finishes the message it is handling, acknowledges what is done, and
  *releases* the messages of its batch it has not started, so nothing waits for a claim to expire
  and nothing is lost. A worker inside a long poll returns within ``wait`` seconds and releases
  what that poll brought. Each message is acknowledged at most once by this consumer.

Delivery is at-least-once: a message whose handler finished may be delivered again if the ack
is lost (crash, network), so handlers should be idempotent. Dedup queues (``dedup=True``) work
the same way through ``/dedupq/1``.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Literal

from spoolq_client._generated.models import Message
from spoolq_client.client import SpoolqClient
from spoolq_client.retry import Backoff, retryable, sleep

log = logging.getLogger("spoolq_client.consumer")

FailurePolicy = Literal["release", "expire"]
Handler = Callable[[Message], object]


@dataclass
class ConsumerStats:
    polled: int = 0
    handled: int = 0
    failed: int = 0
    acked: int = 0
    released: int = 0
    dead_lettered: int = 0
    renewals: int = 0
    retries: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class Consumer:
    def __init__(self, client: SpoolqClient, queue: str, handler: Handler, *, dedup: bool = False,
                 concurrency: int = 8, batch_size: int = 10, claim_ttl: int = 30, wait: float = 10.0,
                 on_failure: FailurePolicy = "release", heartbeat: float | None = None,
                 max_receives: int | None = None, dead_letter_queue: str | None = None,
                 ack_interval: float = 1.0, backoff_cap: float = 30.0,
                 receive_memory: int | None = None) -> None:
        if receive_memory is not None:  # the consumer counted receives itself, in a memory of this size
            warnings.warn("Consumer(receive_memory=...) is ignored: max_receives counts the server's receive "
                          "counts", DeprecationWarning, stacklevel=2)
        if concurrency < 1 or batch_size < 1 or claim_ttl < 1:
            raise ValueError("concurrency, batch_size and claim_ttl must be >= 1")
        if on_failure not in ("release", "expire"):
            raise ValueError("on_failure must be 'release' or 'expire'")
        if not 0 <= wait <= 20:
            raise ValueError("wait must be between 0 and 20 seconds")
        if max_receives is not None and max_receives < 1:
            raise ValueError("max_receives must be >= 1")
        self.client = client
        self.queue = queue
        self.handler = handler
        self.dedup = dedup
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.claim_ttl = claim_ttl
        self.wait = wait
        self.on_failure = on_failure
        self.heartbeat = heartbeat if heartbeat is not None else max(claim_ttl / 3.0, 0.2)
        self.max_receives = max_receives
        self.dead_letter_queue = dead_letter_queue
        self.ack_interval = ack_interval
        self.backoff_cap = backoff_cap
        self.stats = ConsumerStats()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()          # stats
        self._claims_lock = threading.Lock()   # the claimed set and heartbeat renewals
        self._claimed: set[str] = set()
        self._uncounted_warned = False
        self._threads: list[threading.Thread] = []

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers and the heartbeat in background threads (see :meth:`run`)."""
        if self._threads:
            raise RuntimeError("consumer already started")
        self._stop.clear()
        self._threads = [threading.Thread(target=self._worker, name=f"spoolq-consumer-{i}", daemon=True)
                         for i in range(self.concurrency)]
        self._threads.append(threading.Thread(target=self._heartbeat, name="spoolq-heartbeat", daemon=True))
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        """Ask for a graceful shutdown (returns at once; :meth:`join` waits for it)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the workers to finish; True when they all have."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            while t.is_alive():
                t.join(0.2 if remaining is None else min(0.2, remaining))
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return not any(x.is_alive() for x in self._threads)
        return True

    def run(self, *, install_signal_handlers: bool = True) -> ConsumerStats:
        """Consume until :meth:`stop` (or SIGTERM / SIGINT, when called from the main thread);
        returns the stats after the graceful shutdown, or raises the fatal error that stopped it."""
        with self._signals(install_signal_handlers):
            self.start()
            self.join()
        if self.error is not None:
            raise self.error
        return self.stats

    @contextmanager
    def _signals(self, install: bool) -> Iterator[None]:
        if not install or threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_signal(signum: int, frame: Any) -> None:
            log.info("signal %d: finishing in-flight messages and stopping", signum)
            self.stop()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    # --- the worker loop ----------------------------------------------------------------

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for name, n in deltas.items():
                setattr(self.stats, name, getattr(self.stats, name) + n)

    def _fatal(self, error: BaseException) -> None:
        log.error("consumer of %r stops: %s", self.queue, error)
        if self.error is None:
            self.error = error
        self.stop()

    def _retrying(self, what: str, call: Callable[[], Any], *, until_stopped: bool) -> tuple[bool, Any]:
        """Run ``call`` until it succeeds: (True, result); (False, None) on a non-retryable error
        or, when ``until_stopped``, once the consumer is stopping (then the attempt is abandoned)."""
        backoff = Backoff(cap=self.backoff_cap)
        while True:
            try:
                return True, call()
            except Exception as e:
                if not retryable(e):
                    raise
                if until_stopped and self._stop.is_set():
                    return False, None
                self._count(retries=1)
                delay = backoff.delay(e)
                log.warning("%s on %r failed (%s); retrying in %.1fs", what, self.queue, e, delay)
                if until_stopped:
                    if sleep(delay, self._stop):
                        return False, None
                elif backoff.attempt >= 8:
                    return False, None
                else:
                    time.sleep(min(delay, 5.0))

    def _worker(self) -> None:
        while not self._stop.is_set():
            try:
                ok, messages = self._retrying("poll", lambda: self.client.poll(
                    self.queue, limit=self.batch_size, ttl=self.claim_ttl, wait=self.wait, dedup=self.dedup),
                    until_stopped=True)
            except Exception as e:
                self._fatal(e)
                return
            if not ok or not messages:
                continue
            self._count(polled=len(messages))
            with self._claims_lock:
                self._claimed.update(m.id for m in messages)
            try:
                self._handle_batch(messages)
            except Exception as e:  # an ack / release that cannot succeed (4xx): not recoverable
                self._fatal(e)
                return

    def _handle_batch(self, messages: list[Message]) -> None:
        to_ack: list[str] = []
        to_release: list[str] = []
        last_flush = time.monotonic()
        for i, message in enumerate(messages):
            if self._stop.is_set():
                to_release.extend(m.id for m in messages[i:])
                break
            if self._over_max_receives(message):
                to_ack.append(message.id)
                continue
            try:
                self.handler(message)
            except Exception:
                log.exception("handler failed on message %s of %r", message.id, self.queue)
                self._count(failed=1)
                if self.on_failure == "release":
                    to_release.append(message.id)
                else:
                    self._forget([message.id])  # no more heartbeats: the claim runs out
            else:
                self._count(handled=1)
                to_ack.append(message.id)
            if time.monotonic() - last_flush >= self.ack_interval:
                self._flush(to_ack, to_release)
                to_ack, to_release = [], []
                last_flush = time.monotonic()
        self._flush(to_ack, to_release)

    def _flush(self, to_ack: list[str], to_release: list[str]) -> None:
        if to_ack:
            self._forget(to_ack)
            ok, _ = self._retrying("ack", lambda: self.client.ack(self.queue, to_ack, dedup=self.dedup),
                                   until_stopped=False)
            if ok:
                self._count(acked=len(to_ack))
            else:
                log.error("could not acknowledge %d messages of %r; they will be redelivered",
                          len(to_ack), self.queue)
        if to_release:
            self._forget(to_release)  # waits for a heartbeat renewal in progress to finish
            ok, _ = self._retrying("release", lambda: self.client.release(self.queue, to_release, dedup=self.dedup),
                                   until_stopped=False)
            if ok:
                self._count(released=len(to_release))

    def _forget(self, ids: list[str]) -> None:
        with self._claims_lock:
            self._claimed.difference_update(ids)

    def _over_max_receives(self, message: Message) -> bool:
        if self.max_receives is None:
            return False
        n = message.receive_count
        if not isinstance(n, int):  # a server without the meta extension
            if not self._uncounted_warned:
                self._uncounted_warned = True
                log.warning("the server reports no receive counts on %r: max_receives is not enforced",
                            self.queue)
            return False
        if n <= self.max_receives:
            return False
        if self.dead_letter_queue is not None:
            dlq = self.dead_letter_queue
            self._retrying("dead-letter send", lambda: self.client.send(dlq, message.payload, dedup=self.dedup),
                           until_stopped=False)
            log.warning("message %s of %r received %d times: moved to %r", message.id, self.queue, n, dlq)
        else:
            log.error("message %s of %r received %d times: dropped (no dead_letter_queue)", message.id,
                      self.queue, n)
        self._count(dead_lettered=1)
        return True

    # --- heartbeats ---------------------------------------------------------------------

    def _heartbeat(self) -> None:
        """Renew every claimed, unfinished message each ``heartbeat`` seconds, until the workers
        have all finished (shutdown included: a handler finishing after stop keeps its claim)."""
        workers = self._threads[: self.concurrency]
        next_beat = time.monotonic() + self.heartbeat
        while not (self._stop.is_set() and not any(t.is_alive() for t in workers)):
            if time.monotonic() < next_beat:
                time.sleep(min(0.1, self.heartbeat))
                continue
            next_beat = time.monotonic() + self.heartbeat
            with self._claims_lock:
                ids = sorted(self._claimed)
                if not ids:
                    continue
                try:
                    self.client.renew(self.queue, ids, self.claim_ttl, dedup=self.dedup)
                    self._count(renewals=1)
                except Exception as e:  # the next beat tries again; claims last claim_ttl meanwhile
                    log.warning("heartbeat renew of %d claims on %r failed: %s", len(ids), self.queue, e)
