"""Batch claims: a claimed batch of messages that a token names, so its consumer can fetch it again.

A consumer that must be able to replay exactly what it was handed (Spark's streaming source: a
micro-batch that failed, or whose driver was killed, is re-run from Spark's checkpoint with the
same offsets) claims through :meth:`BatchClaims.claim_batch` with a token of its own choosing.
The first call with a token claims up to ``limit`` messages (and at most about ``max_bytes`` of
bodies) and records the batch; every later call with the same token returns the same messages,
in the same order, renewing their claims. :meth:`BatchClaims.renew_batches` extends the claims of
whole batches, :meth:`BatchClaims.ack_batches` acknowledges them and forgets the record.

Everything here goes through the store contract (``poll``, ``renew``, ``ack``), so claims are
ordinary claims: they expire after their ttl unless renewed, and then their messages go back to
the queue and may be delivered to anyone (at-least-once). A record outlives its claims: fetching
an expired batch still returns its messages (a replay sees the same rows), and acknowledging it
acknowledges the messages that nobody has received since (as ``ack`` does with a receipt).

On disk, beside the queues (nothing here touches a queue's own directory)::

    <root>/batches/<qdir>/<token>             the record: one JSON header line, then the bodies
    <root>/batches/<qdir>/<token>.claiming    marker while the first claim of <token> runs
    <root>/batches/<qdir>/.<token>.<rand>     a record being written (renamed into place)

Header: ``{"v": 1, "queue", "token", "created" (epoch s), "receipts": [...], "messages":
[[id, sent_at, receive_count, first_received_at, attributes, body length], ...]}``.

Rules:

* **One first claim per token.** The marker is created with ``O_CREAT|O_EXCL``; the caller that
  made it claims and writes the record, then removes the marker. A concurrent caller with the
  same token waits for the record. A marker older than :data:`STALE_CLAIM` whose record never
  appeared belongs to a claimer that died (its claims expire on their own): the next caller takes
  it over by renaming it to a name of its own (one rename wins) and claims afresh.
* **Records are replaced whole** (written under a hidden name, renamed), never edited; no flush:
  like a claim, a record lost to a power failure means the batch's messages are delivered again.
  A torn or unreadable record counts as absent.
* **Empty claims are not recorded** (nothing to replay); a token that claimed nothing may claim
  later.
* **Retention.** A record is removed by ``ack_batches``, or :data:`RECORD_RETENTION` seconds after
  it was last written or renewed (an abandoned consumer's batches), by a sweep that claims run at
  most once per :data:`SWEEP_INTERVAL` per queue and process.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spoolq.errors import InvalidArgument, QueueNotFound, storage_error
from spoolq.store import layout as L
from spoolq.store.contract import QueueStore
from spoolq.store.fileops import listdir
from spoolq.store.model import MAX_BATCH_CLAIM as MAX_BATCH_CLAIM
from spoolq.store.model import MAX_CLAIM_TTL, MAX_POLL_LIMIT, Message
from spoolq.store.model import TOKEN_RE as TOKEN_RE
from spoolq.store.queue_config import check_int, check_number

#: seconds after which a first claim that left no record is taken over
STALE_CLAIM = 60.0
#: seconds a record is kept after it was last written or renewed
RECORD_RETENTION = 86_400.0
SWEEP_INTERVAL = 60.0
_MARKER = ".claiming"


@dataclass(frozen=True)
class ClaimedBatch:
    token: str
    messages: list[Message]
    replayed: bool  # True: the token named a batch already; these are its messages again


def check_token(token: object) -> str:
    if not isinstance(token, str) or not TOKEN_RE.fullmatch(token):
        raise InvalidArgument(f"invalid batch token {str(token)[:80]!r}: use 1-128 characters of "
                              "A-Z a-z 0-9 . _ -, not starting with '.'")
    return token


def check_tokens(tokens: object) -> list[str]:
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
        raise InvalidArgument("tokens must be a list of batch tokens")
    return [check_token(t) for t in tokens]


class BatchClaims:
    """Batch claims over ``store``, records under ``<root>/batches/`` (see the module docstring)."""

    def __init__(self, store: QueueStore, root: Path | str, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.dir = Path(root) / "batches"
        self.clock = clock
        self._swept: dict[str, float] = {}
        self._lock = threading.Lock()

    # --- the three operations ----------------------------------------------------------

    def claim_batch(self, queue: str, token: str, limit: int, claim_ttl: float,
                    max_bytes: int | None = None) -> ClaimedBatch:
        """The batch ``token`` names, claiming it first if it does not exist yet."""
        L.check_queue_name(queue)
        check_token(token)
        check_int("limit", limit, 1, MAX_BATCH_CLAIM)
        check_number("claim_ttl", claim_ttl, 1, MAX_CLAIM_TTL)
        if max_bytes is not None:
            check_int("max_bytes", max_bytes, 1, 2**62)
        qdir = self.dir / L.queue_dir_name(queue)
        try:
            return self._claim_or_fetch(queue, qdir, token, limit, claim_ttl, max_bytes)
        except OSError as e:
            raise storage_error(e, f"claiming batch {token!r} of {queue!r}") from e

    def renew_batches(self, queue: str, tokens: Sequence[str], ttl: float) -> int:
        """Extend the claims of every message of these batches to now + ``ttl``; the number of
        claims renewed (a message whose claim was lost is not counted). Unknown tokens: 0."""
        L.check_queue_name(queue)
        tokens = check_tokens(tokens)
        check_number("ttl", ttl, 1, MAX_CLAIM_TTL)
        qdir = self.dir / L.queue_dir_name(queue)
        renewed = 0
        try:
            for token in tokens:
                record = _read_record(qdir / token)
                if record is None or not record.receipts:
                    continue
                renewed += sum(self.store.renew(queue, record.receipts, ttl))
                with contextlib.suppress(FileNotFoundError):
                    os.utime(qdir / token)  # retention counts from the last renewal
        except OSError as e:
            raise storage_error(e, f"renewing batches of {queue!r}") from e
        return renewed

    def ack_batches(self, queue: str, tokens: Sequence[str]) -> int:
        """Acknowledge every message of these batches and forget them; the number acknowledged.
        A message whose claim expired is acknowledged too unless it was received again since."""
        L.check_queue_name(queue)
        tokens = check_tokens(tokens)
        qdir = self.dir / L.queue_dir_name(queue)
        acked = 0
        try:
            for token in tokens:
                record = _read_record(qdir / token)
                if record is not None and record.receipts:
                    acked += sum(self.store.ack(queue, record.receipts))
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(qdir / token)
        except OSError as e:
            raise storage_error(e, f"acknowledging batches of {queue!r}") from e
        return acked

    # --- claiming ------------------------------------------------------------------------

    def _claim_or_fetch(self, queue: str, qdir: Path, token: str, limit: int, ttl: float,
                        max_bytes: int | None) -> ClaimedBatch:
        path = qdir / token
        marker = qdir / (token + _MARKER)
        while True:
            record = _read_record(path)
            if record is not None:
                if record.receipts:
                    self.store.renew(queue, record.receipts, ttl)
                    with contextlib.suppress(FileNotFoundError):
                        os.utime(path)
                return ClaimedBatch(token, record.messages, replayed=True)
            try:
                self.store.get_queue(queue)
            except QueueNotFound:
                return ClaimedBatch(token, [], replayed=False)
            qdir.mkdir(parents=True, exist_ok=True)
            self._maybe_sweep(qdir)
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                self._wait_for(path, marker)
                continue
            try:
                if _read_record(path) is not None:  # another caller made it between our look and our marker
                    continue
                messages, receipts = self._claim(queue, limit, ttl, max_bytes)
                if messages:
                    _write_record(qdir, token, queue, self.clock(), messages, receipts)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(marker)
            return ClaimedBatch(token, messages, replayed=False)

    def _claim(self, queue: str, limit: int, ttl: float,
               max_bytes: int | None) -> tuple[list[Message], list[str]]:
        messages: list[Message] = []
        receipts: list[str] = []
        size = 0
        while len(messages) < limit and (max_bytes is None or size < max_bytes):
            want = min(MAX_POLL_LIMIT, limit - len(messages))
            if max_bytes is not None:  # one message first, then aim at the budget from the sizes seen
                average = size // len(messages) if messages else max_bytes
                want = max(1, min(want, (max_bytes - size) // max(1, average)))
            got = self.store.poll(queue, limit=want, claim_ttl=ttl)
            for d in got:
                messages.append(d.message)
                receipts.append(d.receipt)
                size += len(d.message.body)
            if not got:
                break  # nothing more unclaimed right now (a short poll may only have run out of time)
        return messages, receipts

    def _wait_for(self, path: Path, marker: Path) -> None:
        """Another caller is making the first claim of this token: wait for its record, or take
        the marker over once it is stale (its maker died)."""
        deadline = time.monotonic() + STALE_CLAIM + 5
        while time.monotonic() < deadline:
            if _read_record(path) is not None:
                return
            try:
                age = self.clock() - marker.stat().st_mtime
            except FileNotFoundError:
                return  # the claimer finished (or gave up): look again
            if age > STALE_CLAIM:
                taken = marker.with_name(f".{marker.name}.{L.new_token()}")
                with contextlib.suppress(FileNotFoundError):
                    os.rename(marker, taken)  # one caller's rename wins; the others find no marker
                    os.unlink(taken)
                return
            time.sleep(0.05)

    def _maybe_sweep(self, qdir: Path) -> None:
        now = self.clock()
        key = str(qdir)
        with self._lock:
            if now - self._swept.get(key, 0.0) < SWEEP_INTERVAL:
                return
            self._swept[key] = now
        for name in listdir(key):
            with contextlib.suppress(FileNotFoundError):
                if now - os.stat(qdir / name).st_mtime > (RECORD_RETENTION if not name.startswith(".") else 3600):
                    os.unlink(qdir / name)


# --- records -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Record:
    receipts: list[str]
    messages: list[Message]


def _write_record(qdir: Path, token: str, queue: str, now: float, messages: Sequence[Message],
                  receipts: Sequence[str]) -> None:
    head = {"v": 1, "queue": queue, "token": token, "created": now, "receipts": list(receipts),
            "messages": [[m.id, m.sent_at, m.receive_count, m.first_received_at, dict(m.attributes), len(m.body)]
                         for m in messages]}
    data = json.dumps(head, separators=(",", ":")).encode() + b"\n" + b"".join(m.body for m in messages)
    tmp = qdir / f".{token}.{L.new_token()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, qdir / token)


def _read_record(path: Path) -> _Record | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, IsADirectoryError):
        return None
    head_end = data.find(b"\n")
    if head_end < 0:
        return None
    try:
        head: dict[str, Any] = json.loads(data[:head_end])
        receipts = [str(r) for r in head["receipts"]]
        messages: list[Message] = []
        offset = head_end + 1
        for mid, sent_at, rc, frt, attributes, length in head["messages"]:
            body = data[offset:offset + length]
            if len(body) != length:
                return None  # torn: counts as absent
            offset += length
            messages.append(Message(id=mid, body=body, sent_at=float(sent_at), receive_count=int(rc),
                                    first_received_at=None if frt is None else float(frt),
                                    attributes=attributes))
    except (ValueError, KeyError, TypeError):
        return None
    if offset != len(data):
        return None
    return _Record(receipts, messages)
