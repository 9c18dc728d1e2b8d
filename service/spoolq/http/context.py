"""Per-app services the front doors share: settings, the store (built lazily, post-fork), auth, metrics.

The store a door gets is the real one wrapped in :class:`~spoolq.http.instrumented.InstrumentedStore`
(message counters); the store's group commit reports each flush to the metrics
(``GroupCommit.on_flush``). :attr:`Services.overview` is the cached snapshot of every queue that
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
from typing import Any, cast

from spoolq.errors import StorageUnavailable, storage_error
from spoolq.http.auth import Authenticator
from spoolq.http.instrumented import InstrumentedStore
from spoolq.http.metrics import Metrics
from spoolq.http.overview import Overview
from spoolq.queue_settings import load_queue_defaults
from spoolq.settings import Settings
from spoolq.store import FileStore
from spoolq.store.batches import BatchClaims
from spoolq.store.contract import QueueStore
from spoolq.store.model import QueueConfig


class Services:
    """What a view needs, bound to one app."""

    def __init__(self, settings: Settings, auth: Authenticator, metrics: Metrics,
                 store: QueueStore | None = None, door_of: Callable[[str], str] | None = None) -> None:
        self.settings = settings
        self.auth = auth
        self.metrics = metrics
        self._door_of = door_of or (lambda _path: "http")
        self._owned = store is None
        self._lock = threading.Lock()
        self._store = None if store is None else self._instrument(store)
        self._batches: BatchClaims | None = None
        self.overview = Overview(self.store, root=settings.root)

    def _instrument(self, store: Any) -> QueueStore:
        commit = getattr(store, "commit", None)
        if commit is not None and hasattr(commit, "on_flush"):
            commit.on_flush = self.metrics.flushed
        return cast(QueueStore, InstrumentedStore(store, self.metrics, self._door_of))

    def store(self) -> QueueStore:
        """The store, opened (and its background maintenance started) on first use."""
        store = self._store
        if store is not None:
            return store
        with self._lock:
            if self._store is None:
                self._store = self._instrument(self._open_store())
            return self._store

    def batches(self) -> BatchClaims:
        """Batch claims (``claimbatch``, ``renewbatches``, ``ackbatches``) over :meth:`store`, so
        their polls and acks are counted like any other; records under the data root."""
        batches = self._batches
        if batches is None:
            batches = self._batches = BatchClaims(self.store(), self.settings.root)
        return batches

    def _open_store(self) -> QueueStore:
        s = self.settings
        defaults = load_queue_defaults(s).apply(QueueConfig())
        try:
            store = FileStore(s.root, node_id=s.node_id, fsync=s.fsync, peers=s.peers, flush=s.flush or None,
                              force_flush=s.force_flush, default_config=defaults)
        except OSError as e:
            raise storage_error(e, f"opening the store at {s.root}") from e
        store.start_background()
        return store

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
        full, not read-only), and a group-commit flush completes within ``timeout`` seconds (a
        hung or failing disk makes the node unready)."""
        healthy, details = self.health()
        if not healthy:
            return False, details
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
        if self._owned and self._store is not None:
            self._store.close()
            self._store = None
