"""Topic actions: CreateTopic, GetTopicAttributes, SetTopicAttributes, ListTopics, DeleteTopic and
the tag actions. Each parses, makes one call of the topic registry (:mod:`spoolq.topics.catalog`) and
renders; attributes and their defaults are those AWS shows (LocalStack's recorded snapshots)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spoolq.http.sns.context import FIFO_TOPIC_NAME, TOPIC_NAME, Env, string_map, tag_list, text
from spoolq.http.sns.errors import (
    InvalidParameter,
    ResourceNotFound,
    TagLimitExceeded,
    TagPolicy,
    TopicNotFound,
)
from spoolq.http.sns.wire import Entries
from spoolq.topics.catalog import AlreadyExists, Topic, TopicKey, changed_topic
from spoolq.topics.catalog import TopicNotFound as NoTopic

#: the page of ListTopics, as AWS pages it
LIST_PAGE = 100
MAX_TAGS = 50
_FEEDBACK = tuple(f"{p}{what}" for p in ("Application", "HTTP", "Lambda", "SQS", "Firehose")
                  for what in ("SuccessFeedbackRoleArn", "SuccessFeedbackSampleRate", "FailureFeedbackRoleArn"))
#: attributes a topic keeps as given (FifoTopic only at creation)
SETTABLE = frozenset({"DeliveryPolicy", "DisplayName", "Policy", "TracingConfig", "KmsMasterKeyId",
                      "SignatureVersion", "ContentBasedDeduplication", "ArchivePolicy", "FifoThroughputScope",
                      "DataProtectionPolicy", *_FEEDBACK})
#: where a topic keeps its data protection policy (not one of the attributes GetTopicAttributes shows)
DATA_PROTECTION = "spoolq:DataProtectionPolicy"
DEFAULT_DELIVERY_POLICY = {"http": {
    "defaultHealthyRetryPolicy": {"minDelayTarget": 20, "maxDelayTarget": 20, "numRetries": 3,
                                  "numMaxDelayRetries": 0, "numNoDelayRetries": 0, "numMinDelayRetries": 0,
                                  "backoffFunction": "linear"},
    "disableSubscriptionOverrides": False,
    "defaultRequestPolicy": {"headerContentType": "text/plain; charset=UTF-8"}}}

def default_policy(key: TopicKey) -> str:
    return json.dumps({"Version": "2008-10-17", "Id": "__default_policy_ID", "Statement": [{
        "Sid": "__default_statement_ID", "Effect": "Allow", "Principal": {"AWS": "*"},
        "Action": ["SNS:GetTopicAttributes", "SNS:SetTopicAttributes", "SNS:AddPermission",
                   "SNS:RemovePermission", "SNS:DeleteTopic", "SNS:Subscribe", "SNS:ListSubscriptionsByTopic",
                   "SNS:Publish"],
        "Resource": key.arn, "Condition": {"StringEquals": {"AWS:SourceOwner": key.account}}}]})


def _boolean(name: str, value: str) -> str:
    if value.lower() not in ("true", "false"):
        raise InvalidParameter("Attributes", f"{name}: Invalid value [{value}]. Must be true or false.")
    return value.lower()


def check_attribute(key: TopicKey, name: str, value: str, creating: bool) -> str:
    """The value a topic keeps for attribute ``name`` (checked as AWS checks it)."""
    if name == "FifoTopic" and creating:
        return _boolean(name, value)
    if name not in SETTABLE:
        raise InvalidParameter("AttributeName") if not creating else \
            InvalidParameter("Attributes", f"Invalid attribute name: {name}")
    if name == "ContentBasedDeduplication":
        if not key.fifo:
            raise InvalidParameter("Attributes", "Content based deduplication can only be set for FIFO topics")
        return _boolean(name, value)
    if name == "SignatureVersion" and value not in ("1", "2"):
        raise InvalidParameter("Attributes", "SignatureVersion: Invalid value. Must be 1 or 2.")
    if name in ("Policy", "DeliveryPolicy", "DataProtectionPolicy", "ArchivePolicy") and value:
        try:
            json.loads(value)
        except ValueError:
            raise InvalidParameter("Attributes", f"{name}: failed to parse JSON.") from None
    if name == "DisplayName" and len(value) > 100:
        raise InvalidParameter("Attributes", "DisplayName: must be at most 100 characters long")
    return value


def _check_name(name: Any, attributes: Mapping[str, str]) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidParameter("Topic Name")
    fifo_attribute = attributes.get("FifoTopic", "false").lower() == "true"
    if not (FIFO_TOPIC_NAME if fifo_attribute else TOPIC_NAME).match(name):
        raise InvalidParameter("Topic Name")  # recorded: the same words for a FIFO name without .fifo
    return name


def create_topic(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    attributes = string_map(params, "Attributes")
    name = _check_name(params.get("Name"), attributes)
    key = env.caller.topic(name)
    kept = {k: check_attribute(key, k, v, creating=True) for k, v in attributes.items()}
    if kept.get("FifoTopic") == "false":
        del kept["FifoTopic"]
    tags = tag_list(params)
    _check_tags(tags)
    try:
        topic = env.topics.create_topic(key, kept, tags)
    except AlreadyExists as exists:
        if exists.message == "tags":
            raise InvalidParameter("Tags", "Topic already exists with different tags") from None
        raise InvalidParameter("Attributes", "Topic already exists with different attributes") from None
    return {"TopicArn": topic.key.arn}


def _topic(env: Env, key: TopicKey) -> Topic:
    topic = env.topics.get_topic(key)
    if topic is None:
        raise TopicNotFound()
    return topic


def topic_attributes(env: Env, topic: Topic) -> Entries:
    """Every attribute GetTopicAttributes shows, defaults included."""
    key = topic.key
    subs = env.topics.subscriptions(key)
    confirmed = sum(1 for s in subs if s.confirmed)
    out = Entries({"Policy": default_policy(key), "Owner": key.account,
                   "SubscriptionsPending": str(len(subs) - confirmed), "TopicArn": key.arn,
                   "EffectiveDeliveryPolicy": json.dumps(DEFAULT_DELIVERY_POLICY),
                   "SubscriptionsConfirmed": str(confirmed), "DisplayName": "", "SubscriptionsDeleted": "0"})
    if key.fifo:
        out.update(FifoTopic="true", ContentBasedDeduplication="false")
    out.update((k, v) for k, v in topic.attributes.items() if k != DATA_PROTECTION)
    return out


def get_topic_attributes(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"Attributes": topic_attributes(env, _topic(env, env.topic_arn(params.get("TopicArn"))))}


def set_topic_attributes(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    key = env.topic_arn(params.get("TopicArn"))
    name = text(params, "AttributeName")
    if not name:
        raise InvalidParameter("AttributeName")
    value = check_attribute(key, name, text(params, "AttributeValue") or "", creating=False)

    def change(topic: Topic) -> Topic:
        return changed_topic(topic, attributes={**topic.attributes, name: value})

    try:
        env.topics.change_topic(key, change)
    except NoTopic:
        raise TopicNotFound() from None
    return {}


def list_topics(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    caller = env.caller
    arns = [t.key.arn for t in env.topics.list_topics(caller.account, caller.region)
            if env.may("get_status", t.key.store_name)]
    start = _page_start(params.get("NextToken"), arns)
    page = arns[start:start + LIST_PAGE]
    more = start + LIST_PAGE < len(arns)
    return {"Topics": [{"TopicArn": arn} for arn in page], "NextToken": page[-1] if more else None}


def _page_start(token: Any, items: list[str]) -> int:
    """Where a page starts: after the item its NextToken names (the last of the page before)."""
    if token in (None, ""):
        return 0
    if not isinstance(token, str):
        raise InvalidParameter("NextToken")
    return sum(1 for item in items if item <= token)


def delete_topic(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    env.topics.delete_topic(env.topic_arn(params.get("TopicArn")))  # a missing topic: nothing to do, as AWS
    return {}


def _check_tags(tags: Mapping[str, str]) -> None:
    if len(tags) > MAX_TAGS:
        raise TagLimitExceeded()
    for tag_key, value in tags.items():
        if not 1 <= len(tag_key) <= 128 or len(value) > 256:
            raise TagPolicy(f"Tag key or value is not valid: {tag_key}")


def _resource(env: Env, params: Mapping[str, Any]) -> TopicKey:
    key = env.topic_arn(params.get("ResourceArn"), "ResourceArn")
    if env.topics.get_topic(key) is None:
        raise ResourceNotFound()
    return key


def tag_resource(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    key = _resource(env, params)
    tags = tag_list(params)

    def change(topic: Topic) -> Topic:
        merged = {**topic.tags, **tags}
        _check_tags(merged)
        return changed_topic(topic, tags=merged)

    try:
        env.topics.change_topic(key, change)
    except NoTopic:
        raise ResourceNotFound() from None
    return {}


def untag_resource(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    key = _resource(env, params)
    keys = params.get("TagKeys") or []
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise InvalidParameter("TagKeys")

    def change(topic: Topic) -> Topic:
        return changed_topic(topic, tags={k: v for k, v in topic.tags.items() if k not in keys})

    try:
        env.topics.change_topic(key, change)
    except NoTopic:
        raise ResourceNotFound() from None
    return {}


def list_tags_for_resource(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    key = _resource(env, params)
    topic = _topic(env, key)
    return {"Tags": [{"Key": k, "Value": v} for k, v in topic.tags.items()]}


#: the actions a topic policy's statement may name (AddPermission's ActionName)
POLICY_ACTIONS = frozenset({"Publish", "Subscribe", "Receive", "GetTopicAttributes", "SetTopicAttributes",
                            "AddPermission", "RemovePermission", "DeleteTopic", "ListSubscriptionsByTopic",
                            "ListTopics", "ListSubscriptions", "Unsubscribe", "GetSubscriptionAttributes",
                            "SetSubscriptionAttributes", "ConfirmSubscription", "TagResource", "UntagResource",
                            "ListTagsForResource"})


def _policy_of(topic: Topic) -> dict[str, Any]:
    try:
        policy = json.loads(topic.attributes.get("Policy") or default_policy(topic.key))
    except ValueError:
        policy = json.loads(default_policy(topic.key))
    return policy if isinstance(policy, dict) else json.loads(default_policy(topic.key))


def add_permission(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    """A statement in the topic's ``Policy`` (kept and shown, as AWS shows it; spoolq's own
    permissions decide who may do what, see docs/sns.md)."""
    key = env.topic_arn(params.get("TopicArn"))
    label = text(params, "Label")
    accounts, actions = params.get("AWSAccountId") or [], params.get("ActionName") or []
    if not label:
        raise InvalidParameter("Label", "no value for required parameter")
    if not isinstance(accounts, list) or not isinstance(actions, list) or not accounts or not actions:
        raise InvalidParameter("AWSAccountId and ActionName")
    if any(a not in POLICY_ACTIONS for a in actions):
        raise InvalidParameter("Policy statement action out of service scope!")
    principals = [f"arn:aws:iam::{a}:root" for a in accounts]
    statement = {"Sid": label, "Effect": "Allow",
                 "Principal": {"AWS": principals[0] if len(principals) == 1 else principals},
                 "Action": f"SNS:{actions[0]}" if len(actions) == 1 else [f"SNS:{a}" for a in actions],
                 "Resource": key.arn}

    def change(topic: Topic) -> Topic:
        policy = _policy_of(topic)
        statements = policy.setdefault("Statement", [])
        if any(isinstance(s, dict) and s.get("Sid") == label for s in statements):
            raise InvalidParameter("Statement already exists")
        statements.append(statement)
        return changed_topic(topic, attributes={**topic.attributes, "Policy": json.dumps(policy)})

    try:
        env.topics.change_topic(key, change)
    except NoTopic:
        raise TopicNotFound() from None
    return {}


def remove_permission(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    key = env.topic_arn(params.get("TopicArn"))
    label = text(params, "Label")

    def change(topic: Topic) -> Topic:
        policy = _policy_of(topic)
        policy["Statement"] = [s for s in policy.get("Statement", []) if not (isinstance(s, dict)
                                                                             and s.get("Sid") == label)]
        return changed_topic(topic, attributes={**topic.attributes, "Policy": json.dumps(policy)})

    try:
        env.topics.change_topic(key, change)
    except NoTopic:
        raise TopicNotFound() from None
    return {}


def put_data_protection_policy(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    """Kept and shown (GetDataProtectionPolicy), not enforced."""
    key = env.topic_arn(params.get("ResourceArn"), "ResourceArn")
    policy = text(params, "DataProtectionPolicy") or ""
    try:
        json.loads(policy)
    except ValueError:
        raise InvalidParameter("DataProtectionPolicy", "failed to parse JSON.") from None

    def change(topic: Topic) -> Topic:
        return changed_topic(topic, attributes={**topic.attributes, DATA_PROTECTION: policy})

    try:
        env.topics.change_topic(key, change)
    except NoTopic:
        raise ResourceNotFound() from None
    return {}


def get_data_protection_policy(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    topic = env.topics.get_topic(env.topic_arn(params.get("ResourceArn"), "ResourceArn"))
    if topic is None:
        raise ResourceNotFound()
    return {"DataProtectionPolicy": topic.attributes.get(DATA_PROTECTION)}
