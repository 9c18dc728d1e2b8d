"""The spoolq error tree.

Every error the store or a front door raises is a :class:`SpoolqError`. Each class
declares its wire identity once: the HTTP status a REST front door answers with,
and the SQS error shape (``__type``), legacy query code and status the SQS front
door renders. Front doors render errors in one handler each; views never
translate exceptions by hand.

``OSError`` never escapes the store: storage trouble (ENOSPC, EIO, EROFS, a
missing root) is wrapped in :class:`StorageUnavailable` with a retry-after hint,
raised ``from`` the original error.
"""

from __future__ import annotations

import enum
import errno
import logging
import os
import threading
import time
from typing import ClassVar

_log = logging.getLogger("spoolq.storage")


class SpoolqError(Exception):
    """Root of every error spoolq raises on purpose."""

    http_status: ClassVar[int] = 400
    sqs_type: ClassVar[str] = "InvalidParameterValue"
    sqs_query_code: ClassVar[str] = "InvalidParameterValue"
    sqs_status: ClassVar[int] = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidArgument(SpoolqError):
    """A value is malformed or out of range. The message names the problem."""


class InvalidQueueName(InvalidArgument):
    """A queue name that does not match the store's name pattern."""


class InvalidMessageId(InvalidArgument):
    """A message id or receipt that is not well formed."""


class MessageIdChecksumMismatch(InvalidMessageId):
    """A well-formed message id that belongs to another queue."""


class MessageRule(enum.StrEnum):
    """The rules the store holds every message to (:class:`MessageRefused` names the one broken)."""

    SIZE = "size"  # body (plus what the door counts, ``extra_bytes``) over the queue's max_message_bytes
    GROUP_ID = "group_id"  # a group id that is not 1 to 128 printable ASCII characters
    DEDUP_ID = "dedup_id"  # a deduplication id that is not 1 to 128 printable ASCII characters
    GROUP_ID_MISSING = "group_id_missing"  # a FIFO queue's message without a group id
    DEDUP_ID_MISSING = "dedup_id_missing"  # ... without a deduplication id and no content-based deduplication
    DEDUP_ID_NOT_FIFO = "dedup_id_not_fifo"  # a deduplication id for a queue that is not FIFO


class MessageRefused(InvalidArgument):
    """A message the store will not take: ``rule`` is the rule it breaks, ``limit`` that rule's
    bound (bytes, characters; ``None`` for a presence rule) and ``value`` what broke it (the size, the
    id). A door words the refusal its own way from these; the message is the store's wording."""

    def __init__(self, rule: MessageRule, message: str, limit: int | None = None, value: object = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.limit = limit
        self.value = value


class MessageTooLarge(MessageRefused):
    """A message over its queue's size limit (``value`` its size, ``limit`` the limit)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(MessageRule.SIZE, f"message of {size} bytes is over the limit of {limit} bytes", limit, size)


class QueueNotFound(SpoolqError):
    http_status = 404
    sqs_type = "QueueDoesNotExist"
    sqs_query_code = "AWS.SimpleQueueService.NonExistentQueue"

    def __init__(self, name: str) -> None:
        super().__init__(f"queue {name!r} does not exist")
        self.name = name


class QueueAlreadyExists(SpoolqError):
    """A queue of that name exists with a different kind or attributes."""

    http_status = 409
    sqs_type = "QueueNameExists"
    sqs_query_code = "QueueAlreadyExists"


class QueueDeletedRecently(SpoolqError):
    """A create of a name whose queue was deleted less than the asked time ago (SQS: 60 seconds)."""

    http_status = 409
    sqs_type = "QueueDeletedRecently"
    sqs_query_code = "AWS.SimpleQueueService.QueueDeletedRecently"


class QueueNotEmpty(SpoolqError):
    """``delete_queue(if_empty=True)`` of a queue that holds messages: the queue stays as it was."""

    http_status = 409
    sqs_type = "ResourceInUse"
    sqs_query_code = "ResourceInUse"

    def __init__(self, name: str) -> None:
        super().__init__(f"queue {name!r} is not empty")
        self.name = name


class QueueKindMismatch(MessageRefused):
    """A message the queue's kind does not take (no group id for a FIFO queue, a deduplication id
    for a queue that is not FIFO). In :meth:`send_each <spoolq.store.contract.QueueStore.send_each>`
    a FIFO queue's missing id refuses the whole batch: its caller does not know the queue's kind."""


class UnknownMove(SpoolqError):
    http_status = 404
    sqs_type = "ResourceNotFoundException"
    sqs_query_code = "ResourceNotFoundException"

    def __init__(self, ref: str) -> None:
        super().__init__(f"Unknown move: {ref}")
        self.ref = ref


class StorageUnavailable(SpoolqError):
    """The store cannot guarantee durability right now; retry after ``retry_after`` seconds.

    Raised for ENOSPC, EDQUOT, EIO, EROFS and a missing or unwritable root. Nothing
    half-stored is left visible when this is raised.
    """

    http_status = 503
    sqs_type = "ServiceUnavailable"
    sqs_query_code = "ServiceUnavailable"
    sqs_status = 503

    def __init__(self, message: str, retry_after: int = 5) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class DataFormatRefused(StorageUnavailable):
    """The data directory is in an on-disk format this version does not read (a newer one), or its
    format record cannot be read: nothing was changed (see :mod:`spoolq.store.root_format`)."""


#: errno values that mean "the storage cannot take this write now" rather than a bug.
STORAGE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.ENOENT, errno.EACCES, errno.EPERM,
     errno.ESTALE, errno.ENOTCONN, errno.EMFILE, errno.ENFILE}
)


def storage_error(exc: OSError, doing: str) -> StorageUnavailable:
    """Wrap an ``OSError`` met while ``doing`` something into a :class:`StorageUnavailable`."""
    reason = errno.errorcode.get(exc.errno or 0, "EUNKNOWN")
    retry = 30 if exc.errno in (errno.ENOSPC, errno.EDQUOT) else 5
    strerror = exc.strerror
    if exc.errno == errno.ENOSPC and _out_of_inodes(exc.filename):
        strerror = "no free inodes: the file system holds no more files, whatever bytes it has left"
    message = f"storage unavailable while {doing}: {reason} ({strerror})"
    _log_refusal(message, exc)
    return StorageUnavailable(message, retry)


#: the last time each kind of refusal was logged (a refusal repeats on every request until it heals)
_logged: dict[str, float] = {}
_logged_lock = threading.Lock()
LOG_EVERY = 10.0


def _log_refusal(message: str, exc: OSError) -> None:
    """Log, at WARNING and at most once per :data:`LOG_EVERY` seconds for the same message, the
    refusal with the file the file system refused: the client's answer says what failed, the
    server's log also says where (a path inside the data directory is the operator's business)."""
    now = time.monotonic()
    with _logged_lock:
        if now - _logged.get(message, -LOG_EVERY) < LOG_EVERY:
            return
        if len(_logged) > 1000:
            _logged.clear()
        _logged[message] = now
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    _log.warning("%s%s", message, f" on {where}" if where else "")


def _forget_in_child() -> None:
    global _logged_lock
    _logged_lock = threading.Lock()  # a fork while another thread held it must not leave it held


os.register_at_fork(after_in_child=_forget_in_child)


def _out_of_inodes(path: object) -> bool:
    """Whether the file system of ``path`` (or of its parent, for a file not made) has no inode left:
    ext4 answers a create with ENOSPC for that as for a full disk (one message is one inode)."""
    if not isinstance(path, str | bytes):
        return False
    for where in (path, os.path.dirname(path)):
        try:
            st = os.statvfs(where)
        except (OSError, ValueError):
            continue
        return st.f_files > 0 and st.f_favail == 0
    return False
