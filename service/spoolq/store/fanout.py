"""Fan-out: one message stored in each of several queues, with one flush for all of them.

An SNS publish delivers a copy of its message to every subscribed queue whose filter matches,
and is answered only when every copy is durable. Sent one queue at a time, that would cost a flush
per queue; :meth:`FanOut.fan_out` writes every copy first and flushes once. It is made of the send
path's own steps (:mod:`spoolq.store.sending`): each copy is checked by the send's checks against
its queue's kind and config, written unnamed and named in its queue exactly as a send names it
(``Sending._store`` for standard queues, ``Sending._send_fifo`` for FIFO queues: ids above
``fifo.last``, the queue's deduplication window), each with its flush left to the caller, and then
the store's group commit flushes once. So this module stands on a floor of its own above the
operations: it runs sending's steps, as maintenance runs several parts' steps.

Order: the FIFO queues of one fan-out are locked (their ``lock`` file, in the order of their
paths, so two fan-outs never wait for each other in a circle) from before their first write until
after the flush. Two fan-outs that share FIFO queues therefore reach them one after the other, in
the same order in every queue, and a FIFO topic's publishes (serialised by the topic) arrive in
their order.

What fails alone: a queue that does not exist (or is deleted while its copy is written: nothing of
that copy stays), or a copy the queue's rules refuse (:class:`~spoolq.errors.MessageRefused`); its
place in the answer holds the error and the other copies are stored. Dedup queues (EmoDB) take
their own flush under their markers' locks, as their sends do; no SNS subscription delivers to one.

Crash rules (those of sending.py, message_files.py and group_commit.py, for every copy):

* a copy's file is written whole before it is named, so no queue ever holds part of a message;
* the call returns only after one flush that began after every copy (and every FIFO queue's
  deduplication record and ``fifo.last``) was named: after ``kill -9`` or a power cut, an answered
  fan-out is in every queue its answer names;
* a fan-out that was not answered (the process died, or the flush failed and raised
  :class:`~spoolq.errors.StorageUnavailable`) may be in none, some or all of its queues: at least
  once, as a send that failed may have been stored; a retried publish may duplicate;
* with the commit journal (``flush="journal"``) the copies are not journaled: the one flush is
  the full flush (``syncfs``), which also retires the journal's records (group_commit.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from spoolq.errors import InvalidArgument, MessageRefused, QueueNotFound, SpoolqError
from spoolq.store import layout as L
from spoolq.store.catalog import Clock, QueueCatalog
from spoolq.store.group_commit import GroupCommit
from spoolq.store.handle import QueueHandle
from spoolq.store.layout import IdFactory
from spoolq.store.message_rules import Prepared, check_all
from spoolq.store.model import OutgoingMessage, QueueInfo, QueueKind, QueueRef, SendResult
from spoolq.store.sending import Sending
from spoolq.store.watch import Watcher

#: the most copies one fan-out stores (SNS: subscriptions of one topic that match one message)
MAX_FAN_OUT = 100_000

Outcome = SendResult | SpoolqError


class FanOut:
    """The fan-out of the file store: the send path's steps (``sending``) over the queues of the
    ``catalog``, one flush of the group ``commit`` for them all."""

    def __init__(self, catalog: QueueCatalog, sending: Sending, *, commit: GroupCommit, ids: IdFactory,
                 watcher: Watcher, clock: Clock) -> None:
        self.catalog = catalog
        self.sending = sending
        self.commit = commit
        self.ids = ids
        self.watcher = watcher
        self.clock = clock

    def fan_out(self, deliveries: Sequence[tuple[QueueRef, OutgoingMessage]]) -> list[Outcome]:
        """The contract's ``fan_out``: each queue's copy checked, written and named, one flush."""
        if isinstance(deliveries, (str, bytes)) or not isinstance(deliveries, Sequence):
            raise InvalidArgument("deliveries must be a sequence of (queue, message)")
        if len(deliveries) > MAX_FAN_OUT:
            raise InvalidArgument(f"a fan-out stores at most {MAX_FAN_OUT} copies, got {len(deliveries)}")
        outcomes: list[Outcome | None] = [None] * len(deliveries)
        now_ms = int(self.clock() * 1000)
        plan = self._plan(deliveries, outcomes, now_ms)
        fifo = sorted((q for q, _ in plan.values() if q.info.kind is QueueKind.FIFO), key=lambda q: q.path)
        stored: list[QueueHandle] = []
        with contextlib.ExitStack() as held:
            for q in fifo:
                held.enter_context(q.fifo_lock())
            for q, items in plan.values():
                try:
                    results = self._write(q, [p for _, p in items], now_ms)
                except QueueNotFound as gone:  # deleted meanwhile: nothing of this copy stayed
                    for i, _ in items:
                        outcomes[i] = gone
                    continue
                for (i, _), result in zip(items, results, strict=True):
                    outcomes[i] = result
                stored.append(q)
            if stored:
                self.commit.flush()  # the one flush, still holding the FIFO queues
        for q in stored:
            self.watcher.notify(q.path)
        assert None not in outcomes  # every place was filled above
        return outcomes  # type: ignore[return-value]

    def _plan(self, deliveries: Sequence[tuple[QueueRef, OutgoingMessage]],
              outcomes: list[Outcome | None], now_ms: int) -> dict[str, tuple[QueueHandle, list[tuple[int, Prepared]]]]:
        """Every copy looked up and checked against its queue (by path: the copies of one queue in
        their order); a copy that fails alone gets its error in ``outcomes``."""
        plan: dict[str, tuple[QueueHandle, list[tuple[int, Prepared]]]] = {}
        for i, delivery in enumerate(deliveries):
            if not isinstance(delivery, tuple) or len(delivery) != 2:
                raise InvalidArgument("each delivery must be a (queue, message) pair")
            queue, message = delivery
            name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
            q = self.catalog.resolve(queue)
            if q is None:
                outcomes[i] = QueueNotFound(name)
                continue
            try:
                checked = check_all(q.info, (message,), now_ms, False)[0]
            except MessageRefused as refused:
                outcomes[i] = refused
                continue
            assert isinstance(checked, Prepared)  # without ``each`` a refusal is raised
            plan.setdefault(q.path, (q, []))[1].append((i, checked))
        return plan

    def _write(self, q: QueueHandle, prepared: list[Prepared], now_ms: int) -> list[SendResult]:
        """Write and name one queue's copies without flushing (FIFO: its lock is held)."""
        kind = q.info.kind
        if kind is QueueKind.STANDARD:
            ids = self.ids.new_ids(q.name, now_ms, len(prepared))
            return self.sending._store(q, kind, prepared, ids, flush=False)
        if kind is QueueKind.FIFO:
            return self.sending._send_fifo(q, prepared, now_ms, flush=False)
        return self.sending.send_batch(q.info, [p.message for p in prepared])  # dedup: its own flush
