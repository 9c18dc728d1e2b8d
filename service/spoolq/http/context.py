"""Per-app services the front doors share: settings, the store (built lazily, post-fork), auth, metrics.

Nothing here is built at import. :class:`Services` is created by ``create_app``; under
gunicorn that happens in each worker after the fork, and the store itself is only opened
on first use, so every worker owns its own file handles, inotify watches and maintenance
thread.
"""

from __future__ import annotations

import threading
from typing import Any, cast

from spoolq.errors import StorageUnavailable, storage_error
from spoolq.http.auth import Authenticator
from spoolq.http.metrics import Metrics
from spoolq.settings import Settings
from spoolq.store.model import QueueStore


class Services:
    """What a view needs, bound to one app."""

    def __init__(self, settings: Settings, auth: Authenticator, metrics: Metrics,
                 store: QueueStore | None = None) -> None:
        self.settings = settings
        self.auth = auth
        self.metrics = metrics
        self._store = store
        self._owned = store is None
        self._lock = threading.Lock()

    def store(self) -> QueueStore:
        """The store, opened (and its background maintenance started) on first use."""
        store = self._store
        if store is not None:
            return store
        with self._lock:
            if self._store is None:
                self._store = self._open_store()
            return self._store

    def _open_store(self) -> QueueStore:
        from spoolq.store import FileStore  # type: ignore[attr-defined]  # lands with the engine

        s = self.settings
        try:
            store = FileStore(s.root, node_id=s.node_id, fsync=s.fsync, peers=s.peers, flush=s.flush)
        except OSError as e:
            raise storage_error(e, f"opening the store at {s.root}") from e
        start = getattr(store, "start_background", None)
        if callable(start):
            start()
        return cast(QueueStore, store)

    def health(self) -> tuple[bool, dict[str, Any]]:
        """(healthy, details) from ``store.health()``; a store that cannot open is unhealthy."""
        try:
            store = self.store()
        except StorageUnavailable as e:
            return False, {"ok": False, "error": e.message}
        check = getattr(store, "health", None)
        if not callable(check):
            return True, {"ok": True}
        try:
            details = dict(check())
        except Exception as e:  # a failing health probe is reported, not raised
            return False, {"ok": False, "error": f"{type(e).__name__}: {e}"}
        healthy = bool(details.get("ok", details.get("healthy", True)))
        return healthy, details

    def close(self) -> None:
        if self._owned and self._store is not None:
            close = getattr(self._store, "close", None)
            if callable(close):
                close()
            self._store = None
