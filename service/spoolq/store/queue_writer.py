"""Writes into a queue from outside its own send: a message from another queue, a small record.

:class:`QueueWriter` renames a message file of one queue into another queue's ready state
(:meth:`QueueWriter.transfer`: a move, a dead letter), with the commit journal told first
(:meth:`QueueWriter.note_departures`) so that a replay never writes a message back where a
transfer took it from, and writes the small records that live beside a queue's messages
(:meth:`QueueWriter.write_marker`: dedup and FIFO deduplication markers). Both are flushed with
the flush of the operation that made them (the group commit's noted directories).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spoolq.errors import QueueNotFound, storage_error
from spoolq.store import layout as L
from spoolq.store.fileops import TempWriter, rename_into
from spoolq.store.group_commit import GroupCommit
from spoolq.store.handle import QueueHandle
from spoolq.store.model import QueueKind
from spoolq.store.watch import Watcher


class QueueWriter:
    """Transfers between queues and records beside messages (see the module docstring)."""

    def __init__(self, *, queues_dir: str, ids: L.IdFactory, tmp: TempWriter, commit: GroupCommit,
                 watcher: Watcher, clock: Callable[[], float]) -> None:
        self._queues_dir = queues_dir
        self._ids = ids
        self._tmp = tmp
        self._commit = commit
        self._watcher = watcher
        self._clock = clock

    def write_marker(self, q: QueueHandle, marker: str, data: bytes) -> None:
        """Write (or replace) a small record under the queue directory; a purge that is replacing
        ``dedup/`` at the same moment does not make it fail (see :func:`rename_into`). Flushed with
        the send's messages: with per-file fsync its data now and its directory by the group's flush."""
        written = False
        try:
            with self._tmp.held(data, fsync_file=self._commit.per_file) as t:  # renamed while open
                written = True
                rename_into(t, os.path.dirname(marker), os.path.basename(marker), base=q.path)
        except OSError as e:
            if written and isinstance(e, FileNotFoundError):
                raise QueueNotFound(q.name) from None
            raise storage_error(e, "writing a dedup marker") from e
        self._commit.note_paths(os.path.dirname(marker))

    def note_departures(self, moves: Sequence[tuple[str, QueueHandle, str]]) -> None:
        """With the commit journal: record durably that the message files ``src`` are about to go
        to queue ``target`` under ``new_id`` (see :mod:`spoolq.store.journal`), before the renames,
        so that a replay never writes back a message a transfer took elsewhere. Only messages of
        standard queues can have journaled sends: the caller leaves the others out."""
        journal = self._commit.journal
        if journal is None or not moves:
            return
        cut = len(self._queues_dir) + 1
        try:
            journal.append_moves([(src[cut:], os.path.basename(target.path), new_id) for src, target, new_id in moves])
        except OSError as e:
            raise storage_error(e, "journaling a transfer") from e
        journal.flush()

    def transfer(self, src: str, target: QueueHandle, meta: Mapping[str, Any],
                 keep_counts: tuple[int, int] | None = None, new_id: str | None = None, *,
                 from_standard: bool = False) -> str | None:
        """Rename the message file ``src`` into ``target``'s ready state under ``new_id`` (a fresh id
        if not given); the new id, or None if ``src`` is gone. ``from_standard``: ``src`` is in a
        standard queue and its departure was not noted yet (:meth:`note_departures`)."""
        if new_id is None:
            new_id = self._ids.new_id(target.name, int(self._clock() * 1000))
        if from_standard:
            self.note_departures([(src, target, new_id)])
        if target.kind is QueueKind.FIFO:
            bucket = L.fifo_bucket(str(meta.get("g") or "default"))
        else:
            bucket = L.std_bucket(L.id_time_ms(new_id))
        rc, frt = keep_counts or (0, 0)
        try:
            with target.renaming_into_groups(), target.renaming_into_buckets():
                rename_into(src, target.ready_dir(bucket), L.ready_name(new_id, rc, frt), base=target.path)
        except FileNotFoundError:
            return None
        self._commit.note_paths(target.ready_dir(bucket), os.path.dirname(src))
        self._watcher.notify(target.path)
        return new_id
