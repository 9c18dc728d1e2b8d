"""The storage engine: the one home of queue semantics. Imports nothing from Flask."""

from spoolq.store.contract import QueueStore, Wakeups
from spoolq.store.filestore import FileStore
from spoolq.store.model import (
    DeadLetterPolicy,
    DedupScope,
    Delivery,
    Message,
    MoveState,
    MoveStatus,
    OutgoingMessage,
    QueueConfig,
    QueueCounts,
    QueueInfo,
    QueueKind,
    SendResult,
)

__all__ = [
    "DeadLetterPolicy",
    "DedupScope",
    "Delivery",
    "FileStore",
    "Message",
    "MoveState",
    "MoveStatus",
    "OutgoingMessage",
    "QueueConfig",
    "QueueCounts",
    "QueueInfo",
    "QueueKind",
    "QueueStore",
    "SendResult",
    "Wakeups",
]
