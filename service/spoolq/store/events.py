"""What a store tells whoever listens: messages sent, polled and acknowledged, and flushes.

A listener (the service's metrics) subscribes with :meth:`QueueStore.subscribe
<spoolq.store.contract.QueueStore.subscribe>`. The store calls it in the thread that made the
change, once the change succeeded:

* :meth:`StoreListener.messages` after every ``send`` / ``send_batch`` (``SENT``, the number of
  results: duplicates a dedup or FIFO queue absorbed included), every ``poll`` (``POLLED``, the
  number of deliveries, also ``0``: a poll that found nothing is still a poll) and every ``ack``
  (``ACKED``, the messages it removed);
* :meth:`StoreListener.flushed` after every group-commit flush, of the file system or of the
  commit journal: how long it took and how many waiting writers it made durable.

Moves, dead-lettering and maintenance move messages without telling anyone: they are not sends,
polls or acks of a front door. A listener must return at once; whatever it raises is ignored
(a failing listener never fails a store call). Which front door made a call is not the store's
business: a listener that needs it asks the caller's context (:mod:`spoolq.observability.counting`).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import Protocol


class MessageEvent(enum.StrEnum):
    SENT = "send"
    POLLED = "poll"
    ACKED = "ack"


class StoreListener(Protocol):
    def messages(self, event: MessageEvent, queue: str, count: int) -> None:
        """``count`` messages of ``queue`` were sent, delivered or acknowledged."""
        ...

    def flushed(self, seconds: float, batch: int) -> None:
        """A flush of ``seconds`` made ``batch`` waiting writers durable."""
        ...


class Listeners:
    """The listeners of one store. Telling them takes no lock: the tuple is replaced, not changed."""

    def __init__(self) -> None:
        self._all: tuple[StoreListener, ...] = ()
        self._lock = threading.Lock()

    def subscribe(self, listener: StoreListener) -> Callable[[], None]:
        """Add ``listener``; returns what removes it again (calling that twice does no harm)."""
        with self._lock:
            self._all = (*self._all, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._all = tuple(x for x in self._all if x is not listener)
        return unsubscribe

    def messages(self, event: MessageEvent, queue: str, count: int) -> None:
        for listener in self._all:
            try:
                listener.messages(event, queue, count)
            except Exception:
                continue

    def flushed(self, seconds: float, batch: int) -> None:
        for listener in self._all:
            try:
                listener.flushed(seconds, batch)
            except Exception:
                continue
