"""A message present in two states at once (a raw copy of a live root put in place, a crash
between two renames on a shared file system): the store never returns one id twice in one
answer, an ack removes every copy, and maintenance leaves one copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from spoolq.store import FileStore
from spoolq.store import layout as L
from spoolq.store.model import OutgoingMessage
from tests.conftest import FakeClock
from tests.inside import catalog_of, root_of

Q = "dups"


def _files_of(store: FileStore, mid: str) -> list[Path]:
    qdir = Path(catalog_of(store).queues_dir) / L.queue_dir_name(Q)
    return sorted(p for p in qdir.rglob(f"{mid}~*") if p.is_file() and "acked" not in p.parts)


def _send(store: FileStore, body: bytes) -> str:
    return store.send(Q, OutgoingMessage(body=body)).id


def _second_ready_copy(store: FileStore, mid: str, rc: int = 0) -> Path:
    """A copy of ``mid`` in its ready bucket, by default under its name from before its first
    claim: what a raw copy taken while a poll claimed it, or a crash between the two halves of
    that claim on a shared file system, leaves."""
    [original] = [p for p in _files_of(store, mid) if "ready" in p.parts] or [_files_of(store, mid)[0]]
    bucket = L.std_bucket(L.id_time_ms(mid))
    ready = Path(catalog_of(store).queues_dir) / L.queue_dir_name(Q) / "ready" / bucket[:8] / bucket
    ready.mkdir(parents=True, exist_ok=True)
    copy = ready / L.ready_name(mid, rc, 0)
    shutil.copyfile(original, copy)
    return copy


def test_one_id_is_never_twice_in_one_answer(store: FileStore) -> None:
    store.create_queue(Q)
    a = _send(store, b"a")
    _send(store, b"b")
    _second_ready_copy(store, a, rc=7)  # two ready names of one message
    assert len(_files_of(store, a)) == 2
    got = store.poll(Q, limit=10, claim_ttl=30)
    ids = [d.message.id for d in got]
    assert sorted(ids) == sorted(set(ids)) and a in ids
    assert len(_files_of(store, a)) == 1  # the extra copy was dropped, not left claimed


def _restarted(store: FileStore, clock: FakeClock) -> FileStore:
    """The service started again on the same root: what putting a raw copy in place takes."""
    store.close()
    return FileStore(root_of(store), node_id="test-node", fsync=False, clock=clock)


@pytest.mark.parametrize("by", ["receipt", "id"])
def test_an_ack_after_a_restart_removes_every_copy(store: FileStore, clock: FakeClock, by: str) -> None:
    """A raw copy of a live root holds a claimed message also under its ready name; put in place
    (the service stopped meanwhile), the ack of that claim removes both."""
    store.create_queue(Q)
    a = _send(store, b"a")
    [d] = store.poll(Q, limit=1, claim_ttl=30)
    _second_ready_copy(store, a)  # the same message, also ready
    store = _restarted(store, clock)
    try:
        assert store.ack(Q, [d.receipt if by == "receipt" else a]) == [True]
        assert _files_of(store, a) == []
        assert store.size(Q) == 0 and store.poll(Q, limit=10, claim_ttl=30) == []
    finally:
        store.close()


@pytest.mark.parametrize("by", ["receipt", "id"])
def test_the_ack_of_a_claim_made_here_looks_for_no_ready_copy(
        store: FileStore, monkeypatch: pytest.MonkeyPatch, by: str) -> None:
    """The claim's own rename took the message's ready name away: its ack stats nothing."""
    store.create_queue(Q)
    a = _send(store, b"a")
    [d] = store.poll(Q, limit=1, claim_ttl=30)
    looked: list[str] = []
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: looked.append(str(p)) or real_exists(p))
    assert store.ack(Q, [d.receipt if by == "receipt" else a]) == [True]
    assert looked == []
    assert _files_of(store, a) == []


def test_maintenance_leaves_one_copy(store: FileStore, clock: FakeClock) -> None:
    store.create_queue(Q)
    a = _send(store, b"a")
    store.poll(Q, limit=1, claim_ttl=30)
    _second_ready_copy(store, a)  # claimed and ready
    clock.advance(60)  # the claim expires: requeueing it would make two ready copies
    store.maintain()
    assert len(_files_of(store, a)) == 1
    got = store.poll(Q, limit=10, claim_ttl=30)
    assert [d.message.id for d in got] == [a]
    assert store.ack(Q, [got[0].receipt]) == [True]
    assert _files_of(store, a) == [] and store.size(Q) == 0


def test_an_expired_claim_is_requeued_when_only_a_stale_stat_shows_its_old_name(
        store: FileStore, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """On GlusterFS a stat may be answered from the mount's cache for about a second after another
    node claimed a message away from its ready name. Maintenance must not take that answer for a
    second copy and drop the claim: the message would be lost."""
    store.create_queue(Q)
    a = _send(store, b"a")
    assert len(store.poll(Q, limit=1, claim_ttl=1)) == 1
    old_name = "/" + L.ready_name(a, 0, 0)
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: str(p).endswith(old_name) or real_exists(p))
    clock.advance(5)  # the claim expired
    store.maintain()
    monkeypatch.undo()
    got = store.poll(Q, limit=10, claim_ttl=30)
    assert [(g.message.id, g.message.receive_count) for g in got] == [(a, 2)]


def test_nothing_else_is_dropped(store: FileStore) -> None:
    """Different messages are never taken for copies of each other."""
    store.create_queue(Q)
    ids = {_send(store, f"m{i}".encode()) for i in range(50)}
    got = store.poll(Q, limit=50, claim_ttl=30)
    assert {d.message.id for d in got} == ids
    assert store.ack(Q, [d.receipt for d in got]) == [True] * 50
    assert os.path.isdir(Path(catalog_of(store).queues_dir) / L.queue_dir_name(Q))
