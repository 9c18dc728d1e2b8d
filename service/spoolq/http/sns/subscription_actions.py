"""Subscription actions: Subscribe, Unsubscribe, ConfirmSubscription, Get/SetSubscriptionAttributes,
ListSubscriptions and ListSubscriptionsByTopic.

spoolq delivers to SQS queues of this service (``sqs``, confirmed at once) and to HTTP/HTTPS
endpoints the operator allows (:mod:`.webhooks`: confirmed by the endpoint). Subscriptions of email
addresses and phone numbers are kept as AWS keeps them, so that code and infrastructure that make
them work unchanged, but nothing is sent to them: ``email`` and ``email-json`` stay pending (the
confirmation mail never goes out), ``sms`` is confirmed at once as AWS does and each copy a publish
would send it counts as failed (:mod:`.publishing`). Protocols that need another AWS service
(``application``, ``lambda``, ``firehose``) are refused with ``InvalidParameter`` naming the endpoint,
as AWS refuses an endpoint it cannot deliver to; a protocol AWS does not have gets AWS's own wording.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

from spoolq.http.sns import webhooks
from spoolq.http.sns.access import require_queue_post
from spoolq.http.sns.context import Env, phone_number, queue_of_arn, string_map, text
from spoolq.http.sns.errors import InvalidParameter, SubscriptionNotFound, TopicNotFound
from spoolq.http.sns.wire import Entries
from spoolq.topics import filter_policy
from spoolq.topics.catalog import AlreadyExists, Subscription, TopicKey
from spoolq.topics.catalog import SubscriptionNotFound as NoSubscription
from spoolq.topics.catalog import TopicNotFound as NoTopic

LIST_PAGE = 100
REACHABLE = frozenset({"sqs", "http", "https"})
#: kept as AWS keeps them, never sent to
KEPT = frozenset({"email", "email-json", "sms"})
UNREACHABLE = frozenset({"application", "lambda", "firehose"})
#: confirmed when made, as AWS confirms them
CONFIRMED_AT_ONCE = frozenset({"sqs", "sms"})
SETTABLE = frozenset({"RawMessageDelivery", "FilterPolicy", "FilterPolicyScope", "RedrivePolicy",
                      "DeliveryPolicy", "SubscriptionRoleArn", "ReplayPolicy"})
PENDING = "pending confirmation"
#: a pending subscription's ARN in ListSubscriptions and ListSubscriptionsByTopic (recorded:
#: test_publish_no_confirm_subscription)
LISTED_PENDING = "PendingConfirmation"
#: what a subscription's attributes are when not set: a repeated Subscribe that gives these agrees
DEFAULTS = {"RawMessageDelivery": "false", "FilterPolicyScope": "MessageAttributes"}
_TOKEN = re.compile(r"^[0-9a-f]{64,512}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


def check_attribute(env: Env, topic: TopicKey, protocol: str, name: str, value: str, *,
                    in_attributes: bool, attributes: Mapping[str, str] | None = None, endpoint: str = "") -> str:
    """The value a subscription keeps for ``name``; refused as AWS words it (``in_attributes``:
    given in Subscribe's ``Attributes``, which AWS prefixes with ``Attributes Reason:``)."""
    def refuse(reason: str) -> InvalidParameter:
        return InvalidParameter("Attributes", reason) if in_attributes else InvalidParameter(reason)

    if name not in SETTABLE:
        raise InvalidParameter("Attributes", f"Invalid attribute name: {name}") if in_attributes \
            else InvalidParameter("AttributeName")
    if name == "RawMessageDelivery":
        if value.lower() not in ("true", "false"):
            raise refuse(f"RawMessageDelivery: Invalid value [{value}]. Must be true or false.")
        return value.lower()
    if name == "FilterPolicyScope":
        if value not in ("MessageAttributes", "MessageBody"):
            raise refuse(f"FilterPolicyScope: Invalid value [{value}]. Please use either MessageBody or "
                         "MessageAttributes")
        return value
    if name == "FilterPolicy":
        scope = (attributes or {}).get("FilterPolicyScope", "MessageAttributes")
        if value:
            try:
                filter_policy.compile_policy(value, scope)
            except filter_policy.PolicyError as bad:
                raise refuse(bad.message) from None
        return value
    if name == "RedrivePolicy":
        return _check_redrive(env, topic, protocol, endpoint, value, refuse,
                              "Subscribe" if in_attributes else "SetSubscriptionAttributes")
    return value


def _check_redrive(env: Env, topic: TopicKey, protocol: str, endpoint: str, value: str, refuse: Any,
                   action: str) -> str:
    if not value:
        return value
    try:
        policy = json.loads(value)
    except ValueError:
        raise refuse("RedrivePolicy: failed to parse JSON.") from None
    target = policy.get("deadLetterTargetArn") if isinstance(policy, dict) else None
    queue = queue_of_arn(target) if isinstance(target, str) else None
    if queue is None:
        raise refuse("RedrivePolicy: deadLetterTargetArn is an invalid arn")
    if topic.fifo and protocol == "sqs" and endpoint.endswith(".fifo") and not queue.endswith(".fifo"):
        raise refuse("RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic.")
    require_queue_post(env, queue, action)
    return value


def _check_endpoint(env: Env, topic: TopicKey, protocol: Any, endpoint: Any) -> tuple[str, str]:
    if not isinstance(protocol, str) or not protocol:
        raise InvalidParameter("Protocol", "no value for required parameter")
    protocol = protocol.lower()
    if protocol in UNREACHABLE:
        raise InvalidParameter("Endpoint", f"this service does not deliver to {protocol} endpoints "
                                           "(it delivers to sqs, http and https)")
    if protocol not in REACHABLE | KEPT:
        raise InvalidParameter(f"Amazon SNS does not support this protocol string: {protocol}")
    if not isinstance(endpoint, str) or not endpoint:
        raise InvalidParameter("Endpoint", "no value for required parameter")
    if protocol == "sqs":
        queue = queue_of_arn(endpoint)
        if queue is None:
            raise InvalidParameter("SQS endpoint ARN")
        if queue.endswith(".fifo") and not topic.fifo:
            raise InvalidParameter("Invalid parameter: Endpoint Reason: FIFO SQS Queues can not be subscribed "
                                   "to standard SNS topics")
        require_queue_post(env, queue, "Subscribe")
        return protocol, endpoint
    if protocol == "sms":
        if not phone_number(endpoint):
            raise InvalidParameter(f"Invalid SMS endpoint: {endpoint}", raw=True)
        return protocol, endpoint
    if protocol in KEPT:
        if not _EMAIL.match(endpoint):
            raise InvalidParameter("Email address")
        return protocol, endpoint
    webhooks.check_endpoint(protocol, endpoint)
    return protocol, endpoint


def subscribe(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    key = env.topic_arn(params.get("TopicArn"))
    if env.topics.get_topic(key) is None:  # before the endpoint (recorded: test_subscribe_unknown_topic)
        raise TopicNotFound()
    given = string_map(params, "Attributes")
    if "FilterPolicyScope" in given:  # checked first: the policy is checked in its scope
        given = {"FilterPolicyScope": given["FilterPolicyScope"], **given}
    # the attributes before the endpoint, as AWS checks them (recorded: a filter policy's mistake is
    # named for an endpoint AWS would refuse too, test_validate_policy)
    raw_protocol, raw_endpoint = params.get("Protocol"), params.get("Endpoint")
    attributes = {name: check_attribute(env, key, str(raw_protocol).lower(), name, value, in_attributes=True,
                                        attributes=given, endpoint=str(raw_endpoint or ""))
                  for name, value in given.items()}
    if not attributes.get("FilterPolicy", "x"):
        del attributes["FilterPolicy"]  # an empty policy is none
    protocol, endpoint = _check_endpoint(env, key, raw_protocol, raw_endpoint)
    confirmed = protocol in CONFIRMED_AT_ONCE
    try:
        sub, _made = env.topics.subscribe(key, protocol, endpoint, attributes, confirmed=confirmed,
                                         token="" if confirmed else secrets.token_hex(64),
                                         owner=env.caller.account, defaults=DEFAULTS)
    except NoTopic:
        raise TopicNotFound() from None
    except AlreadyExists:
        raise InvalidParameter("Attributes", "Subscription already exists with different attributes") from None
    if not sub.confirmed and protocol in ("http", "https") and env.webhooks is not None and \
            webhooks.allowed(endpoint, env.http_endpoints):
        # the handshake (again for a repeated Subscribe); an endpoint the operator does not allow is
        # never contacted: its subscription stays pending, as one whose endpoint never confirms
        topic = env.topics.get_topic(key)
        version = topic.attributes.get("SignatureVersion", "1") if topic is not None else "1"
        env.webhooks.confirm(sub, env.signer(), env.caller.base_url, version)
    returns_arn = str(params.get("ReturnSubscriptionArn", "false")).lower() == "true"
    return {"SubscriptionArn": sub.arn if sub.confirmed or returns_arn else PENDING}


def _subscription(env: Env, arn: Any) -> Subscription:
    key, sub_id = env.subscription_arn(arn)
    sub = env.topics.get_subscription(key, sub_id)
    if sub is None:
        raise SubscriptionNotFound()
    return sub


def subscription_attributes(sub: Subscription) -> Entries:
    out = Entries({"ConfirmationWasAuthenticated": "true", "Endpoint": sub.endpoint, "Owner": sub.owner,
                   "PendingConfirmation": "false" if sub.confirmed else "true", "Protocol": sub.protocol,
                   "RawMessageDelivery": "false", "SubscriptionArn": sub.arn,
                   "SubscriptionPrincipal": f"arn:aws:iam::{sub.owner}:user/spoolq", "TopicArn": sub.topic.arn})
    out.update(sub.attributes)
    if sub.attributes.get("FilterPolicy"):
        out.setdefault("FilterPolicyScope", DEFAULTS["FilterPolicyScope"])
    else:  # a scope without a policy is not shown (recorded: test_create_subscriptions_with_attributes)
        out.pop("FilterPolicyScope", None)
    return out


def get_subscription_attributes(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"Attributes": subscription_attributes(_subscription(env, params.get("SubscriptionArn")))}


def set_subscription_attributes(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    arn = params.get("SubscriptionArn")
    key, sub_id = env.subscription_arn(arn)
    name = text(params, "AttributeName")
    if not name:
        raise InvalidParameter("AttributeName")
    value = text(params, "AttributeValue") or ""
    sub = _subscription(env, arn)
    value = check_attribute(env, key, sub.protocol, name, value, in_attributes=False,
                            attributes={**sub.attributes, name: value}, endpoint=sub.endpoint)
    if name == "FilterPolicyScope" and sub.attributes.get("FilterPolicy"):
        check_attribute(env, key, sub.protocol, "FilterPolicy", sub.attributes["FilterPolicy"],
                        in_attributes=False, attributes={"FilterPolicyScope": value})

    def change(current: Subscription) -> Subscription:
        attributes = {**current.attributes, name: value}
        if not value and name in ("FilterPolicy", "RedrivePolicy"):
            attributes.pop(name)
        return Subscription(current.topic, current.id, current.protocol, current.endpoint, attributes,
                            current.confirmed, current.token, current.owner, current.created)

    try:
        env.topics.change_subscription(key, sub_id, change)
    except NoSubscription:
        raise SubscriptionNotFound() from None
    return {}


def unsubscribe(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    key, sub_id = env.subscription_arn(params.get("SubscriptionArn"))
    env.topics.unsubscribe(key, sub_id)  # a subscription that is gone: nothing to do, as AWS
    return {}


def confirm_subscription(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    key = env.topic_arn(params.get("TopicArn"))
    token = text(params, "Token")
    if not token or not _TOKEN.match(token):
        raise InvalidParameter("Invalid token", raw=True)
    for sub in env.topics.subscriptions(key):  # a topic that does not exist has none: "Invalid parameter: Token"
        if token and sub.token == token:
            if not sub.confirmed:
                env.topics.change_subscription(key, sub.id, lambda s: Subscription(
                    s.topic, s.id, s.protocol, s.endpoint, s.attributes, True, s.token, s.owner, s.created))
            return {"SubscriptionArn": sub.arn}
    raise InvalidParameter("Token")


def _listing(subs: list[Subscription]) -> list[dict[str, str]]:
    return [{"SubscriptionArn": s.arn if s.confirmed else LISTED_PENDING, "Owner": s.owner, "Protocol": s.protocol,
             "Endpoint": s.endpoint, "TopicArn": s.topic.arn} for s in subs]


def _page(subs: list[Subscription], token: Any) -> dict[str, Any]:
    """A page of 100 in ARN order; its NextToken is the base64 of the page's last ARN, as AWS's
    tokens are base64 (recorded: test_list_subscriptions_by_topic_pagination)."""
    subs = sorted(subs, key=lambda s: s.arn)
    start = 0
    if token not in (None, ""):
        try:
            after = base64.b64decode(str(token), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise InvalidParameter("NextToken") from None
        start = sum(1 for s in subs if s.arn <= after)
    page = subs[start:start + LIST_PAGE]
    more = start + LIST_PAGE < len(subs)
    return {"Subscriptions": _listing(page),
            "NextToken": base64.b64encode(page[-1].arn.encode()).decode() if more else None}


def list_subscriptions_by_topic(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    key = env.topic_arn(params.get("TopicArn"))
    if env.topics.get_topic(key) is None:
        raise TopicNotFound()
    return _page(list(env.topics.subscriptions(key)), params.get("NextToken"))


def list_subscriptions(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    caller = env.caller
    subs = [s for topic in env.topics.list_topics(caller.account, caller.region)
            if env.may("get_status", topic.key.store_name) for s in env.topics.subscriptions(topic.key)]
    return _page(subs, params.get("NextToken"))

