"""A small in-memory store for fast tests of the HTTP layer (never a substitute for FileStore).

It declares the store contract (:class:`spoolq.store.contract.QueueStore`; ``mypy --strict``
checks it against the contract) and follows it closely enough for the doors: implicit creation on
send, ``[]``/``0`` for never-used queues, ids of 40 hex chars whose last 4 are a checksum of
the queue name, ``InvalidMessageId`` / ``MessageIdChecksumMismatch``, poll with
``claim_ttl=0`` not claiming, renew (extend-only, claims unclaimed), release, dedup
collapse of identical unsurfaced payloads, and moves that complete at once.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, final

from spoolq.errors import (
    InvalidMessageId,
    MessageIdChecksumMismatch,
    MessageRefused,
    QueueNotEmpty,
    QueueNotFound,
    UnknownMove,
)
from spoolq.store.contract import QueueStore, Wakeups
from spoolq.store.events import Listeners, MessageEvent, StoreListener
from spoolq.store.model import (
    CLAIMED,
    READY,
    Delivery,
    JobView,
    Message,
    MoveState,
    MoveStatus,
    OutgoingMessage,
    QueueConfig,
    QueueCounts,
    QueueInfo,
    QueueKind,
    QueueRef,
    SendResult,
    queue_name_of,
)

_ID_RE = re.compile(r"[0-9a-f]{40}")


def checksum(queue: str) -> str:
    return hashlib.sha256(queue.encode()).hexdigest()[:4]


@dataclass
class _Msg:
    id: str
    body: bytes
    sent_at: float
    claimed_until: float = 0.0
    surfaced: bool = False
    receives: int = 0


@dataclass
class _Queue:
    info: QueueInfo
    messages: dict[str, _Msg] = field(default_factory=dict)


class FakeWakeups:
    """Generations bumped by the fake's sends and releases; listeners called at once."""

    def __init__(self) -> None:
        self.rescan = 0.05
        self.generations: dict[str, int] = {}
        self.listeners: list[Callable[[str], None]] = []

    def generation(self, key: str) -> int:
        return self.generations.get(key, 0)

    def add_listener(self, listener: Callable[[str], None]) -> None:
        self.listeners.append(listener)

    def notify(self, key: str) -> None:
        self.generations[key] = self.generations.get(key, 0) + 1
        for listener in self.listeners:
            listener(key)


@final  # mypy: a final class must implement every method of the contract
class FakeStore(QueueStore):
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.wakeups = FakeWakeups()
        self.listeners = Listeners()
        self.queues: dict[str, _Queue] = {}
        self.moves: dict[str, MoveStatus] = {}
        self.lock = threading.Lock()
        self.counter = itertools.count()
        self.calls: list[str] = []
        self.fail_with: Exception | None = None

    # helpers
    def _check(self, op: str) -> None:
        self.calls.append(op)
        if self.fail_with is not None:
            raise self.fail_with

    def _new_id(self, queue: str) -> str:
        return f"{next(self.counter):036x}"[-36:] + checksum(queue)

    def _parse(self, queue: str, ref: str) -> str:
        if not _ID_RE.fullmatch(ref):
            raise InvalidMessageId("Invalid event ID.")
        if ref[-4:] != checksum(queue):
            raise MessageIdChecksumMismatch("Invalid event ID checksum.")
        return ref

    def _queue(self, name: str, create: QueueKind | None) -> _Queue:
        q = self.queues.get(name)
        if q is None:
            if create is None:
                raise QueueNotFound(name)
            now = self.clock()
            q = _Queue(QueueInfo(name, create, self.default_config, {}, now, now))
            self.queues[name] = q
        return q

    # queues
    @property
    def default_config(self) -> QueueConfig:
        return QueueConfig()

    def create_queue(self, name: str, kind: QueueKind = QueueKind.STANDARD, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True, *,
                     not_deleted_within: float = 0.0) -> QueueInfo:
        self._check("create_queue")
        with self.lock:
            return self._queue(name, kind).info

    def get_queue(self, name: str) -> QueueInfo:
        self._check("get_queue")
        with self.lock:
            return self._queue(name, None).info

    def update_queue(self, name: str, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None) -> QueueInfo:
        self._check("update_queue")
        with self.lock:
            q = self._queue(name, None)
            old = q.info
            q.info = QueueInfo(name, old.kind, config or old.config, dict(tags) if tags is not None else old.tags,
                               old.created_at, self.clock())
            return q.info

    def change_queue(self, name: str, change: Callable[[QueueInfo], QueueInfo]) -> QueueInfo:
        self._check("change_queue")
        with self.lock:
            q = self._queue(name, None)
            wanted = change(q.info)
            q.info = QueueInfo(name, q.info.kind, wanted.config, dict(wanted.tags), q.info.created_at, self.clock())
            return q.info

    def list_queues(self, prefix: str = "") -> list[str]:
        self._check("list_queues")
        with self.lock:
            return sorted(n for n in self.queues if n.startswith(prefix))

    def delete_queue(self, name: str, *, if_empty: bool = False) -> None:
        self._check("delete_queue")
        with self.lock:
            q = self.queues.get(name)
            if q is None:
                raise QueueNotFound(name)
            if if_empty and q.messages:
                raise QueueNotEmpty(name)
            del self.queues[name]

    # messages
    def send(self, queue: QueueRef, message: OutgoingMessage, create: QueueKind | None = None) -> SendResult:
        queue = queue_name_of(queue)
        return self.send_batch(queue, [message], create)[0]

    def send_batch(self, queue: QueueRef, messages: Sequence[OutgoingMessage],
                   create: QueueKind | None = None) -> list[SendResult]:
        queue = queue_name_of(queue)
        self._check("send_batch")
        with self.lock:
            q = self._queue(queue, create)
            out = []
            for m in messages:
                if q.info.kind is QueueKind.DEDUP:
                    dup = next((x for x in q.messages.values() if x.body == m.body and not x.surfaced), None)
                    if dup is not None:
                        out.append(SendResult(dup.id, duplicate=True))
                        continue
                mid = self._new_id(queue)
                q.messages[mid] = _Msg(mid, m.body, self.clock())
                out.append(SendResult(mid))
        self.wakeups.notify(queue)
        self.listeners.messages(MessageEvent.SENT, queue, len(out))
        return out

    def send_each(self, queue: QueueRef, messages: Sequence[OutgoingMessage]) -> list[SendResult | MessageRefused]:
        return list(self.send_batch(queue, messages))  # the fake holds messages to no rule

    def _view(self, m: _Msg) -> Message:
        return Message(m.id, m.body, m.sent_at, m.receives, None, {})

    def poll(self, queue: QueueRef, limit: int = 10, claim_ttl: float | None = None, wait: float = 0.0) -> list[Delivery]:
        queue = queue_name_of(queue)
        self._check("poll")
        deliveries = self._claim(queue, limit, 30.0 if claim_ttl is None else claim_ttl)
        self.listeners.messages(MessageEvent.POLLED, queue, len(deliveries))
        return deliveries

    def _claim(self, queue: str, limit: int, ttl: float) -> list[Delivery]:
        with self.lock:
            q = self.queues.get(queue)
            if q is None:
                return []
            now = self.clock()
            ready = [m for m in q.messages.values() if m.claimed_until <= now]
            if q.info.kind is QueueKind.DEDUP:
                ready.sort(key=lambda m: (m.surfaced is False, m.body))
            out = []
            for m in ready[:limit]:
                m.surfaced = True
                if ttl > 0:
                    m.claimed_until = now + ttl
                    m.receives += 1
                out.append(Delivery(self._view(m), m.id, m.claimed_until))
            return out

    def ack(self, queue: QueueRef, refs: Sequence[str], *, released_too: bool = False) -> list[bool]:
        queue = queue_name_of(queue)
        self._check("ack")
        ids = [self._parse(queue, r) for r in refs]
        with self.lock:
            q = self.queues.get(queue)
            done = [q is not None and q.messages.pop(i, None) is not None for i in ids]
        self.listeners.messages(MessageEvent.ACKED, queue, sum(done))
        return done

    def renew(self, queue: QueueRef, refs: Sequence[str], ttl: float, *, extend_only: bool = True,
              claim_unclaimed: bool = False, live_only: bool = False) -> list[bool]:
        queue = queue_name_of(queue)
        self._check("renew")
        ids = [self._parse(queue, r) for r in refs]
        with self.lock:
            q = self.queues.get(queue)
            out = []
            for i in ids:
                m = q.messages.get(i) if q else None
                if m is None:
                    out.append(False)
                    continue
                now = self.clock()
                if m.claimed_until <= now and not claim_unclaimed:
                    out.append(False)
                    continue
                m.claimed_until = max(m.claimed_until, now + ttl) if extend_only else now + ttl
                out.append(True)
            return out

    def release(self, queue: QueueRef, refs: Sequence[str], *, live_only: bool = False) -> list[bool]:
        queue = queue_name_of(queue)
        self._check("release")
        ids = [self._parse(queue, r) for r in refs]
        with self.lock:
            q = self.queues.get(queue)
            out = []
            for i in ids:
                m = q.messages.get(i) if q else None
                if m is not None:
                    m.claimed_until = 0.0
                out.append(m is not None)
        if any(out):
            self.wakeups.notify(queue)
        return out

    def requeue(self, queue: str, refs: Sequence[str], *, nack: bool = False) -> list[bool]:
        return self.release(queue, refs)

    def nack(self, queue: str, refs: Sequence[str]) -> list[bool]:
        return self.requeue(queue, refs, nack=True)

    def wait_point(self, queue: QueueRef) -> tuple[str, int, float]:
        queue = queue_name_of(queue)
        return queue, self.wakeups.generation(queue), self.wakeups.rescan

    @property
    def watcher(self) -> Wakeups:
        return self.wakeups

    def peek(self, queue: str, limit: int = 10) -> list[Message]:
        self._check("peek")
        with self.lock:
            q = self.queues.get(queue)
            if q is None:
                return []
            items = list(q.messages.values())[:limit]
            if q.info.kind is QueueKind.DEDUP:
                for m in items:
                    m.surfaced = True
            return [self._view(m) for m in items]

    def size(self, queue: str, limit: int | None = None) -> int:
        self._check("size")
        with self.lock:
            q = self.queues.get(queue)
            return len(q.messages) if q else 0

    def counts(self, queue: str, limit: int | None = None) -> QueueCounts:
        self._check("counts")
        now = self.clock()
        with self.lock:
            q = self.queues.get(queue)
            claimed = sum(1 for m in q.messages.values() if m.claimed_until > now) if q else 0
            return QueueCounts(len(q.messages) - claimed if q else 0, claimed, 0, True)

    def oldest_ready_at(self, queue: str) -> float | None:
        now = self.clock()
        with self.lock:
            q = self.queues.get(queue)
            return min((m.sent_at for m in q.messages.values() if m.claimed_until <= now), default=None) if q else None

    def find_job(self, queue: str, message_id: str) -> JobView | None:
        mid = self._parse(queue, message_id)
        now = self.clock()
        with self.lock:
            q = self.queues.get(queue)
            m = q.messages.get(mid) if q else None
            if m is None:
                return None
            claimed = m.claimed_until > now
            return JobView(self._view(m), CLAIMED if claimed else READY, m.claimed_until if claimed else None, 0)

    def list_jobs(self, queue: str) -> Iterator[tuple[str, str]]:
        now = self.clock()
        with self.lock:
            q = self.queues.get(queue)
            jobs = [(m.id, CLAIMED if m.claimed_until > now else READY) for m in (q.messages.values() if q else [])]
        yield from sorted(jobs, key=lambda j: j[1] == CLAIMED)

    def claim_count(self, queue: str) -> int:
        self._check("claim_count")
        now = self.clock()
        with self.lock:
            q = self.queues.get(queue)
            return sum(1 for m in q.messages.values() if m.claimed_until > now) if q else 0

    def purge(self, queue: str) -> None:
        self._check("purge")
        with self.lock:
            q = self.queues.get(queue)
            if q:
                q.messages.clear()

    def unclaim_all(self, queue: str) -> None:
        self._check("unclaim_all")
        with self.lock:
            q = self.queues.get(queue)
            for m in (q.messages.values() if q else []):
                m.claimed_until = 0.0

    # moves
    def move(self, source: str, destination: str, max_per_second: int | None = None, *,
             to_origins: bool = False) -> str:
        # the fake dead-letters nothing, so a move to_origins has no origins: all go to destination
        self._check("move")
        ref = base64.b32encode(uuid.uuid4().bytes + b"move-queue").decode().rstrip("=")
        with self.lock:
            src = self.queues.get(source)
            kind = src.info.kind if src else QueueKind.STANDARD
            moving = list(src.messages.values()) if src else []
            if src:
                src.messages.clear()
        self.send_batch(destination, [OutgoingMessage(m.body) for m in moving], create=kind)
        now = self.clock()
        self.moves[ref] = MoveStatus(ref, source, destination, MoveState.COMPLETE, len(moving), now, now)
        return ref

    def move_status(self, ref: str) -> MoveStatus:
        self._check("move_status")
        try:
            return self.moves[ref]
        except KeyError:
            raise UnknownMove(ref) from None

    def cancel_move(self, ref: str) -> MoveStatus:
        return self.move_status(ref)  # every fake move is complete at once

    def list_moves(self, source: str | None = None) -> list[MoveStatus]:
        moves = [m for m in self.moves.values() if source is None or m.source == source]
        return sorted(moves, key=lambda m: m.started_at, reverse=True)

    def health(self) -> dict[str, Any]:
        return {"ok": self.fail_with is None, "kind": "fake"}

    def flush(self) -> bool:
        return False  # nothing to make durable

    def subscribe(self, listener: StoreListener) -> Callable[[], None]:
        return self.listeners.subscribe(listener)

    def close(self) -> None:
        pass
