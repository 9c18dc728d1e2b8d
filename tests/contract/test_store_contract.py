"""The store contract: every QueueStore operation, on the file store and on the in-memory store of the
door tests (tests/contract/conftest.py), time injected."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from spoolq.errors import (
    InvalidArgument,
    InvalidMessageId,
    MessageIdChecksumMismatch,
    MessageTooLarge,
    QueueAlreadyExists,
    QueueKindMismatch,
    QueueNotFound,
    UnknownMove,
)
from spoolq.store import (
    DeadLetterPolicy,
    FileStore,
    MoveState,
    OutgoingMessage,
    QueueConfig,
    QueueCounts,
    QueueKind,
    QueueStore,
    SendResult,
)
from spoolq.store.layout import IdFactory, id_time_ms, std_bucket
from tests.conftest import FakeClock
from tests.contract.stores import maintain, state_of
from tests.inside import archive_of, catalog_of, claiming_of, commit_of, now_ms_of, root_of, tmp_of

M = OutgoingMessage
STD = QueueKind.STANDARD


def bodies(deliveries: list) -> list[bytes]:  # type: ignore[type-arg]
    return [d.message.body for d in deliveries]


# ------------------------------------------------------------------ send / peek / poll / ack


def test_send_peek_poll_ack_roundtrip(store: QueueStore, clock: FakeClock) -> None:
    r = store.send("q", M(b"hello"), create=STD)
    assert len(r.id) == 40 and all(c in "0123456789abcdef" for c in r.id)
    assert [m.body for m in store.peek("q")] == [b"hello"]
    got = store.poll("q", limit=5, claim_ttl=30)
    assert bodies(got) == [b"hello"]
    d = got[0]
    assert d.message.id == r.id and d.message.receive_count == 1
    assert d.message.first_received_at == pytest.approx(clock())
    assert store.claim_count("q") == 1
    assert store.peek("q")[0].claimed_until == pytest.approx(clock() + 30)
    assert store.poll("q", limit=5) == []
    assert store.ack("q", [d.receipt]) == [True]
    assert store.size("q") == 0 and store.peek("q") == [] and store.claim_count("q") == 0
    assert store.ack("q", [d.receipt]) == [False]  # idempotent


def test_send_to_missing_queue_without_create_raises(store: QueueStore) -> None:
    with pytest.raises(QueueNotFound):
        store.send("nope", M(b"x"))
    assert store.list_queues() == []


def test_reads_of_missing_queue_are_empty(store: QueueStore) -> None:
    assert store.poll("never") == [] and store.peek("never") == []
    assert store.size("never") == 0 and store.claim_count("never") == 0
    assert store.ack("never", [IdFactory("n").new_id("never", 1)]) == [False]
    store.purge("never")
    store.unclaim_all("never")
    assert store.list_queues() == []


def test_poll_order_is_send_order_within_one_sender(store: QueueStore, clock: FakeClock) -> None:
    for i in range(30):
        store.send("q", M(b"%02d" % i), create=STD)
        if i % 7 == 0:
            clock.advance(1.5)  # spread over several buckets
    assert bodies(store.poll("q", limit=30)) == [b"%02d" % i for i in range(30)]


def test_claim_expires_and_is_redelivered_with_counts(store: QueueStore, clock: FakeClock) -> None:
    store.send("q", M(b"x"), create=STD)
    first = store.poll("q", claim_ttl=10)[0]
    t_first = clock()
    clock.advance(9)
    maintain(store)
    assert store.poll("q") == []
    clock.advance(2)
    again = store.poll("q", claim_ttl=10)
    assert bodies(again) == [b"x"]
    assert again[0].message.receive_count == 2
    assert again[0].message.first_received_at == pytest.approx(t_first)
    # the old receipt names an earlier delivery: it acknowledges nothing
    assert store.ack("q", [first.receipt]) == [False]
    assert store.size("q") == 1
    assert store.ack("q", [again[0].receipt]) == [True]


def test_ack_by_bare_id_claimed_and_unclaimed(store: QueueStore) -> None:
    a = store.send("q", M(b"a"), create=STD).id
    b = store.send("q", M(b"b")).id
    store.poll("q", limit=1)  # claims a
    assert store.ack("q", [a, b]) == [True, True]
    assert store.size("q") == 0


def test_ack_unknown_well_formed_id_is_false(store: QueueStore) -> None:
    other = store.send("q", M(b"a"), create=STD).id
    store.ack("q", [other])
    assert store.ack("q", [other]) == [False]


def test_bad_refs_raise_and_change_nothing(store: QueueStore, tmp_path: Path) -> None:
    store.send("q", M(b"a"), create=STD)
    foreign = store.send("other", M(b"b"), create=STD).id
    before = state_of(store, tmp_path / "root")
    with pytest.raises(InvalidMessageId, match=r"^Invalid event ID\.$"):
        store.ack("q", ["abcd"])
    with pytest.raises(MessageIdChecksumMismatch, match="checksum"):
        store.ack("q", [foreign])
    with pytest.raises(InvalidMessageId):
        store.ack("q", ["0:../../../etc/passwd"])
    with pytest.raises(InvalidMessageId):  # one bad ref rejects the whole call
        store.ack("q", [store.peek("q")[0].id, "zz"])
    with pytest.raises(InvalidArgument):
        store.ack("q", "notalist")  # type: ignore[arg-type]
    assert state_of(store, tmp_path / "root") == before
    assert store.size("q") == 1


def test_poll_ttl_zero_receives_and_leaves_visible(store: QueueStore) -> None:
    store.send("q", M(b"a"), create=STD)
    got = store.poll("q", claim_ttl=0)
    assert bodies(got) == [b"a"] and got[0].message.receive_count == 1 and store.claim_count("q") == 0
    again = store.poll("q", claim_ttl=30)
    assert bodies(again) == [b"a"] and again[0].message.receive_count == 2


def test_peek_ready_returns_visible_messages_without_claiming(store: QueueStore) -> None:
    store.send("q", M(b"a"), create=STD)
    store.send("q", M(b"b"))
    store.poll("q", limit=1, claim_ttl=30)  # claims a
    assert [m.body for m in store.peek_ready("q")] == [b"b"] and store.claim_count("q") == 1
    assert [m.receive_count for m in store.peek_ready("q")] == [0]
    assert store.peek_ready("never") == []


# ------------------------------------------------------------------ renew / release


def test_renew_extends_but_never_shortens(store: QueueStore, clock: FakeClock) -> None:
    store.send("q", M(b"a"), create=STD)
    d = store.poll("q", claim_ttl=60)[0]
    assert store.renew("q", [d.message.id], 5) == [True]
    clock.advance(10)
    maintain(store)
    assert store.claim_count("q") == 1 and store.poll("q") == []
    assert store.renew("q", [d.receipt], 120) == [True]  # the receipt survives a renew
    clock.advance(100)
    maintain(store)
    assert store.claim_count("q") == 1
    assert store.ack("q", [d.receipt]) == [True]


def test_set_claim_ttl_can_shorten(store: QueueStore, clock: FakeClock) -> None:
    store.send("q", M(b"a"), create=STD)
    d = store.poll("q", claim_ttl=600)[0]
    assert store.set_claim_ttl("q", [d.receipt], 5) == [True]
    assert store.claimed_until("q", [d.receipt, d.message.id]) == [pytest.approx(clock() + 5)] * 2
    clock.advance(6)
    assert store.claimed_until("q", [d.receipt]) == [None]  # run out
    maintain(store)
    assert bodies(store.poll("q")) == [b"a"]


def test_renew_and_set_claim_ttl_by_id_claim_a_visible_message(store: QueueStore) -> None:
    mid = store.send("q", M(b"a"), create=STD).id
    assert store.claimed_until("q", [mid]) == [None]
    assert store.renew("q", [mid], 60) == [True]
    assert store.claim_count("q") == 1 and store.poll("q") == []
    store.release("q", [mid])
    assert store.set_claim_ttl("q", [mid], 60) == [True]
    assert store.claim_count("q") == 1 and store.poll("q") == []
    assert store.peek("q")[0].receive_count == 0  # held, not received


def test_a_receipt_claims_nothing_anew(store: QueueStore) -> None:
    store.send("q", M(b"a"), create=STD)
    d = store.poll("q", claim_ttl=60)[0]
    assert store.release("q", [d.receipt]) == [True]
    assert store.renew("q", [d.receipt], 60) == [False]
    assert store.set_claim_ttl("q", [d.receipt], 60) == [False]
    assert store.claim_count("q") == 0


def test_the_latest_receipt_acks_after_a_release_but_an_older_one_does_not(store: QueueStore) -> None:
    store.send("q", M(b"a"), create=STD)
    first = store.poll("q", claim_ttl=60)[0]
    store.release("q", [first.receipt])
    second = store.poll("q", claim_ttl=60)[0]
    store.release("q", [second.receipt])
    assert store.ack("q", [first.receipt]) == [False]  # received again since
    assert store.ack("q", [second.receipt]) == [True]
    assert store.size("q") == 0


def test_nack_releases_and_counts(store: QueueStore) -> None:
    mid = store.send("q", M(b"a"), create=STD).id
    store.poll("q", claim_ttl=60)
    assert store.nack("q", [mid]) == [True]
    job = store.find_job("q", mid)
    assert job is not None and job.nacks == 1 and store.claim_count("q") == 0


def test_release_and_renew_zero_make_visible_at_once(store: QueueStore) -> None:
    store.send("q", M(b"a"), create=STD)
    store.send("q", M(b"b"))
    a, b = store.poll("q", limit=2, claim_ttl=600)
    assert store.release("q", [a.receipt]) == [True]
    assert store.renew("q", [b.message.id], 0) == [True]
    assert store.claim_count("q") == 0
    got = store.poll("q", limit=2)
    assert sorted(bodies(got)) == [b"a", b"b"]
    store.ack("q", [got[0].receipt])
    assert store.release("q", [got[0].receipt]) == [False]  # nothing left to release


def test_unclaim_all(store: QueueStore) -> None:
    store.send_batch("q", [M(b"1"), M(b"2"), M(b"3")], create=STD)
    store.poll("q", limit=3)
    assert store.claim_count("q") == 3
    store.unclaim_all("q")
    assert store.claim_count("q") == 0
    assert len(store.poll("q", limit=10)) == 3


# ------------------------------------------------------------------ per-message controls


def test_delay_hides_until_due(store: QueueStore, clock: FakeClock) -> None:
    store.send("q", M(b"later", delay=10), create=STD)
    store.send("q", M(b"now"))
    assert store.counts("q").delayed == 1
    assert bodies(store.poll("q", limit=10)) == [b"now"]
    clock.advance(9)
    maintain(store)
    assert store.poll("q") == []
    clock.advance(2)
    maintain(store)
    assert bodies(store.poll("q")) == [b"later"]


def test_queue_default_delay(store: QueueStore, clock: FakeClock) -> None:
    store.create_queue("q", config=QueueConfig(delay=5))
    store.send("q", M(b"a"))
    store.send("q", M(b"b", delay=0))
    assert bodies(store.poll("q", limit=5)) == [b"b"]
    clock.advance(6)
    assert bodies(store.poll("q")) == [b"a"]  # poll runs maintenance itself


def test_ttl_drops_unconsumed_message(store: QueueStore, clock: FakeClock) -> None:
    store.send("q", M(b"short", ttl=5), create=STD)
    store.send("q", M(b"long"))
    clock.advance(6)
    assert [m.body for m in store.peek("q")] == [b"long"]
    assert bodies(store.poll("q", limit=5)) == [b"long"]


def test_max_receives_without_dlq_drops(store: QueueStore, clock: FakeClock) -> None:
    store.send("q", M(b"x", max_receives=2), create=STD)
    for _ in range(2):
        assert bodies(store.poll("q", claim_ttl=1)) == [b"x"]
        clock.advance(2)
        maintain(store)
    assert store.poll("q") == []
    assert store.size("q") == 0


def test_dead_letter_after_max_receives(store: QueueStore, clock: FakeClock) -> None:
    store.create_queue("dlq")
    store.create_queue("src", config=QueueConfig(dead_letter=DeadLetterPolicy("dlq", 3)))
    store.send("src", M(b"poison", attributes={"k": "v"}))
    for _ in range(3):
        assert bodies(store.poll("src", claim_ttl=1)) == [b"poison"]
        clock.advance(2)
        maintain(store)
    assert store.poll("src") == []
    moved = store.poll("dlq")
    assert bodies(moved) == [b"poison"] and moved[0].message.attributes == {"k": "v"}


def test_at_most_once_is_never_redelivered(store: QueueStore, clock: FakeClock) -> None:
    store.send("q", M(b"once", at_most_once=True), create=STD)
    assert bodies(store.poll("q", claim_ttl=1)) == [b"once"]
    clock.advance(5)
    maintain(store)
    assert store.poll("q") == [] and store.size("q") == 0


def test_attributes_and_group_roundtrip_on_standard_queue(store: QueueStore) -> None:
    store.send("q", M(b"a", attributes={"s": {"DataType": "String", "StringValue": "v"}}, group_id="tenant"),
               create=STD)
    m = store.poll("q")[0].message
    assert m.attributes == {"s": {"DataType": "String", "StringValue": "v"}}
    assert m.group_id == "tenant"


# ------------------------------------------------------------------ validation


def test_send_batch_is_all_or_nothing(store: QueueStore, tmp_path: Path) -> None:
    store.create_queue("q", config=QueueConfig(max_message_bytes=10))
    before = state_of(store, tmp_path / "root")
    with pytest.raises(MessageTooLarge):
        store.send_batch("q", [M(b"ok"), M(b"x" * 11)])
    with pytest.raises(InvalidArgument):
        store.send_batch("q", [M(b"ok"), M(b"y", delay=-1)])
    assert state_of(store, tmp_path / "root") == before
    store.send("q", M(b"x" * 10))  # exactly at the limit
    assert store.size("q") == 1


def test_invalid_batch_to_new_queue_creates_nothing(store: QueueStore, tmp_path: Path) -> None:
    before = state_of(store, tmp_path / "root")
    with pytest.raises(InvalidArgument):
        store.send_batch("fresh", [M(b"a"), M(b"b", ttl=-3)], create=STD)
    assert state_of(store, tmp_path / "root") == before


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 1.5])
def test_poll_limit_range(store: QueueStore, limit: object) -> None:
    with pytest.raises(InvalidArgument):
        store.poll("q", limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kw", "value"), [("claim_ttl", -1), ("claim_ttl", 43_201), ("wait", 21),
                                           ("wait", float("nan"))])
def test_poll_number_ranges(store: QueueStore, kw: str, value: float) -> None:
    with pytest.raises(InvalidArgument):
        store.poll("q", **{kw: value})  # type: ignore[arg-type]


def test_create_queue_conflicts(store: QueueStore) -> None:
    store.create_queue("q", QueueKind.STANDARD)
    assert store.create_queue("q").kind is QueueKind.STANDARD
    with pytest.raises(QueueAlreadyExists):
        store.create_queue("q", QueueKind.DEDUP)
    with pytest.raises(QueueAlreadyExists):
        store.create_queue("q", config=QueueConfig(claim_ttl=5))
    with pytest.raises(QueueAlreadyExists):
        store.create_queue("q", exist_ok=False)


@pytest.mark.file_store_only("a queue's directory name on disk")
def test_long_names_use_hashed_directories(store: FileStore) -> None:
    name = "n" * 400
    store.send(name, M(b"x"), create=STD)
    assert store.list_queues() == [name]
    assert all(len(d) <= 255 for d in os.listdir(root_of(store) / "queues"))
    assert bodies(store.poll(name)) == [b"x"]


# ------------------------------------------------------------------ queues


def test_list_update_delete_queues(store: QueueStore) -> None:
    store.create_queue("a-1", tags={"team": "x"})
    store.create_queue("a-2")
    store.create_queue("b")
    assert store.list_queues() == ["a-1", "a-2", "b"]
    assert store.list_queues("a-") == ["a-1", "a-2"]
    info = store.update_queue("a-1", config=QueueConfig(claim_ttl=7), tags={"team": "y"})
    assert store.get_queue("a-1") == info and info.config.claim_ttl == 7 and info.tags == {"team": "y"}
    store.send("a-1", M(b"m"))
    store.delete_queue("a-1")
    with pytest.raises(QueueNotFound):
        store.get_queue("a-1")
    with pytest.raises(QueueNotFound):
        store.send("a-1", M(b"m"))
    assert store.list_queues() == ["a-2", "b"]


@pytest.mark.file_store_only("a deleted queue's directory in the trash")
def test_deleted_queue_files_are_swept(store: FileStore) -> None:
    store.send("a-1", M(b"m"), create=STD)
    store.delete_queue("a-1")
    maintain(store)
    assert os.listdir(root_of(store) / "trash") == []


def test_queue_default_claim_ttl_applies(store: QueueStore, clock: FakeClock) -> None:
    store.create_queue("q", config=QueueConfig(claim_ttl=3))
    store.send("q", M(b"a"))
    d = store.poll("q")[0]
    assert d.claimed_until == pytest.approx(clock() + 3)


def test_purge_removes_everything(store: QueueStore) -> None:
    store.send_batch("q", [M(b"%d" % i) for i in range(20)] + [M(b"d", delay=100)], create=STD)
    store.poll("q", limit=5)
    store.purge("q")
    assert store.size("q") == 0 and store.claim_count("q") == 0 and store.peek("q") == []
    store.send("q", M(b"after"))
    assert bodies(store.poll("q")) == [b"after"]


# ------------------------------------------------------------------ size


@pytest.mark.file_store_only("the ready count the file store keeps from directory times")
def test_size_with_a_limit_is_the_kept_count(store: FileStore, clock: FakeClock) -> None:
    """A count with a limit reads the count the store keeps from directory times: a queue of a few
    buckets has each looked at on every call, so it is exact beyond the limit too, and follows
    claims and acknowledgements at once."""
    for _ in range(6):
        store.send_batch("q", [M(b"x")] * 500, create=STD)
        clock.advance(1.1)
    assert store.size("q") == 3000
    assert store.counts("q", limit=1000) == QueueCounts(ready=3000, claimed=0, delayed=0, exact=True)
    assert store.size("q", limit=5000) == 3000
    got = store.poll("q", limit=10)
    assert store.counts("q", limit=1000) == QueueCounts(ready=2990, claimed=10, delayed=0, exact=True)
    store.ack("q", [d.receipt for d in got])
    assert store.size("q", limit=1000) == store.size("q") == 2990
    with pytest.raises(InvalidArgument):
        store.size("q", limit=0)


def test_counts_split_states(store: QueueStore) -> None:
    store.send_batch("q", [M(b"a"), M(b"b"), M(b"c", delay=50)], create=STD)
    store.poll("q", limit=1)
    c = store.counts("q")
    assert (c.ready, c.claimed, c.delayed, c.total) == (1, 1, 1, 3)


# ------------------------------------------------------------------ dedup


def test_dedup_collapses_pending_unsurfaced_copies(store: QueueStore) -> None:
    D = QueueKind.DEDUP
    for b in (b'"b"', b'"a"', b'"b"'):
        store.send("d", M(b), create=D)
    assert store.size("d") == 2
    assert bodies(store.poll("d", limit=10)) == [b'"a"', b'"b"']  # byte order, as EmoDB


def test_dedup_does_not_merge_into_claimed_or_peeked(store: QueueStore) -> None:
    D = QueueKind.DEDUP
    store.send("d", M(b"A"), create=D)
    first = store.poll("d")
    store.send("d", M(b"A"))
    second = store.poll("d")
    assert bodies(first) == bodies(second) == [b"A"]
    assert first[0].message.id != second[0].message.id
    store.send("p", M(b"A"), create=D)
    assert len(store.peek("p")) == 1
    store.send("p", M(b"A"))
    assert len(store.peek("p")) == 2  # the first copy surfaced with the peek
    store.send("p2", M(b"A"), create=D)
    store.send("p2", M(b"A"))
    assert len(store.peek("p2")) == 1


def test_dedup_distinguishes_bytes(store: QueueStore) -> None:
    D = QueueKind.DEDUP
    store.send("d", M(b'{"a":1,"b":2}'), create=D)
    store.send("d", M(b'{"b":2,"a":1}'))
    assert store.size("d") == 2


def test_dedup_marker_of_acked_message_is_stale(store: QueueStore) -> None:
    D = QueueKind.DEDUP
    mid = store.send("d", M(b"A"), create=D).id
    store.ack("d", [mid])  # acked straight from pending: its marker now points at nothing
    r = store.send("d", M(b"A"))
    assert not r.duplicate and store.size("d") == 1


# ------------------------------------------------------------------ FIFO


@pytest.fixture
def fifo(store: QueueStore) -> QueueStore:
    store.create_queue("f.fifo", QueueKind.FIFO, QueueConfig(content_based_dedup=True))
    return store


def test_fifo_group_order_and_one_batch_in_flight(fifo: QueueStore) -> None:
    for i in range(4):
        fifo.send("f.fifo", M(b"g1-%d" % i, group_id="g1"))
    fifo.send("f.fifo", M(b"g2-0", group_id="g2"))
    first = fifo.poll("f.fifo", limit=2)
    assert bodies(first) == [b"g1-0", b"g1-1"]
    second = fifo.poll("f.fifo", limit=10)
    assert bodies(second) == [b"g2-0"]  # g1 is in flight
    fifo.ack("f.fifo", [first[0].receipt])
    assert fifo.poll("f.fifo", limit=10) == []  # g1-1 still in flight
    fifo.ack("f.fifo", [first[1].receipt])
    assert bodies(fifo.poll("f.fifo", limit=10)) == [b"g1-2", b"g1-3"]


def test_fifo_released_message_keeps_its_place(fifo: QueueStore) -> None:
    for i in range(3):
        fifo.send("f.fifo", M(b"%d" % i, group_id="g"))
    d = fifo.poll("f.fifo", limit=1, claim_ttl=30)
    fifo.release("f.fifo", [d[0].receipt])
    assert bodies(fifo.poll("f.fifo", limit=3)) == [b"0", b"1", b"2"]


def test_fifo_dedup_window(fifo: QueueStore, clock: FakeClock) -> None:
    a = fifo.send("f.fifo", M(b"same", group_id="g"))
    b = fifo.send("f.fifo", M(b"same", group_id="g"))
    c = fifo.send("f.fifo", M(b"other", group_id="g", dedup_id="explicit"))
    d = fifo.send("f.fifo", M(b"different body", group_id="g", dedup_id="explicit"))
    assert b.duplicate and b.id == a.id and b.sequence_number == a.sequence_number
    assert d.duplicate and d.id == c.id
    assert fifo.size("f.fifo") == 2
    fifo.ack("f.fifo", [x.receipt for x in fifo.poll("f.fifo", limit=10)])
    assert fifo.send("f.fifo", M(b"same", group_id="g")).duplicate  # remembered after delete
    clock.advance(301)
    assert not fifo.send("f.fifo", M(b"same", group_id="g")).duplicate


def test_fifo_sequence_numbers_increase(fifo: QueueStore) -> None:
    seqs = [int(fifo.send("f.fifo", M(b"%d" % i, group_id="g")).sequence_number or 0) for i in range(50)]
    assert seqs == sorted(seqs) and len(set(seqs)) == 50


def test_fifo_requires_group_and_dedup(store: QueueStore) -> None:
    store.create_queue("n.fifo", QueueKind.FIFO)
    with pytest.raises(QueueKindMismatch):
        store.send("n.fifo", M(b"x"))
    with pytest.raises(QueueKindMismatch):
        store.send("n.fifo", M(b"x", group_id="g"))
    store.send("n.fifo", M(b"x", group_id="g", dedup_id="1"))


def test_fifo_ordering_under_concurrent_senders(store: QueueStore) -> None:
    s = store
    s.create_queue("c.fifo", QueueKind.FIFO, QueueConfig(content_based_dedup=True))

    def sender(t: int) -> None:
        for i in range(40):
            s.send("c.fifo", M(b"%d-%03d" % (t, i), group_id=f"g{t}"))

    threads = [threading.Thread(target=sender, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seen: dict[str, list[int]] = {}
    while True:
        got = s.poll("c.fifo", limit=10)
        if not got:
            break
        for d in got:
            g, i = d.message.body.decode().split("-")
            seen.setdefault(g, []).append(int(i))
        s.ack("c.fifo", [d.receipt for d in got])
    assert {g: v for g, v in seen.items()} == {str(t): list(range(40)) for t in range(4)}


# ------------------------------------------------------------------ moves


def _wait_move(store: QueueStore, ref: str) -> None:
    deadline = time.monotonic() + 10
    while store.move_status(ref).state is MoveState.IN_PROGRESS and time.monotonic() < deadline:
        time.sleep(0.01)


def test_move_moves_everything_unclaimed_with_new_ids(store: QueueStore) -> None:
    ids = {r.id for r in store.send_batch("a", [M(b"%d" % i) for i in range(25)], create=STD)}
    store.poll("a", limit=5)
    ref = store.move("a", "b")
    assert len(ref) == 42
    _wait_move(store, ref)
    st = store.move_status(ref)
    assert st.state is MoveState.COMPLETE and st.moved == 25 and (st.source, st.destination) == ("a", "b")
    assert store.size("a") == 0 and store.size("b") == 25 and store.claim_count("b") == 0
    moved = store.peek("b", limit=100)
    assert not ids & {m.id for m in moved}
    assert sorted(m.body for m in moved) == sorted(b"%d" % i for i in range(25))
    assert [s.ref for s in store.list_moves("a")] == [ref]


def test_move_errors(store: QueueStore) -> None:
    with pytest.raises(InvalidArgument, match="cannot move queue to itself"):
        store.move("a", "a")
    with pytest.raises(UnknownMove):
        store.move_status("nonsense")
    with pytest.raises(UnknownMove):
        store.move_status("A" * 42)


def test_move_into_dedup_queue_dedups_again(store: QueueStore) -> None:
    D = QueueKind.DEDUP
    store.send_batch("src", [M(b"A"), M(b"B")], create=D)
    store.poll("src", limit=10)  # surfaced: not deduplicated at the source any more
    store.send("src", M(b"A"))
    ref = store.move("src", "dst")
    _wait_move(store, ref)
    assert store.move_status(ref).state is MoveState.COMPLETE
    assert store.size("dst") == 2


def test_cancel_move(store: QueueStore) -> None:
    store.send_batch("a", [M(b"x")] * 3000, create=STD)
    ref = store.move("a", "b", max_per_second=500)
    st = store.cancel_move(ref)
    assert st.state in (MoveState.CANCELLED, MoveState.IN_PROGRESS)
    _wait_move(store, ref)
    assert store.move_status(ref).state is MoveState.CANCELLED
    assert store.size("a") + store.size("b") == 3000


# ------------------------------------------------------------------ archive, corruption, retention


@pytest.mark.file_store_only('archive segments on disk')
def test_archive_keeps_acknowledged_messages(store: FileStore, clock: FakeClock) -> None:
    store.create_queue("arch", config=QueueConfig(archive=True))
    sent = store.send("arch", M(b"payload", attributes={"x": 1})).id
    clock.advance(2)
    d = store.poll("arch")[0]
    clock.advance(3)
    store.ack("arch", [d.receipt])
    q = catalog_of(store).find("arch")
    assert q is not None
    assert archive_of(store).compact(q, now_ms_of(store), force=True) == 1
    [seg] = archive_of(store).segments("arch")
    [rec] = [json.loads(line) for line in Path(seg).read_text().splitlines()]
    assert rec["id"] == sent and rec["body"] == "payload" and rec["receive_count"] == 1
    assert rec["acked_at"] - rec["first_received_at"] == pytest.approx(3, abs=0.01)
    assert rec["first_received_at"] - rec["sent_at"] == pytest.approx(2, abs=0.01)
    assert rec["attributes"] == {"x": 1}


@pytest.mark.file_store_only('a torn message file')
def test_corrupt_file_is_quarantined_not_delivered(store: FileStore) -> None:
    mid = store.send("q", M(b"good"), create=STD).id
    store.send("q", M(b"also good"))
    q = catalog_of(store).find("q")
    assert q is not None
    path = Path(q.ready_dir(std_bucket(id_time_ms(mid)))) / f"{mid}~0~0"
    path.write_bytes(path.read_bytes()[:-2] + b"XX")  # a torn write
    assert bodies(store.poll("q", limit=10)) == [b"also good"]
    assert len(os.listdir(root_of(store) / "corrupt")) == 1


def test_retention_drops_old_messages(store: QueueStore, clock: FakeClock) -> None:
    store.create_queue("q", config=QueueConfig(retention=60))
    store.send("q", M(b"old"))
    clock.advance(61)
    store.send("q", M(b"new"))
    maintain(store)
    assert [m.body for m in store.peek("q")] == [b"new"]


@pytest.mark.file_store_only('temp files of a dead writer')
def test_tmp_debris_of_dead_writer_is_swept(store: FileStore) -> None:
    debris = root_of(store) / "tmp" / f"{tmp_of(store).prefix}999999-1-1.tmp"
    debris.write_bytes(b"half")
    live = root_of(store) / "tmp" / f"{tmp_of(store).prefix}{os.getpid()}-1-1.tmp"
    live.write_bytes(b"mine")
    maintain(store)
    assert not debris.exists() and live.exists()


# ------------------------------------------------------------------ long polling


def test_long_poll_wakes_promptly_on_send(store: QueueStore) -> None:
    s = store
    s.watcher.rescan = 30.0  # type: ignore[misc]  # only the send can end the wait early
    s.create_queue("q")
    threading.Timer(0.3, lambda: s.send("q", M(b"w"))).start()
    t0 = time.monotonic()
    got = s.poll("q", wait=10)
    elapsed = time.monotonic() - t0
    assert bodies(got) == [b"w"]
    # the wake-up came from the send, not the end of the wait (slack for a loaded 2-core CI box)
    assert 0.25 < elapsed < 3


def test_long_poll_wakes_on_send_from_another_store_instance(tmp_path: Path) -> None:
    a = FileStore(tmp_path / "r", fsync=False)
    b = FileStore(tmp_path / "r", fsync=False)  # like another process: only inotify can tell a
    a.watcher.rescan = 30.0
    a.create_queue("q")
    threading.Timer(0.3, lambda: b.send("q", M(b"w"))).start()
    t0 = time.monotonic()
    got = a.poll("q", wait=10)
    a.close()
    b.close()
    assert bodies(got) == [b"w"]
    assert time.monotonic() - t0 < 3  # inotify (or the 50 ms fallback), not the end of the wait


def test_long_poll_wakes_on_a_send_elsewhere_between_its_poll_and_its_wait(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process's send that lands after the poll found nothing, before the wait began: the
    wait must see it (inotify armed before the poll), not sleep until the next re-poll."""
    a = FileStore(tmp_path / "r", fsync=False)
    b = FileStore(tmp_path / "r", fsync=False)
    a.watcher.rescan = 30.0
    a.create_queue("q")
    claiming = claiming_of(a)
    first_claim = claiming._claim

    def claim_then_send_elsewhere(*args: object) -> object:
        got = first_claim(*args)  # type: ignore[arg-type]
        monkeypatch.setattr(claiming, "_claim", first_claim)
        b.send("q", M(b"w"))  # after the poll's listing, before its wait
        time.sleep(0.2)  # the watcher thread has read every event there was
        return got

    monkeypatch.setattr(claiming, "_claim", claim_then_send_elsewhere)
    t0 = time.monotonic()
    got = a.poll("q", wait=5)
    a.close()
    b.close()
    assert bodies(got) == [b"w"]
    assert time.monotonic() - t0 < 2.5


def test_long_poll_times_out_empty(store: QueueStore) -> None:
    store.create_queue("q")
    t0 = time.monotonic()
    assert store.poll("q", wait=0.4) == []
    assert store.peek_ready("q", wait=0.4) == []
    assert 0.7 < time.monotonic() - t0 < 3


def test_long_poll_without_inotify_repolls_promptly(tmp_path: Path) -> None:
    a = FileStore(tmp_path / "r", fsync=False)
    b = FileStore(tmp_path / "r", fsync=False)
    a.watcher._failed = True  # as when inotify is missing or its per-user instance limit is reached
    a.create_queue("q")
    threading.Timer(0.3, lambda: b.send("q", M(b"w"))).start()
    t0 = time.monotonic()
    try:
        assert bodies(a.poll("q", wait=10)) == [b"w"]
        assert time.monotonic() - t0 < 3
    finally:
        a.close()
        b.close()


@pytest.mark.file_store_only('a data directory removed under the store')
def test_missing_root_is_storage_unavailable(store: FileStore) -> None:
    import shutil

    from spoolq.errors import StorageUnavailable

    store.send("q", M(b"x"), create=STD)
    shutil.rmtree(root_of(store))
    for call in (lambda: store.send("q", M(b"y")), lambda: store.poll("q"), lambda: store.size("q"),
                 lambda: store.send("new", M(b"y"), create=STD)):
        with pytest.raises(StorageUnavailable) as info:
            call()
        assert info.value.retry_after > 0


@pytest.mark.file_store_only('a queue directory left half-made by a crash')
def test_half_created_queue_is_swept(store: FileStore) -> None:
    staging = root_of(store) / "queues" / ".new~0123456789abcdef"
    (staging / "ready").mkdir(parents=True)
    old = time.time() - 3600
    os.utime(staging, (old, old))
    fresh = root_of(store) / "queues" / ".new~fedcba9876543210"
    fresh.mkdir()
    maintain(store)
    assert not staging.exists() and fresh.exists()
    assert store.list_queues() == []


def test_fsync_flush_mode_flushes_only_own_directories(tmp_path: Path) -> None:
    s = FileStore(tmp_path / "r", fsync=True, flush="fsync")
    s.send("q", M(b"a"), create=STD)
    s.send_batch("q", [M(b"b"), M(b"c", delay=5)])
    assert commit_of(s).per_file and commit_of(s).flushes >= 2
    assert sorted(m.body for m in s.peek("q")) == [b"a", b"b"]
    with pytest.raises(InvalidArgument):
        FileStore(tmp_path / "r2", flush="sometimes")
    s.close()


@pytest.mark.file_store_only('the directory listings a poll reads')
def test_old_backlog_never_needs_a_big_listing(store: FileStore, clock: FakeClock,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A backlog built one message a second: no directory read on poll/size holds > 1000 entries."""
    from spoolq.store import catalog, damage, fileops, handle, reading

    for i in range(3000):
        store.send("q", M(b"%04d" % i), create=STD)
        clock.advance(1)
    biggest = [0]
    real = fileops.listdir

    def measuring(path: str) -> list[str]:
        names = real(path)
        biggest[0] = max(biggest[0], len(names))
        return names

    for module in (catalog, damage, handle, reading):  # damage.listing: the cursor's and ready buckets' listings
        monkeypatch.setattr(module, "listdir", measuring)
    got = store.poll("q", limit=10)
    assert bodies(got) == [b"%04d" % i for i in range(10)]
    # the kept count: every bucket listed within the time a first call may take, or the rest estimated
    kept = store.counts("q", limit=100)
    assert kept.ready == 2990 if kept.exact else 1000 <= kept.ready <= 9000
    assert biggest[0] <= 1000
    assert store.size("q") == 3000
    assert len(os.listdir(root_of(store) / "queues" / "q" / "ready")) <= 4


# ------------------------------------------------------------------ fan-out


def test_fan_out_stores_a_copy_in_each_queue_and_a_failure_alone(store: QueueStore) -> None:
    store.create_queue("a")
    store.create_queue("b")
    store.create_queue("small", config=QueueConfig(max_message_bytes=2))
    store.create_queue("f.fifo", QueueKind.FIFO)
    out = store.fan_out([("a", M(b"hey")), ("missing", M(b"hey")), ("b", M(b"hey")), ("small", M(b"hey")),
                         ("f.fifo", M(b"hey")), ("f.fifo", M(b"hey", group_id="g", dedup_id="d1"))])
    assert [type(o) for o in out[:4]] == [SendResult, QueueNotFound, SendResult, MessageTooLarge]
    assert isinstance(out[4], QueueKindMismatch)  # a FIFO copy without its group id
    fifo = out[5]
    assert isinstance(fifo, SendResult) and fifo.sequence_number is not None and not fifo.duplicate
    again = store.fan_out([("f.fifo", M(b"hey", group_id="g", dedup_id="d1")), ("a", M(b"again"))])
    assert isinstance(again[0], SendResult) and again[0].duplicate and again[0].id == fifo.id
    with pytest.raises(InvalidArgument):
        store.fan_out([("a", M(b"x")), ("no/slash", M(b"y"))])
    assert store.fan_out([]) == []
    assert bodies(store.poll("a", limit=10)) == [b"hey", b"again"] and bodies(store.poll("b")) == [b"hey"]
    assert bodies(store.poll("f.fifo", limit=10)) == [b"hey"]
    assert store.size("small") == 0 and store.list_queues() == ["a", "b", "f.fifo", "small"]
