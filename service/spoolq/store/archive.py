"""Archive: acknowledged messages of archive-enabled queues, kept in rolling JSON-lines segments.

On ack, an archive-enabled queue renames the claimed file to
``acked/<claimed-name>~<ack-ms-hex>`` (no rewrite, no flush). Compaction turns many of
those into one segment, crash-safely:

1. rename up to ``SEGMENT_MAX`` acked files into ``archive-work/<segment>/`` (this claims
   them: two compactors never take the same file);
2. write ``archive/<qdir>/<segment>.jsonl`` through a temp file, fsync it, rename it in,
   fsync the directory (and ``archive/`` when ``<qdir>`` is new: the segment's name must last);
3. remove ``archive-work/<segment>/``.

A crash after 1 leaves a work directory without a segment: the next compaction writes
the segment from it. A crash after 2 leaves both: the next compaction sees the segment
and only removes the work directory. So every acked message lands in exactly one
segment. Segments live in ``archive/<adir>/`` (:func:`~spoolq.store.layout.archive_dir_name`:
the queue's directory name with ``+`` for ``:``, which Hadoop cannot list). Each line is one record::

    {"queue", "id", "body" (UTF-8 text or null), "body_base64", "attributes",
     "sent_at", "first_received_at", "acked_at", "receive_count"}   (times: epoch seconds)

Segments older than the queue's ``archive_retention`` are deleted by maintenance.
Spark reads ``<root>/archive/*/*.jsonl`` in bulk.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import time
from typing import Any

from spoolq.store import layout as L
from spoolq.store.catalog import QueueCatalog
from spoolq.store.codec import CorruptMessage, decode_message
from spoolq.store.fileops import TempWriter, fsync_dir, listdir, make_dirs_durable, read_file
from spoolq.store.handle import QueueHandle

SEGMENT_MAX = 10_000
#: compaction waits for this many acked files, or for the oldest to be this old (seconds)
SEGMENT_MIN = 1_000
SEGMENT_MAX_WAIT = 5.0
#: a work directory this old (seconds) with no segment is taken to belong to a dead compactor
WORK_STALE = 60.0


def _record(queue: str, acked_name: str, data: bytes) -> dict[str, Any] | None:
    parts = acked_name.split("~")
    if len(parts) not in (4, 6):  # ready name + ack, or claimed/delayed name + ack
        return None
    try:
        meta, body = decode_message(data)
    except CorruptMessage:
        return None
    mid, rc, frt, ack = parts[0], int(parts[1]), int(parts[2], 16), int(parts[-1], 16)
    try:
        text: str | None = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {"queue": queue, "id": mid, "body": text, "body_base64": base64.b64encode(body).decode(),
            "attributes": meta.get("a") or {}, "sent_at": int(meta.get("t", L.id_time_ms(mid))) / 1000,
            "first_received_at": frt / 1000 if frt else None, "acked_at": ack / 1000, "receive_count": rc}


class Archive:
    """The archive of a store's queues (see the module docstring): compaction, expiry, listing."""

    def __init__(self, catalog: QueueCatalog, tmp: TempWriter, fsync: bool) -> None:
        self.catalog = catalog
        self.tmp = tmp
        self.fsync = fsync

    def _write_segment(self, q: QueueHandle, work: str, segment: str) -> int:
        out_dir = self.catalog.root / "archive" / L.archive_dir_name(q.name)
        if self.fsync:
            make_dirs_durable(str(out_dir), str(self.catalog.root / "archive"))  # the segment's name must last
        else:
            out_dir.mkdir(parents=True, exist_ok=True)
        final = out_dir / f"{segment}.jsonl"
        if final.exists():
            return 0
        lines = []
        for n in sorted(listdir(work)):
            with contextlib.suppress(FileNotFoundError):
                rec = _record(q.name, n, read_file(f"{work}/{n}"))
                if rec is not None:
                    lines.append(json.dumps(rec, separators=(",", ":")))
        data = ("\n".join(lines) + "\n").encode() if lines else b""
        tmp = self.tmp.write(data, fsync_file=self.fsync)
        os.rename(tmp, final)
        if self.fsync:
            fsync_dir(str(out_dir))
        return len(lines)


    def compact(self, q: QueueHandle, now_ms: int, force: bool = False) -> int:
        """Turn acked files into a segment when enough are waiting. Returns records archived."""
        archived = 0
        work_root = q.sub("archive-work")
        # finish work left by dead compactors
        for seg in listdir(work_root):
            work = f"{work_root}/{seg}"
            try:
                age = time.time() - os.stat(work).st_mtime
            except FileNotFoundError:
                continue
            final = self.catalog.root / "archive" / L.archive_dir_name(q.name) / f"{seg}.jsonl"
            if final.exists() or age > WORK_STALE:
                if not final.exists():
                    archived += self._write_segment(q, work, seg)
                shutil.rmtree(work, ignore_errors=True)
        acked_dir = q.sub("acked")
        names = sorted(listdir(acked_dir))
        if not names:
            return archived
        oldest_ack = max((int(n.rsplit("~", 1)[-1], 16) for n in names[:50] if "~" in n), default=now_ms)
        if not force and len(names) < SEGMENT_MIN and now_ms - oldest_ack < SEGMENT_MAX_WAIT * 1000:
            return archived
        segment = f"{now_ms:013d}-{L.new_token()}"
        work = f"{work_root}/{segment}"
        os.makedirs(work, exist_ok=True)
        for n in names[:SEGMENT_MAX]:
            with contextlib.suppress(FileNotFoundError):
                os.rename(f"{acked_dir}/{n}", f"{work}/{n}")
        archived += self._write_segment(q, work, segment)
        shutil.rmtree(work, ignore_errors=True)
        return archived


    def expire_segments(self, now_ms: int) -> int:
        """Delete the segments older than their queue's ``archive_retention`` (30 days for a queue gone)."""
        removed = 0
        retention: dict[str, float] = {}
        for name in self.catalog.list_queues():
            info = self.catalog.find(name)
            if info is not None:
                retention[L.archive_dir_name(name)] = info.info.config.archive_retention
        base = self.catalog.root / "archive"
        for qdir in listdir(str(base)):
            keep = retention.get(qdir, 30 * 86400.0)
            for seg in listdir(str(base / qdir)):
                path = base / qdir / seg
                try:
                    if now_ms / 1000 - path.stat().st_mtime > keep:
                        path.unlink()
                        removed += 1
                except FileNotFoundError:
                    continue
        return removed


    def segments(self, queue: str | None = None) -> list[str]:
        """Paths of the archive segments of one queue, or of all queues."""
        base = self.catalog.root / "archive"
        qdirs = [L.archive_dir_name(L.check_queue_name(queue))] if queue is not None else listdir(str(base))
        return sorted(str(base / d / s) for d in qdirs for s in listdir(str(base / d)) if s.endswith(".jsonl"))
