"""The store's fan-out: one message in several queues, one flush, each failure alone (store/fanout.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from spoolq.errors import InvalidQueueName, MessageRefused, QueueNotFound
from spoolq.store.filestore import FileStore
from spoolq.store.model import OutgoingMessage, QueueConfig, QueueKind, SendResult


class Flushes:
    def __init__(self) -> None:
        self.count = 0

    def messages(self, event: object, queue: str, count: int) -> None:
        pass

    def flushed(self, seconds: float, batch: int) -> None:
        self.count += 1


@pytest.fixture(params=["syncfs", "journal", "fsync"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> FileStore:
    s = FileStore(tmp_path / "root", flush=request.param, force_flush=True)
    yield s
    s.close()


def test_one_flush_for_every_queue(store: FileStore) -> None:
    names = [f"q{i}" for i in range(10)]
    for name in names:
        store.create_queue(name)
    flushes = Flushes()
    store.subscribe(flushes)
    outcomes = store.fan_out([(name, OutgoingMessage(f"to {name}".encode())) for name in names])
    assert all(isinstance(o, SendResult) for o in outcomes)
    assert flushes.count == 1
    for name in names:
        assert [m.body for m in store.peek(name)] == [f"to {name}".encode()]


def test_failures_stand_alone(store: FileStore) -> None:
    store.create_queue("small", config=QueueConfig(max_message_bytes=1024))
    store.create_queue("big")
    store.create_queue("orders.fifo", QueueKind.FIFO)
    outcomes = store.fan_out([
        ("small", OutgoingMessage(b"x" * 2000)),
        ("missing", OutgoingMessage(b"m")),
        ("big", OutgoingMessage(b"x" * 2000)),
        ("orders.fifo", OutgoingMessage(b"f")),  # no group id
        ("orders.fifo", OutgoingMessage(b"g", group_id="g1", dedup_id="d1")),
    ])
    assert isinstance(outcomes[0], MessageRefused)
    assert isinstance(outcomes[1], QueueNotFound)
    assert isinstance(outcomes[2], SendResult)
    assert isinstance(outcomes[3], MessageRefused)
    assert isinstance(outcomes[4], SendResult) and outcomes[4].sequence_number
    assert store.size("small") == 0 and store.size("big") == 1 and store.size("orders.fifo") == 1


def test_nothing_to_store_flushes_nothing(store: FileStore) -> None:
    flushes = Flushes()
    store.subscribe(flushes)
    assert isinstance(store.fan_out([("missing", OutgoingMessage(b"m"))])[0], QueueNotFound)
    assert store.fan_out([]) == []
    assert flushes.count == 0


def test_bad_arguments_store_nothing(store: FileStore) -> None:
    store.create_queue("q")
    with pytest.raises(InvalidQueueName):
        store.fan_out([("q", OutgoingMessage(b"a")), ("no/slash", OutgoingMessage(b"b"))])
    assert store.size("q") == 0


def test_fifo_dedup_and_order_across_concurrent_fan_outs(store: FileStore) -> None:
    """Two threads fan out to the same three FIFO queues: every queue holds the messages in one order."""
    names = ["a.fifo", "b.fifo", "c.fifo"]
    for name in names:
        store.create_queue(name, QueueKind.FIFO)

    def publish(tag: str) -> None:
        for i in range(40):
            store.fan_out([(name, OutgoingMessage(f"{tag}{i}".encode(), group_id="g", dedup_id=f"{tag}{i}"))
                           for name in reversed(names) if tag == "x"] +
                          [(name, OutgoingMessage(f"{tag}{i}".encode(), group_id="g", dedup_id=f"{tag}{i}"))
                           for name in names if tag == "y"])

    threads = [threading.Thread(target=publish, args=(tag,)) for tag in "xy"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    orders = [[m.body for m in store.peek(name, limit=100)] for name in names]
    assert len(orders[0]) == 80 and orders[0] == orders[1] == orders[2]
    again = store.fan_out([(name, OutgoingMessage(b"x0", group_id="g", dedup_id="x0")) for name in names])
    assert all(isinstance(o, SendResult) and o.duplicate for o in again)
