"""The store a server process serves, opened from its settings (the HTTP app and the Disque door).

Both front-door processes open the same :class:`~spoolq.store.filestore.FileStore` the same way:
the root, node id, flush and peers of the :class:`~spoolq.settings.server.Settings`, the config file's
``queue_defaults`` for queues created without a config, and the background maintenance started.
The doors get it as the contract (:class:`~spoolq.store.contract.QueueStore`) and never name the
file store.
"""

from __future__ import annotations

from spoolq.errors import storage_error
from spoolq.queues.queue_settings import load_queue_defaults
from spoolq.settings.server import Settings
from spoolq.store.contract import QueueStore
from spoolq.store.filestore import FileStore
from spoolq.store.model import QueueConfig


def open_store(settings: Settings, *, background: bool = True) -> QueueStore:
    """The file store at ``settings.root``, its background maintenance running (call after fork);
    without ``background``, no thread (``spoolq serve``'s master applying declared queues, before
    it forks)."""
    s = settings
    try:
        store = FileStore(s.root, node_id=s.node_id, fsync=s.fsync, peers=s.peers, flush=s.flush or None,
                          force_flush=s.force_flush, default_config=load_queue_defaults(s).apply(QueueConfig()))
    except OSError as e:
        raise storage_error(e, f"opening the store at {s.root}") from e
    if background:
        store.start_background()
    return store


def flush_mode(settings: Settings) -> str:
    """How the store at ``settings.root`` makes sends durable: the flush asked for, else the one that
    fits its file system (``journal``, ``syncfs`` or ``fsync``, as ``spoolq serve`` reports it);
    ``none`` with ``fsync`` off."""
    if not settings.fsync:
        return "none"
    if settings.flush:
        return settings.flush
    from spoolq.store.filesystems import choose_flush

    try:
        return choose_flush(settings.root, None, settings.force_flush).mode
    except OSError:
        return "unknown"
