"""The HTTP doors' poll step: a long poll parks where gunicorn's worker can park it.

Every HTTP door polls through :func:`poll` (``Services.poll``). Without ``wait`` it is the
store's poll. With ``wait``, where the worker put a :class:`~spoolq.http.gunicorn.parking.LongPoll` in
the request's environ and can take one more, the request is *parked* when it finds nothing
(see :mod:`spoolq.http.gunicorn.parking` for the three steps and the worker's side); otherwise the poll
blocks its thread in the store's own wait. Either way it counts in
``spoolq_long_polls_waiting{door}`` and ``spoolq_queue_polls_waiting{queue,door}`` while it
waits: a parked one from its first park until it is answered.

Kept apart from :mod:`spoolq.http.gunicorn.parking`, which the gunicorn worker class imports in the
master process: this module imports the metrics (prometheus-client), which must not be imported
before ``spoolq serve`` has chosen the metrics directory.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from spoolq.errors import QueueNotFound
from spoolq.http.gunicorn.parking import LongPoll, of
from spoolq.observability.metrics import Metrics
from spoolq.store.contract import QueueStore
from spoolq.store.model import Delivery, QueueRef, queue_name_of


def poll(store: QueueStore, metrics: Metrics, environ: dict[str, Any], door: str, queue: QueueRef, limit: int,
         claim_ttl: float | None, wait: float) -> list[Delivery]:
    """A door's poll of ``queue`` (see the module docstring): parked when the worker can, else
    waiting in the store (counted as waiting), and without ``wait`` a plain poll."""
    slot = of(environ) if wait > 0 else None
    if slot is not None and slot.can_park:
        return _poll_or_park(store, metrics, slot, door, queue, limit, claim_ttl, wait)
    if wait > 0:
        name = queue_name_of(queue)
        metrics.polled(door, name)  # a blocked poll is a consumer from the moment it starts
        with metrics.waiting(door, (name,)):
            return store.poll(queue, limit=limit, claim_ttl=claim_ttl, wait=wait)
    return store.poll(queue, limit=limit, claim_ttl=claim_ttl, wait=wait)


def _poll_or_park(store: QueueStore, metrics: Metrics, slot: LongPoll, door: str, queue: QueueRef, limit: int,
                  claim_ttl: float | None, wait: float) -> list[Delivery]:
    """One run of a parkable long poll: steps 1-3 of the module docstring."""
    slot.start_run()
    if slot.deadline is None:
        slot.deadline = (slot.arrived or time.monotonic()) + wait
    if isinstance(queue, str):
        with contextlib.suppress(QueueNotFound):  # one lookup for the wait point and the poll
            queue = store.get_queue(queue)
    key, seen, rescan = store.wait_point(queue)
    deliveries = store.poll(queue, limit=limit, claim_ttl=claim_ttl, wait=0.0)
    slot.full = len(deliveries) >= limit
    if not deliveries and slot.remaining() > 0:
        if slot.on_done is None:  # counted as waiting from its first park until answered
            slot.on_done = metrics.start_waiting(door, (queue_name_of(queue),))
        slot.park(key, seen, store.watcher, rescan)
    return deliveries
