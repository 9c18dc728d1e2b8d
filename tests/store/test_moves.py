"""Move takeover and cancel on the real file store, in process: a taker settles a dead owner's
pending renames exactly, two takers of one stale heartbeat leave one owner, a cancel stops a
rate-limited move at once, and a stale owner stops writing once it has been taken over."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from spoolq.store import (
    DeadLetterPolicy,
    FileStore,
    MoveState,
    OutgoingMessage,
    QueueConfig,
    QueueKind,
)
from spoolq.store import handle as H
from spoolq.store import moves as M
from tests.inside import catalog_of, ids_of, moves_of, now_ms_of, root_of, writer_of


def _wait(store: FileStore, ref: str, timeout: float = 20.0) -> MoveState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = store.move_status(ref).state
        if state is not MoveState.IN_PROGRESS:
            return state
        time.sleep(0.02)
    raise AssertionError("the move did not finish")


def _ready_paths(store: FileStore, queue: str) -> list[str]:
    q = catalog_of(store).require(queue)
    return sorted(f"{d}/{n}" for _b, d in q.ready_buckets("") for n in os.listdir(d))


def _dead_owner(store: FileStore, source: str, destination: str, moved: int,
                pending: list[tuple[str, str]]) -> str:
    """A move status as a killed owner leaves it: IN_PROGRESS, stale heartbeat, renames pending."""
    ref = "A" * 42
    now = catalog_of(store).clock()
    status = {"ref": ref, "source": source, "destination": destination, "state": "IN_PROGRESS", "moved": moved,
              "started_at": now - 60, "finished_at": None, "error": None, "max_per_second": None,
              "cutoff_ms": int(now * 1000) + 1, "owner": "gone:1", "run": "dead", "heartbeat": now - 60,
              "pending": pending}
    (root_of(store) / "moves" / f"{ref}.json").write_text(json.dumps(status))
    return ref


def test_takeover_settles_pending_renames_exactly(root: Path) -> None:
    store = FileStore(root, fsync=False)
    try:
        store.create_queue("src", QueueKind.STANDARD)
        store.create_queue("dst", QueueKind.STANDARD)
        for i in range(6):
            store.send("src", OutgoingMessage(body=f"m{i}".encode()))
        time.sleep(0.002)
        a, b, c, d, e, f = _ready_paths(store, "src")
        dst = catalog_of(store).require("dst")
        new = {p: ids_of(store).new_id("dst", now_ms_of(store)) for p in (a, b, c, d)}
        writer_of(store).transfer(a, dst, {}, new_id=new[a])  # renamed before the crash, still at the destination
        writer_of(store).transfer(b, dst, {}, new_id=new[b])  # renamed, then received and deleted at the destination
        got = store.poll("dst", limit=10, claim_ttl=30)
        store.ack("dst", [x.receipt for x in got if x.message.id == new[b]])
        store.poll("src", limit=1, claim_ttl=30)  # a consumer of the source took one (not moved)
        claimed = next(p for p in (c, d, e, f) if not os.path.exists(p))
        pending = [(a, new[a]), (b, new[b]), (claimed, ids_of(store).new_id("dst", now_ms_of(store)))]
        pending += [(p, new[p]) for p in (c, d) if p != claimed][:1]  # not renamed yet
        ref = _dead_owner(store, "src", "dst", moved=10, pending=pending)
        assert moves_of(store).resume_stale(now_ms_of(store)) == 1
        assert _wait(store, ref) is MoveState.COMPLETE
        # 10 before + a and b settled (the claimed one is not: it is still in the source) + the
        # four left in the source, claimed one included, moved by the taker
        assert store.move_status(ref).moved == 10 + 2 + 4
        assert store.size("src") == 0
        status = json.loads((root / "moves" / f"{ref}.json").read_text())
        assert status["pending"] == [] and status["run"] != "dead"
        # the taker removes its lease once its run has ended, just after it saved COMPLETE
        deadline = time.monotonic() + 20
        while leases := [n for n in os.listdir(root / "moves") if ".lease-" in n]:
            assert time.monotonic() < deadline, f"the taker's lease stayed: {leases}"
            time.sleep(0.02)
    finally:
        store.close()


def test_two_takers_of_one_stale_heartbeat_leave_one_owner(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_read_json = M.read_json

    def slow_read_json(path: Path, **kwargs: Any) -> Any:
        data = real_read_json(path, **kwargs)
        if threading.current_thread().name.startswith("taker"):
            time.sleep(0.1)  # every taker has read the stale status before any of them writes
        return data

    monkeypatch.setattr(M, "read_json", slow_read_json)
    stores = [FileStore(root, fsync=False) for _ in range(4)]
    try:
        stores[0].create_queue("src", QueueKind.STANDARD)
        stores[0].send_batch("src", [OutgoingMessage(body=f"m{i}".encode()) for i in range(50)])
        time.sleep(0.002)
        ref = _dead_owner(stores[0], "src", "dst", moved=0, pending=[])
        results: list[int] = []
        barrier = threading.Barrier(len(stores))

        def take(store: FileStore) -> None:
            barrier.wait()
            results.append(moves_of(store).resume_stale(now_ms_of(store)))

        threads = [threading.Thread(target=take, args=(s,), name=f"taker-{i}") for i, s in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert sorted(results) == [0, 0, 0, 1]
        assert _wait(stores[0], ref) is MoveState.COMPLETE
        assert stores[0].move_status(ref).moved == 50
        assert stores[0].size("dst") == 50 and stores[0].size("src") == 0
    finally:
        for s in stores:
            s.close()


def test_cancel_stops_a_rate_limited_move_at_once(root: Path) -> None:
    store = FileStore(root, fsync=False)
    try:
        store.create_queue("src", QueueKind.STANDARD)
        store.send_batch("src", [OutgoingMessage(body=f"m{i}".encode()) for i in range(100)])
        time.sleep(0.002)
        ref = store.move("src", "dst", max_per_second=2)
        time.sleep(1.2)
        asked = time.monotonic()
        status = store.cancel_move(ref)
        took = time.monotonic() - asked
        assert status.state is MoveState.CANCELLED and took < 0.5, (status, took)
        time.sleep(1.2)
        assert store.move_status(ref).moved == status.moved == store.size("dst") == 3
        assert store.size("src") == 97
    finally:
        store.close()


def test_an_owner_taken_over_stops_writing(root: Path) -> None:
    store = FileStore(root, fsync=False)
    try:
        store.create_queue("src", QueueKind.STANDARD)
        store.send_batch("src", [OutgoingMessage(body=f"m{i}".encode()) for i in range(100)])
        time.sleep(0.002)
        ref = store.move("src", "dst", max_per_second=4)
        time.sleep(0.6)
        path = root / "moves" / f"{ref}.json"
        status = json.loads(path.read_text())
        status.update(run="someone-else", owner="elsewhere:1")  # what a taker writes
        path.write_text(json.dumps(status))
        time.sleep(M.SAVE_EVERY * 3 + 0.3)
        after = json.loads(path.read_text())
        assert after["run"] == "someone-else" and after["moved"] == status["moved"]
        assert ref not in moves_of(store)._running
        assert store.size("dst") in (status["moved"], status["moved"] + 1)
    finally:
        store.close()



def test_a_move_to_origins_returns_each_dead_letter_to_its_source(root: Path) -> None:
    """Two queues dead-letter into one; a move ``to_origins`` sends each message back to the queue
    it was dead-lettered from, one sent to the dead-letter queue directly to the destination, and
    leaves no origin markers behind; a taker settles a pending rename at the queue it names."""
    store = FileStore(root, fsync=False)
    try:
        store.create_queue("dlq")
        for name in ("a", "b"):
            store.create_queue(name, config=QueueConfig(dead_letter=DeadLetterPolicy(queue="dlq", max_receives=1)))
            store.send_batch(name, [OutgoingMessage(f"{name}{i}".encode()) for i in range(3)])
            assert len(store.poll(name, limit=10, claim_ttl=0.001)) == 3
            time.sleep(0.2)  # the claims expire (an empty poll's maintenance runs at most every 0.1 s)
            assert store.poll(name, limit=10, claim_ttl=0.001) == []  # over the limit: dead-lettered
        store.send("dlq", OutgoingMessage(b"direct"))
        assert store.size("dlq") == 7
        assert len(os.listdir(catalog_of(store).require("dlq").sub("origins"))) == 6
        ref = store.move("dlq", "b", to_origins=True)
        assert _wait(store, ref) is MoveState.COMPLETE
        assert store.move_status(ref).moved == 7
        bodies = {name: sorted(m.body.decode() for m in store.peek(name, limit=20)) for name in ("a", "b", "dlq")}
        assert bodies == {"a": ["a0", "a1", "a2"], "b": ["b0", "b1", "b2", "direct"], "dlq": []}
        assert os.listdir(catalog_of(store).require("dlq").sub("origins")) == []

        in_a = store.peek("a", limit=1)[0].id
        gone = f"{catalog_of(store).require('dlq').path}/ready/gone"
        status = {"source": "dlq", "destination": "b", "pending": [[gone, in_a, "a"]]}
        assert moves_of(store)._settle(status) == 1  # found at "a", the queue the entry names
    finally:
        store.close()


def test_origin_markers_older_than_retention_are_pruned(root: Path) -> None:
    store = FileStore(root, fsync=False)
    try:
        store.create_queue("dlq", config=QueueConfig(retention=60.0))
        q = catalog_of(store).require("dlq")
        now = now_ms_of(store)
        old = ids_of(store).new_id("dlq", now - 60_000 - H.PRUNE_MARGIN_MS - 1000)
        fresh = ids_of(store).new_id("dlq", now)
        for mid in (old, fresh):
            q.note_origin(mid, "a")
        assert q.origin_of(fresh) == "a"
        H._pruned_at.pop(q.path, None)
        assert q.prune_origins(now) == 1
        assert os.listdir(q.sub("origins")) == [fresh]
        assert q.prune_origins(now) == 0  # looked at again only after PRUNE_EVERY_MS
    finally:
        store.close()
