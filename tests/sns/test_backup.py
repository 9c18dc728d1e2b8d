"""``spoolq backup`` and ``restore`` keep SNS topics, subscriptions and the signing key."""

from __future__ import annotations

from pathlib import Path

from spoolq.cli.backup import backup, restore
from spoolq.store.filestore import FileStore
from spoolq.topics.catalog import TopicKey, TopicRegistry


def test_topics_survive_backup_and_restore(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = FileStore(root, node_id="b")
    store.create_queue("sqs:123456789012:us-east-1:q")
    store.close()
    registry = TopicRegistry(root)
    key = TopicKey("123456789012", "us-east-1", "orders")
    topic = registry.create_topic(key, {"DisplayName": "Orders"}, {"team": "a"})
    sub, _ = registry.subscribe(key, "sqs", "arn:aws:sqs:us-east-1:123456789012:q", {"RawMessageDelivery": "true"},
                                confirmed=True, token="", owner="123456789012")
    registry.add_signing_key("0" * 32, b"key and certificate")
    backup(root, tmp_path / "copy")
    restore(tmp_path / "copy", tmp_path / "restored")
    restored = TopicRegistry(tmp_path / "restored")
    assert restored.get_topic(key) == topic
    assert restored.subscriptions(key) == (sub,)
    assert restored.signing_keys() == [("0" * 32, b"key and certificate")]
