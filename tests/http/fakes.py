"""An in-memory store for fast tests of the doors (never a substitute for FileStore in integration tests).

:class:`FakeStore` declares the store contract (:class:`spoolq.store.contract.QueueStore`; ``mypy
--strict`` checks it against the contract) and follows it: the contract suite (``tests/contract``)
runs every test that is not about files on it as on the file store. It keeps each queue's
messages in a dictionary by id, and a message's state in its fields: due (delayed), claimed (a
claim with its end and its receive), surfaced (dedup). Time is the clock it is given; a claim
that ran out stays the message's claim until a poll takes the message again (as a claim file stays
until maintenance or a poll puts it back), so a receipt of it still acknowledges, renews or
releases it. Ids have the file store's shape (time, a counter, the queue's checksum); receipts the
shape of the contract's (``<shard>:<id>~<receive>~...~<token>``), naming one receive.

What it leaves out: durability, archives (acknowledged messages are dropped), and a move's
resumption by another process (a move runs in a thread of this process, at its rate).
``fail_with`` makes every call raise that error (a door's error paths); ``calls`` names the calls.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import itertools
import json
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, final

from spoolq.errors import (
    InvalidArgument,
    MessageRefused,
    MessageRule,
    MessageTooLarge,
    QueueAlreadyExists,
    QueueKindMismatch,
    QueueNotEmpty,
    QueueNotFound,
    SpoolqError,
    UnknownMove,
)
from spoolq.store.contract import QueueStore
from spoolq.store.events import Listeners, MessageEvent, StoreListener
from spoolq.store.model import (
    CLAIMED,
    DELAYED,
    FIFO_DEDUP_WINDOW,
    MAX_BATCH,
    MAX_CLAIM_TTL,
    MAX_DELAY,
    MAX_PEEK_LIMIT,
    MAX_POLL_LIMIT,
    MAX_WAIT,
    MESSAGE_KEY_RE,
    READY,
    RECEIPT_RE,
    DedupScope,
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
    check_message_id,
    check_queue_name,
    id_checksum,
    queue_name_of,
)
from spoolq.store.queue_config import check_int, check_kind, check_number, validate_config


@dataclass
class _Claim:
    expires_ms: int
    receive: int  # the receive count this claim was made (or renewed) at: what its receipts name
    token: str


@dataclass
class _Msg:
    id: str
    body: bytes
    sent_ms: int
    attributes: Mapping[str, Any]
    group_id: str | None
    dedup_id: str | None
    expire_ms: int | None  # its time to live ends
    max_receives: int | None
    at_most_once: bool
    due_ms: int = 0  # delayed until
    rc: int = 0
    frt_ms: int = 0
    claim: _Claim | None = None
    surfaced: bool = False
    nacks: int = 0


@dataclass
class _Queue:
    info: QueueInfo
    messages: dict[str, _Msg] = field(default_factory=dict)
    fifo_seen: dict[str, tuple[str, int]] = field(default_factory=dict)  # dedup key -> (id, sent ms)
    group_touched: dict[str, int] = field(default_factory=dict)  # FIFO group -> last claim/release/ack ms
    origins: dict[str, str] = field(default_factory=dict)  # dead-lettered id -> the queue it came from


class FakeWakeups:
    """Generations bumped by the fake's sends and releases; listeners called at once."""

    def __init__(self) -> None:
        self.rescan = 0.05
        self.generations: dict[str, int] = {}
        self.listeners: list[Callable[[str], None]] = []
        self.changed = threading.Condition()

    def generation(self, key: str) -> int:
        return self.generations.get(key, 0)

    def add_listener(self, listener: Callable[[str], None]) -> None:
        self.listeners.append(listener)

    def notify(self, key: str) -> None:
        with self.changed:
            self.generations[key] = self.generations.get(key, 0) + 1
            self.changed.notify_all()
        for listener in self.listeners:
            listener(key)


@final  # mypy: a final class must implement every method of the contract
class FakeStore(QueueStore):
    def __init__(self, clock: Callable[[], float] = time.time, default_config: QueueConfig | None = None) -> None:
        self.clock = clock
        self.wakeups = FakeWakeups()
        self.listeners = Listeners()
        self.queues: dict[str, _Queue] = {}
        self.deleted: dict[str, float] = {}
        self.moves: dict[str, MoveStatus] = {}
        self.lock = threading.RLock()
        self.counter = itertools.count(1)
        self.calls: list[str] = []
        self.fail_with: Exception | None = None
        self._default_config = default_config or QueueConfig()

    # ------------------------------------------------------------ helpers

    def _check(self, op: str) -> None:
        self.calls.append(op)
        if self.fail_with is not None:
            raise self.fail_with

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _new_id(self, queue: str, ms: int) -> str:
        n = next(self.counter)  # in the first 16 bytes, which the sequence number of a FIFO message reads
        head = ms.to_bytes(6, "big") + n.to_bytes(10, "big") + (n & 0xFFFF).to_bytes(2, "big")
        return (head + id_checksum(head, queue).to_bytes(2, "big")).hex()

    @staticmethod
    def _rebind(mid: str, queue: str) -> str:
        head = bytes.fromhex(mid[:36])
        return (head + id_checksum(head, queue).to_bytes(2, "big")).hex()

    @staticmethod
    def _refs(queue: str, refs: Sequence[str]) -> list[tuple[str, int | None]]:
        """(id, receive) of each ref (receive None: an id), all checked before anything is done."""
        if isinstance(refs, (str, bytes)) or not isinstance(refs, Sequence):
            raise InvalidArgument("refs must be a sequence of message ids or receipts")
        out: list[tuple[str, int | None]] = []
        for ref in refs:
            m = RECEIPT_RE.fullmatch(ref) if isinstance(ref, str) else None
            if m:
                name = m.group(2)
                out.append((check_message_id(name.partition("~")[0], queue), int(name.split("~")[1])))
            else:
                out.append((check_message_id(ref, queue), None))
        return out

    @staticmethod
    def _receipt(m: _Msg) -> str:
        assert m.claim is not None
        return f"{m.id[35]}:{m.id}~{m.claim.receive}~{m.frt_ms:x}~{m.claim.expires_ms:x}~{m.claim.token}"

    def _queue(self, name: str, create: QueueKind | None) -> _Queue:
        q = self.queues.get(check_queue_name(name))
        if q is None:
            if create is None:
                raise QueueNotFound(name)
            now = self.clock()
            q = _Queue(QueueInfo(name, check_kind(create), self.default_config, {}, now, now))
            self.queues[name] = q
        return q

    def _live(self, q: _Queue, now_ms: int) -> list[_Msg]:
        """The queue's messages, those past their time to live or retention dropped, oldest first."""
        cutoff = now_ms - int(q.info.config.retention * 1000)
        for m in list(q.messages.values()):
            if (m.expire_ms is not None and m.expire_ms <= now_ms) or (
                    q.info.kind is not QueueKind.FIFO and m.claim is None and m.sent_ms < cutoff):
                del q.messages[m.id]
        return sorted(q.messages.values(), key=lambda m: m.id)

    @staticmethod
    def _visible(m: _Msg, now_ms: int) -> bool:
        return m.due_ms <= now_ms and (m.claim is None or m.claim.expires_ms <= now_ms)

    def _view(self, m: _Msg, now_ms: int) -> Message:
        live = m.claim is not None and m.claim.expires_ms > now_ms
        return Message(m.id, m.body, m.sent_ms / 1000, m.rc, m.frt_ms / 1000 if m.frt_ms else None,
                       dict(m.attributes), m.group_id, m.dedup_id,
                       str(int(m.id[:32], 16)) if m.group_id is not None and m.dedup_id is not None else None,
                       m.claim.expires_ms / 1000 if live and m.claim is not None else None)

    def _named(self, q: _Queue, mid: str, receive: int | None) -> _Msg | None:
        """The message a ref names: an id, its message; a receipt, its message while nobody received it since."""
        m = q.messages.get(mid)
        return m if m is not None and (receive is None or m.rc == receive) else None

    # ------------------------------------------------------------ queues

    @property
    def default_config(self) -> QueueConfig:
        return self._default_config

    def create_queue(self, name: str, kind: QueueKind = QueueKind.STANDARD, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True) -> QueueInfo:
        self._check("create_queue")
        check_queue_name(name)
        kind = check_kind(kind)
        if config is not None:
            validate_config(config)
        tags = dict(tags or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items()):
            raise InvalidArgument("tags must map strings to strings")
        with self.lock:
            q = self.queues.get(name)
            if q is not None:
                if not exist_ok:
                    raise QueueAlreadyExists(f"queue {name!r} already exists")
                if q.info.kind is not kind or (config is not None and config != q.info.config):
                    raise QueueAlreadyExists(f"queue {name!r} already exists with a different kind or attributes")
                return q.info
            now = self.clock()
            q = self.queues[name] = _Queue(QueueInfo(name, kind, config or self.default_config, tags, now, now))
            return q.info

    def get_queue(self, name: str) -> QueueInfo:
        self._check("get_queue")
        with self.lock:
            return self._queue(name, None).info

    def update_queue(self, name: str, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None) -> QueueInfo:
        self._check("update_queue")
        return self.change_queue(name, lambda info: dataclasses.replace(
            info, config=config if config is not None else info.config, tags=tags if tags is not None else info.tags))

    def change_queue(self, name: str, change: Callable[[QueueInfo], QueueInfo]) -> QueueInfo:
        self._check("change_queue")
        with self.lock:
            q = self._queue(name, None)
            wanted = change(q.info)
            if (wanted.name, wanted.kind, wanted.created_at) != (q.info.name, q.info.kind, q.info.created_at):
                raise InvalidArgument("a queue's name, kind and creation time cannot be changed")
            validate_config(wanted.config)
            q.info = dataclasses.replace(wanted, tags=dict(wanted.tags), updated_at=self.clock())
            return q.info

    def list_queues(self, prefix: str = "") -> list[str]:
        self._check("list_queues")
        if not isinstance(prefix, str):
            raise InvalidArgument("prefix must be a string")
        with self.lock:
            return sorted(n for n in self.queues if n.startswith(prefix))

    def delete_queue(self, name: str, *, if_empty: bool = False) -> None:
        self._check("delete_queue")
        with self.lock:
            q = self._queue(name, None)
            if if_empty and q.messages:
                raise QueueNotEmpty(name)
            del self.queues[name]
            self.deleted[name] = self.clock()

    def deleted_at(self, name: str) -> float | None:
        check_queue_name(name)
        return self.deleted.get(name)

    def purge(self, queue: str) -> None:
        self._check("purge")
        with self.lock:
            q = self.queues.get(check_queue_name(queue))
            if q:
                q.messages.clear()
                q.fifo_seen.clear()

    # ------------------------------------------------------------ sending

    def send(self, queue: QueueRef, message: OutgoingMessage, create: QueueKind | None = None) -> SendResult:
        return self.send_batch(queue, [message], create)[0]

    def send_batch(self, queue: QueueRef, messages: Sequence[OutgoingMessage],
                   create: QueueKind | None = None) -> list[SendResult]:
        out = self._send(queue, messages, create, each=False)
        return [r for r in out if isinstance(r, SendResult)]

    def send_each(self, queue: QueueRef, messages: Sequence[OutgoingMessage]) -> list[SendResult | MessageRefused]:
        return self._send(queue, messages, None, each=True)

    def fan_out(self, deliveries: Sequence[tuple[QueueRef, OutgoingMessage]]) -> list[SendResult | SpoolqError]:
        """One send each (the fake flushes nothing); a missing queue or a refused copy fails alone."""
        self._check("fan_out")
        if isinstance(deliveries, (str, bytes)) or not isinstance(deliveries, Sequence):
            raise InvalidArgument("deliveries must be a sequence of (queue, message)")
        for delivery in deliveries:
            if not isinstance(delivery, tuple) or len(delivery) != 2:
                raise InvalidArgument("each delivery must be a (queue, message) pair")
            check_queue_name(queue_name_of(delivery[0]))
        outcomes: list[SendResult | SpoolqError] = []
        for queue, message in deliveries:
            try:
                outcomes.append(self._send(queue, [message], None, each=False)[0])  # type: ignore[arg-type]
            except (QueueNotFound, MessageRefused) as failed:
                outcomes.append(failed)
        return outcomes

    def _send(self, queue: QueueRef, messages: Sequence[OutgoingMessage], create: QueueKind | None,
              each: bool) -> list[SendResult | MessageRefused]:
        name = check_queue_name(queue_name_of(queue))
        self._check("send_batch")
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidArgument("messages must be a sequence")
        if len(messages) > MAX_BATCH:
            raise InvalidArgument(f"a batch holds at most {MAX_BATCH} messages, got {len(messages)}")
        with self.lock:
            existing = self.queues.get(name)
            if existing is not None:
                info = existing.info
            elif create is None:
                raise QueueNotFound(name)
            else:  # checked against the queue as it will be created, before anything is
                info = QueueInfo(name, check_kind(create), self.default_config, {}, 0, 0)
            now_ms = self._now_ms()
            if info.kind is QueueKind.FIFO:
                _check_fifo_keys(info, messages)
            checked: list[_Msg | MessageRefused] = []
            for m in messages:
                try:
                    checked.append(_checked(info, m, now_ms))
                except MessageRefused as refused:
                    if not each:
                        raise
                    checked.append(refused)
            if not checked:
                return []
            q = self._queue(name, create)
            out = [self._store(q, m, now_ms) if isinstance(m, _Msg) else m for m in checked]
        self.wakeups.notify(name)
        sent = sum(isinstance(r, SendResult) for r in out)
        if sent:
            self.listeners.messages(MessageEvent.SENT, name, sent)
        return out

    def _store(self, q: _Queue, m: _Msg, now_ms: int) -> SendResult:
        kind = q.info.kind
        if kind is QueueKind.DEDUP and not m.due_ms:
            pending = next((x for x in q.messages.values() if x.body == m.body and x.rc == 0 and x.claim is None
                            and not x.surfaced and not x.due_ms), None)
            if pending is not None:
                return SendResult(pending.id, duplicate=True)
        if kind is QueueKind.FIFO:
            assert m.group_id is not None and m.dedup_id is not None
            key = m.dedup_id if q.info.config.dedup_scope is not DedupScope.MESSAGE_GROUP \
                else f"{m.group_id}\0{m.dedup_id}"
            seen = q.fifo_seen.get(key)
            if seen is not None and now_ms - seen[1] < FIFO_DEDUP_WINDOW * 1000:
                return SendResult(seen[0], str(int(seen[0][:32], 16)), duplicate=True)
        m.id = self._new_id(q.info.name, now_ms)
        q.messages[m.id] = m
        if kind is QueueKind.FIFO:
            q.fifo_seen[key] = (m.id, now_ms)
            return SendResult(m.id, str(int(m.id[:32], 16)))
        return SendResult(m.id)

    # ------------------------------------------------------------ claims

    def poll(self, queue: QueueRef, limit: int = 10, claim_ttl: float | None = None,
             wait: float = 0.0) -> list[Delivery]:
        name = check_queue_name(queue_name_of(queue))
        self._check("poll")
        check_int("limit", limit, 1, MAX_POLL_LIMIT)
        if claim_ttl is not None:
            check_number("claim_ttl", claim_ttl, 0, MAX_CLAIM_TTL)
        deliveries = self._waiting(name, wait, lambda q: self._claim(q, limit, claim_ttl))
        self.listeners.messages(MessageEvent.POLLED, name, len(deliveries))
        return deliveries

    def _waiting(self, name: str, wait: float, take: Callable[[_Queue], list[Any]]) -> list[Any]:
        check_number("wait", wait, 0, MAX_WAIT)
        deadline = time.monotonic() + wait
        while True:
            seen = self.wakeups.generation(name)
            with self.lock:
                q = self.queues.get(name)
                got = take(q) if q is not None else []
            remaining = deadline - time.monotonic()
            if got or remaining <= 0:
                return got
            with self.wakeups.changed:
                if self.wakeups.generation(name) == seen:
                    self.wakeups.changed.wait(min(remaining, self.wakeups.rescan))

    def _claim(self, q: _Queue, limit: int, claim_ttl: float | None) -> list[Delivery]:
        now_ms = self._now_ms()
        ttl = q.info.config.claim_ttl if claim_ttl is None else claim_ttl
        exp = now_ms + int((ttl or 0.001) * 1000)
        out: list[Delivery] = []
        for m in self._candidates(q, now_ms):
            if len(out) >= limit:
                break
            m.rc += 1
            m.frt_ms = m.frt_ms or now_ms
            m.claim = _Claim(exp, m.rc, uuid.uuid4().hex[:16])
            if m.group_id is not None and q.info.kind is QueueKind.FIFO:
                q.group_touched[m.group_id] = now_ms
            dl = q.info.config.dead_letter
            most = m.max_receives or (dl.max_receives if dl else None)
            if most is not None and m.rc > most:
                self._dead_letter(q, m)
                continue
            out.append(Delivery(self._view(m, now_ms), self._receipt(m), exp / 1000))
            if m.at_most_once:
                del q.messages[m.id]
            elif ttl == 0:  # received and visible again at once
                m.claim = None
        if q.info.kind is QueueKind.DEDUP:
            out.sort(key=lambda d: d.message.body)
        return out

    def _candidates(self, q: _Queue, now_ms: int) -> list[_Msg]:
        """The messages a poll may claim, in the order it claims them."""
        live = self._live(q, now_ms)
        if q.info.kind is not QueueKind.FIFO:
            return [m for m in live if self._visible(m, now_ms)]
        groups: dict[str, list[_Msg]] = {}
        blocked: set[str] = set()
        for m in live:
            assert m.group_id is not None
            if m.claim is not None and m.claim.expires_ms > now_ms:
                blocked.add(m.group_id)  # a group is delivered up to its first message in flight
            elif m.group_id not in blocked and m.due_ms <= now_ms:
                groups.setdefault(m.group_id, []).append(m)
        order = sorted(groups, key=lambda g: max(int(groups[g][0].id[:12], 16), q.group_touched.get(g, 0)))
        return [m for g in order for m in groups[g]]

    def _dead_letter(self, q: _Queue, m: _Msg) -> None:
        dl = q.info.config.dead_letter
        target = self.queues.get(dl.queue) if dl else None
        if target is None or target is q:
            if dl is None:
                del q.messages[m.id]  # a per-message max_receives without a DLQ: dropped
            else:
                m.claim = None  # the dead-letter queue is missing: kept rather than lost
            return
        del q.messages[m.id]
        m.id, m.claim = self._rebind(m.id, target.info.name), None
        target.messages[m.id] = m
        target.origins[m.id] = q.info.name
        self.wakeups.notify(target.info.name)

    def wait_point(self, queue: QueueRef) -> tuple[str, int, float]:
        name = check_queue_name(queue_name_of(queue))
        return name, self.wakeups.generation(name), self.wakeups.rescan

    @property
    def watcher(self) -> FakeWakeups:
        return self.wakeups

    def _each(self, queue: QueueRef, refs: Sequence[str], op: str,
              act: Callable[[_Queue, str, int | None, int], Any], missing: Any) -> list[Any]:
        name = check_queue_name(queue_name_of(queue))
        self._check(op)
        parsed = self._refs(name, refs)
        now_ms = self._now_ms()
        with self.lock:
            q = self.queues.get(name)
            if q is None:
                return [missing] * len(parsed)
            self._live(q, now_ms)
            return [act(q, mid, receive, now_ms) for mid, receive in parsed]

    def claimed_until(self, queue: QueueRef, refs: Sequence[str]) -> list[float | None]:
        def until(q: _Queue, mid: str, receive: int | None, now_ms: int) -> float | None:
            m = self._named(q, mid, receive)
            claim = m.claim if m is not None else None
            return claim.expires_ms / 1000 if claim is not None and claim.expires_ms > now_ms else None
        return self._each(queue, refs, "claimed_until", until, None)

    def ack(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        def ack_one(q: _Queue, mid: str, receive: int | None, now_ms: int) -> bool:
            m = self._named(q, mid, receive)
            if m is None:
                return False
            del q.messages[mid]
            if m.group_id is not None and q.info.kind is QueueKind.FIFO:
                q.group_touched[m.group_id] = now_ms
            return True
        done = self._each(queue, refs, "ack", ack_one, False)
        self.listeners.messages(MessageEvent.ACKED, queue_name_of(queue), sum(done))
        return done

    def renew(self, queue: QueueRef, refs: Sequence[str], ttl: float) -> list[bool]:
        return self._hold(queue, refs, ttl, extend_only=True)

    def set_claim_ttl(self, queue: QueueRef, refs: Sequence[str], ttl: float) -> list[bool]:
        check_number("ttl", ttl, 0.001, MAX_CLAIM_TTL)
        return self._hold(queue, refs, ttl, extend_only=False)

    def _hold(self, queue: QueueRef, refs: Sequence[str], ttl: float, *, extend_only: bool) -> list[bool]:
        check_number("ttl", ttl, 0, MAX_CLAIM_TTL)
        if ttl == 0:
            return self.release(queue, refs)

        def hold(q: _Queue, mid: str, receive: int | None, now_ms: int) -> bool:
            m = self._named(q, mid, receive)
            if m is None or (m.claim is None and receive is not None):
                return False  # gone, received since, or a receipt of a released claim: it claims nothing anew
            exp = now_ms + int(ttl * 1000)
            if m.claim is None:  # an id of an unclaimed message: claimed, without a receive
                m.claim = _Claim(exp, m.rc, uuid.uuid4().hex[:16])
                m.due_ms = 0
            elif not (extend_only and m.claim.expires_ms >= exp):
                m.claim = _Claim(exp, m.claim.receive, uuid.uuid4().hex[:16])
            return True
        return self._each(queue, refs, "renew", hold, False)

    def release(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        def release_one(q: _Queue, mid: str, receive: int | None, now_ms: int) -> bool:
            m = self._named(q, mid, receive)
            if m is None or m.claim is None:
                return False
            m.claim = None
            if m.group_id is not None and q.info.kind is QueueKind.FIFO:
                q.group_touched[m.group_id] = now_ms
            return True
        out = self._each(queue, refs, "release", release_one, False)
        if any(out):
            self.wakeups.notify(queue_name_of(queue))
        return out

    def nack(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        released = self.release(queue, refs)
        with self.lock:
            q = self.queues.get(queue_name_of(queue))
            for (mid, _receive), done in zip(self._refs(queue_name_of(queue), refs), released, strict=True):
                m = q.messages.get(mid) if q is not None and done else None
                if m is not None:
                    m.nacks += 1
        return released

    def maintain(self) -> None:
        """What the file store's maintenance pass does to claims (not the contract's: an operator
        hook there too): every claim that ran out is put back, so nothing is claimed by it any more."""
        now_ms = self._now_ms()
        with self.lock:
            for q in self.queues.values():
                for m in q.messages.values():
                    if m.claim is not None and m.claim.expires_ms <= now_ms:
                        m.claim = None

    def unclaim_all(self, queue: str) -> None:
        self._check("unclaim_all")
        with self.lock:
            q = self.queues.get(check_queue_name(queue))
            for m in (q.messages.values() if q else []):
                m.claim = None
        self.wakeups.notify(queue)

    # ------------------------------------------------------------ reading

    def _peek(self, queue: str, limit: int, claimed_too: bool) -> list[Message]:
        now_ms = self._now_ms()
        with self.lock:
            q = self.queues.get(queue)
            if q is None:
                return []
            items = [m for m in self._live(q, now_ms) if m.due_ms <= now_ms
                     and (claimed_too or self._visible(m, now_ms))][:limit]
            for m in items:
                if q.info.kind is QueueKind.DEDUP and (m.claim is None or m.claim.expires_ms <= now_ms):
                    m.surfaced = True  # no longer absorbs identical sends
            return [self._view(m, now_ms) for m in items]

    def peek(self, queue: str, limit: int = 10) -> list[Message]:
        self._check("peek")
        check_queue_name(queue)
        check_int("limit", limit, 1, MAX_PEEK_LIMIT)
        return self._peek(queue, limit, claimed_too=True)

    def peek_ready(self, queue: QueueRef, limit: int = 10, wait: float = 0.0) -> list[Message]:
        name = check_queue_name(queue_name_of(queue))
        self._check("peek")
        check_int("limit", limit, 1, MAX_PEEK_LIMIT)
        return self._waiting(name, wait, lambda q: self._peek(name, limit, claimed_too=False))

    def counts(self, queue: str, limit: int | None = None) -> QueueCounts:
        self._check("counts")
        check_queue_name(queue)
        if limit is not None:
            check_int("limit", limit, 1, 2**63 - 1)
        now_ms = self._now_ms()
        with self.lock:
            q = self.queues.get(queue)
            live = self._live(q, now_ms) if q else []
            delayed = sum(1 for m in live if m.due_ms > now_ms)
            claimed = sum(1 for m in live if m.claim is not None and m.claim.expires_ms > now_ms)
        ready = len(live) - delayed - claimed
        return QueueCounts(ready, claimed, delayed, limit is None or len(live) < limit)

    def size(self, queue: str, limit: int | None = None) -> int:
        self._check("size")
        return self.counts(queue, limit).total

    def claim_count(self, queue: str) -> int:
        self._check("claim_count")
        return self.counts(queue).claimed

    def oldest_ready_at(self, queue: str) -> float | None:
        check_queue_name(queue)
        now_ms = self._now_ms()
        with self.lock:
            q = self.queues.get(queue)
            ready = [m for m in self._live(q, now_ms) if self._visible(m, now_ms)] if q else []
            return float(min(m.sent_ms for m in ready) // 1000) if ready else None

    def find_job(self, queue: str, message_id: str) -> JobView | None:
        check_queue_name(queue)
        mid = check_message_id(message_id, queue)
        now_ms = self._now_ms()
        with self.lock:
            q = self.queues.get(queue)
            m = q.messages.get(mid) if q is not None and mid in {x.id for x in self._live(q, now_ms)} else None
            if m is None:
                return None
            if m.claim is not None:
                return JobView(self._view(m, now_ms), CLAIMED, m.claim.expires_ms / 1000, m.nacks)
            if m.due_ms > now_ms:
                return JobView(self._view(m, now_ms), DELAYED, m.due_ms / 1000, m.nacks)
            return JobView(self._view(m, now_ms), READY, None, m.nacks)

    def list_jobs(self, queue: str) -> Iterator[tuple[str, str]]:
        check_queue_name(queue)
        now_ms = self._now_ms()
        with self.lock:
            q = self.queues.get(queue)
            live = self._live(q, now_ms) if q else []
            ready = [(m.id, READY) for m in live if m.claim is None and m.due_ms <= now_ms]
            claimed = [(m.id, CLAIMED) for m in live if m.claim is not None]
            delayed = [(m.id, DELAYED) for m in live if m.claim is None and m.due_ms > now_ms]
        yield from ready + claimed + delayed

    # ------------------------------------------------------------ moves

    def move(self, source: str, destination: str, max_per_second: int | None = None, *,
             to_origins: bool = False) -> str:
        self._check("move")
        check_queue_name(source)
        check_queue_name(destination)
        if source == destination:
            raise InvalidArgument("cannot move queue to itself")
        if max_per_second is not None and (isinstance(max_per_second, bool) or not isinstance(max_per_second, int)
                                           or not 1 <= max_per_second <= 1_000_000):
            raise InvalidArgument("max_per_second must be an integer between 1 and 1000000")
        ref = base64.b32encode(uuid.uuid4().bytes + b"move-queue").decode().rstrip("=")
        now = self.clock()
        with self.lock:
            src = self.queues.get(source)
            cutoff = int(now * 1000) + 1
            ids = [m.id for m in self._live(src, cutoff)] if src else []
            self.moves[ref] = MoveStatus(ref, source, destination, MoveState.IN_PROGRESS, 0, now, None,
                                         max_per_second=max_per_second)
        if max_per_second is None:
            self._run_move(ref, ids, to_origins, None)
        else:
            threading.Thread(target=self._run_move, args=(ref, ids, to_origins, max_per_second), daemon=True).start()
        return ref

    def _run_move(self, ref: str, ids: list[str], to_origins: bool, rate: int | None) -> None:
        started = time.monotonic()
        for n, mid in enumerate(ids):
            if rate is not None:
                time.sleep(max(0.0, started + n / rate - time.monotonic()))
            with self.lock:
                status = self.moves[ref]
                if status.state is not MoveState.IN_PROGRESS:
                    return
                if self._move_one(status.source, status.destination, mid, to_origins):
                    self.moves[ref] = dataclasses.replace(status, moved=status.moved + 1)
        with self.lock:
            status = self.moves[ref]
            if status.state is MoveState.IN_PROGRESS:
                self.moves[ref] = dataclasses.replace(status, state=MoveState.COMPLETE, finished_at=self.clock())

    def _move_one(self, source: str, destination: str, mid: str, to_origins: bool) -> bool:
        src = self.queues.get(source)
        m = src.messages.pop(mid, None) if src is not None else None
        if src is None or m is None:
            return False
        origin = src.origins.pop(mid, None) if to_origins else None
        dst = self.queues.get(origin) if origin is not None else None
        if dst is None:
            dst = self._queue(destination, src.info.kind)
        now_ms = self._now_ms()
        moved = dataclasses.replace(m, rc=0, frt_ms=0, claim=None, due_ms=0, surfaced=False)
        self._store(dst, moved, now_ms)
        self.wakeups.notify(dst.info.name)
        return True

    def move_status(self, ref: str) -> MoveStatus:
        self._check("move_status")
        try:
            return self.moves[ref]
        except (KeyError, TypeError):
            raise UnknownMove(str(ref)[:100]) from None

    def cancel_move(self, ref: str) -> MoveStatus:
        with self.lock:
            status = self.move_status(ref)
            if status.state is MoveState.IN_PROGRESS:
                status = self.moves[ref] = dataclasses.replace(status, state=MoveState.CANCELLED,
                                                               finished_at=self.clock())
            return status

    def list_moves(self, source: str | None = None) -> list[MoveStatus]:
        moves = [m for m in self.moves.values() if source is None or m.source == source]
        return sorted(moves, key=lambda m: m.started_at, reverse=True)

    # ------------------------------------------------------------ the store itself

    def health(self) -> dict[str, Any]:
        return {"ok": self.fail_with is None, "kind": "fake"}

    def flush(self) -> bool:
        return False  # nothing to make durable

    def subscribe(self, listener: StoreListener) -> Callable[[], None]:
        return self.listeners.subscribe(listener)

    def close(self) -> None:
        pass


_KEY_RULE = "must be 1 to 128 printable ASCII characters without spaces"


def _check_fifo_keys(info: QueueInfo, messages: Sequence[OutgoingMessage]) -> None:
    """A FIFO queue's messages each have a group id, and a deduplication id unless its queue
    deduplicates by content: else the whole batch is refused."""
    for m in messages:
        if isinstance(m, OutgoingMessage) and m.group_id is None:
            raise QueueKindMismatch(MessageRule.GROUP_ID_MISSING, "a message for a FIFO queue needs a group id")
    if not info.config.content_based_dedup:
        for m in messages:
            if isinstance(m, OutgoingMessage) and m.dedup_id is None:
                raise QueueKindMismatch(MessageRule.DEDUP_ID_MISSING, "a message for a FIFO queue needs a "
                                        "deduplication id unless content-based deduplication is on")


def _checked(info: QueueInfo, m: OutgoingMessage, now_ms: int) -> _Msg:
    """``m`` checked against the rules of the contract for a queue like ``info``, as a message to store."""
    if not isinstance(m, OutgoingMessage):
        raise InvalidArgument("each message must be an OutgoingMessage")
    if not isinstance(m.body, (bytes, bytearray)):
        raise InvalidArgument("message body must be bytes")
    if type(m.extra_bytes) is not int or m.extra_bytes < 0:
        raise InvalidArgument("extra_bytes must be an integer >= 0")
    limit = info.config.max_message_bytes
    if len(m.body) + m.extra_bytes > limit:
        raise MessageTooLarge(len(m.body) + m.extra_bytes, limit)
    for rule, value in ((MessageRule.GROUP_ID, m.group_id), (MessageRule.DEDUP_ID, m.dedup_id)):
        if value is not None and (type(value) is not str or not MESSAGE_KEY_RE.match(value)):
            label = "group_id" if rule is MessageRule.GROUP_ID else "dedup_id"
            raise MessageRefused(rule, f"{label} {_KEY_RULE}", 128, value)
    fifo = info.kind is QueueKind.FIFO
    if m.dedup_id is not None and not fifo:
        raise QueueKindMismatch(MessageRule.DEDUP_ID_NOT_FIFO, "a deduplication id is for FIFO queues only",
                                value=m.dedup_id)
    delay = info.config.delay if m.delay is None else check_number("delay", m.delay, 0, MAX_DELAY)
    ttl = None if m.ttl is None else check_number("ttl", m.ttl, 0.001, 10 * 365 * 86400)
    most = None if m.max_receives is None else check_int("max_receives", m.max_receives, 1, 1_000_000)
    if m.attributes and not isinstance(m.attributes, Mapping):
        raise InvalidArgument("attributes must be a mapping")
    try:
        json.dumps(dict(m.attributes or {}))
    except (TypeError, ValueError) as e:
        raise InvalidArgument(f"attributes must be JSON-serialisable: {e}") from None
    dedup = m.dedup_id if m.dedup_id is not None or not fifo else hashlib.sha256(m.body).hexdigest()
    return _Msg("", bytes(m.body), now_ms, dict(m.attributes or {}), m.group_id, dedup,
                now_ms + int(ttl * 1000) if ttl is not None else None, most, bool(m.at_most_once),
                due_ms=now_ms + int(delay * 1000) if delay > 0 and not math.isnan(delay) else 0)
