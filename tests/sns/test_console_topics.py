"""The console's topics page API (``GET /console/api/topics``) and its page's assets."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import requests

from tests.sqs.harness import SpoolqProcess


def test_topics_with_subscriptions_and_totals(sns: Any, sqs: Any, sns_server: SpoolqProcess,
                                              queue: Callable[..., tuple[str, str]],
                                              name: Callable[[str], str]) -> None:
    topic = sns.create_topic(Name=name("console"), Attributes={"DisplayName": "Shown"},
                             Tags=[{"Key": "team", "Value": "a"}])["TopicArn"]
    _url, books = queue("books")
    _url, dlq = queue("dlq")
    policy = json.dumps({"kind": ["book"]})
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=books, Attributes={
        "RawMessageDelivery": "true", "FilterPolicy": policy, "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq})})
    sns.publish(TopicArn=topic, Message="a pen")
    store_name = f"sns:123456789012:us-east-1:{name('console')}"
    deadline = time.monotonic() + 20
    while True:
        listed = requests.get(f"{sns_server.url}/console/api/topics", timeout=10).json()
        row = next(t for t in listed["topics"] if t["store_name"] == store_name)
        if row["totals"]["filtered"] == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert (row["kind"], row["display_name"], row["tags"], row["arn"]) == ("sns", "Shown", {"team": "a"}, topic)
    assert row["totals"] == {"published": 1, "delivered": 0, "filtered": 1, "dead_lettered": 0, "failed": 0}
    (sub,) = row["subscriptions"]
    assert sub["raw"] and not sub["pending"] and sub["filter_policy"] == policy
    assert sub["filter_policy_scope"] == "MessageAttributes" and sub["dead_letter"] == dlq
    assert sub["queue"] == "sqs:123456789012:us-east-1:" + books.rsplit(":", 1)[1]
    page = requests.get(f"{sns_server.url}/console/", headers={"Accept": "text/html"}, timeout=10).text
    assert 'href="#/topics"' in page and "topics.js" in page
    assert requests.get(f"{sns_server.url}/console/static/topics.js", timeout=10).status_code == 200
