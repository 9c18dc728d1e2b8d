"""A FIFO topic's sequence numbers and five-minute deduplication window, in its directory of the
shared root (:mod:`spoolq.topics.catalog`), used while its publish lock is held.

``<topic dir>/fifo.seq`` holds the last sequence number (20 digits, rewritten in place: a file
replaced by rename would leave stale handles on GlusterFS mounts); ``<topic dir>/dedup/<sha256 of
the deduplication id>`` holds ``<message id> <sequence> <ms>`` of a publish in the last five minutes.

Crash rules: a sequence number is at least the publish time in microseconds times 1000, so numbers
never go back even when a power cut loses ``fifo.seq``. A deduplication record is written whole and
renamed in, not flushed on its own: a power cut may forget one, and a retried publish is then fanned
out again, where each FIFO queue drops it by the same deduplication id within its own window.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable

from spoolq.errors import storage_error
from spoolq.store.fileops import TempWriter, listdir, read_file

#: a FIFO topic's deduplication window (as a FIFO queue's)
DEDUP_WINDOW = 300.0


class FifoWindow:
    """A FIFO topic's sequence and deduplication window, used under its publish lock."""

    def __init__(self, directory: str, tmp: TempWriter, clock: Callable[[], float]) -> None:
        self._dir = directory
        self._tmp = tmp
        self._clock = clock

    def seen(self, dedup_id: str) -> tuple[str, str] | None:
        """(message id, sequence number) of a publish with this deduplication id in the last five minutes."""
        try:
            parts = read_file(self._marker(dedup_id), replaced=True).decode().split()
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        except OSError as e:
            raise storage_error(e, "reading a topic's deduplication record") from e
        if len(parts) == 3 and parts[2].isdigit() and self._clock() * 1000 - int(parts[2]) < DEDUP_WINDOW * 1000:
            return parts[0], parts[1]
        return None

    def _marker(self, dedup_id: str) -> str:
        return f"{self._dir}/dedup/{hashlib.sha256(dedup_id.encode()).hexdigest()}"

    def next_sequence(self) -> str:
        """The next sequence number: above the last and at least now (µs) x 1000, 20 digits."""
        path = f"{self._dir}/fifo.seq"
        try:
            last = int(read_file(path, replaced=True).strip() or b"0")
        except (FileNotFoundError, ValueError):
            last = 0
        except OSError as e:
            raise storage_error(e, "reading a topic's sequence") from e
        number = max(last + 1, int(self._clock() * 1_000_000) * 1000)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)  # in place, as a FIFO queue's fifo.last
            try:
                os.pwrite(fd, b"%020d" % number, 0)
            finally:
                os.close(fd)
        except OSError as e:
            raise storage_error(e, "writing a topic's sequence") from e
        return f"{number:020d}"

    def remember(self, dedup_id: str, message_id: str, sequence: str) -> None:
        """Record a publish in the window (not flushed on its own: see the module docstring)."""
        marker = self._marker(dedup_id)
        try:
            os.makedirs(os.path.dirname(marker), exist_ok=True)
            t = self._tmp.write(f"{message_id} {sequence} {int(self._clock() * 1000)}".encode())
            os.replace(t, marker)
        except OSError as e:
            raise storage_error(e, "writing a topic's deduplication record") from e

    def sweep(self) -> int:
        """Remove the deduplication records older than the window; how many."""
        removed = 0
        dedup = f"{self._dir}/dedup"
        horizon = self._clock() - DEDUP_WINDOW
        for entry in listdir(dedup):
            with contextlib.suppress(OSError):
                if os.stat(f"{dedup}/{entry}").st_mtime < horizon:
                    os.unlink(f"{dedup}/{entry}")
                    removed += 1
        return removed
