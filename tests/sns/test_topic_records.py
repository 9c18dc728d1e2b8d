"""Topics and subscriptions in the shared root (spoolq/topics/catalog.py): records, locks, crash leftovers,
and what one process sees of another's changes."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from spoolq.topics import catalog as topics_module
from spoolq.topics.catalog import AlreadyExists, TopicKey, TopicNotFound, TopicRegistry, changed_topic

KEY = TopicKey("123456789012", "us-east-1", "orders")


@pytest.fixture
def registry(tmp_path: Path) -> TopicRegistry:
    (tmp_path / "root").mkdir()  # the store makes the root; a missing one is storage trouble
    return TopicRegistry(tmp_path / "root")


def test_topic_life(registry: TopicRegistry) -> None:
    topic = registry.create_topic(KEY, {"DisplayName": "O"}, {"team": "a"})
    assert registry.create_topic(KEY, {}, {}) == topic  # nothing given: the topic as it is
    with pytest.raises(AlreadyExists):
        registry.create_topic(KEY, {"DisplayName": "P"}, {})
    changed = registry.change_topic(KEY, lambda t: changed_topic(t, tags={"team": "b"}))
    assert registry.get_topic(KEY) == changed and changed.tags == {"team": "b"}
    assert [t.key for t in registry.list_topics(KEY.account, KEY.region)] == [KEY]
    assert registry.delete_topic(KEY) and not registry.delete_topic(KEY)
    assert registry.get_topic(KEY) is None and registry.list_topics(KEY.account, KEY.region) == []
    with pytest.raises(TopicNotFound):
        registry.change_topic(KEY, lambda t: t)


def test_long_names_keep_under_the_directory_limit(registry: TopicRegistry) -> None:
    key = TopicKey(KEY.account, KEY.region, "n" * 256)
    registry.create_topic(key, {}, {})
    assert [t.key for t in registry.list_topics(KEY.account, KEY.region)] == [key]
    assert len(os.path.basename(registry.topic_dir(key))) < 255


def test_subscriptions(registry: TopicRegistry) -> None:
    with pytest.raises(TopicNotFound):
        registry.subscribe(KEY, "sqs", "arn:q", {}, confirmed=True, token="", owner="o")
    registry.create_topic(KEY, {}, {})
    sub, made = registry.subscribe(KEY, "sqs", "arn:q", {"RawMessageDelivery": "true"}, confirmed=True, token="",
                                   owner="o")
    again, made_again = registry.subscribe(KEY, "sqs", "arn:q", {"RawMessageDelivery": "true"}, confirmed=True,
                                           token="", owner="o")
    assert made and not made_again and again == sub
    assert registry.subscribe(KEY, "sqs", "arn:q", {}, confirmed=True, token="", owner="o")[0] == sub  # nothing given
    with pytest.raises(AlreadyExists):
        registry.subscribe(KEY, "sqs", "arn:q", {"RawMessageDelivery": "false"}, confirmed=True, token="", owner="o")
    defaults = {"FilterPolicyScope": "MessageAttributes"}  # a given value equal to the default agrees
    assert registry.subscribe(KEY, "sqs", "arn:q", defaults, confirmed=True, token="", owner="o",
                              defaults=defaults)[0] == sub
    assert registry.subscriptions(KEY) == (sub,)
    assert registry.unsubscribe(KEY, sub.id) and not registry.unsubscribe(KEY, sub.id)
    assert registry.subscriptions(KEY) == ()


def _subscribe_in_child(root: str, endpoint: str) -> None:
    TopicRegistry(root).subscribe(KEY, "sqs", endpoint, {}, confirmed=True, token="", owner="o")


@pytest.mark.parametrize("racy", [topics_module.RACY_SECONDS, 0.0])
def test_another_process_change_is_seen(registry: TopicRegistry, monkeypatch: pytest.MonkeyPatch,
                                        racy: float) -> None:
    """A subscription made by another process is seen at once, whether the cache trusts the
    directories' times (racy 0) or re-reads while a change is younger than RACY_SECONDS."""
    monkeypatch.setattr(topics_module, "RACY_SECONDS", racy)
    registry.create_topic(KEY, {}, {})
    assert registry.subscriptions(KEY) == ()
    for i in range(5):
        child = multiprocessing.get_context("fork").Process(target=_subscribe_in_child,
                                                            args=(str(registry.root), f"arn:q{i}"))
        child.start()
        child.join()
        assert len(registry.subscriptions(KEY)) == i + 1


def test_crash_leftovers_are_no_topics(registry: TopicRegistry) -> None:
    """A directory without topic.json (a crash between mkdir and the record) is no topic; a deleted
    topic's directory left in .trash/ by a crash is removed by the next deletion."""
    os.makedirs(registry.topic_dir(KEY))
    assert registry.get_topic(KEY) is None and registry.list_topics(KEY.account, KEY.region) == []
    assert registry.create_topic(KEY, {}, {}).key == KEY  # the next creation fills it
    leftover = registry.base / ".trash" / "old~1"
    leftover.mkdir(parents=True)
    (leftover / "topic.json").write_text("{}")
    registry.delete_topic(KEY)
    assert list((registry.base / ".trash").iterdir()) == []


def test_fifo_window(registry: TopicRegistry) -> None:
    key = TopicKey(KEY.account, KEY.region, "f.fifo")
    registry.create_topic(key, {"FifoTopic": "true"}, {})
    with registry.fifo_publishing(key) as window:
        first = window.next_sequence()
        second = window.next_sequence()
        assert len(first) == 20 and int(second) > int(first)
        assert window.seen("d1") is None
        window.remember("d1", "mid", second)
        assert window.seen("d1") == ("mid", second)
    os.unlink(f"{registry.topic_dir(key)}/fifo.seq")  # lost to a power cut: numbers still go up
    with registry.fifo_publishing(key) as window:
        assert int(window.next_sequence()) > int(second)
