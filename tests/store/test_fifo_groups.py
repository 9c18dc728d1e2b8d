"""FIFO group directories: who may remove them, and when (see ``maintenance.remove_idle_groups``).

On a GlusterFS distributed volume an rmdir and a rename into the same directory at the same
moment can hang both for good, so a group's ``ready/<g>/`` and ``claimed/<g>/`` are removed only
by maintenance, under the queue's lock, once the group holds no message and has been idle. The
lock is held by another process here (``workers.py hold_lock``), as another node would.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from spoolq.store import FileStore, OutgoingMessage
from spoolq.store import layout as L
from spoolq.store.maintenance import GROUP_IDLE
from spoolq.store.model import DeadLetterPolicy, QueueConfig, QueueKind
from tests.conftest import FakeClock
from tests.inside import catalog_of

from .helpers import Child


def group_dirs(store: FileStore, queue: str, group: str) -> list[Path]:
    q = catalog_of(store).find(queue)
    assert q is not None
    g = L.fifo_bucket(group)
    return [Path(q.sub(f"claimed/{g}")), Path(q.sub(f"ready/{g}"))]


def age(dirs: list[Path], seconds: float) -> None:
    then = time.time() - seconds
    for d in dirs:
        if d.exists():
            os.utime(d, (then, then))


def lock_path(store: FileStore, queue: str) -> str:
    q = catalog_of(store).find(queue)
    assert q is not None
    return q.sub("lock")


class HeldLock:
    """The queue's lock, held by another process until :meth:`release`."""

    def __init__(self, children: list[Child], path: str, tmp: Path) -> None:
        self.release_file = tmp / f"release-{os.getpid()}-{time.monotonic_ns()}"
        self.child = Child("hold_lock", path, str(self.release_file))
        children.append(self.child)
        assert self.child.readline() == "ready"

    def release(self) -> None:
        self.release_file.touch()
        assert self.child.wait(timeout=30) == 0


def in_thread(fn: Callable[[], object]) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def fifo(store: FileStore, name: str = "q.fifo", config: QueueConfig | None = None) -> str:
    store.create_queue(name, QueueKind.FIFO, config or QueueConfig(content_based_dedup=True))
    return name


def test_a_group_keeps_its_directories_until_it_is_idle_and_empty(store: FileStore) -> None:
    q = fifo(store)
    store.send_batch(q, [OutgoingMessage(body=b"a1", group_id="a"), OutgoingMessage(body=b"b1", group_id="b")])
    got = store.poll(q, limit=10, claim_ttl=300)
    assert sorted(d.message.body for d in got) == [b"a1", b"b1"]
    store.ack(q, [d.receipt for d in got if d.message.body == b"a1"])
    a, b = group_dirs(store, q, "a"), group_dirs(store, q, "b")
    assert all(d.is_dir() for d in a)  # the claim and the ack leave them: no rmdir on the hot path

    store.maintain()
    assert all(d.is_dir() for d in a)  # empty, but changed a moment ago

    age(a + b, GROUP_IDLE + 5)
    assert store.maintain()["groups_removed"] == 1
    assert not any(d.exists() for d in a)
    assert all(d.is_dir() for d in b)  # b's message is claimed: its group is not idle

    store.send(q, OutgoingMessage(body=b"a2", group_id="a"))  # a removed group comes back on its next send
    [d] = store.poll(q, limit=10, claim_ttl=300)
    assert d.message.body == b"a2"


def test_removing_a_group_waits_for_the_queue_lock(store: FileStore, children: list[Child], tmp_path: Path) -> None:
    q = fifo(store)
    store.send(q, OutgoingMessage(body=b"a1", group_id="a"))
    [d] = store.poll(q, claim_ttl=300)
    store.ack(q, [d.receipt])
    a = group_dirs(store, q, "a")
    age(a, GROUP_IDLE + 5)

    held = HeldLock(children, lock_path(store, q), tmp_path)
    pass_ = in_thread(store.maintain)
    pass_.join(1.0)
    assert pass_.is_alive() and all(d.is_dir() for d in a)  # waiting for the other process's lock
    held.release()
    pass_.join(30)
    assert not pass_.is_alive() and not any(d.exists() for d in a)


def test_a_due_delayed_message_waits_for_the_queue_lock(tmp_path: Path, children: list[Child],
                                                        clock: FakeClock) -> None:
    store = FileStore(tmp_path / "root", node_id="n", fsync=False, clock=clock)
    q = fifo(store, config=QueueConfig(content_based_dedup=True, delay=5))
    store.send(q, OutgoingMessage(body=b"later", group_id="a"))
    clock.advance(6)

    held = HeldLock(children, lock_path(store, q), tmp_path)
    pass_ = in_thread(store.maintain)
    pass_.join(1.0)
    assert pass_.is_alive()
    assert not group_dirs(store, q, "a")[1].exists()  # not released into ready/<g> yet
    held.release()
    pass_.join(30)
    assert not pass_.is_alive()
    [d] = store.poll(q, claim_ttl=300)
    assert d.message.body == b"later"
    store.close()


def test_a_nested_lock_leaves_the_outer_one_held(store: FileStore, children: list[Child]) -> None:
    q = fifo(store)
    handle = catalog_of(store).find(q)
    assert handle is not None
    path = lock_path(store, q)

    def seen_from_another_process() -> str:
        child = Child("try_lock", path)
        children.append(child)
        return child.readline()

    with handle.fifo_lock():
        with handle.fifo_lock():  # a nested step of a locked operation
            assert seen_from_another_process() == "held"
        assert seen_from_another_process() == "held"  # the inner exit did not drop it
    assert seen_from_another_process() == "free"


def test_dead_lettering_from_a_fifo_claim_does_not_wait_for_the_dlq_lock(
        store: FileStore, children: list[Child], tmp_path: Path) -> None:
    """A FIFO claim holds its queue's lock while it dead-letters; waiting there for the dead-letter
    queue's lock could close a cycle with a claim on that queue (queues that dead-letter into each
    other, on two nodes). The transfer goes ahead without it."""
    dlq = fifo(store, "dlq.fifo")
    q = fifo(store, config=QueueConfig(content_based_dedup=True, dead_letter=DeadLetterPolicy(dlq, 1)))
    store.send(q, OutgoingMessage(body=b"poison", group_id="a"))
    [d] = store.poll(q, claim_ttl=300)
    store.release(q, [d.receipt])

    held = HeldLock(children, lock_path(store, dlq), tmp_path)
    results: list[object] = []
    poll = in_thread(lambda: results.append(store.poll(q, claim_ttl=300)))
    poll.join(20)
    assert not poll.is_alive() and results == [[]]  # moved to the dead-letter queue, not delivered
    held.release()
    [dead] = store.poll(dlq, claim_ttl=300)
    assert dead.message.body == b"poison"


def test_a_group_released_just_after_another_groups_head_was_sent_goes_behind_it(
        store: FileStore, clock: FakeClock) -> None:
    """The kernel stamps a directory change from a coarse clock, up to a tick behind the clock ids are
    made from: a release a few ms after another group's head was sent may carry an earlier mtime. The
    released group still goes behind the group nobody received (SQS's order); as the kernel's stamp
    is emulated here, this failed before the lag was allowed for."""
    q = fifo(store)
    store.send_batch(q, [OutgoingMessage(body=b"g1-m1", group_id="g1"), OutgoingMessage(body=b"g1-m2", group_id="g1")])
    got = store.poll(q, limit=2, claim_ttl=30)
    assert [d.message.body for d in got] == [b"g1-m1", b"g1-m2"]
    clock.advance(0.001)
    g2_head = store.send(q, OutgoingMessage(body=b"g2-m1", group_id="g2")).id
    clock.advance(0.002)
    assert store.release(q, [got[0].receipt]) == [True]
    lagging = (L.id_time_ms(g2_head) - 3) * 1_000_000  # the release, stamped 3 ms behind the id clock
    claimed_g1 = group_dirs(store, q, "g1")[0]
    os.utime(claimed_g1, ns=(lagging, lagging))
    assert [d.message.body for d in store.poll(q, limit=3, claim_ttl=30)] == [b"g2-m1", b"g1-m1"]
