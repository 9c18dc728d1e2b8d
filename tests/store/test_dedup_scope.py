"""A FIFO queue's deduplication scope is a field of its config, decided by the store.

With ``DedupScope.QUEUE`` a deduplication id is used once in the whole queue (five minutes); with
``DedupScope.MESSAGE_GROUP`` once per message group. A queue whose ``meta.json`` predates the
field (the scope kept in ``extra["DeduplicationScope"]``, where the SQS door put it) keeps its scope.
"""

from __future__ import annotations

import json
from pathlib import Path

from spoolq.store import DedupScope, FileStore, OutgoingMessage, QueueConfig, QueueKind


def _send(store: FileStore, queue: str, group: str, dedup: str) -> bool:
    """Whether the send was a duplicate."""
    return store.send(queue, OutgoingMessage(body=b"x", group_id=group, dedup_id=dedup)).duplicate


def test_queue_scope_dedups_across_groups(store: FileStore) -> None:
    store.create_queue("q", QueueKind.FIFO)
    assert store.get_queue("q").config.dedup_scope is DedupScope.QUEUE
    assert not _send(store, "q", "a", "d1")
    assert _send(store, "q", "b", "d1")  # another group, same id: the queue saw it


def test_message_group_scope_dedups_within_a_group(store: FileStore) -> None:
    store.create_queue("g", QueueKind.FIFO, QueueConfig(dedup_scope=DedupScope.MESSAGE_GROUP))
    assert not _send(store, "g", "a", "d1")
    assert not _send(store, "g", "b", "d1")  # another group may use the id
    assert _send(store, "g", "a", "d1")
    assert store.size("g") == 2


def test_a_queue_from_before_the_field_keeps_its_scope(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = FileStore(root, fsync=False)
    store.create_queue("old", QueueKind.FIFO)
    meta = root / "queues" / "old" / "meta.json"
    data = json.loads(meta.read_text())
    del data["config"]["dedup_scope"]
    data["config"]["extra"] = {"DeduplicationScope": "messageGroup"}
    meta.write_text(json.dumps(data))
    store.close()
    store = FileStore(root, fsync=False)
    assert store.get_queue("old").config.dedup_scope is DedupScope.MESSAGE_GROUP
    assert not _send(store, "old", "a", "d1")
    assert not _send(store, "old", "b", "d1")
    store.close()
