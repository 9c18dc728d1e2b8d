"""Asynchronous queue moves with a persisted status that survives restarts.

``moves/<ref>.json`` holds the status: source, destination, state (IN_PROGRESS,
COMPLETE, ERROR, CANCELLED), messages moved, the cutoff (messages sent after the move
started are not moved), the owner (node:pid), the run token of the current owner, a
heartbeat, and ``pending``: the renames the owner is about to make. The status is
replaced atomically and flushed.

A move renames each message file of the source (ready, delayed or claimed: claims do
not follow) into the destination's ready state under a new id. A rename is atomic, so
a crash mid-move leaves every message in exactly one queue. A move started ``to_origins``
(SQS's redrive without a destination) sends each dead-lettered message back to the queue it
was dead-lettered from (:meth:`~spoolq.store.handle.QueueHandle.origin_of`) while that queue exists, and the others to
the destination.

The owner works in batches. Before a batch it records the batch's renames as
``pending`` (source path, the new id it will get and the queue it goes to); after the renames it flushes them
and saves ``moved`` with ``pending`` emptied. So the status never claims more than is
durable, and a taker can settle what a dead owner was doing: a pending rename happened
if the source file is gone and the new id is in the destination, or the old id is in
neither queue (moved, then consumed at the destination). The one case this misreads
is a consumer of the source claiming *and* acknowledging that exact message in the
milliseconds between the owner's crash and its rename. With the commit journal
(``--flush journal``) and a standard source, the batch's renames are also journaled before
they are made (:meth:`~spoolq.store.queue_writer.QueueWriter.note_departures`), so a replay after a
power failure looks for a moved message at the destination instead of writing it back into
the source.

Rate limit (``max_per_second``)
    The owner moves its k-th message no earlier than ``k / rate`` seconds after it took
    the move, so each owner holds the rate on its own and a takeover starts afresh
    (it never bursts to "catch up"). A rate-limited batch holds what the rate allows in
    a quarter of a second (at least one message); an unlimited batch holds ``BATCH``.

Heartbeat, takeover, cancel
    The owner saves the status after every batch, and while it waits for the rate at
    least every ``SAVE_EVERY`` seconds, so the heartbeat is never older than about a
    second. If it is older than ``STALE_AFTER`` seconds, any process's maintenance takes
    the move over: it creates ``moves/<ref>.lease-<heartbeat ms>`` exclusively (of
    several takers of one stale heartbeat exactly one wins), settles ``pending``, writes
    a new run token and continues where the files say it is. Before each batch and each
    save the owner re-reads the status; if the run token is no longer its own or the
    move is no longer IN_PROGRESS, it stops without writing, so there is one owner at a
    time. ``moves/<ref>.cancel`` asks the owner to stop: it looks for it before every
    rename and every ``CANCEL_POLL`` seconds while it waits, then saves CANCELLED with the
    exact count. :meth:`MoveRunner.cancel` (any process) waits up to ``CANCEL_WAIT``
    seconds for that; if the owner is gone it marks the move CANCELLED itself.

An unexpected error marks the move ERROR with the reason, never leaves it silently
half-done.

Refs are RFC 4648 base32 (upper case, no padding) of 16 random bytes plus
``move-queue``: 42 characters, the shape EmoDB clients expect.
"""

from __future__ import annotations

import base64
import contextlib
import enum
import errno
import os
import threading
import time
import uuid
from typing import Any

from spoolq.errors import InvalidArgument, UnknownMove, storage_error
from spoolq.store import layout as L
from spoolq.store.catalog import Clock, QueueCatalog
from spoolq.store.codec import CorruptMessage, decode_message
from spoolq.store.fileops import (
    TempWriter,
    listdir,
    read_file,
    read_json,
    read_json_listed,
    write_json_atomic,
)
from spoolq.store.group_commit import GroupCommit
from spoolq.store.handle import QueueHandle, write_window_start
from spoolq.store.layout import IdFactory
from spoolq.store.model import MoveState, MoveStatus, QueueKind
from spoolq.store.queue_writer import QueueWriter

STALE_AFTER = 15.0
BATCH = 100
SAVE_EVERY = 0.25
CANCEL_POLL = 0.05
CANCEL_WAIT = 2.0


class _Stop(enum.Enum):
    DONE = "done"
    CANCELLED = "cancelled"
    LOST = "lost"  # taken over, or finished by someone else: write nothing more


class MoveRunner:
    """Starts, runs, takes over and cancels the moves of one store (see the module docstring)."""

    def __init__(self, catalog: QueueCatalog, *, ids: IdFactory, commit: GroupCommit, writer: QueueWriter,
                 tmp: TempWriter, fsync: bool, clock: Clock, node_id: str) -> None:
        self.catalog = catalog
        self.ids = ids
        self.commit = commit
        self.writer = writer
        self.tmp = tmp
        self.fsync = fsync
        self.clock = clock
        self.node_id = node_id
        self.dir = catalog.root / "moves"
        self._running: set[str] = set()
        self._lock = threading.Lock()

    # ------------------------------------------------------------ public

    def start(self, source: str, destination: str, max_per_second: int | None = None, *,
              to_origins: bool = False) -> str:
        L.check_queue_name(source)
        L.check_queue_name(destination)
        if source == destination:
            raise InvalidArgument("cannot move queue to itself")
        if max_per_second is not None and (isinstance(max_per_second, bool) or not isinstance(max_per_second, int)
                                           or not 1 <= max_per_second <= 1_000_000):
            raise InvalidArgument("max_per_second must be an integer between 1 and 1000000")
        ref = base64.b32encode(uuid.uuid4().bytes + b"move-queue").decode().rstrip("=")
        now = self.clock()
        token = uuid.uuid4().hex
        status = {"ref": ref, "source": source, "destination": destination, "state": MoveState.IN_PROGRESS.value,
                  "moved": 0, "started_at": now, "finished_at": None, "error": None,
                  "max_per_second": max_per_second, "cutoff_ms": int(now * 1000) + 1, "to_origins": to_origins,
                  "owner": self._owner(), "run": token, "heartbeat": now, "pending": []}
        self._save(ref, status)
        self._launch(ref, token)
        return ref

    def status(self, ref: str) -> MoveStatus:
        return self._to_status(self._load(ref))

    def cancel(self, ref: str) -> MoveStatus:
        data = self._load(ref)
        if data["state"] != MoveState.IN_PROGRESS.value:
            return self._to_status(data)
        try:
            (self.dir / L.move_cancel_name(ref)).touch()
        except OSError as e:
            raise storage_error(e, "cancelling a move") from e
        deadline = time.monotonic() + CANCEL_WAIT
        while time.monotonic() < deadline:
            data = self._load(ref)
            if data["state"] != MoveState.IN_PROGRESS.value:
                return self._to_status(data)
            time.sleep(0.01)
        # the owner did not answer: it is gone (or stalled; it will see the state and stop)
        data = self._load(ref)
        if data["state"] == MoveState.IN_PROGRESS.value:
            data.update(state=MoveState.CANCELLED.value, finished_at=self.clock(), run=None)
            self._save(ref, data)
        return self._to_status(data)

    def list_all(self, source: str | None = None) -> list[MoveStatus]:
        out = []
        for n in sorted(listdir(str(self.dir))):
            if L.move_ref_of(n) is None:
                continue
            data = read_json(self.dir / n, present=True)
            if data and (source is None or data.get("source") == source):
                out.append(self._to_status(data))
        return sorted(out, key=lambda s: s.started_at, reverse=True)

    def resume_stale(self, now_ms: int) -> int:
        resumed = 0
        for n in listdir(str(self.dir)):
            ref = L.move_ref_of(n)
            if ref is None:
                continue
            data = read_json(self.dir / n, present=True)
            if not data or data.get("state") != MoveState.IN_PROGRESS.value or ref in self._running:
                continue
            heartbeat = float(data.get("heartbeat") or 0)
            if now_ms / 1000 - heartbeat <= STALE_AFTER:
                continue
            try:
                fd = os.open(self.dir / f"{L.move_lease_prefix(ref)}{int(heartbeat * 1000)}",
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                continue  # another taker won this heartbeat
            os.close(fd)
            token = uuid.uuid4().hex
            moved = int(data.get("moved") or 0) + self._settle(data)
            data.update(owner=self._owner(), run=token, heartbeat=self.clock(), moved=moved, pending=[])
            self._save(ref, data)
            self._launch(ref, token)
            resumed += 1
        return resumed

    # ------------------------------------------------------------ internals

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _owner(self) -> str:
        return f"{self.node_id}:{os.getpid()}"

    def _load(self, ref: str) -> dict[str, Any]:
        if not isinstance(ref, str) or not L.MOVE_REF_RE.match(ref):
            raise UnknownMove(str(ref)[:100])
        data = read_json_listed(self.dir / L.move_status_name(ref))  # its owner may be saving it
        if data is None:
            raise UnknownMove(ref)
        return data

    def _save(self, ref: str, data: dict[str, Any]) -> None:
        try:
            write_json_atomic(self.dir / L.move_status_name(ref), data, self.tmp, self.fsync)
        except OSError as e:
            raise storage_error(e, "saving move status") from e

    def _mine(self, ref: str, token: str) -> bool:
        data = read_json(self.dir / L.move_status_name(ref), present=True)
        return data is not None and data.get("run") == token and data.get("state") == MoveState.IN_PROGRESS.value

    def _cancelled(self, ref: str) -> bool:
        return (self.dir / L.move_cancel_name(ref)).exists()

    @staticmethod
    def _to_status(data: dict[str, Any]) -> MoveStatus:
        return MoveStatus(ref=data["ref"], source=data["source"], destination=data["destination"],
                          state=MoveState(data["state"]), moved=int(data.get("moved") or 0),
                          started_at=float(data["started_at"]), finished_at=data.get("finished_at"),
                          error=data.get("error"), max_per_second=data.get("max_per_second"))

    def _launch(self, ref: str, token: str) -> None:
        with self._lock:
            if ref in self._running:
                return
            self._running.add(ref)
        threading.Thread(target=self._run, args=(ref, token), name=f"spoolq-move-{ref[:8]}", daemon=True).start()

    def _run(self, ref: str, token: str) -> None:
        try:
            data = self._load(ref)
            try:
                outcome = self._move_all(ref, token, data)
                if outcome is _Stop.LOST:
                    return
                state = MoveState.CANCELLED if outcome is _Stop.CANCELLED else MoveState.COMPLETE
                data["state"] = state.value
            except Exception as e:  # any failure is reported, never silently half-done
                data.update(state=MoveState.ERROR.value, error=f"{type(e).__name__}: {e}")
            data.update(finished_at=self.clock(), heartbeat=self.clock(), pending=[])
            with contextlib.suppress(Exception):
                if self._mine(ref, token):
                    self._save(ref, data)
        finally:
            with self._lock:
                self._running.discard(ref)
            for n in listdir(str(self.dir)):
                if n.startswith(L.move_lease_prefix(ref)):
                    with contextlib.suppress(OSError):
                        os.unlink(self.dir / n)

    def _sources(self, src: QueueHandle, cutoff_ms: int) -> list[str]:
        paths = []
        dirs = [d for _b, d in src.ready_buckets(write_window_start(self._now_ms()))]
        for state in ("delayed", "claimed"):
            dirs.extend(src.sub(f"{state}/{b}") for b in sorted(listdir(src.sub(state))))
        for d in dirs:
            for n in sorted(listdir(d)):
                mid = L.name_id(n)
                if L.ID_RE.match(mid) and L.id_time_ms(mid) < cutoff_ms:
                    paths.append(f"{d}/{n}")
        return paths

    def _move_all(self, ref: str, token: str, data: dict[str, Any]) -> _Stop:
        """Move until a pass over the source moves nothing; save after every batch."""
        catalog = self.catalog
        src = catalog.find(data["source"])
        if src is None:
            return _Stop.DONE
        dst = catalog.find(data["destination"])
        if dst is None:
            catalog.create_queue(data["destination"], src.kind)
            dst = catalog.require(data["destination"])
        rate = data.get("max_per_second")
        batch = max(1, min(BATCH, rate // 4)) if rate else BATCH
        started = time.monotonic()
        moved_here = 0
        while True:
            paths = self._sources(src, int(data["cutoff_ms"]))
            moved_in_pass = 0
            for i in range(0, len(paths), batch):
                if self._cancelled(ref):
                    return _Stop.CANCELLED
                if not self._mine(ref, token):
                    return _Stop.LOST
                targets = [(p, self._target(src, dst, p, bool(data.get("to_origins")))) for p in paths[i:i + batch]
                           if os.path.exists(p)]
                chunk = [(p, self.ids.new_id(q.name, self._now_ms()), q.name) for p, q in targets]
                if not chunk:
                    continue
                data.update(pending=chunk, heartbeat=self.clock())
                self._save(ref, data)
                if src.kind is QueueKind.STANDARD:  # its sends may be in the commit journal
                    self.writer.note_departures([(path, target, new_id) for (path, new_id, _name), (_p, target)
                                           in zip(chunk, targets, strict=True)])
                done = 0
                stop: _Stop | None = None
                for (path, new_id, _name), (_path, target) in zip(chunk, targets, strict=True):
                    if rate and not self._wait_turn(ref, token, data, started + moved_here / rate):
                        stop = _Stop.CANCELLED if self._cancelled(ref) else _Stop.LOST
                        break
                    if self._cancelled(ref):
                        stop = _Stop.CANCELLED
                        break
                    if self._move_checked(path, target, new_id):
                        done += 1
                        moved_here += 1
                        src.forget_origin(L.file_id(path))
                self.commit.flush()
                data.update(moved=int(data.get("moved") or 0) + done, pending=[], heartbeat=self.clock())
                if stop is _Stop.LOST or not self._mine(ref, token):
                    return _Stop.LOST
                self._save(ref, data)
                moved_in_pass += done
                if stop is not None:
                    return stop
            if moved_in_pass == 0:
                return _Stop.DONE

    def _target(self, src: QueueHandle, dst: QueueHandle, path: str, to_origins: bool) -> QueueHandle:
        """Where the message file ``path`` goes: the destination, or for a move ``to_origins`` the
        queue it was dead-lettered from when that is recorded and still exists."""
        if not to_origins:
            return dst
        origin = src.origin_of(L.file_id(path))
        found = self.catalog.find(origin) if origin is not None and origin != src.name else None
        return found if found is not None else dst

    def _wait_turn(self, ref: str, token: str, data: dict[str, Any], due: float) -> bool:
        """Sleep until ``due`` (monotonic), watching for a cancel and keeping the heartbeat fresh.
        False if the move was cancelled or taken over meanwhile."""
        last_save = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= due:
                return True
            if self._cancelled(ref):
                return False
            if now - last_save >= SAVE_EVERY:
                if not self._mine(ref, token):
                    return False
                data["heartbeat"] = self.clock()
                self._save(ref, data)
                last_save = now
            time.sleep(min(CANCEL_POLL, due - now))

    def _settle(self, data: dict[str, Any]) -> int:
        """How many of a dead owner's pending renames happened (see the module docstring)."""
        catalog = self.catalog
        src = catalog.find(data["source"])
        dst = catalog.find(data["destination"])
        done = 0
        for entry in data.get("pending") or []:
            path, new_id = entry[0], entry[1]
            if os.path.exists(path):
                continue
            target = catalog.find(entry[2]) if len(entry) > 2 else dst  # a move to_origins names each one's queue
            at_destination = target is not None and self._present(target, new_id)
            still_in_source = src is not None and self._present(src, L.file_id(path))
            if at_destination or not still_in_source:
                done += 1
        return done

    def _present(self, q: QueueHandle, mid: str) -> bool:
        if not L.ID_RE.match(mid):
            return False
        return (q.locate_unclaimed(mid) is not None
                or q.locate_claimed(L.Ref(id=mid)) is not None)

    def _move_checked(self, path: str, dst: QueueHandle, new_id: str) -> bool:
        """Move one file; False if someone else took it first. A rename into the destination
        survives its bucket directories being removed (``rename_into``), so a failure with the
        source still in place means the destination queue itself is gone: the move fails."""
        if self._move_one(path, dst, new_id):
            return True
        if os.path.exists(path):
            raise OSError(errno.ENOENT, f"destination queue {dst.name!r} is gone")
        return False

    def _move_one(self, path: str, dst: QueueHandle, new_id: str) -> bool:
        meta: dict[str, Any] = {}
        if dst.kind in (QueueKind.FIFO, QueueKind.DEDUP):
            try:
                meta, body = decode_message(read_file(path, message=True))
            except FileNotFoundError:
                return False
            except CorruptMessage:
                return False
            if dst.kind is QueueKind.DEDUP:
                marker = dst.dedup_marker(body)
                with dst.hold_marker_locks([marker]):  # like a send: check and write atomically
                    if dst.pending_copy(marker) is not None:
                        try:
                            os.unlink(path)  # collapsed into the destination's pending copy
                        except FileNotFoundError:
                            return False
                        return True
                    moved = self.writer.transfer(path, dst, meta, new_id=new_id)
                    if moved is not None:  # re-dedup at the destination: the moved copy is now the pending one
                        self.writer.write_marker(dst, marker, moved.encode())
                    return moved is not None
        moved = self.writer.transfer(path, dst, meta, new_id=new_id)
        return moved is not None
