"""The store every door sees: the real store with message counting around the hot calls.

:class:`InstrumentedStore` forwards every attribute to the store and wraps four calls:

* ``send`` / ``send_batch``: ``spoolq_messages_total{door, operation="send"}`` and the per-queue
  ``spoolq_queue_messages_total{queue, operation="send"}``, counted once the store returned;
* ``poll``: the same with ``operation="poll"`` for the messages delivered, and while a poll with
  ``wait > 0`` runs (or is parked, see :mod:`spoolq.http.parking`, which this wrapper
  implements for the doors) it counts in ``spoolq_long_polls_waiting{door}`` and
  ``spoolq_queue_polls_waiting{queue,door}``; every poll sets the queue's
  ``spoolq_queue_last_poll_time_seconds{queue,door}``;
* ``ack``: ``operation="ack"``, the acknowledgements that removed a message.

The door is the one the current HTTP request belongs to (``/queue/1``, ``/dedupq/1``, ``/mq``,
SQS); a door that is not HTTP names itself around its store calls with
``with acting_as("door"): ...``, or for every call made without an HTTP request with
``default_door`` (the Disque listener process: ``default_door="disque"``); anything else
counts as ``store``. Doors therefore need no
counting code of their own. Nothing else changes: results and exceptions pass through untouched.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from flask import has_request_context, request

from spoolq.http import framing, parking
from spoolq.http.metrics import Metrics
from spoolq.store.model import Delivery, OutgoingMessage, QueueKind, SendResult

_DOOR: ContextVar[str | None] = ContextVar("spoolq_door", default=None)


@contextlib.contextmanager
def acting_as(door: str) -> Iterator[None]:
    """Count the store calls made inside the block for ``door`` (for doors that are not HTTP)."""
    token = _DOOR.set(door)
    try:
        yield
    finally:
        _DOOR.reset(token)


class InstrumentedStore:
    def __init__(self, store: Any, metrics: Metrics, door_of: Callable[[str], str],
                 default_door: str = "store") -> None:
        self._store = store
        self._metrics = metrics
        self._door_of = door_of
        self._default_door = default_door

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @property
    def wrapped(self) -> Any:
        """The store itself."""
        return self._store

    def _door(self) -> str:
        named = _DOOR.get()
        if named is not None:
            return named
        if not has_request_context():
            return self._default_door
        req = framing.current_request()
        door = req.environ.get(framing.DOOR_KEY)  # set by the app's before-request hook
        return door if isinstance(door, str) else self._door_of(req.path)

    def send(self, queue: str, message: OutgoingMessage, create: QueueKind | None = None) -> SendResult:
        result: SendResult = self._store.send(queue, message, create=create)
        self._metrics.messages(self._door(), "send", 1, queue)
        return result

    def send_batch(self, queue: str, messages: Sequence[OutgoingMessage],
                   create: QueueKind | None = None) -> list[SendResult]:
        results: list[SendResult] = self._store.send_batch(queue, messages, create=create)
        self._metrics.messages(self._door(), "send", len(results), queue)
        return results

    def poll(self, queue: str, limit: int = 10, claim_ttl: float | None = None,
             wait: float = 0.0) -> list[Delivery]:
        door = self._door()
        deliveries: list[Delivery]
        slot = parking.of(request.environ) if wait > 0 and has_request_context() else None
        if slot is not None and slot.can_park:
            deliveries = self._poll_or_park(slot, door, queue, limit, claim_ttl, wait)
        elif wait > 0:
            self._metrics.polled(door, queue)
            with self._metrics.waiting(door, (queue,)):
                deliveries = self._store.poll(queue, limit=limit, claim_ttl=claim_ttl, wait=wait)
        else:
            deliveries = self._store.poll(queue, limit=limit, claim_ttl=claim_ttl, wait=wait)
        self._metrics.polled(door, queue)
        self._metrics.messages(door, "poll", len(deliveries), queue)
        return deliveries

    def _poll_or_park(self, slot: parking.LongPoll, door: str, queue: str, limit: int,
                      claim_ttl: float | None, wait: float) -> list[Delivery]:
        """One pass of a parkable long poll (see :mod:`spoolq.http.parking`)."""
        slot.start_run()
        if slot.deadline is None:
            slot.deadline = (slot.arrived or time.monotonic()) + wait
        key, seen, rescan = self._store.wait_point(queue)
        deliveries: list[Delivery] = self._store.poll(queue, limit=limit, claim_ttl=claim_ttl, wait=0.0)
        slot.full = len(deliveries) >= limit
        if not deliveries and slot.remaining() > 0:
            if slot.on_done is None:  # counted as waiting from its first park until answered
                slot.on_done = self._metrics.start_waiting(door, (queue,))
            slot.park(key, seen, self._store.watcher, rescan)
        return deliveries

    def ack(self, queue: str, refs: Sequence[str], *, released_too: bool = False) -> list[bool]:
        done: list[bool] = self._store.ack(queue, refs, released_too=released_too)
        self._metrics.messages(self._door(), "ack", sum(done), queue)
        return done
