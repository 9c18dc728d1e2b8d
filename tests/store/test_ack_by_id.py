"""Acks by id (EmoDB, Disque): a claim this process made is acked without listing its shard; a
claim made elsewhere, renewed since, or dropped is still found; a message's nack count goes with
it when it can have one."""

from __future__ import annotations

from pathlib import Path

import pytest

from spoolq.store import FileStore, claiming
from spoolq.store import layout as L
from spoolq.store.model import OutgoingMessage
from tests.conftest import FakeClock
from tests.inside import catalog_of, claiming_of

Q = "acks"


def _files(store: FileStore, mid: str) -> list[Path]:
    qdir = Path(catalog_of(store).queues_dir) / L.queue_dir_name(Q)
    return [p for p in qdir.rglob(f"{mid}~*") if p.is_file()]


def _no_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: str) -> list[str]:
        raise AssertionError(f"listed {path}")
    monkeypatch.setattr(claiming, "listdir", refuse)


def test_a_claim_made_here_is_acked_without_a_listing(store: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.create_queue(Q)
    ids = [store.send(Q, OutgoingMessage(body=b"m%d" % i)).id for i in range(5)]
    got = store.poll(Q, limit=5, claim_ttl=30)
    assert sorted(d.message.id for d in got) == sorted(ids)
    _no_listing(monkeypatch)
    assert store.ack(Q, ids) == [True] * 5
    assert all(_files(store, mid) == [] for mid in ids)


def test_claims_made_elsewhere_or_renewed_are_found(store: FileStore, tmp_path: Path, clock: FakeClock) -> None:
    store.create_queue(Q)
    ids = [store.send(Q, OutgoingMessage(body=b"m%d" % i)).id for i in range(4)]
    other = FileStore(tmp_path / "root", node_id="other-node", fsync=False, clock=clock)  # another process
    try:
        claimed_there = other.poll(Q, limit=2, claim_ttl=30)
        claimed_here = store.poll(Q, limit=2, claim_ttl=30)
        renewed = claimed_here[0].message.id
        assert store.renew(Q, [renewed], 60) == [True]  # the claimed file has another name now
        everything = [d.message.id for d in claimed_there + claimed_here]
        assert sorted(everything) == sorted(ids)
        assert store.ack(Q, everything) == [True] * 4
        assert other.ack(Q, everything) == [False] * 4  # gone: nothing acked twice
        assert all(_files(store, mid) == [] for mid in ids)
    finally:
        other.close()


def test_an_acked_id_is_not_acked_again(store: FileStore) -> None:
    store.create_queue(Q)
    mid = store.send(Q, OutgoingMessage(body=b"x")).id
    store.poll(Q, limit=1, claim_ttl=30)
    assert store.ack(Q, [mid]) == [True]
    assert store.ack(Q, [mid]) == [False]


def test_the_nack_count_goes_with_the_message(store: FileStore) -> None:
    store.create_queue(Q)
    mid = store.send(Q, OutgoingMessage(body=b"x")).id
    store.poll(Q, limit=1, claim_ttl=30)
    assert store.nack(Q, [mid]) == [True]
    view = store.find_job(Q, mid)
    assert view is not None and view.nacks == 1
    nacks = Path(catalog_of(store).queues_dir) / L.queue_dir_name(Q) / "nacks" / mid
    assert nacks.exists()
    [d] = store.poll(Q, limit=1, claim_ttl=30)
    assert d.message.id == mid and d.message.receive_count == 2
    assert store.ack(Q, [mid]) == [True]
    assert not nacks.exists()


def test_a_nacked_message_acked_unclaimed_loses_its_count(store: FileStore) -> None:
    store.create_queue(Q)
    mid = store.send(Q, OutgoingMessage(body=b"x")).id
    store.poll(Q, limit=1, claim_ttl=30)
    assert store.nack(Q, [mid]) == [True]
    nacks = Path(catalog_of(store).queues_dir) / L.queue_dir_name(Q) / "nacks" / mid
    assert nacks.exists()
    assert store.ack(Q, [mid]) == [True]  # acked while back in the queue (receive count 1, unclaimed)
    assert not nacks.exists()


def _remembered(store: FileStore) -> int:
    return len(claiming_of(store).claimed_here)


def test_a_claim_ended_by_receipt_is_forgotten(store: FileStore) -> None:
    """An SQS consumer acks and releases by receipt: the claims its polls made must not stay in the
    table (before, only an ack by id took an entry out)."""
    store.create_queue(Q)
    for _ in range(3):
        store.send_batch(Q, [OutgoingMessage(body=b"m%d" % i) for i in range(50)])
        got = store.poll(Q, limit=50, claim_ttl=30)
        assert len(got) == 50 and _remembered(store) == 50
        assert store.ack(Q, [d.receipt for d in got[:40]]) == [True] * 40
        assert _remembered(store) == 10
        assert store.release(Q, [d.receipt for d in got[40:45]]) == [True] * 5
        assert _remembered(store) == 5
        assert store.renew(Q, [d.receipt for d in got[45:]], 0) == [True] * 5  # a visibility of 0 releases
        assert _remembered(store) == 0
        assert sorted(d.message.id for d in store.poll(Q, limit=50, claim_ttl=30)) == sorted(
            d.message.id for d in got[40:])
        store.unclaim_all(Q)
        assert _remembered(store) == 0
        assert store.ack(Q, [d.message.id for d in got[40:]]) == [True] * 10
    assert store.counts(Q).total == 0


def test_a_renewed_claim_made_here_is_still_acked_without_a_listing(
        store: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.create_queue(Q)
    mid = store.send(Q, OutgoingMessage(body=b"x")).id
    assert [d.message.id for d in store.poll(Q, limit=1, claim_ttl=30)] == [mid]
    assert store.renew(Q, [mid], 120) == [True]
    _no_listing(monkeypatch)
    assert store.ack(Q, [mid]) == [True]
    assert _files(store, mid) == [] and _remembered(store) == 0


def test_the_table_keeps_the_newest_claims_within_its_bound(store: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    claims = claiming_of(store).claimed_here
    monkeypatch.setattr(claims, "_limit", 16)
    store.create_queue(Q)
    ids = [r.id for r in store.send_batch(Q, [OutgoingMessage(body=b"m%d" % i) for i in range(100)])]
    for _ in range(100):
        store.poll(Q, limit=1, claim_ttl=30)  # claimed, never ended here: the table must not grow past 16
        assert len(claims) <= 16
    assert len(claims) >= 8
    newest = [mid for mid in ids if claims.take(mid) is not None]
    assert newest == ids[-len(newest):]  # the ones forgotten are the oldest
