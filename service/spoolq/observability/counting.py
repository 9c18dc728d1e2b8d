"""Which front door a store event belongs to, and the listener that counts the events.

The store tells its listeners of every send, poll, ack and flush (:mod:`spoolq.store.events`)
without knowing who called it. A door names itself around its calls: the HTTP app for each
request (:func:`acting_as` from its first hook to its last: ``queue``, ``dedupq``, ``mq``,
``sqs`` or ``service``), the Disque listener for its whole process (:class:`DoorCounts` with
``default_door="disque"``). :class:`DoorCounts`, subscribed to the store, then counts each event
for the door named at that moment (``spoolq_messages_total{door,operation}``, per queue
``spoolq_queue_messages_total``, the queue's latest poll time) and each flush
(``spoolq_flush_seconds``, ``spoolq_flush_batch_size``); see :mod:`spoolq.observability.metrics`. A call made
where no door named itself counts for ``default_door``. Doors therefore need no counting code
of their own, and a new store method that sends, polls or acks cannot skip it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from spoolq.observability.metrics import Metrics
from spoolq.store.events import MessageEvent

_DOOR: ContextVar[str | None] = ContextVar("spoolq_door", default=None)


@contextlib.contextmanager
def acting_as(door: str) -> Iterator[None]:
    """Count the store calls made inside the block (in this thread or task) for ``door``."""
    token = _DOOR.set(door)
    try:
        yield
    finally:
        _DOOR.reset(token)


def name_door(door: str | None) -> None:
    """Count the store calls made from now on in this thread or task for ``door`` (``None``:
    nobody's); for a caller that cannot wrap its calls in :func:`acting_as` (an HTTP request,
    named in its first hook, forgotten in its last)."""
    _DOOR.set(door)


def current_door() -> str | None:
    """The door named for this thread or task now, if any."""
    return _DOOR.get()


#: each event's operation label (its value: ``event.value`` is a Python-level property, this a lookup)
_OPERATION: dict[MessageEvent, str] = {event: event.value for event in MessageEvent}


class DoorCounts:
    """A store listener (:class:`~spoolq.store.events.StoreListener`) counting into ``metrics``."""

    def __init__(self, metrics: Metrics, default_door: str) -> None:
        self.metrics = metrics
        self.default_door = default_door

    def messages(self, event: MessageEvent, queue: str, count: int) -> None:
        door = _DOOR.get() or self.default_door
        if event is MessageEvent.POLLED:  # the poll's time and its messages, counted in one go
            self.metrics.polled(door, queue, count)
        else:
            self.metrics.messages(door, _OPERATION[event], count, queue)

    def flushed(self, seconds: float, batch: int) -> None:
        self.metrics.flushed(seconds, batch)
