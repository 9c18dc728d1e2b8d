"""Batch claims (``spoolq.store.batches``) on a real FileStore with a fake clock."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from spoolq.errors import InvalidArgument, InvalidQueueName
from spoolq.store import FileStore, OutgoingMessage
from spoolq.store.batches import STALE_CLAIM, BatchClaims
from tests.conftest import FakeClock, tree
from tests.inside import root_of


@pytest.fixture
def batches(store: FileStore, clock: FakeClock) -> BatchClaims:
    return BatchClaims(store, root_of(store), clock=clock)


def fill(store: FileStore, queue: str, n: int, size: int = 10) -> None:
    store.send_batch(queue, [OutgoingMessage(body=b'"%s"' % (b"%d" % i).rjust(size, b"x")) for i in range(n)],
                     create=store.get_queue(queue).kind if queue in store.list_queues() else None)


@pytest.fixture
def queue(store: FileStore) -> str:
    store.create_queue("jobs")
    return "jobs"


def test_a_token_names_one_batch_fetched_again_row_for_row(store: FileStore, batches: BatchClaims,
                                                             queue: str) -> None:
    fill(store, queue, 25)
    first = batches.claim_batch(queue, "q1-7-0", 10, 60)
    assert len(first.messages) == 10 and not first.replayed
    again = batches.claim_batch(queue, "q1-7-0", 10, 60)
    assert again.replayed and again.messages == first.messages  # same ids, bodies, counts, order
    other = batches.claim_batch(queue, "q1-7-1", 100, 60)
    assert len(other.messages) == 15 and not {m.id for m in other.messages} & {m.id for m in first.messages}
    assert store.counts(queue).ready == 0 and store.claim_count(queue) == 25
    assert batches.ack_batches(queue, ["q1-7-0", "q1-7-1", "never-claimed"]) == 25
    assert store.size(queue) == 0
    assert list((root_of(store) / "batches" / queue).iterdir()) == []


def test_max_bytes_stops_the_claim_at_the_budget_with_at_least_one_message(
        store: FileStore, batches: BatchClaims, queue: str) -> None:
    fill(store, queue, 50, size=100)  # 102-byte bodies
    got = batches.claim_batch(queue, "b", 1000, 60, max_bytes=1000)
    assert 9 <= len(got.messages) <= 11
    assert len(batches.claim_batch(queue, "tiny", 1000, 60, max_bytes=1).messages) == 1


def test_an_expired_batch_replays_the_same_rows_and_acks_only_what_nobody_received_since(
        store: FileStore, batches: BatchClaims, clock: FakeClock, queue: str) -> None:
    fill(store, queue, 6)
    batch = batches.claim_batch(queue, "t", 6, 30)
    clock.advance(31)  # the claims expired: the next poll's maintenance puts them back
    stolen = store.poll(queue, limit=2, claim_ttl=300)
    assert len(stolen) == 2  # another consumer received two of them
    assert batches.claim_batch(queue, "t", 6, 30).messages == batch.messages  # the same rows still
    assert batches.ack_batches(queue, ["t"]) == 4
    assert store.claim_count(queue) == 2 and store.size(queue) == 2
    assert sorted(store.ack(queue, [d.receipt for d in stolen])) == [True, True]  # theirs to acknowledge


def test_renew_batches_keeps_the_claims_past_their_first_ttl(
        store: FileStore, batches: BatchClaims, clock: FakeClock, queue: str) -> None:
    fill(store, queue, 5)
    batches.claim_batch(queue, "r", 5, 30)
    clock.advance(20)
    assert batches.renew_batches(queue, ["r", "unknown"], 60) == 5
    clock.advance(20)  # 40 s after the claim: expired without the renewal
    assert store.poll(queue, limit=10, claim_ttl=30) == []
    assert store.claim_count(queue) == 5
    assert batches.ack_batches(queue, ["r"]) == 5


def claim_together(batches: BatchClaims, queue: str, token: str, callers: int) -> list[list[str]]:
    """``callers`` threads claim ``token`` at the same moment; the ids each one got."""
    results: list[list[str]] = []
    lock = threading.Lock()
    gate = threading.Barrier(callers)

    def claim() -> None:
        gate.wait()
        got = [m.id for m in batches.claim_batch(queue, token, 50, 60).messages]
        with lock:
            results.append(got)

    threads = [threading.Thread(target=claim) for _ in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_concurrent_first_claims_of_one_token_make_one_batch(store: FileStore, batches: BatchClaims,
                                                              queue: str) -> None:
    fill(store, queue, 1000)
    for round_ in range(8):  # the race between one caller's look and another's marker is narrow
        results = claim_together(batches, queue, f"same-{round_}", 6)
        assert len(results) == 6 and all(r == results[0] for r in results) and len(results[0]) == 50
        assert store.claim_count(queue) == 50 * (round_ + 1)


def test_a_stale_first_claim_marker_is_taken_over(store: FileStore, batches: BatchClaims, clock: FakeClock,
                                                   queue: str) -> None:
    fill(store, queue, 3)
    marker = root_of(store) / "batches" / queue / "dead.claiming"
    marker.parent.mkdir(parents=True)
    marker.touch()
    os.utime(marker, (clock() - STALE_CLAIM - 1, clock() - STALE_CLAIM - 1))
    assert len(batches.claim_batch(queue, "dead", 10, 60).messages) == 3
    assert not marker.exists()


def test_an_empty_claim_is_not_recorded_and_a_missing_queue_changes_nothing(
        store: FileStore, batches: BatchClaims, queue: str) -> None:
    assert batches.claim_batch(queue, "e", 10, 60).messages == []
    fill(store, queue, 2)
    assert len(batches.claim_batch(queue, "e", 10, 60).messages) == 2  # nothing was recorded for it
    before = tree(root_of(store))
    assert batches.claim_batch("nosuch", "x", 10, 60).messages == []
    assert batches.ack_batches("nosuch", ["x"]) == 0 and batches.renew_batches("nosuch", ["x"], 10) == 0
    assert tree(root_of(store)) == before


@pytest.mark.parametrize(("call", "error"), [
    (lambda b: b.claim_batch("jobs", "../etc", 10, 60), InvalidArgument),
    (lambda b: b.claim_batch("jobs", ".hidden", 10, 60), InvalidArgument),
    (lambda b: b.claim_batch("jobs", "t", 0, 60), InvalidArgument),
    (lambda b: b.claim_batch("jobs", "t", 10_001, 60), InvalidArgument),
    (lambda b: b.claim_batch("jobs", "t", 10, 0), InvalidArgument),
    (lambda b: b.claim_batch("jobs", "t", 10, 60, max_bytes=0), InvalidArgument),
    (lambda b: b.claim_batch("bad/name", "t", 10, 60), InvalidQueueName),
    (lambda b: b.ack_batches("jobs", "t"), InvalidArgument),
    (lambda b: b.ack_batches("jobs", ["ok", "no/pe"]), InvalidArgument),
    (lambda b: b.renew_batches("jobs", ["t"], 0), InvalidArgument),
])
def test_bad_input_is_refused_and_changes_nothing(store: FileStore, batches: BatchClaims, queue: str,
                                                  call: object, error: type[Exception]) -> None:
    fill(store, queue, 3)
    batches.claim_batch(queue, "held", 1, 60)
    before = tree(root_of(store))
    with pytest.raises(error):
        call(batches)  # type: ignore[operator]
    assert tree(root_of(store)) == before


def test_a_torn_record_counts_as_absent(store: FileStore, batches: BatchClaims, queue: str) -> None:
    fill(store, queue, 4)
    batches.claim_batch(queue, "torn", 2, 60)
    record: Path = root_of(store) / "batches" / queue / "torn"
    record.write_bytes(record.read_bytes()[:-3])
    assert len(batches.claim_batch(queue, "torn", 2, 60).messages) == 2  # claimed afresh
    assert store.claim_count(queue) == 4
