"""Per-app services the front doors share: settings, the store (built lazily, post-fork), auth, metrics.

The store a door gets is the store itself; the metrics hear of its sends, polls, acks and flushes
as one of its listeners (:class:`~spoolq.observability.counting.DoorCounts`, subscribed here; the app names
the door of each request). A door's poll goes through :meth:`Services.poll`, the long-poll step
(:mod:`spoolq.http.longpoll`). :attr:`Services.overview` is the cached snapshot of every queue that
``/metrics`` and the console read.

Nothing here is built at import. :class:`Services` is created by ``create_app``; under
gunicorn that happens in each worker after the fork, and the store itself is only opened
on first use, so every worker owns its own file handles, inotify watches and maintenance
thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from spoolq.access.auth import Authenticator
from spoolq.errors import StorageUnavailable
from spoolq.http import framing, longpoll
from spoolq.http.overview import Overview
from spoolq.observability.counting import DoorCounts, current_door
from spoolq.observability.metrics import Metrics
from spoolq.observability.readiness import Headroom, judge, limits_of
from spoolq.queues.serving import open_store
from spoolq.settings.server import Settings
from spoolq.store.batches import BatchClaims
from spoolq.store.contract import QueueStore
from spoolq.store.model import Delivery, QueueRef

#: the door of store calls made outside any request (a test's direct call, a background thread)
NO_DOOR = "store"


class Services:
    """What a view needs, bound to one app."""

    def __init__(self, settings: Settings, auth: Authenticator, metrics: Metrics,
                 store: QueueStore | None = None) -> None:
        self.settings = settings
        self.auth = auth
        self.metrics = metrics
        #: the store listener that counts messages and flushes into ``metrics``
        self.store_counts = DoorCounts(metrics, NO_DOOR)
        self._unsubscribe: Callable[[], None] | None = None
        self._owned = store is None
        self._lock = threading.Lock()
        self._store = None if store is None else self._counted(store)
        self._batches: BatchClaims | None = None
        self.overview = Overview(self.store, root=settings.root, limits=limits_of(settings))
        #: what starts with the first request this app serves (under gunicorn: in the worker, after
        #: the fork), e.g. the console's rate sampler; run by the app's first hook
        self.on_first_request: list[Callable[[], None]] = []

    def _counted(self, store: QueueStore) -> QueueStore:
        self._unsubscribe = store.subscribe(self.store_counts)
        return store

    def store(self) -> QueueStore:
        """The store, opened (and its background maintenance started) on first use."""
        store = self._store
        if store is not None:
            return store
        with self._lock:
            if self._store is None:
                self._store = self._counted(open_store(self.settings))
            return self._store

    def batches(self) -> BatchClaims:
        """Batch claims (``claimbatch``, ``renewbatches``, ``ackbatches``) over :meth:`store`, so
        their polls and acks are counted like any other; records under the data root."""
        batches = self._batches
        if batches is None:
            batches = self._batches = BatchClaims(self.store(), self.settings.root)
        return batches

    def poll(self, queue: QueueRef, limit: int, claim_ttl: float | None, wait: float) -> list[Delivery]:
        """A door's poll of ``queue``: with ``wait``, the long-poll step (parked where the worker
        can park it; see :mod:`spoolq.http.longpoll`). Call it inside a request."""
        request = framing.current_request()
        door = current_door() or NO_DOOR
        return longpoll.poll(self.store(), self.metrics, request.environ, door, queue, limit, claim_ttl, wait)

    def live(self) -> dict[str, Any]:
        """Liveness: this process serves HTTP. No file-system access: a full, read-only or hung
        disk is not cured by restarting the process (readiness and the store gauges report it)."""
        return {"ok": True, "node": self.settings.node_id, "root": str(self.settings.root)}

    def health(self) -> tuple[bool, dict[str, Any]]:
        """(writable, details) from ``store.health()``, which writes and removes a probe file in
        the root; a store that cannot open is not writable."""
        try:
            store = self.store()
        except StorageUnavailable as e:
            return False, {"ok": False, "error": e.message}
        try:
            details = dict(store.health())
        except Exception as e:  # a failing health probe is reported, not raised
            return False, {"ok": False, "error": f"{type(e).__name__}: {e}"}
        healthy = bool(details.get("ok", details.get("healthy", True)))
        return healthy, details

    def ready(self, timeout: float = 5.0) -> tuple[bool, dict[str, Any]]:
        """Readiness: the store can accept work now: it opens, a probe file can be written (not
        full, not read-only), the largest message fits (:mod:`spoolq.observability.readiness`: ``headroom`` in
        the details, with a ``warning`` when it is low), and a group-commit flush completes within
        ``timeout`` seconds (a hung or failing disk makes the node unready)."""
        healthy, details = self.health()
        if not healthy:
            return False, details
        verdict = judge(details, limits_of(self.settings))
        details["headroom"] = verdict.headroom.value
        if verdict.headroom is Headroom.FULL:
            details.update(ok=False, error=verdict.reason)
            return False, details
        if verdict.headroom is Headroom.LOW:
            details["warning"] = verdict.reason
        started = time.perf_counter()
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spoolq-readyz")
        try:
            if not pool.submit(self.store().flush).result(timeout=timeout):
                details["flush"] = "off"
                return True, details
        except FutureTimeout:
            details.update(ok=False, error=f"a flush did not finish within {timeout:g}s")
            return False, details
        except StorageUnavailable as e:
            details.update(ok=False, error=e.message)
            return False, details
        finally:
            pool.shutdown(wait=False)
        details["flush_seconds"] = round(time.perf_counter() - started, 6)
        return True, details

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._owned and self._store is not None:
            self._store.close()
            self._store = None
