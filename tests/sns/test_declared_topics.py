"""Topics declared in the config file (spoolq/config/declared_topics.py): checked line by line, applied
by ``spoolq serve`` beside the declared queues."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from spoolq.config.check import check
from spoolq.config.declared_topics import TopicDeclarationsRefused, parse_topics
from spoolq.settings.server import Settings
from tests.sns.conftest import sns_client, sqs_client
from tests.sqs.harness import SpoolqProcess

CONFIG = {
    "queues": [{"name": "books", "door": "sqs"}, {"name": "everything", "door": "sqs"},
               {"name": "dead", "door": "sqs"}, {"name": "audit.fifo", "door": "sqs"}],
    "topics": [
        {"name": "orders", "display_name": "Orders", "tags": {"team": "shop"}, "subscriptions": [
            {"queue": "books", "raw": True, "filter_policy": {"kind": ["book"]}, "dead_letter": "dead"},
            {"queue": "arn:aws:sqs:us-east-1:123456789012:everything", "raw": True}]},
        {"name": "audit.fifo", "content_based_dedup": True, "subscriptions": [{"queue": "audit.fifo"}]},
    ],
}


def test_mistakes_are_one_line_each(tmp_path: Path) -> None:
    bad = {"topics": [
        {"name": "bad name"},
        {"name": "plain", "subscriptions": [{"queue": "q.fifo"}]},
        {"name": "p", "subscriptions": [{"queue": "q", "filter_policy": {"k": [{"numeric": [">", 3, "<", 1]}]}}]},
        {"name": "u", "colour": "red"},
        {"name": "c", "content_based_dedup": True},
        {"name": "orders"}, {"name": "orders"},
    ]}
    with pytest.raises(TopicDeclarationsRefused) as e:
        parse_topics(bad, Settings(root=tmp_path))
    assert e.value.problems == [
        "config: topics[0] (bad name): name must be 1 to 256 letters, digits, _ and - (a FIFO topic's ending in .fifo)",
        "config: topics[1] (plain): subscriptions[0]: a FIFO queue cannot be subscribed to a standard topic",
        "config: topics[2] (p): subscriptions[0]: FilterPolicy: Bottom must be less than top",
        "config: topics[3] (u): unknown fields colour (known: account, content_based_dedup, display_name, name, "
        "region, signature_version, subscriptions, tags)",
        "config: topics[4] (c): content_based_dedup is true or false, for a FIFO topic only",
        "config: topics[6] (orders): the same topic is declared twice",
    ]
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(bad))
    found = check(Settings(root=tmp_path, config=config))  # what check-config and serve print
    assert [f.text for f in found.findings if f.failed] == e.value.problems and found.config is None
    config.write_text(yaml.safe_dump({"sns": {"http_endpoint": [], "http_endpoints": ["ftp://x/"]}}))
    assert [f.text for f in check(Settings(root=tmp_path, config=config)).findings if f.failed] == [
        "config: sns: unknown key 'http_endpoint' (did you mean 'http_endpoints'?)",
        "config: sns.http_endpoints[0] must be an http:// or https:// URL with a host"]


def test_serve_applies_declared_topics(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    assert "2 declared topics: sns:123456789012:us-east-1:orders, sns:123456789012:us-east-1:audit.fifo" in [
        f.text for f in check(Settings(root=tmp_path / "root", config=config)).findings if f.status == "ok"]
    server = SpoolqProcess(tmp_path / "root", workers=1, threads=4, config=config)
    server.start()
    try:
        sns, sqs = sns_client(server.url), sqs_client(server.url)
        topic = "arn:aws:sns:us-east-1:123456789012:orders"
        assert sns.get_topic_attributes(TopicArn=topic)["Attributes"]["DisplayName"] == "Orders"
        assert sns.list_tags_for_resource(ResourceArn=topic)["Tags"] == [{"Key": "team", "Value": "shop"}]
        subs = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
        assert sorted(s["Endpoint"].rsplit(":", 1)[1] for s in subs) == ["books", "everything"]
        kind = {"kind": {"DataType": "String", "StringValue": "book"}}
        sns.publish(TopicArn=topic, Message="a book", MessageAttributes=kind)
        sns.publish(TopicArn=topic, Message="a pen")
        books = sqs.receive_message(QueueUrl=f"{server.url}/123456789012/books", WaitTimeSeconds=2,
                                    MaxNumberOfMessages=10)["Messages"]
        assert [m["Body"] for m in books] == ["a book"]
        books_sub = next(s["SubscriptionArn"] for s in subs if s["Endpoint"].endswith(":books"))
        attributes = sns.get_subscription_attributes(SubscriptionArn=books_sub)["Attributes"]
        assert json.loads(attributes["RedrivePolicy"]) == {
            "deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:dead"}
        fifo = sns.get_topic_attributes(TopicArn=topic.replace("orders", "audit.fifo"))["Attributes"]
        assert fifo["FifoTopic"] == "true" and fifo["ContentBasedDeduplication"] == "true"
    finally:
        server.stop()
    server.start()  # applied again at start: the same topics, nothing doubled
    try:
        sns = sns_client(server.url)
        assert len(sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]) == 2
        # a reload applies the file again: a new topic, a changed one
        changed = {**CONFIG, "topics": [{**CONFIG["topics"][0], "display_name": "Orders!"}, CONFIG["topics"][1],
                                         {"name": "returns", "subscriptions": [{"queue": "books"}]}]}
        config.write_text(yaml.safe_dump(changed))
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGHUP)
        returns = topic.replace("orders", "returns")

        def applied() -> bool:  # the new topic made, then subscribed (the file's last entry)
            if returns not in {t["TopicArn"] for t in sns.list_topics()["Topics"]}:
                return False
            return len(sns.list_subscriptions_by_topic(TopicArn=returns)["Subscriptions"]) == 1

        deadline = time.monotonic() + 30
        while not applied() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert applied()
        assert sns.get_topic_attributes(TopicArn=topic)["Attributes"]["DisplayName"] == "Orders!"
        log = next(tmp_path.glob("spoolq-*.log")).read_text()
        assert "reload: declared topics added: returns" in log and "declared topics changed: orders" in log
    finally:
        server.stop()
