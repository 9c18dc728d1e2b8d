"""ReadyCounts (spoolq.store.ready_counts): a queue's ready count kept from directory times, true at
any depth after the changes a store makes, by this process and by others.

Each test drives a real file store (other ``FileStore`` instances stand for other processes: the
counter sees only the directories) and holds the counter's answer against the message files on
disk. The file system's clock ticks coarsely, so a listing made within ``RACY_SECONDS`` of its
directory's last change is made again; the tests shorten that window and wait it out, so what
they check is the times, not the listings made again.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest

from spoolq.store import ready_counts as rc
from spoolq.store.filestore import FileStore
from spoolq.store.model import OutgoingMessage, QueueKind

RACY = 0.05


@pytest.fixture(autouse=True)
def _short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rc, "_RACY_NS", int(RACY * 1e9))


class Clock:
    def __init__(self, start: float) -> None:
        self.t = start
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.t

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.t += seconds


def _truth(qdir: Path) -> int:
    return sum(len(os.listdir(qdir / "ready" / k / b)) for k in os.listdir(qdir / "ready")
               for b in os.listdir(qdir / "ready" / k))


def _names(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except FileNotFoundError:  # removed meanwhile by a poller or maintenance
        return []


def _in_flight(qdir: Path) -> tuple[list[str], list[str]]:
    claimed = [n for s in _names(qdir / "claimed") for n in _names(qdir / "claimed" / s)]
    delayed = [n for d in _names(qdir / "delayed") for n in _names(qdir / "delayed" / d)]
    return claimed, delayed


def _count(counter: rc.ReadyCounts, qdir: Path, clock: Clock, limit: int = 100) -> tuple[int, bool]:
    time.sleep(RACY * 1.5)  # past the racy window: what follows is read from times alone
    claimed, delayed = _in_flight(qdir)
    return counter.standard(str(qdir / "ready"), claimed, delayed, limit, now_ns=int(clock() * 1e9))


def _backlog(root: Path, clock: Clock, seconds: int, per_second: int) -> FileStore:
    store = FileStore(root, node_id="fill", fsync=False, clock=clock)
    store.create_queue("q")
    for _ in range(seconds):
        store.send_batch("q", [OutgoingMessage(b"x")] * per_second)
        clock.advance(1.0)
    return store


@pytest.mark.parametrize("peers", [0, 3])
def test_a_deep_queue_stays_exact_through_claims_releases_sends_and_due_delays(tmp_path: Path, peers: int) -> None:
    """400 buckets (more than a call looks at in turn), then rounds of what pollers and senders do,
    from two other stores (the poller in lanes or not); after each round the count equals the files
    on disk, on the first call. (Claims taken and acknowledged between two calls were missed while
    the head was only its first non-empty buckets: a poller claims through a listing of 512.)"""
    clock = Clock(1_800_000_000.0)
    store = _backlog(tmp_path, clock, 400, 3)
    other = FileStore(tmp_path, node_id="other", fsync=False, clock=clock, peers=peers)
    qdir = tmp_path / "queues" / "q"
    counter = rc.ReadyCounts()
    assert _count(counter, qdir, clock) == (1200, True)  # the first call lists every bucket
    rnd = random.Random(7)
    for rnd_round in range(12):
        deliveries = other.poll("q", limit=10)
        other.ack("q", [d.receipt for d in deliveries[:4]])
        other.release("q", [d.receipt for d in deliveries[4:7]])
        store.send("q", OutgoingMessage(b"new"))
        # a message sent 0-5 s ago comes due now: it lands in the bucket of its send
        store.send("q", OutgoingMessage(b"late", delay=rnd.uniform(1, 5)))
        clock.advance(rnd.uniform(1, 6))
        store.maintain()
        counted, exact = _count(counter, qdir, clock)
        truth = _truth(qdir)
        claimed, _ = _in_flight(qdir)
        assert counted == truth, f"round {rnd_round}: counted {counted}, {truth} on disk ({len(claimed)} claimed)"
        assert not exact  # past the limit, not every bucket is looked at
    store.close()
    other.close()


def test_a_message_removed_from_the_middle_is_counted_once_the_sweep_reaches_it(tmp_path: Path) -> None:
    clock = Clock(1_800_000_000.0)
    store = _backlog(tmp_path, clock, 600, 2)
    qdir = tmp_path / "queues" / "q"
    counter = rc.ReadyCounts()
    assert _count(counter, qdir, clock)[0] == 1200
    middle = sorted(os.listdir(qdir / "ready"))[0]
    bucket = sorted(os.listdir(qdir / "ready" / middle))[300]
    victim = sorted(os.listdir(qdir / "ready" / middle / bucket))[0]
    assert store.ack("q", [victim.split("~")[0]]) == [True]  # by id, from the middle of the backlog
    calls = 0
    while _count(counter, qdir, clock)[0] != 1199:
        calls += 1
        assert calls <= 600 // rc.SWEEP_BUCKETS + 1, "the sweep never reached the changed bucket"
    store.close()


def test_a_cold_start_estimates_then_lists_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(1_800_000_000.0)
    store = _backlog(tmp_path, clock, 100, 4)
    qdir = tmp_path / "queues" / "q"
    monkeypatch.setattr(rc, "COLD_SECONDS", 0.0)  # one bucket a call
    counter = rc.ReadyCounts()
    calls, exact = 0, False
    while not exact:
        counted, exact = counter.standard(str(qdir / "ready"), [], [], 10_000, now_ns=int(clock() * 1e9))
        assert counted == 400, "an estimate from the buckets listed so far (all hold 4)"
        calls += 1
        assert calls <= 100
    assert calls == 100, "one bucket never listed a call"
    store.close()


def test_purge_and_a_queue_made_again_are_seen(tmp_path: Path) -> None:
    clock = Clock(1_800_000_000.0)
    store = _backlog(tmp_path, clock, 200, 2)
    qdir = tmp_path / "queues" / "q"
    counter = rc.ReadyCounts()
    assert _count(counter, qdir, clock)[0] == 400
    store.purge("q")
    assert _count(counter, qdir, clock)[0] == 0
    store.delete_queue("q")
    store.create_queue("q")
    store.send_batch("q", [OutgoingMessage(b"x")] * 7)
    assert _count(counter, qdir, clock)[0] == 7
    store.close()


def test_fifo_groups_are_counted_exactly(tmp_path: Path) -> None:
    store = FileStore(tmp_path, node_id="fifo", fsync=False)
    store.create_queue("f.fifo", QueueKind.FIFO)
    for g in range(30):
        store.send_batch("f.fifo", [OutgoingMessage(b"x", group_id=f"g{g}", dedup_id=f"{g}-{i}") for i in range(g % 4 + 1)])
    ready = str(tmp_path / "queues" / "f.fifo" / "ready")
    counter = rc.ReadyCounts()
    assert counter.fifo(ready) == (sum(g % 4 + 1 for g in range(30)), True)
    store.poll("f.fifo", limit=10)
    time.sleep(RACY * 1.5)
    truth = sum(len(os.listdir(f"{ready}/{g}")) for g in os.listdir(ready))
    assert counter.fifo(ready) == (truth, True)
    store.close()


def test_under_concurrent_load_the_count_is_true_once_the_load_stops(tmp_path: Path) -> None:
    """Senders, pollers (ack, release, let claims expire) and delayed sends run in threads of
    three stores while a fourth counts; once they stop, the next count equals the files on disk."""
    clock = Clock(time.time() - 3600)
    _backlog(tmp_path, clock, 300, 2).close()
    qdir = tmp_path / "queues" / "q"
    stores = [FileStore(tmp_path, node_id=f"n{i}", fsync=False) for i in range(3)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def sender(s: FileStore) -> None:
        rnd = random.Random()
        while not stop.is_set():
            s.send("q", OutgoingMessage(b"s", delay=rnd.choice([None, None, 0.2, 1.0])))

    def poller(s: FileStore) -> None:
        rnd = random.Random()
        while not stop.is_set():
            ds = s.poll("q", limit=5, claim_ttl=rnd.choice([0.3, 30.0]))
            if ds:
                s.ack("q", [d.receipt for d in ds[:2]])
                s.release("q", [d.receipt for d in ds[2:3]])

    def guard(fn, s):  # type: ignore[no-untyped-def]
        try:
            fn(s)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=guard, args=(fn, s)) for s in stores for fn in (sender, poller)]
    counter = rc.ReadyCounts()
    for t in threads:
        t.start()
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        claimed, delayed = _in_flight(qdir)
        counter.standard(str(qdir / "ready"), claimed, delayed, 100)
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors, errors
    time.sleep(1.5)  # delays come due and short claims expire
    for s in stores:
        s.maintain()
    counted, _ = _count(counter, qdir, Clock(time.time()))
    assert counted == _truth(qdir)
    for s in stores:
        s.close()
