"""A process's cursor over the oldest ready bucket of a standard or dedup queue.

Poll never lists a whole queue: the cursor lists the oldest non-empty bucket(s) once and
hands out candidates until they are spent; then it lists again. At most once a second it
re-lists bucket names only, so an older bucket that reappeared (a requeue, a delay that came
due, another node with a slower clock) is seen within that second. With ``peers > 0``
candidates are shuffled within windows of ``8 * (peers + 1)`` and each process starts at a
random window of its listing (wrapping around), so concurrent pollers in different processes
and nodes, which all list the same oldest buckets, rarely try the same rename (MQ's ``--peers``
fuzziness; a lost rename is a round trip on a network file system).

A bucket the cursor finds empty is removed at once if it is older than ``keep_from`` (the write
window's start): on local disks and CephFS an rmdir and a rename into the directory are ordered,
and a release or a late send re-creates the bucket (:func:`~spoolq.store.fileops.rename_into`). On
GlusterFS the two can hang each other, so there the caller passes ``""`` (nothing is old enough)
and maintenance removes empty buckets under the queue's bucket lock (:mod:`spoolq.store.bucket_guard`).
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator

from spoolq.store.fileops import listdir

Buckets = Callable[[], Iterator[tuple[str, str]]]
#: candidates gathered per refill: a refill lists several buckets, so it should be rare enough
#: (< 1 poll in 100 when buckets hold a few messages each) to stay out of the p99
REFILL_TARGET = 512


class ReadyCursor:
    """A process's view of the oldest ready bucket of one standard/dedup queue.

    ``buckets`` yields ``(bucket, directory)`` oldest first, lazily (see
    ``QueueHandle.ready_buckets``); candidates are ``(directory, file name)``.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[tuple[str, str]] = []
        self.pos = 0
        self.bucket = ""
        self.checked = 0.0

    def take(self, buckets: Buckets, n: int, peers: int, keep_from: str) -> list[tuple[str, str]]:
        """Up to ``n`` candidates. A bucket found empty is removed if it is before ``keep_from``
        (the write window senders are renaming into; ``""``: none, see the module docstring)."""
        with self.lock:
            now = time.monotonic()
            if self.pos < len(self.items) and now - self.checked > 1.0:
                # bounded staleness: an older bucket may have reappeared (requeue, other node)
                self.checked = now
                first = next(buckets(), None)
                if first is not None and first[0] < self.bucket:
                    self.pos = len(self.items)
            if self.pos >= len(self.items):
                self._refill(buckets, peers, keep_from)
                self.checked = now
            out = self.items[self.pos:self.pos + n]
            self.pos += len(out)
            return out

    def _refill(self, buckets: Buckets, peers: int, keep_from: str) -> None:
        items: list[tuple[str, str]] = []
        first = ""
        for bucket, path in buckets():
            names = listdir(path)
            if not names:
                if bucket < keep_from:
                    with contextlib.suppress(OSError):
                        os.rmdir(path)
                continue
            first = first or bucket
            names.sort()
            items.extend((path, n) for n in names)
            if len(items) >= REFILL_TARGET:
                break
        self.bucket = first
        if peers > 0:
            window = 8 * (peers + 1)
            for i in range(0, len(items), window):
                chunk = items[i:i + window]
                random.shuffle(chunk)
                items[i:i + window] = chunk
            start = random.randrange(0, len(items), window) if items else 0
            items = items[start:] + items[:start]
        self.items, self.pos = items, 0
