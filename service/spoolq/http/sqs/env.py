"""What every SQS handler receives: the store, the caller, the door's poll step and its small caches.

``Env`` is built per request by the blueprint; handlers are plain functions
``(env, params) -> reply dict`` so they can be called without Flask in unit tests.

``AttemptCache`` remembers FIFO ``ReceiveRequestAttemptId`` replies for five
minutes so that a retried ReceiveMessage returns the same messages and receipt
handles. It is per worker process (see docs/sqs.md: a retry that lands on
another gunicorn worker is answered as a fresh receive).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spoolq.access.auth import Principal, may_send_into
from spoolq.errors import QueueNotFound
from spoolq.http.sqs.access import deny
from spoolq.http.sqs.context import Caller
from spoolq.http.sqs.errors import QueueDoesNotExist
from spoolq.store.contract import QueueStore
from spoolq.store.model import Delivery, QueueConfig, QueueInfo, QueueRef

ATTEMPT_TTL = 300.0
ATTEMPT_CAPACITY = 10_000


class AttemptCache:
    """Thread-safe ``(queue, attempt id) -> rendered messages`` with a five-minute life."""

    def __init__(self, ttl: float = ATTEMPT_TTL, capacity: int = ATTEMPT_CAPACITY) -> None:
        self._ttl = ttl
        self._capacity = capacity
        self._items: OrderedDict[tuple[str, str], tuple[float, list[dict[str, Any]]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, queue: str, attempt: str, now: float) -> list[dict[str, Any]] | None:
        with self._lock:
            item = self._items.get((queue, attempt))
            if item is None or item[0] < now:
                return None
            return item[1]

    def put(self, queue: str, attempt: str, messages: list[dict[str, Any]], now: float) -> None:
        with self._lock:
            self._items[(queue, attempt)] = (now + self._ttl, messages)
            self._items.move_to_end((queue, attempt))
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)

    def forget(self, queue: str) -> None:
        """Drop every remembered attempt of ``queue`` (after a visibility change, delete or purge)."""
        with self._lock:
            for key in [k for k in self._items if k[0] == queue]:
                del self._items[key]


@dataclass
class Env:
    store: QueueStore
    caller: Caller
    attempts: AttemptCache
    clock: Callable[[], float] = field(default=time.time)
    #: who signed the request (``None``: open mode, everything allowed); see :mod:`.access`
    principal: Principal | None = None
    #: the app's poll step (a long poll parks where the worker can park it: spoolq.http.parking);
    #: ``None``: the store's own poll
    long_poll: Callable[[QueueRef, int, float | None, float], list[Delivery]] | None = None

    def poll(self, queue: QueueRef, limit: int, claim_ttl: float | None, wait: float) -> list[Delivery]:
        if self.long_poll is None:
            return self.store.poll(queue, limit=limit, claim_ttl=claim_ttl, wait=wait)
        return self.long_poll(queue, limit, claim_ttl, wait)

    @property
    def new_queue_config(self) -> QueueConfig:
        """The store's config of a queue created without one (the config file's ``queue_defaults``)."""
        return self.store.default_config

    def may(self, permission: str, store_name: str) -> bool:
        """Whether the caller holds ``permission`` on the queue (listings filter with this)."""
        return self.principal is None or self.principal.can(permission, store_name)

    def queue(self, store_name: str) -> QueueInfo:
        """The queue's info, or the SQS ``QueueDoesNotExist`` error."""
        try:
            return self.store.get_queue(store_name)
        except QueueNotFound:
            raise QueueDoesNotExist() from None

    def require_send_into(self, store_name: str) -> None:
        """``AccessDenied`` (naming ``sqs:SendMessage`` on that queue) unless the caller may send into
        the queue an action or a setting names as a second queue (:func:`spoolq.access.auth.may_send_into`)."""
        if self.principal is not None and not may_send_into(self.principal, store_name):
            raise deny(self.principal, "SendMessage", store_name)

    def dead_letter_queue(self, store_name: str) -> QueueInfo:
        """The queue a RedrivePolicy names, if the caller may send into it (``AccessDenied``
        before ``QueueDoesNotExist``: a refusal never tells whether another team's queue exists)."""
        self.require_send_into(store_name)
        return self.queue(store_name)
