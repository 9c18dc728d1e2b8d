"""Per-job lookups and nack counts, for front doors that address a job by id alone (Disque).

``find_job(queue, id)`` finds one message wherever it is (ready, claimed or delayed) and
reads it; ``list_jobs(queue)`` names every message of a queue with its state. Neither
changes anything.

Nack counts: a negative acknowledgement (``nack``) puts a claimed message back in the
queue at once, like ``release``, and counts it in a small file per nacked message::

    <queue>/nacks/<id>      decimal count of nacks of message <id>; written to tmp/ and
                            renamed over the old count (a crash keeps the old or the new
                            count, never a torn one); removed when the message is acked
                            (:mod:`spoolq.store.claiming`)

A nack is a release (:mod:`spoolq.store.claiming`) and then a count of each message it
released (:meth:`Jobs.count_nacks`); the store does the two. A nack count is best-effort
(Disque's own counters are): two processes nacking the same message at the same instant may
count one. The file of a message dropped by its TTL or by a
purge stays behind (a few bytes) until the queue is deleted.

:class:`Jobs` is a part of the file store, built with the store's queues, temp writer and clock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from spoolq.errors import storage_error
from spoolq.store import layout as L
from spoolq.store.catalog import Clock, QueueCatalog
from spoolq.store.codec import CorruptMessage, decode_message, message_of
from spoolq.store.fileops import TempWriter, listdir, read_file
from spoolq.store.handle import QueueHandle, write_window_start
from spoolq.store.model import CLAIMED, DELAYED, READY, JobView


class Jobs:
    def __init__(self, catalog: QueueCatalog, tmp: TempWriter, clock: Clock) -> None:
        self.catalog = catalog
        self.tmp = tmp
        self.clock = clock

    def find_job(self, queue: str, message_id: str) -> JobView | None:
        """The message ``message_id`` of ``queue`` with its state, or None if it is gone."""
        L.check_queue_name(queue)
        mid = L.check_message_id(message_id, queue)
        q = self.catalog.find(queue)
        if q is None:
            return None
        try:
            claimed = q.locate_claimed(L.Ref(id=mid))
            if claimed is not None:
                path, p = claimed
                return self._view(q, path, p, CLAIMED, p.expires)
            loose = q.locate_unclaimed(mid)
            if loose is not None:
                d, n, u = loose
                if isinstance(u, L.DelayedName):
                    return self._view(q, f"{d}/{n}", u, DELAYED, u.due)
                return self._view(q, f"{d}/{n}", u, READY, None)
        except OSError as e:
            raise storage_error(e, f"looking up a message in {queue!r}") from e
        return None

    def _view(self, q: QueueHandle, path: str, p: L.MessageName, state: str, until_ms: int | None) -> JobView | None:
        try:
            meta, body = decode_message(read_file(path, message=True))
        except (FileNotFoundError, CorruptMessage):
            return None
        msg = message_of(p.id, meta, body, p.rc, p.frt)
        return JobView(msg, state, until_ms / 1000 if until_ms else None, self._nacks(q, p.id))

    def list_jobs(self, queue: str) -> Iterator[tuple[str, str]]:
        """(id, state) of every message of ``queue``: ready oldest first, then claimed, then delayed."""
        L.check_queue_name(queue)
        q = self.catalog.find(queue)
        if q is None:
            return
        for _b, bdir in q.ready_buckets(write_window_start(int(self.clock() * 1000))):
            for n in sorted(listdir(bdir)):
                p = L.parse_ready(n)
                if p is not None:
                    yield p.id, READY
        for _path, c in q.claimed_files():
            yield c.id, CLAIMED
        for b in sorted(listdir(q.sub("delayed"))):
            for n in listdir(q.sub(f"delayed/{b}")):
                d = L.parse_delayed(n)
                if d is not None:
                    yield d.id, DELAYED

    def count_nacks(self, queue: str, refs: Sequence[str], released: Sequence[bool]) -> None:
        """Count a nack for each message of ``refs`` that a release just put back (``released``)."""
        q = self.catalog.find(queue)
        if q is None:
            return
        for ref, done in zip(refs, released, strict=True):
            if done:
                mid = L.parse_ref(ref, queue).id
                self._write_nacks(q, mid, self._nacks(q, mid) + 1)

    def _nacks(self, q: QueueHandle, mid: str) -> int:
        try:
            text = read_file(q.nacks_file(mid)).decode("ascii", "replace").strip()
        except (FileNotFoundError, NotADirectoryError):
            return 0
        except OSError as e:
            raise storage_error(e, "reading a nack count") from e
        return int(text) if text.isdigit() else 0

    def _write_nacks(self, q: QueueHandle, mid: str, count: int) -> None:
        try:
            os.makedirs(q.sub("nacks"), exist_ok=True)
            tmp = self.tmp.write(str(count).encode())
            os.replace(tmp, q.nacks_file(mid))
        except OSError as e:
            raise storage_error(e, "counting a nack") from e
