"""A claimed message goes back to its ready name in two renames where ``ceph-fuse`` runs the mount
(:meth:`~spoolq.store.handle.QueueHandle.requeue`): releases and claim expiries still bring it back
once, racers (threads standing in for nodes) each lose cleanly, and a crash between the two renames
leaves a claim that expires, not a lost message. On CephFS itself the multinode tier's bucket churn
test shows what it is for."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spoolq.store import FileStore
from spoolq.store import layout as L
from spoolq.store.filesystems import SAME_NAME_RENAME_RACE_HANGS, requeue_in_two_steps
from spoolq.store.handle import REQUEUE_HOLD_MS
from spoolq.store.model import OutgoingMessage, QueueKind
from tests.inside import catalog_of

QUEUE = "q"


class Clock:
    def __init__(self) -> None:
        self.now = time.time() // 1000 * 1000 + 100

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[FileStore]:
    s = FileStore(tmp_path / "root", fsync=False, clock=clock)
    catalog_of(s).two_step_requeue = True  # as on a ceph-fuse mount
    s.create_queue(QUEUE, kind=QueueKind.STANDARD)
    yield s
    s.close()


def claimed_names(store: FileStore) -> list[str]:
    return sorted(os.path.basename(path) for path, _ in catalog_of(store).find(QUEUE).claimed_files())


def test_only_ceph_fuse_takes_two_steps(tmp_path: Path) -> None:
    assert {"fuse.ceph-fuse"} == SAME_NAME_RENAME_RACE_HANGS
    assert requeue_in_two_steps(tmp_path) is False  # a local disk


def test_a_release_and_an_expiry_bring_the_message_back_once(store: FileStore, clock: Clock) -> None:
    store.send(QUEUE, OutgoingMessage(body=b"m"))
    [d] = store.poll(QUEUE, claim_ttl=60)
    assert store.release(QUEUE, [d.receipt]) == [True]
    assert claimed_names(store) == []
    [again] = store.poll(QUEUE, claim_ttl=1)
    assert again.message.body == b"m"
    clock.now += 2
    store.maintain()
    assert claimed_names(store) == []
    [third] = store.poll(QUEUE, claim_ttl=60)
    assert (third.message.body, store.poll(QUEUE)) == (b"m", [])


def test_racing_requeues_of_one_claim_bring_it_back_once(store: FileStore, clock: Clock) -> None:
    store.send_batch(QUEUE, [OutgoingMessage(body=str(i).encode()) for i in range(40)])
    store.poll(QUEUE, limit=40, claim_ttl=1)
    clock.now += 2
    core = catalog_of(store)
    q = core.find(QUEUE)
    claims = list(q.claimed_files())
    outcomes: list[str] = []
    start = threading.Barrier(4)

    def racer() -> None:
        start.wait()
        for path, p in claims:
            try:
                q.requeue(path, p, q.ready_dir(L.std_bucket(L.id_time_ms(p.id))), int(clock.now * 1000))
                outcomes.append("won")
            except FileNotFoundError:
                outcomes.append("lost")

    threads = [threading.Thread(target=racer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (outcomes.count("won"), outcomes.count("lost")) == (40, 120)
    assert claimed_names(store) == []
    assert sorted(d.message.body for d in store.poll(QUEUE, limit=50)) == sorted(str(i).encode() for i in range(40))


def test_a_crash_between_the_two_renames_leaves_a_claim_that_expires(store: FileStore, clock: Clock) -> None:
    store.send(QUEUE, OutgoingMessage(body=b"m"))
    assert len(store.poll(QUEUE, claim_ttl=1)) == 1
    clock.now += 2
    q = catalog_of(store).find(QUEUE)
    [(path, p)] = q.claimed_files()
    hold = int(clock.now * 1000) + REQUEUE_HOLD_MS
    os.rename(path, f"{os.path.dirname(path)}/{L.claimed_name(p.id, p.rc, p.frt, hold, L.new_token())}")  # step one only
    store.maintain()
    assert store.poll(QUEUE) == []  # held: nobody renames it on before it expires
    clock.now += REQUEUE_HOLD_MS / 1000 + 1
    store.maintain()
    [back] = store.poll(QUEUE, claim_ttl=60)
    assert back.message.body == b"m"
