"""Asynchronous queue moves with a persisted status that survives restarts.

``moves/<ref>.json`` holds the status: source, destination, state (IN_PROGRESS,
COMPLETE, ERROR, CANCELLED), messages moved, the cutoff (messages sent after the move
started are not moved), the owner (node:pid) and a heartbeat. The status is replaced
atomically and flushed.

A move renames each message file of the source (ready, delayed or claimed: claims do
not follow) into the destination's ready state under a new id. A rename is atomic, so
a crash mid-move leaves every message in exactly one queue. The owner rewrites the
heartbeat after every chunk, after flushing the chunk's renames; if the heartbeat is
older than ``STALE_AFTER`` seconds, any process's maintenance takes the move over and
continues where the files say it is. Two takers racing are harmless: each rename has
one winner. An unexpected error marks the move ERROR with the reason, never leaves it
silently half-done. ``moves/<ref>.cancel`` asks the owner to stop (CANCELLED).

Refs are RFC 4648 base32 (upper case, no padding) of 16 random bytes plus
``move-queue``: 42 characters, the shape EmoDB clients expect.
"""

from __future__ import annotations

import base64
import contextlib
import os
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from spoolq.errors import InvalidArgument, UnknownMove, storage_error
from spoolq.store import layout as L
from spoolq.store.core import write_window_start
from spoolq.store.files import (
    CorruptMessage,
    decode_message,
    listdir,
    read_file,
    read_json,
    write_json_atomic,
)
from spoolq.store.model import MoveState, MoveStatus, QueueKind

if TYPE_CHECKING:
    from spoolq.store.core import QueueHandle
    from spoolq.store.filestore import FileStore

STALE_AFTER = 15.0
CHUNK = 500


class MoveRunner:
    def __init__(self, store: FileStore) -> None:
        self.store = store
        self.dir = store.root / "moves"
        self._running: set[str] = set()
        self._lock = threading.Lock()

    # ------------------------------------------------------------ public

    def start(self, source: str, destination: str, max_per_second: int | None = None) -> str:
        L.check_queue_name(source)
        L.check_queue_name(destination)
        if source == destination:
            raise InvalidArgument("cannot move queue to itself")
        if max_per_second is not None and (isinstance(max_per_second, bool) or not isinstance(max_per_second, int)
                                           or not 1 <= max_per_second <= 1_000_000):
            raise InvalidArgument("max_per_second must be an integer between 1 and 1000000")
        ref = base64.b32encode(uuid.uuid4().bytes + b"move-queue").decode().rstrip("=")
        now = self.store.clock()
        status = {"ref": ref, "source": source, "destination": destination, "state": MoveState.IN_PROGRESS.value,
                  "moved": 0, "started_at": now, "finished_at": None, "error": None,
                  "max_per_second": max_per_second, "cutoff_ms": int(now * 1000) + 1,
                  "owner": self._owner(), "heartbeat": now}
        self._save(ref, status)
        self._launch(ref)
        return ref

    def status(self, ref: str) -> MoveStatus:
        return self._to_status(self._load(ref))

    def cancel(self, ref: str) -> MoveStatus:
        data = self._load(ref)
        if data["state"] == MoveState.IN_PROGRESS.value:
            try:
                (self.dir / f"{ref}.cancel").touch()
            except OSError as e:
                raise storage_error(e, "cancelling a move") from e
            deadline = time.monotonic() + 2.0
            while ref in self._running and time.monotonic() < deadline:
                time.sleep(0.01)
            data = self._load(ref)
            if ref not in self._running and data["state"] == MoveState.IN_PROGRESS.value:
                data.update(state=MoveState.CANCELLED.value, finished_at=self.store.clock())
                self._save(ref, data)
        return self._to_status(data)

    def list_all(self, source: str | None = None) -> list[MoveStatus]:
        out = []
        for n in sorted(listdir(str(self.dir))):
            if not n.endswith(".json"):
                continue
            data = read_json(self.dir / n)
            if data and (source is None or data.get("source") == source):
                out.append(self._to_status(data))
        return sorted(out, key=lambda s: s.started_at, reverse=True)

    def resume_stale(self, now_ms: int) -> int:
        resumed = 0
        for n in listdir(str(self.dir)):
            if not n.endswith(".json"):
                continue
            ref = n[:-5]
            data = read_json(self.dir / n)
            if not data or data.get("state") != MoveState.IN_PROGRESS.value or ref in self._running:
                continue
            if now_ms / 1000 - float(data.get("heartbeat") or 0) > STALE_AFTER:
                data.update(owner=self._owner(), heartbeat=now_ms / 1000)
                self._save(ref, data)
                self._launch(ref)
                resumed += 1
        return resumed

    # ------------------------------------------------------------ internals

    def _owner(self) -> str:
        return f"{self.store.node_id}:{os.getpid()}"

    def _load(self, ref: str) -> dict[str, Any]:
        if not isinstance(ref, str) or not L.MOVE_REF_RE.match(ref):
            raise UnknownMove(str(ref)[:100])
        data = read_json(self.dir / f"{ref}.json")
        if data is None:
            raise UnknownMove(ref)
        return data

    def _save(self, ref: str, data: dict[str, Any]) -> None:
        try:
            write_json_atomic(self.dir / f"{ref}.json", data, self.store.tmp, self.store.fsync)
        except OSError as e:
            raise storage_error(e, "saving move status") from e

    @staticmethod
    def _to_status(data: dict[str, Any]) -> MoveStatus:
        return MoveStatus(ref=data["ref"], source=data["source"], destination=data["destination"],
                          state=MoveState(data["state"]), moved=int(data.get("moved") or 0),
                          started_at=float(data["started_at"]), finished_at=data.get("finished_at"),
                          error=data.get("error"), max_per_second=data.get("max_per_second"))

    def _launch(self, ref: str) -> None:
        with self._lock:
            if ref in self._running:
                return
            self._running.add(ref)
        threading.Thread(target=self._run, args=(ref,), name=f"spoolq-move-{ref[:8]}", daemon=True).start()

    def _run(self, ref: str) -> None:
        try:
            data = self._load(ref)
            try:
                self._move_all(ref, data)
                if (self.dir / f"{ref}.cancel").exists():
                    data["state"] = MoveState.CANCELLED.value
                else:
                    data["state"] = MoveState.COMPLETE.value
            except Exception as e:  # any failure is reported, never silently half-done
                data.update(state=MoveState.ERROR.value, error=f"{type(e).__name__}: {e}")
            data.update(finished_at=self.store.clock(), heartbeat=self.store.clock())
            with contextlib.suppress(Exception):
                self._save(ref, data)
        finally:
            with self._lock:
                self._running.discard(ref)

    def _sources(self, src: QueueHandle, cutoff_ms: int) -> list[str]:
        paths = []
        dirs = [d for _b, d in src.ready_buckets(write_window_start(self.store.now_ms()))]
        for state in ("delayed", "claimed"):
            dirs.extend(src.sub(f"{state}/{b}") for b in sorted(listdir(src.sub(state))))
        for d in dirs:
            for n in sorted(listdir(d)):
                if L.ID_RE.match(n[:40]) and L.id_time_ms(n[:40]) < cutoff_ms:
                    paths.append(f"{d}/{n}")
        return paths

    def _move_all(self, ref: str, data: dict[str, Any]) -> None:
        store = self.store
        src = store._find(data["source"])
        if src is None:
            return
        dst = store._find(data["destination"])
        if dst is None:
            store.create_queue(data["destination"], src.kind)
            dst = store._require(data["destination"])
        rate = data.get("max_per_second")
        started = time.monotonic()
        moved_before = int(data.get("moved") or 0)  # by earlier owners of a resumed move
        moved_here = 0
        pending = self._sources(src, int(data["cutoff_ms"]))
        for i in range(0, len(pending), CHUNK):
            if (self.dir / f"{ref}.cancel").exists():
                return
            for path in pending[i:i + CHUNK]:
                if self._move_one(path, dst):
                    moved_here += 1
                    if rate:
                        ahead = moved_here / rate - (time.monotonic() - started)
                        if ahead > 0:
                            time.sleep(ahead)
            store.commit.flush()
            data.update(moved=moved_before + moved_here, heartbeat=store.clock())
            self._save(ref, data)
        store.commit.flush()
        data["moved"] = moved_before + moved_here

    def _move_one(self, path: str, dst: QueueHandle) -> bool:
        store = self.store
        meta: dict[str, Any] = {}
        if dst.kind in (QueueKind.FIFO, QueueKind.DEDUP):
            try:
                meta, body = decode_message(read_file(path))
            except FileNotFoundError:
                return False
            except CorruptMessage:
                return False
            if dst.kind is QueueKind.DEDUP:
                marker = dst.dedup_marker(body)
                if store._pending_copy(dst, marker) is not None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
                        return True
                    return False
        new_id = store.transfer(path, dst, meta)
        if new_id is not None and dst.kind is QueueKind.DEDUP:
            # re-dedup at the destination: the moved copy is now the pending one
            store._write_marker(dst, marker, new_id.encode())
        return new_id is not None
