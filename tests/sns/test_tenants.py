"""Cross-tenant writes through SNS: every parameter of the SNS door that names a queue (or a topic
that delivers into one), walked as another team.

Two teams share one service: team A may do anything on its queues and topics (``a-*``), team B on
its own (``b-*``), ``ops`` everywhere. With A's SigV4 keys the walk names B's queues wherever a
subscription would make messages arrive in them (Subscribe's endpoint, a subscription's
dead-letter queue in Subscribe's attributes or in SetSubscriptionAttributes, in both protocols'
spellings) and B's topic and subscription wherever an action acts on them. Each must be refused
(``AuthorizationError``) before the queue is looked up, so a queue B does not have is refused the
same way; a parameter that names a queue only to allow it something (a topic's ``Policy``) is
accepted and writes nothing. Then A drives the traffic that would have reached B's queues had any
setting stuck (publishes to A's topic, copies whose queue is gone, so dead-lettered), and B's queues,
topic and subscription must be as they were: 0 writes.

The meta-check holds the walk complete: every input member of every action the SNS door serves,
and every settable subscription attribute, is classified, and each one classified as naming a queue
has a row. A parameter added later fails this test until it is classified and walked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from spoolq.http.sns import ACTIONS
from spoolq.http.sns.subscription_actions import SETTABLE
from tests.sns.conftest import sns_client, sqs_client
from tests.sqs.harness import ACCOUNT, REGION, SpoolqProcess

CONFIG = """
api_keys:
  - name: team-a
    sqs_credentials: [{access_key_id: AKIDTEAMA, secret_access_key: secret-a}]
    permissions: ["queue|*|sqs:*:*:a-*", "topic|*|sns:*:*:a-*"]
  - name: team-b
    sqs_credentials: [{access_key_id: AKIDTEAMB, secret_access_key: secret-b}]
    permissions: ["queue|*|sqs:*:*:b-*", "topic|*|sns:*:*:b-*"]
  - name: ops
    sqs_credentials: [{access_key_id: AKIDOPS, secret_access_key: secret-ops}]
    permissions: ["queue", "topic"]
"""
KEYS = {"a": ("AKIDTEAMA", "secret-a"), "b": ("AKIDTEAMB", "secret-b"), "ops": ("AKIDOPS", "secret-ops")}
B_QUEUES = ["b-q", "b-dlq"]


def queue_arn(name: str, region: str = REGION) -> str:
    return f"arn:aws:sqs:{region}:{ACCOUNT}:{name}"


def topic_arn(name: str) -> str:
    return f"arn:aws:sns:{REGION}:{ACCOUNT}:{name}"


@dataclass
class World:
    server: SpoolqProcess
    handles: dict[str, str]

    def sns(self, who: str) -> Any:
        return sns_client(self.server.url, *KEYS[who])

    def sqs(self, who: str) -> Any:
        return sqs_client(self.server.url, *KEYS[who])

    def url(self, name: str) -> str:
        return f"{self.server.url}/{ACCOUNT}/{name}"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("sns-tenants")
    (base / "root").mkdir()
    (base / "config.yaml").write_text(CONFIG)
    server = SpoolqProcess(Path(base / "root"), workers=1, threads=8, config=base / "config.yaml")
    server.start()
    try:
        w = World(server, {})
        _set_up(w)
        yield w
    finally:
        server.stop()


def _set_up(w: World) -> None:
    """B's queues (a marker in each), B's topic subscribed to b-q; A's topic subscribed to a-q, and
    to a-gone, a queue deleted afterwards (its copies would go to the subscription's dead-letter
    queue, were one set)."""
    sb, nb = w.sqs("b"), w.sns("b")
    for name in B_QUEUES:
        sb.create_queue(QueueName=name)
        sb.send_message(QueueUrl=w.url(name), MessageBody=f"{name} marker")
    nb.create_topic(Name="b-topic")
    w.handles["b_sub"] = nb.subscribe(TopicArn=topic_arn("b-topic"), Protocol="sqs",
                                      Endpoint=queue_arn("b-q"))["SubscriptionArn"]
    sa, na = w.sqs("a"), w.sns("a")
    for name in ("a-q", "a-gone"):
        sa.create_queue(QueueName=name)
    na.create_topic(Name="a-topic")
    w.handles["a_sub"] = na.subscribe(TopicArn=topic_arn("a-topic"), Protocol="sqs",
                                      Endpoint=queue_arn("a-q"))["SubscriptionArn"]
    w.handles["a_gone_sub"] = na.subscribe(TopicArn=topic_arn("a-topic"), Protocol="sqs",
                                           Endpoint=queue_arn("a-gone"))["SubscriptionArn"]
    sa.delete_queue(QueueUrl=w.url("a-gone"))


def b_state(w: World) -> dict[str, Any]:
    """What A must not change: B's queues' messages, B's topic and its subscriptions."""
    sqs, sns = w.sqs("ops"), w.sns("ops")
    out: dict[str, Any] = {}
    for name in B_QUEUES:
        attributes = sqs.get_queue_attributes(QueueUrl=w.url(name), AttributeNames=["All"])["Attributes"]
        out[name] = {k: attributes[k] for k in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                                                "ApproximateNumberOfMessagesDelayed", "RedrivePolicy")
                     if k in attributes}
    out["b-topic"] = sns.get_topic_attributes(TopicArn=topic_arn("b-topic"))["Attributes"]
    out["b-topic"].pop("EffectiveDeliveryPolicy", None)
    out["b-subs"] = sns.list_subscriptions_by_topic(TopicArn=topic_arn("b-topic"))["Subscriptions"]
    out["b-sub"] = sns.get_subscription_attributes(SubscriptionArn=w.handles["b_sub"])["Attributes"]
    return out


# --- the walk -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One parameter of one SNS action, named with B's queue or topic by team A. ``expect``:
    ``refused`` (AuthorizationError), ``accepted`` (it names a queue to allow it something and
    writes nothing there), or ``invalid`` (refused as a bad parameter, whatever the permissions)."""

    action: str
    parameter: str
    attempt: Callable[[World], Any]
    expect: str = "refused"


def sns(action: str, **params: Any) -> Callable[[World], Any]:
    def attempt(w: World) -> Any:
        resolved = {k: (v(w) if callable(v) else v) for k, v in params.items()}
        try:
            reply = getattr(w.sns("a"), _snake(action))(**resolved)
        except ClientError as e:
            code = e.response["Error"]["Code"]
            if code == "AuthorizationError":
                return "refused"
            return "invalid" if code in ("InvalidParameter", "NotFound") else code
        if action == "PublishBatch" and reply.get("Failed") and not reply.get("Successful"):
            return "refused"
        return "accepted"
    return attempt


def _snake(action: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in action).lstrip("_")


def redrive(target: str) -> str:
    return json.dumps({"deadLetterTargetArn": queue_arn(target)})


def handle(name: str) -> Callable[[World], str]:
    return lambda w: w.handles[name]


A_TOPIC, B_TOPIC = topic_arn("a-topic"), topic_arn("b-topic")
POLICY_B = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Sid": "b", "Effect": "Allow", "Principal": "*", "Action": "SNS:Publish", "Resource": queue_arn("b-q")}]})

WALK = [
    # second queues: a subscription would make messages arrive there
    Row("Subscribe", "Endpoint", sns("Subscribe", TopicArn=A_TOPIC, Protocol="sqs", Endpoint=queue_arn("b-q"))),
    Row("Subscribe", "Endpoint (a queue B does not have)", sns(
        "Subscribe", TopicArn=A_TOPIC, Protocol="sqs", Endpoint=queue_arn("b-none"))),
    Row("Subscribe", "Endpoint (another region's spelling)", sns(
        "Subscribe", TopicArn=A_TOPIC, Protocol="sqs", Endpoint=queue_arn("b-q", "eu-west-1"))),
    Row("Subscribe", "Endpoint (protocol in capitals)", sns(
        "Subscribe", TopicArn=A_TOPIC, Protocol="SQS", Endpoint=queue_arn("b-q"))),
    Row("Subscribe", "Attributes.RedrivePolicy", sns(
        "Subscribe", TopicArn=A_TOPIC, Protocol="sqs", Endpoint=queue_arn("a-q"),
        Attributes={"RedrivePolicy": redrive("b-dlq")})),
    Row("Subscribe", "Attributes.RedrivePolicy (a new subscription)", sns(
        "Subscribe", TopicArn=A_TOPIC, Protocol="sqs", Endpoint=queue_arn("a-new"),
        Attributes={"RedrivePolicy": redrive("b-dlq")})),
    Row("SetSubscriptionAttributes", "AttributeValue (RedrivePolicy)", sns(
        "SetSubscriptionAttributes", SubscriptionArn=handle("a_gone_sub"), AttributeName="RedrivePolicy",
        AttributeValue=redrive("b-dlq"))),
    Row("SetSubscriptionAttributes", "AttributeValue (RedrivePolicy, a queue B does not have)", sns(
        "SetSubscriptionAttributes", SubscriptionArn=handle("a_gone_sub"), AttributeName="RedrivePolicy",
        AttributeValue=redrive("b-none"))),
    # B's topic, which delivers into B's queue
    Row("Subscribe", "TopicArn", sns("Subscribe", TopicArn=B_TOPIC, Protocol="sqs", Endpoint=queue_arn("a-q"))),
    Row("Publish", "TopicArn", sns("Publish", TopicArn=B_TOPIC, Message="from a")),
    Row("Publish", "TargetArn", sns("Publish", TargetArn=B_TOPIC, Message="from a")),
    Row("Publish", "TargetArn (B's queue)", sns("Publish", TargetArn=queue_arn("b-q"), Message="from a"), "invalid"),
    Row("PublishBatch", "TopicArn", sns("PublishBatch", TopicArn=B_TOPIC, PublishBatchRequestEntries=[
        {"Id": "1", "Message": "from a"}])),
    Row("SetTopicAttributes", "TopicArn", sns("SetTopicAttributes", TopicArn=B_TOPIC, AttributeName="DisplayName",
                                              AttributeValue="a was here")),
    Row("DeleteTopic", "TopicArn", sns("DeleteTopic", TopicArn=B_TOPIC)),
    Row("ConfirmSubscription", "TopicArn", sns("ConfirmSubscription", TopicArn=B_TOPIC, Token="0" * 64)),
    # B's subscription
    Row("SetSubscriptionAttributes", "SubscriptionArn", sns(
        "SetSubscriptionAttributes", SubscriptionArn=handle("b_sub"), AttributeName="RawMessageDelivery",
        AttributeValue="true")),
    Row("SetSubscriptionAttributes", "SubscriptionArn (RedrivePolicy)", sns(
        "SetSubscriptionAttributes", SubscriptionArn=handle("b_sub"), AttributeName="RedrivePolicy",
        AttributeValue=redrive("a-q"))),
    Row("Unsubscribe", "SubscriptionArn", sns("Unsubscribe", SubscriptionArn=handle("b_sub"))),
    # a queue named to allow it something: accepted, nothing arrives there
    Row("SetTopicAttributes", "AttributeValue (Policy)", sns(
        "SetTopicAttributes", TopicArn=A_TOPIC, AttributeName="Policy", AttributeValue=POLICY_B), "accepted"),
    Row("CreateTopic", "Attributes.Policy", sns(
        "CreateTopic", Name="a-topic2", Attributes={"Policy": POLICY_B}), "accepted"),
]

# --- what names a queue: the classification the meta-check holds the walk to ---------------------

#: input members that name a queue messages would arrive in, or a topic or subscription that
#: delivers into one: each has rows above
NAMES_A_QUEUE = {
    ("Subscribe", "Endpoint"), ("Subscribe", "Attributes"), ("Subscribe", "TopicArn"),
    ("SetSubscriptionAttributes", "AttributeValue"), ("SetSubscriptionAttributes", "SubscriptionArn"),
    ("Publish", "TopicArn"), ("Publish", "TargetArn"), ("PublishBatch", "TopicArn"),
    ("SetTopicAttributes", "TopicArn"), ("SetTopicAttributes", "AttributeValue"), ("DeleteTopic", "TopicArn"),
    ("ConfirmSubscription", "TopicArn"), ("Unsubscribe", "SubscriptionArn"), ("CreateTopic", "Attributes"),
}
#: input members that name no queue (a topic's own name or ARN where the topic permission of
#: tests/sns/test_auth.py decides, and nothing a message could be sent through)
NOT_QUEUES = {
    "Name", "Tags", "TagKeys", "DataProtectionPolicy", "ResourceArn", "NextToken", "Label", "AWSAccountId",
    "ActionName", "Token", "AuthenticateOnUnsubscribe", "Protocol", "ReturnSubscriptionArn", "AttributeName",
    "PhoneNumber", "Message", "Subject", "MessageStructure", "MessageAttributes", "MessageDeduplicationId",
    "MessageGroupId", "PublishBatchRequestEntries", "TopicArn", "SubscriptionArn",
}
#: subscription attributes that name a queue (walked in Subscribe and SetSubscriptionAttributes)
SUBSCRIPTION_ATTRIBUTES_NAMING_QUEUES = {"RedrivePolicy"}
SUBSCRIPTION_ATTRIBUTES_NOT_QUEUES = {"RawMessageDelivery", "FilterPolicy", "FilterPolicyScope", "DeliveryPolicy",
                                      "SubscriptionRoleArn", "ReplayPolicy"}


def test_every_sns_parameter_that_names_a_queue_is_walked() -> None:
    model = boto3.client("sns", region_name=REGION).meta.service_model
    unclassified = [(action, member) for action in ACTIONS
                    for member in (model.operation_model(action).input_shape.members
                                   if model.operation_model(action).input_shape else ())
                    if (action, member) not in NAMES_A_QUEUE and member not in NOT_QUEUES]
    assert unclassified == []
    walked = {(row.action, row.parameter.split(" ")[0].split(".")[0]) for row in WALK}
    assert sorted(NAMES_A_QUEUE - walked) == []
    assert set(SETTABLE) == SUBSCRIPTION_ATTRIBUTES_NAMING_QUEUES | SUBSCRIPTION_ATTRIBUTES_NOT_QUEUES
    for name in SUBSCRIPTION_ATTRIBUTES_NAMING_QUEUES:  # in both places a subscription's attributes are set
        assert {r.action for r in WALK if name in r.parameter} >= {"Subscribe", "SetSubscriptionAttributes"}


def test_no_cross_tenant_write_through_sns(world: World) -> None:
    before = b_state(world)
    outcomes = {(row.action, row.parameter): row.attempt(world) for row in WALK}
    assert {k: v for k, v in outcomes.items() if v != next(
        r.expect for r in WALK if (r.action, r.parameter) == k)} == {}
    # the traffic that would reach B's queues had any setting stuck: publishes to A's topic, whose
    # copy for a-gone (deleted) goes to that subscription's dead-letter queue if it has one
    na = world.sns("a")
    for i in range(5):
        na.publish(TopicArn=A_TOPIC, Message=f"from a {i}",
                   MessageAttributes={"n": {"DataType": "Number", "StringValue": str(i)}})
    na.publish_batch(TopicArn=A_TOPIC, PublishBatchRequestEntries=[{"Id": str(i), "Message": "batch"}
                                                                    for i in range(3)])
    time.sleep(0.5)
    assert b_state(world) == before
    a_q = world.sqs("ops").get_queue_attributes(QueueUrl=world.url("a-q"),
                                                 AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    assert a_q["ApproximateNumberOfMessages"] == "8"  # A's own traffic did flow: the walk proved something
