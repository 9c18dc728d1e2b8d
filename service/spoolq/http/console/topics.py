"""The console's topics page: every SNS topic the key may see (``topic|get_status|...``), in every
region of the service's account, with its subscriptions (endpoint, raw delivery, filter policy,
dead-letter queue, pending or confirmed) and its message totals since the service started
(published, delivered, filtered out, dead-lettered, failed: ``spoolq_topic_messages_total``), from
which the page computes its rates. Read from the data root (:mod:`spoolq.topics`) and the metrics;
it changes nothing."""

from __future__ import annotations

import json
import time
from typing import Any

from flask import Response

from spoolq.http.console import schemas as cs
from spoolq.http.console.base import ConsoleApi, json_response
from spoolq.queues import names as queue_names
from spoolq.topics.catalog import Subscription, Topic, TopicRegistry

OUTCOMES = ("published", "delivered", "filtered", "dead_lettered", "failed")


def _queue_of(endpoint: str) -> str | None:
    parts = endpoint.split(":")
    if len(parts) == 6 and parts[:3] == ["arn", "aws", "sqs"]:
        return queue_names.sqs_store_name(parts[4], parts[3], parts[5])
    return None


def _subscription(sub: Subscription) -> dict[str, Any]:
    try:
        dead = json.loads(sub.attributes.get("RedrivePolicy") or "{}").get("deadLetterTargetArn")
    except (ValueError, AttributeError):
        dead = None
    policy = sub.attributes.get("FilterPolicy") or None
    return {"arn": sub.arn, "protocol": sub.protocol, "endpoint": sub.endpoint,
            "queue": _queue_of(sub.endpoint) if sub.protocol == "sqs" else None,
            "raw": sub.attributes.get("RawMessageDelivery") == "true", "pending": not sub.confirmed,
            "filter_policy": policy,
            "filter_policy_scope": sub.attributes.get("FilterPolicyScope", "MessageAttributes") if policy else None,
            "dead_letter": dead if isinstance(dead, str) else None}


def _topic(registry: TopicRegistry, topic: Topic, totals: dict[str, dict[str, float]]) -> dict[str, Any]:
    key = topic.key
    return {"name": key.name, "store_name": key.store_name, "arn": key.arn, "region": key.region,
            "kind": "sns-fifo" if key.fifo else "sns", "display_name": topic.attributes.get("DisplayName", ""),
            "tags": dict(topic.tags), "subscriptions": [_subscription(s) for s in registry.subscriptions(key)],
            "totals": {o: totals.get(key.store_name, {}).get(o, 0.0) for o in OUTCOMES}}


def topics(views: ConsoleApi) -> Response:
    who = views.principal()
    settings = views.services.settings
    registry = TopicRegistry(settings.root, settings.node_id or "node")
    totals: dict[str, dict[str, float]] = {}
    for labels, value in views.services.metrics.samples("spoolq_topic_messages_total"):
        per_topic = totals.setdefault(labels.get("topic", ""), {})
        per_topic[labels.get("outcome", "")] = per_topic.get(labels.get("outcome", ""), 0.0) + value
    account = settings.sqs_account_id
    rows = [_topic(registry, topic, totals) for region in registry.regions(account)
            for topic in registry.list_topics(account, region)
            if who.can("get_status", topic.key.store_name, "topic")]
    return json_response({"topics": rows, "now": time.time()}, cs.ConsoleTopicListSchema())
