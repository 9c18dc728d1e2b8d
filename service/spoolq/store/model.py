"""Values the store takes and returns (the contract they serve is :mod:`spoolq.store.contract`).

These are the only types a front door (EmoDB REST, SQS, MQ, Disque-style jobs, Spark)
needs from the engine. All are frozen; bodies are opaque bytes; ``attributes`` is an
opaque JSON-able mapping a front door may use for its own per-message metadata (SQS
message attributes, trace headers). Times are float seconds since the epoch.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Default claim ttl (visibility timeout) in seconds.
DEFAULT_CLAIM_TTL = 30.0
#: Longest claim the store accepts (SQS's 12 hours).
MAX_CLAIM_TTL = 43_200.0
#: Longest per-message delay the store accepts (Disque allows long delays; SQS caps at 900 at its door).
MAX_DELAY = 365 * 86_400.0
#: Default and maximum time a message is kept before it is dropped unconsumed.
DEFAULT_RETENTION = 14 * 86_400.0
MAX_RETENTION = 365 * 86_400.0
#: Largest body the store accepts by default (SQS's 1 MiB); front doors may enforce less.
DEFAULT_MAX_MESSAGE_BYTES = 1_048_576
#: Longest long-poll wait.
MAX_WAIT = 20.0
#: Most messages one poll may return.
MAX_POLL_LIMIT = 1000
#: Most messages one peek may return.
MAX_PEEK_LIMIT = 5000
#: Most entries one send batch may hold.
MAX_BATCH = 10_000
#: FIFO deduplication window (SQS: 5 minutes).
FIFO_DEDUP_WINDOW = 300.0


class QueueKind(enum.StrEnum):
    STANDARD = "standard"
    DEDUP = "dedup"  # EmoDB DedupQueueService: identical pending, unsurfaced payloads collapse
    FIFO = "fifo"  # SQS FIFO: per-group order (a group delivers up to its first message in flight), 5-minute dedup


class MoveState(enum.StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETE = "COMPLETE"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"


@dataclass(frozen=True)
class DeadLetterPolicy:
    """After ``max_receives`` receives, the next receive moves the message to ``queue`` instead."""

    queue: str
    max_receives: int


@dataclass(frozen=True)
class QueueConfig:
    claim_ttl: float = DEFAULT_CLAIM_TTL  # default visibility timeout
    delay: float = 0.0  # default delay of new messages
    retention: float = DEFAULT_RETENTION  # unconsumed messages older than this are dropped
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    receive_wait: float = 0.0  # default long-poll wait (SQS ReceiveMessageWaitTimeSeconds)
    dead_letter: DeadLetterPolicy | None = None
    archive: bool = False  # keep acknowledged messages in archive segments
    archive_retention: float = 30 * 86_400.0
    content_based_dedup: bool = False  # FIFO: dedup id defaults to SHA-256 of the body
    #: front-door attributes the store keeps but does not interpret (SQS Policy, KMS, ...)
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class QueueInfo:
    name: str
    kind: QueueKind
    config: QueueConfig
    tags: Mapping[str, str]
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class OutgoingMessage:
    """One message to send. ``None`` fields take the queue's defaults."""

    body: bytes
    delay: float | None = None
    ttl: float | None = None  # Disque TTL: drop if not consumed within this many seconds
    max_receives: int | None = None  # after this many receives, dead-letter (or drop without a DLQ)
    at_most_once: bool = False  # Disque retry=0: delivered at most once, never requeued
    group_id: str | None = None  # FIFO group (required on FIFO queues); kept on others
    dedup_id: str | None = None  # FIFO deduplication id
    attributes: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class SendResult:
    id: str
    sequence_number: str | None = None  # FIFO only
    duplicate: bool = False  # collapsed into an earlier pending copy (dedup / FIFO window)


@dataclass(frozen=True)
class Message:
    id: str
    body: bytes
    sent_at: float
    receive_count: int
    first_received_at: float | None
    attributes: Mapping[str, Any]
    group_id: str | None = None
    dedup_id: str | None = None
    sequence_number: str | None = None
    claimed_until: float | None = None  # set on peeked messages that are claimed


@dataclass(frozen=True)
class Delivery:
    """A message handed to a poller. ``receipt`` names this one delivery (SQS receipt handle)."""

    message: Message
    receipt: str
    claimed_until: float


@dataclass(frozen=True)
class QueueCounts:
    ready: int
    claimed: int
    delayed: int
    exact: bool  # False when ``ready`` was estimated beyond the asked limit

    @property
    def total(self) -> int:
        return self.ready + self.claimed + self.delayed


@dataclass(frozen=True)
class MoveStatus:
    ref: str
    source: str
    destination: str
    state: MoveState
    moved: int
    started_at: float
    finished_at: float | None = None
    error: str | None = None
    max_per_second: int | None = None


#: a queue as the message operations take it: its name, or the :class:`QueueInfo` a lookup in the
#: same request returned, which spares the store a second lookup (see :mod:`spoolq.store.contract`)
QueueRef = str | QueueInfo


def queue_name_of(queue: QueueRef) -> str:
    return queue if isinstance(queue, str) else queue.name


#: the states of a message, as :class:`JobView` names them
READY, CLAIMED, DELAYED = "ready", "claimed", "delayed"


@dataclass(frozen=True)
class JobView:
    """A message found by id alone (the Disque door), with where it is now."""

    message: Message
    state: str  # READY, CLAIMED or DELAYED
    until: float | None  # claimed: claim expiry; delayed: when it becomes ready (epoch seconds)
    nacks: int
