"""The store decides a message's rules, once, and says which rule a refusal is about.

Every door relies on these: a refusal is a :class:`MessageRefused` naming its
:class:`MessageRule` and limit (the SQS door words it as AWS does from those alone), and
``send_each`` fails only the refused messages of a batch, under concurrent senders too.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from spoolq.errors import MessageRefused, MessageRule, MessageTooLarge, QueueKindMismatch
from spoolq.store import FileStore, OutgoingMessage, QueueConfig, QueueKind, SendResult
from tests.conftest import tree

M = OutgoingMessage


@pytest.mark.parametrize(("queue", "message", "rule", "limit"), [
    ("std", M(b"x" * 1000, extra_bytes=25), MessageRule.SIZE, 1024),  # the door's attributes count
    ("std", M(b"x", group_id="with space"), MessageRule.GROUP_ID, 128),
    ("std", M(b"x", group_id="é"), MessageRule.GROUP_ID, 128),
    ("f.fifo", M(b"x", group_id="g", dedup_id="tab\there"), MessageRule.DEDUP_ID, 128),
    ("f.fifo", M(b"x"), MessageRule.GROUP_ID_MISSING, None),
    ("f.fifo", M(b"x", group_id="g"), MessageRule.DEDUP_ID_MISSING, None),
    ("std", M(b"x", dedup_id="d"), MessageRule.DEDUP_ID_NOT_FIFO, None),
])
def test_each_refusal_names_its_rule_and_limit_and_stores_nothing(
        store: FileStore, tmp_path: Path, queue: str, message: OutgoingMessage, rule: MessageRule,
        limit: int | None) -> None:
    config = QueueConfig(max_message_bytes=1024)
    store.create_queue("std", QueueKind.STANDARD, config)
    store.create_queue("f.fifo", QueueKind.FIFO, config)
    before = tree(tmp_path / "root")
    with pytest.raises(MessageRefused) as refused:
        store.send(queue, message)
    assert (refused.value.rule, refused.value.limit) == (rule, limit)
    assert tree(tmp_path / "root") == before


def test_the_size_counts_the_body_and_the_door_s_extra_bytes(store: FileStore) -> None:
    store.create_queue("std", QueueKind.STANDARD, QueueConfig(max_message_bytes=1024))
    store.send("std", M(b"x" * 1000, extra_bytes=24))  # exactly the limit
    with pytest.raises(MessageTooLarge) as e:
        store.send("std", M(b"x" * 1000, extra_bytes=25))
    assert (e.value.value, e.value.limit) == (1025, 1024)


def test_content_based_deduplication_keeps_the_body_digest_as_the_id(store: FileStore) -> None:
    store.create_queue("c.fifo", QueueKind.FIFO, QueueConfig(content_based_dedup=True))
    store.send("c.fifo", M(b"body", group_id="g"))
    assert store.send("c.fifo", M(b"body", group_id="g")).duplicate
    [delivery] = store.poll("c.fifo", 10)
    assert delivery.message.dedup_id == hashlib.sha256(b"body").hexdigest()


def test_send_each_fails_only_the_refused_messages(store: FileStore) -> None:
    store.create_queue("std", QueueKind.STANDARD, QueueConfig(max_message_bytes=1024))
    outcomes = store.send_each("std", [M(b"a"), M(b"x" * 2000), M(b"b", group_id="bad id"), M(b"c")])
    assert [type(o) for o in outcomes] == [SendResult, MessageTooLarge, MessageRefused, SendResult]
    assert sorted(d.message.body for d in store.poll("std", 10)) == [b"a", b"c"]


def test_send_each_refuses_a_whole_fifo_batch_with_a_missing_id(store: FileStore, tmp_path: Path) -> None:
    store.create_queue("f.fifo", QueueKind.FIFO)
    before = tree(tmp_path / "root")
    with pytest.raises(QueueKindMismatch) as e:
        store.send_each("f.fifo", [M(b"a", group_id="g", dedup_id="1"), M(b"b", dedup_id="2")])
    assert e.value.rule is MessageRule.GROUP_ID_MISSING
    assert tree(tmp_path / "root") == before


def test_send_each_with_every_message_refused_stores_nothing(store: FileStore, tmp_path: Path) -> None:
    store.create_queue("std", QueueKind.STANDARD, QueueConfig(max_message_bytes=1024))
    before = tree(tmp_path / "root")
    outcomes = store.send_each("std", [M(b"x" * 2000), M(b"y", dedup_id="d")])
    assert [o.rule for o in outcomes if isinstance(o, MessageRefused)] == [MessageRule.SIZE,
                                                                            MessageRule.DEDUP_ID_NOT_FIFO]
    assert tree(tmp_path / "root") == before


@pytest.mark.parametrize("kind", [QueueKind.STANDARD, QueueKind.FIFO])
def test_send_each_under_concurrent_senders_stores_exactly_the_good_messages(tmp_path: Path, kind: QueueKind) -> None:
    store = FileStore(tmp_path / "root", node_id="t", fsync=False)
    name = "q.fifo" if kind is QueueKind.FIFO else "q"
    store.create_queue(name, kind, QueueConfig(max_message_bytes=1024))
    threads, rounds = 6, 25
    accepted: list[bytes] = []
    lock = threading.Lock()

    def sender(t: int) -> None:
        for r in range(rounds):
            batch = [M(b"%d-%d-%d" % (t, r, i) + (b"x" * 2000 if i % 3 == 1 else b""),
                       group_id=f"g{t}" if kind is QueueKind.FIFO else None,
                       dedup_id=f"{t}-{r}-{i}" if kind is QueueKind.FIFO else None) for i in range(6)]
            outcomes = store.send_each(name, batch)
            good = [m.body for m, o in zip(batch, outcomes, strict=True) if isinstance(o, SendResult)]
            assert all(isinstance(o, MessageTooLarge) for m, o in zip(batch, outcomes, strict=True)
                       if len(m.body) > 1024)
            with lock:
                accepted.extend(good)

    workers = [threading.Thread(target=sender, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stored: list[bytes] = []
    while batch := store.poll(name, 1000, claim_ttl=600):
        stored.extend(d.message.body for d in batch)
    assert sorted(stored) == sorted(accepted)
    assert len(accepted) == threads * rounds * 4
    store.close()
