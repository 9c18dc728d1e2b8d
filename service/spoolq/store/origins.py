"""Where a dead-lettered message came from, so that a move can return each message to its source.

``origins/<id>`` inside a dead-letter queue holds the name of the queue that the message with
that id was dead-lettered from. It is written just before the message is renamed into the
dead-letter queue (a marker whose message never arrived is harmless: ids are never reused), read
and removed by a move started with ``to_origins``, and dropped by maintenance once the id is
older than the queue's retention plus an hour (its message is gone by then). Markers are not
flushed: after a power cut one may be missing, and its message then goes to the move's
destination like a message that was never dead-lettered.
"""

from __future__ import annotations

import contextlib
import os

from spoolq.store import layout as L
from spoolq.store.files import listdir
from spoolq.store.handle import QueueHandle

ORIGINS = "origins"
#: a marker outlives its queue's retention by this much before maintenance drops it (ms)
PRUNE_MARGIN_MS = 3_600_000
PRUNE_EVERY_MS = 600_000
_pruned_at: dict[str, int] = {}  # queue path -> when this process last looked at its markers


def note_origin(dlq: QueueHandle, message_id: str, origin: str) -> None:
    """Record that ``message_id`` (its id in ``dlq``) comes from the queue ``origin``."""
    directory = dlq.sub(ORIGINS)
    for attempt in range(2):
        try:
            fd = os.open(f"{directory}/{message_id}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            break
        except FileNotFoundError:
            if attempt:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory)
    try:
        os.write(fd, origin.encode("utf-8"))
    finally:
        os.close(fd)


def origin_of(q: QueueHandle, message_id: str) -> str | None:
    """The queue ``message_id`` was dead-lettered from into ``q``, if recorded."""
    try:
        with open(f"{q.sub(ORIGINS)}/{message_id}", "rb") as f:
            name = f.read(1024).decode("utf-8", "replace")
    except (FileNotFoundError, NotADirectoryError):
        return None
    return name if L.QUEUE_NAME_RE.fullmatch(name) else None


def forget_origin(q: QueueHandle, message_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(f"{q.sub(ORIGINS)}/{message_id}")


def prune_origins(q: QueueHandle, now_ms: int) -> int:
    """Drop the markers whose id is older than the queue's retention (plus a margin); looks at a
    queue's markers at most every ``PRUNE_EVERY_MS`` in this process."""
    if now_ms - _pruned_at.get(q.path, -PRUNE_EVERY_MS) < PRUNE_EVERY_MS:
        return 0
    _pruned_at[q.path] = now_ms
    cutoff = now_ms - int(q.info.config.retention * 1000) - PRUNE_MARGIN_MS
    pruned = 0
    for name in listdir(q.sub(ORIGINS)):
        if not L.ID_RE.fullmatch(name) or L.id_time_ms(name) < cutoff:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{q.sub(ORIGINS)}/{name}")
                pruned += 1
    return pruned
