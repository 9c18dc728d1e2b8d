"""What happens to a topic's messages is counted: ``spoolq_topic_messages_total{topic,outcome}``."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import requests

from tests.sqs.harness import SpoolqProcess


def _counts(url: str, topic: str) -> dict[str, float]:
    text = requests.get(f"{url}/metrics", timeout=10).text
    pattern = re.compile(r'^spoolq_topic_messages_total\{(.*)\} (\S+)$', re.M)
    out: dict[str, float] = {}
    for labels, value in pattern.findall(text):
        parsed = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if parsed.get("topic") == topic:
            out[parsed["outcome"]] = out.get(parsed["outcome"], 0.0) + float(value)
    return out


def test_published_delivered_filtered_dead_lettered_failed(sns: Any, sqs: Any, sns_server: SpoolqProcess,
                                                           queue: Callable[..., tuple[str, str]],
                                                           name: Callable[[str], str]) -> None:
    topic_name = name("metrics")
    topic = sns.create_topic(Name=topic_name)["TopicArn"]
    _url, kept = queue("kept")
    _url, filtered = queue("filtered")
    gone_url, gone = queue("gone")
    gone_dlq_url, gone_dlq = queue("gone-dlq")
    _url, dlq = queue("dlq")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=kept)
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=filtered,
                  Attributes={"FilterPolicy": json.dumps({"never": ["x"]})})
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=gone)
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=gone_dlq,
                  Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq})})
    sns.subscribe(TopicArn=topic, Protocol="sms", Endpoint="+15551234567")  # sends no SMS: failed
    sns.subscribe(TopicArn=topic, Protocol="email", Endpoint="a@example.com")  # pending: nothing
    sqs.delete_queue(QueueUrl=gone_url)
    sqs.delete_queue(QueueUrl=gone_dlq_url)
    for i in range(2):
        sns.publish(TopicArn=topic, Message=f"m{i}")
    expected = {"published": 2.0, "delivered": 2.0, "filtered": 2.0, "dead_lettered": 2.0, "failed": 4.0}
    store_name = f"sns:123456789012:us-east-1:{topic_name}"
    deadline = time.monotonic() + 20
    while (found := _counts(sns_server.url, store_name)) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    assert found == expected
