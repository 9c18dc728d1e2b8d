"""Which permission each SNS action needs, on which topic (the identities are :mod:`spoolq.access.auth`'s).

An action needs the ``topic|<permission>|sns:A:R:name`` permission its entry in
:data:`spoolq.http.sns.ACTIONS` names, on the topic it acts on:

==============  ==============================================================================
``publish``     Publish, PublishBatch
``subscribe``   Subscribe, ConfirmSubscription, Unsubscribe, SetSubscriptionAttributes
``get_status``  GetTopicAttributes, GetSubscriptionAttributes, ListSubscriptionsByTopic,
                ListTagsForResource, GetDataProtectionPolicy; ListTopics and ListSubscriptions list only the topics the
                caller may get_status
``admin``       CreateTopic, DeleteTopic, SetTopicAttributes, TagResource, UntagResource,
                AddPermission, RemovePermission, PutDataProtectionPolicy
==============  ==============================================================================

A setting that names a second queue needs more: a subscription delivering to an SQS queue
(Subscribe's endpoint) and a subscription's dead-letter queue (``RedrivePolicy``, in Subscribe's
attributes or SetSubscriptionAttributes) need ``post`` on that queue, so nobody can send into a
queue through a topic who could not send to it directly. :func:`require_queue_post` asks the one
check every door asks for a second queue (:func:`spoolq.access.auth.may_send_into`), from the queue's
name alone, before anything looks the queue up: a refusal never tells whether another team's queue
exists. Topics and subscriptions declared in the config file are the operator's, as declared
queues are, and are not checked.

The check runs after SigV4 and before the handler, so a caller without the permission gets
``AuthorizationError`` (403) whether or not the topic exists. A request whose topic cannot be
named (a missing or malformed ARN) goes on to the handler, which refuses it for that reason. In
open mode (no credentials configured) everything is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spoolq.access.auth import Principal, may_send_into
from spoolq.errors import SpoolqError
from spoolq.http.sns.context import Caller, Env, queue_arn_of, subscription_of_arn, topic_of_arn
from spoolq.http.sns.errors import AuthorizationError
from spoolq.topics.catalog import TopicKey

#: actions that name no single topic: the handler filters what it lists
UNSCOPED = frozenset({"ListTopics", "ListSubscriptions"})


def _topic_of(action: str, params: Mapping[str, Any], caller: Caller) -> TopicKey | None:
    try:
        if action == "CreateTopic":
            name = params.get("Name")
            return caller.topic(name) if isinstance(name, str) and name else None
        if action in ("TagResource", "UntagResource", "ListTagsForResource", "PutDataProtectionPolicy",
                      "GetDataProtectionPolicy"):
            return topic_of_arn(params.get("ResourceArn"), "ResourceArn")
        if action in ("Unsubscribe", "GetSubscriptionAttributes", "SetSubscriptionAttributes"):
            return subscription_of_arn(params.get("SubscriptionArn"))[0]
        if action == "Publish" and not params.get("TopicArn") and params.get("TargetArn"):
            return topic_of_arn(params.get("TargetArn"), "TargetArn")
        return topic_of_arn(params.get("TopicArn"))
    except SpoolqError:
        return None


def authorize(principal: Principal | None, action: str, permission: str, params: Mapping[str, Any],
              caller: Caller) -> None:
    """Raise ``AuthorizationError`` unless ``principal`` may perform ``action`` with these parameters."""
    if principal is None or action in UNSCOPED:
        return
    topic = _topic_of(action, params, caller)
    if topic is not None and not principal.can(permission, topic.store_name, "topic"):
        raise AuthorizationError(f"User: {principal.name} is not authorized to perform: SNS:{action} on "
                                 f"resource: {topic.arn}")


def require_queue_post(env: Env, queue: str, action: str) -> None:
    """A setting of ``action`` names ``queue`` as where messages go: the caller needs ``post`` on it."""
    principal = env.principal
    if not may_send_into(principal, queue):
        assert principal is not None  # open mode may send anywhere
        raise AuthorizationError(f"User: {principal.name} is not authorized to perform: SQS:SendMessage on "
                                 f"resource: {queue_arn_of(queue)} (named by {action})")
