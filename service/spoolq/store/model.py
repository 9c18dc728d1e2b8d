"""Values the store takes and returns (the contract they serve is :mod:`spoolq.store.contract`).

These are the only types a front door (EmoDB REST, SQS, MQ, Disque-style jobs, Spark)
needs from the engine. All are frozen; bodies are opaque bytes; ``attributes`` is an
opaque JSON-able mapping a front door may use for its own per-message metadata (SQS
message attributes, trace headers). Times are float seconds since the epoch.
"""

from __future__ import annotations

import enum
import re
import zlib
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from spoolq.errors import InvalidMessageId, InvalidQueueName, MessageIdChecksumMismatch

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
#: Most messages one batch claim may hold (:mod:`spoolq.store.batches`).
MAX_BATCH_CLAIM = 10_000
#: A batch claim's token (:mod:`spoolq.store.batches`).
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$")
#: FIFO deduplication window (SQS: 5 minutes).
FIFO_DEDUP_WINDOW = 300.0


_Value = TypeVar("_Value")


def quick_init(cls: type[_Value]) -> type[_Value]:
    """Give a frozen dataclass an ``__init__`` that fills the new instance's ``__dict__`` directly.

    Put it above ``@dataclass(frozen=True)`` on the values made per message (ids, names, messages,
    deliveries). The ``__init__`` a frozen dataclass gets sets each field through
    ``object.__setattr__`` (its own ``__setattr__`` refuses): about 2,000 instructions a field, most
    of the cost of building a message, several times per message on every request. This one takes
    the same parameters with the same defaults (positional or by keyword, as the dataclass's does)
    and stores the same values; the instance stays frozen (``__setattr__`` still refuses), equal,
    hashable and ``dataclasses.replace``-able as before. Classes with a ``default_factory``,
    ``__post_init__``, ``slots``, an ``init=False`` or a keyword-only field are refused: they keep the dataclass's own.
    """
    params: list[str] = []
    stores: list[str] = []
    defaults: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.default_factory is not MISSING or not f.init or f.kw_only is True:
            raise TypeError(f"quick_init: {cls.__name__}.{f.name} needs the dataclass's own __init__")
        if f.default is MISSING:
            params.append(f.name)
        else:
            defaults[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        stores.append(f"    __quick_dict__[{f.name!r}] = {f.name}")
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__"):
        raise TypeError(f"quick_init: {cls.__name__} needs the dataclass's own __init__")
    source = (f"def __init__(__quick_self__, {', '.join(params)}):\n"
              "    __quick_dict__ = __quick_self__.__dict__\n" + "\n".join(stores) + "\n")
    namespace: dict[str, Any] = {}
    exec(source, defaults, namespace)  # the source is made above from the class's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


# ---------------------------------------------------------------- the names a door may check
# (the on-disk grammar built on them is spoolq.store.layout's)

#: a store queue name: 1-400 characters of A-Z a-z 0-9 . _ : @ -, not ``.`` or ``..``
QUEUE_NAME_RE = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9._:@-]{1,400}$")
#: a message id: 40 lowercase hex digits (the last four a checksum bound to its queue)
ID_RE = re.compile(r"^[0-9a-f]{40}$")
HEX_ID_RE = re.compile(r"^[0-9a-f]+$")
#: a message group id or deduplication id: 1 to 128 printable ASCII characters, no space (SQS's rule)
MESSAGE_KEY_RE = re.compile(r"^[!-~]{1,128}$")
#: a receipt: ``<claim shard>:<claimed file name>`` (:class:`Delivery`'s ``receipt``)
RECEIPT_RE = re.compile(r"^([0-9a-f]|g[0-9a-f]{16}):([0-9a-f]{40}~\d{1,9}~[0-9a-f]{1,12}~[0-9a-f]{1,12}~[0-9a-f]{16})$")


def is_queue_name(name: object) -> bool:
    """Whether ``name`` is a legal store queue name."""
    return isinstance(name, str) and QUEUE_NAME_RE.fullmatch(name) is not None


def check_queue_name(name: object) -> str:
    """Return ``name`` if it is a legal store queue name, else raise :class:`InvalidQueueName`."""
    if not isinstance(name, str) or not QUEUE_NAME_RE.fullmatch(name):
        shown = repr(name)[:80]
        raise InvalidQueueName(
            f"invalid queue name {shown}: use 1-400 characters of A-Z a-z 0-9 . _ : @ -, not '.' or '..'"
        )
    return name


def id_checksum(head: bytes, queue: str) -> int:
    """The 16-bit checksum that binds a message id's head to its queue."""
    return zlib.crc32(head + queue.encode()) & 0xFFFF


def check_message_id(ref: object, queue: str) -> str:
    """Validate a bare message id against ``queue`` (EmoDB: 'Invalid event ID.' / '... checksum.')."""
    if not isinstance(ref, str) or not HEX_ID_RE.fullmatch(ref) or len(ref) != 40:
        raise InvalidMessageId("Invalid event ID.")
    raw = bytes.fromhex(ref)
    if int.from_bytes(raw[18:], "big") != id_checksum(raw[:18], queue):
        raise MessageIdChecksumMismatch("Invalid event ID checksum.")
    return ref


def message_id_of(ref: object, queue: str) -> str:
    """The message id that ``ref`` (a message id or a receipt of ``queue``) names, checked against
    ``queue`` as :func:`check_message_id` does."""
    if isinstance(ref, str):
        receipt = RECEIPT_RE.fullmatch(ref)
        if receipt:
            return check_message_id(receipt.group(2).partition("~")[0], queue)  # the name's first field
    return check_message_id(ref, queue)


class DedupScope(enum.StrEnum):
    """What a FIFO queue deduplicates within: the whole queue, or each message group (SQS's
    ``DeduplicationScope``): with ``MESSAGE_GROUP`` one deduplication id may be used once per group."""

    QUEUE = "queue"
    MESSAGE_GROUP = "messageGroup"


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
    dedup_scope: DedupScope = DedupScope.QUEUE  # FIFO: deduplicate in the queue, or per message group
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


@quick_init
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
    #: bytes of the door's own metadata that count toward the queue's ``max_message_bytes`` besides
    #: the body (SQS counts message attribute names, types and values)
    extra_bytes: int = 0


@quick_init
@dataclass(frozen=True)
class SendResult:
    id: str
    sequence_number: str | None = None  # FIFO only
    duplicate: bool = False  # collapsed into an earlier pending copy (dedup / FIFO window)


@quick_init
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


@quick_init
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
