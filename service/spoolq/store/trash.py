"""The trash: where acked messages and deleted queues wait for their unlink.

Layout::

    <root>/trash/ack~<node>~<pid>-<n>        an acked message file (the rename into here is the ack)
    <root>/trash/<queue dir>~<token>         a deleted queue's whole directory
    <root>/trash/<queue dir>~<sub>~<token>   a purged queue's old ready/claimed/... directory

:class:`Trash` takes the acked files; deleting and purging rename directories here themselves
(:mod:`spoolq.store.catalog`, :mod:`spoolq.store.deleting`). Maintenance (``sweep_trash``) removes whatever is left, at start-up
and then periodically.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from pathlib import Path

from spoolq.store import process

#: acked files waiting for their unlink that wake the trash thread before its next second
WAKE_AT = 64


class Trash:
    """Acked files go to ``<root>/trash/`` (one rename: the ack) and are unlinked in batches by a
    background thread of this process: every second, or at once when :data:`WAKE_AT` are waiting.

    Crash rules: a file in ``trash/`` is no longer in any queue, so a crash before its unlink
    changes nothing a client can see; maintenance (``sweep_trash``, also run at start-up by the
    service's background thread) deletes whatever is left. The rename is not flushed, like every
    ack: after a power failure the message may be back in ``claimed/`` and is delivered again.
    Acked files hold their space until unlinked: a send that finds the disk full drains this
    process's trash at once and tries again (``sending._write``).
    """

    def __init__(self, root: Path, node_prefix: str) -> None:
        self._dir = f"{root}/trash"
        self._prefix = f"ack~{node_prefix}"
        self._lock = threading.Lock()
        self._n = 0
        self._pending: list[str] = []
        self._wake = threading.Event()
        self._pid = -1
        self._closed = False

    def discard(self, path: str) -> None:
        """Rename ``path`` into the trash (FileNotFoundError if it is gone) and queue its unlink."""
        with self._lock:
            self._n += 1
            dst = f"{self._dir}/{self._prefix}{process.pid()}-{self._n}"
        try:
            os.rename(path, dst)
        except OSError as e:
            if e.errno == errno.ESTALE:  # acked or moved through another mount first (see GONE)
                raise FileNotFoundError(errno.ENOENT, "renamed or removed by someone else", path) from e
            raise
        with self._lock:
            self._pending.append(dst)
            wake = len(self._pending) == WAKE_AT  # the thread drains the whole list: one wake-up per batch
            if self._pid != process.pid():  # first use, or first use after a fork
                self._pid = process.pid()
                threading.Thread(target=self._run, name="spoolq-trash", daemon=True).start()
        if wake:
            self._wake.set()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(1.0)
            self._wake.clear()
            self.drain()

    def drain(self) -> int:
        """Unlink every queued file now; how many."""
        with self._lock:
            batch, self._pending = self._pending, []
        for p in batch:
            with contextlib.suppress(OSError):
                os.unlink(p)
        return len(batch)

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self.drain()
