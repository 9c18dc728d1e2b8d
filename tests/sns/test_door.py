"""The SNS door through boto3 against a real spoolq: topics, subscriptions, publishing to queues,
AWS's errors, signatures that verify against the certificate spoolq serves."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
import requests
from botocore.exceptions import ClientError
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from tests.sns.conftest import receive_all

Queue = Callable[..., tuple[str, str]]
Name = Callable[[str], str]


def error(call: Callable[..., Any], **kwargs: Any) -> tuple[str, str, int]:
    with pytest.raises(ClientError) as e:
        call(**kwargs)
    response = e.value.response
    return response["Error"]["Code"], response["Error"]["Message"], response["ResponseMetadata"]["HTTPStatusCode"]


def test_create_topic_is_idempotent_and_listed(sns: Any, name: Name) -> None:
    arn = sns.create_topic(Name=name("a"), Attributes={"DisplayName": "A"}, Tags=[{"Key": "k", "Value": "v"}])
    assert arn["TopicArn"] == f"arn:aws:sns:us-east-1:123456789012:{name('a')}"
    assert sns.create_topic(Name=name("a"))["TopicArn"] == arn["TopicArn"]
    assert sns.create_topic(Name=name("a"), Attributes={"DisplayName": "A"})["TopicArn"] == arn["TopicArn"]
    assert error(sns.create_topic, Name=name("a"), Attributes={"DisplayName": "B"}) == (
        "InvalidParameter", "Invalid parameter: Attributes Reason: Topic already exists with different attributes",
        400)
    assert error(sns.create_topic, Name=name("a"), Tags=[{"Key": "k", "Value": "other"}])[1] == \
        "Invalid parameter: Tags Reason: Topic already exists with different tags"
    assert sns.create_topic(Name=name("a"), Tags=[])["TopicArn"] == arn["TopicArn"]
    listed = [t["TopicArn"] for t in sns.list_topics()["Topics"]]
    assert arn["TopicArn"] in listed
    attributes = sns.get_topic_attributes(TopicArn=arn["TopicArn"])["Attributes"]
    assert attributes["DisplayName"] == "A" and attributes["Owner"] == "123456789012"
    assert json.loads(attributes["Policy"])["Statement"][0]["Resource"] == arn["TopicArn"]
    assert sns.list_tags_for_resource(ResourceArn=arn["TopicArn"])["Tags"] == [{"Key": "k", "Value": "v"}]


def test_topic_names_and_fifo_attributes(sns: Any, name: Name) -> None:
    assert error(sns.create_topic, Name="bad name")[:2] == ("InvalidParameter", "Invalid parameter: Topic Name")
    assert error(sns.create_topic, Name=name("x"), Attributes={"FifoTopic": "true"})[1] == \
        "Invalid parameter: Topic Name"
    assert error(sns.create_topic, Name=name("x") + ".fifo")[1] == "Invalid parameter: Topic Name"
    fifo = sns.create_topic(Name=name("f") + ".fifo", Attributes={"FifoTopic": "true",
                                                                   "ContentBasedDeduplication": "true"})
    attributes = sns.get_topic_attributes(TopicArn=fifo["TopicArn"])["Attributes"]
    assert attributes["FifoTopic"] == "true" and attributes["ContentBasedDeduplication"] == "true"
    standard = sns.create_topic(Name=name("s"))["TopicArn"]
    assert error(sns.set_topic_attributes, TopicArn=standard, AttributeName="Nope", AttributeValue="1")[1] == \
        "Invalid parameter: AttributeName"
    sns.set_topic_attributes(TopicArn=standard, AttributeName="DisplayName", AttributeValue="shown")
    assert sns.get_topic_attributes(TopicArn=standard)["Attributes"]["DisplayName"] == "shown"


def test_errors_in_aws_words(sns: Any, name: Name) -> None:
    missing = f"arn:aws:sns:us-east-1:123456789012:{name('none')}"
    assert error(sns.get_topic_attributes, TopicArn=missing) == ("NotFound", "Topic does not exist", 404)
    assert error(sns.publish, TopicArn=missing, Message="m") == ("NotFound", "Topic does not exist", 404)
    assert error(sns.get_topic_attributes, TopicArn="arn:aws:sns:us-east-1")[1] == \
        "Invalid parameter: TopicArn Reason: An ARN must have at least 6 elements, not 4"
    assert error(sns.get_subscription_attributes,
                 SubscriptionArn=f"{missing}:a0b1c2d3-0000-4000-8000-000000000000")[:2] == \
        ("NotFound", "Subscription does not exist")
    topic = sns.create_topic(Name=name("t"))["TopicArn"]
    assert error(sns.publish, TopicArn=topic, Message="")[1] == "Invalid parameter: Empty message"
    assert error(sns.publish, TopicArn=topic, Message="m", Subject="")[1] == "Invalid parameter: Subject"
    assert error(sns.publish, TopicArn=topic, Message="x" * 262_145)[1] == "Invalid parameter: Message too long"
    assert error(sns.publish, TopicArn=topic, Message="{}", MessageStructure="json")[1] == \
        "Invalid parameter: Message Structure - No default entry in JSON message body"
    assert error(sns.publish, TopicArn=topic, Message="m", MessageDeduplicationId="d")[1].startswith(
        "Invalid parameter: MessageDeduplicationId Reason:")
    assert error(sns.publish, TopicArn=topic, Message="m",
                 MessageAttributes={"a^b": {"DataType": "String", "StringValue": "v"}})[:2] == (
        "ParameterValueInvalid", "Invalid non-alphanumeric character '#x5E' was found in the message attribute name. "
        "Can only include alphanumeric characters, hyphens, underscores, or dots.")
    assert error(sns.publish, TopicArn=topic, Message="m",
                 MessageAttributes={"a": {"DataType": "Float", "StringValue": "1"}})[0] == "ParameterValueInvalid"
    assert error(sns.subscribe, TopicArn=topic, Protocol="carrier-pigeon", Endpoint="x")[1] == \
        "Invalid parameter: Amazon SNS does not support this protocol string: carrier-pigeon"
    for protocol, endpoint in (("lambda", "arn:aws:lambda:us-east-1:123456789012:function:f"),
                               ("application", "arn:aws:sns:us-east-1:123456789012:endpoint/GCM/app/x"),
                               ("firehose", "arn:aws:firehose:us-east-1:123456789012:deliverystream/d")):
        code, message, status = error(sns.subscribe, TopicArn=topic, Protocol=protocol, Endpoint=endpoint)
        assert (code, status) == ("InvalidParameter", 400) and protocol in message
    assert error(sns.subscribe, TopicArn=topic, Protocol="sqs", Endpoint="not-an-arn")[1] == \
        "Invalid parameter: SQS endpoint ARN"
    assert error(sns.create_platform_application, Name="a", Platform="GCM", Attributes={})[0] == "InvalidAction"
    sns.delete_topic(TopicArn=topic)
    sns.delete_topic(TopicArn=topic)  # deleting a deleted topic: nothing to do, as AWS


def test_email_and_sms_subscriptions_are_kept_and_sent_nothing(sns: Any, sqs: Any, queue: Queue, name: Name) -> None:
    topic = sns.create_topic(Name=name("kept"))["TopicArn"]
    url, arn = queue("beside")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    assert sns.subscribe(TopicArn=topic, Protocol="email", Endpoint="a@example.com")["SubscriptionArn"] == \
        "pending confirmation"
    assert sns.subscribe(TopicArn=topic, Protocol="email-json", Endpoint="b@example.com",
                         ReturnSubscriptionArn=True)["SubscriptionArn"].startswith(topic + ":")
    sms = sns.subscribe(TopicArn=topic, Protocol="sms", Endpoint="+12/34-567.890")["SubscriptionArn"]
    attributes = sns.get_subscription_attributes(SubscriptionArn=sms)["Attributes"]
    assert (attributes["Protocol"], attributes["PendingConfirmation"]) == ("sms", "false")
    for bad in ("+15--551234567", "NAA+15551234567", "+15551234567.", "/+15551234567", "+1234567890123456"):
        assert error(sns.subscribe, TopicArn=topic, Protocol="sms", Endpoint=bad)[:2] == (
            "InvalidParameter", f"Invalid SMS endpoint: {bad}")
    assert error(sns.publish, PhoneNumber="+1a234", Message="m")[1] == \
        "Invalid parameter: PhoneNumber Reason: +1a234 is not valid to publish to"
    assert error(sns.publish, PhoneNumber="+15551234567", Message="m")[1] == \
        "Invalid parameter: PhoneNumber Reason: this service delivers no SMS"
    assert error(sns.subscribe, TopicArn=topic, Protocol="email", Endpoint="nobody")[1] == \
        "Invalid parameter: Email address"
    listed = {s["Protocol"]: s["SubscriptionArn"] for s in sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]}
    assert listed["email"] == listed["email-json"] == "PendingConfirmation" and listed["sms"] == sms
    sns.publish(TopicArn=topic, Message="to the queue only")
    assert [json.loads(m["Body"])["Message"] for m in receive_all(sqs, url, 1)] == ["to the queue only"]
    sns.unsubscribe(SubscriptionArn=sms)


def test_publish_reaches_every_subscribed_queue(sns: Any, sqs: Any, queue: Queue, name: Name) -> None:
    topic = sns.create_topic(Name=name("fan"))["TopicArn"]
    queues = [queue(f"q{i}") for i in range(3)]
    subs = [sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)["SubscriptionArn"] for _, arn in queues]
    assert sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queues[0][1])["SubscriptionArn"] == subs[0]
    listed = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert sorted(s["SubscriptionArn"] for s in listed) == sorted(subs)
    published = sns.publish(TopicArn=topic, Message="hello", Subject="greeting",
                            MessageAttributes={"kind": {"DataType": "String", "StringValue": "order"},
                                               "bin": {"DataType": "Binary", "BinaryValue": b"\x00\x01"}})
    for url, _arn in queues:
        (message,) = receive_all(sqs, url, 1)
        body = json.loads(message["Body"])
        assert body["Type"] == "Notification" and body["MessageId"] == published["MessageId"]
        assert body["Message"] == "hello" and body["Subject"] == "greeting" and body["TopicArn"] == topic
        assert body["MessageAttributes"] == {"kind": {"Type": "String", "Value": "order"},
                                             "bin": {"Type": "Binary", "Value": "AAE="}}
        assert body["UnsubscribeURL"].endswith(subs[queues.index((url, _arn))])
        assert message["Attributes"]["SenderId"] == "AIDAIT2UOQQY3AUEKVGXU"
    sns.unsubscribe(SubscriptionArn=subs[2])
    sns.publish(TopicArn=topic, Message="again")
    assert len(receive_all(sqs, queues[0][0], 1)) == 1
    assert receive_all(sqs, queues[2][0], 1, wait=1) == []


def test_signature_verifies_against_the_served_certificate(sns: Any, sqs: Any, queue: Queue, name: Name) -> None:
    for version, algorithm in (("1", hashes.SHA1()), ("2", hashes.SHA256())):
        topic = sns.create_topic(Name=name(f"sig{version}"), Attributes={"SignatureVersion": version})["TopicArn"]
        url, arn = queue(f"sig{version}")
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
        sns.publish(TopicArn=topic, Message="signed ü", Subject="s")
        body = json.loads(receive_all(sqs, url, 1)[0]["Body"])
        assert body["SignatureVersion"] == version
        cert = x509.load_pem_x509_certificate(requests.get(body["SigningCertURL"], timeout=10).content)
        signed = "".join(f"{k}\n{body[k]}\n" for k in ("Message", "MessageId", "Subject", "Timestamp", "TopicArn",
                                                         "Type"))
        cert.public_key().verify(base64.b64decode(body["Signature"]), signed.encode(), padding.PKCS1v15(),
                                 algorithm)
        with pytest.raises(InvalidSignature):
            cert.public_key().verify(base64.b64decode(body["Signature"]), signed.encode() + b"x",
                                     padding.PKCS1v15(), algorithm)


def test_raw_delivery_and_message_structure(sns: Any, sqs: Any, queue: Queue, name: Name) -> None:
    topic = sns.create_topic(Name=name("raw"))["TopicArn"]
    url, arn = queue("raw")
    sub = sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn,
                        Attributes={"RawMessageDelivery": "true"})["SubscriptionArn"]
    assert sns.get_subscription_attributes(SubscriptionArn=sub)["Attributes"]["RawMessageDelivery"] == "true"
    sns.publish(TopicArn=topic, Message=json.dumps({"default": "plain", "sqs": "for queues"}),
                MessageStructure="json", MessageAttributes={"n": {"DataType": "Number", "StringValue": "42"}})
    (message,) = receive_all(sqs, url, 1)
    assert message["Body"] == "for queues"
    assert message["MessageAttributes"] == {"n": {"DataType": "Number", "StringValue": "42"}}
    assert error(sns.set_subscription_attributes, SubscriptionArn=sub, AttributeName="RawMessageDelivery",
                 AttributeValue="maybe")[1] == \
        "Invalid parameter: RawMessageDelivery: Invalid value [maybe]. Must be true or false."


def test_filter_policies_on_attributes_and_body(sns: Any, sqs: Any, queue: Queue, name: Name) -> None:
    topic = sns.create_topic(Name=name("filter"))["TopicArn"]
    (books_url, books), (big_url, big), (all_url, everything) = queue("books"), queue("big"), queue("all")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=books,
                  Attributes={"FilterPolicy": json.dumps({"kind": ["book"]}), "RawMessageDelivery": "true"})
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=big, Attributes={
        "FilterPolicyScope": "MessageBody", "RawMessageDelivery": "true",
        "FilterPolicy": json.dumps({"order": {"amount": [{"numeric": [">=", 100]}]}})})
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=everything, Attributes={"RawMessageDelivery": "true"})
    kind = {"kind": {"DataType": "String", "StringValue": "book"}}
    sns.publish(TopicArn=topic, Message=json.dumps({"order": {"amount": 150}}), MessageAttributes=kind)
    sns.publish(TopicArn=topic, Message=json.dumps({"order": {"amount": 5}}))
    sns.publish(TopicArn=topic, Message="not json")
    assert len(receive_all(sqs, books_url, 1)) == 1
    assert [json.loads(m["Body"]) for m in receive_all(sqs, big_url, 1)] == [{"order": {"amount": 150}}]
    assert len(receive_all(sqs, all_url, 3)) == 3
    sub = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"][0]["SubscriptionArn"]
    assert error(sns.set_subscription_attributes, SubscriptionArn=sub, AttributeName="FilterPolicy",
                 AttributeValue=json.dumps({"k": [{"numeric": [">", 3, "<", 1]}]}))[1] == \
        "Invalid parameter: FilterPolicy: Bottom must be less than top"
    assert error(sns.subscribe, TopicArn=topic, Protocol="sqs", Endpoint=queue("x")[1],
                 Attributes={"FilterPolicy": json.dumps({"a": {"b": ["c"]}})})[1] == \
        "Invalid parameter: Attributes Reason: Filter policy scope MessageAttributes does not support nested " \
        "filter policy"


def test_fifo_topic_order_dedup_and_sequence(sns: Any, sqs: Any, queue: Queue, name: Name) -> None:
    topic = sns.create_topic(Name=name("f") + ".fifo", Attributes={"FifoTopic": "true"})["TopicArn"]
    fifo_queues = [queue(f"fq{i}", FifoQueue="true") for i in range(2)]
    standard_url, standard = queue("std")
    for _url, arn in fifo_queues:
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=standard, Attributes={"RawMessageDelivery": "true"})
    assert error(sns.publish, TopicArn=topic, Message="m")[1] == \
        "Invalid parameter: The MessageGroupId parameter is required for FIFO topics"
    assert error(sns.publish, TopicArn=topic, Message="m", MessageGroupId="g")[1].startswith(
        "Invalid parameter: The topic should either have ContentBasedDeduplication enabled")
    sequences = []
    for i in range(6):
        reply = sns.publish(TopicArn=topic, Message=f"m{i}", MessageGroupId="g", MessageDeduplicationId=f"d{i}")
        sequences.append(int(reply["SequenceNumber"]))
    assert sequences == sorted(sequences) and len(set(sequences)) == 6
    again = sns.publish(TopicArn=topic, Message="m0", MessageGroupId="g", MessageDeduplicationId="d0")
    assert int(again["SequenceNumber"]) == sequences[0]
    batch = sns.publish_batch(TopicArn=topic, PublishBatchRequestEntries=[
        {"Id": f"e{i}", "Message": f"b{i}", "MessageGroupId": "g", "MessageDeduplicationId": f"b{i}"}
        for i in range(3)])
    assert [s["Id"] for s in batch["Successful"]] == ["e0", "e1", "e2"] and batch["Failed"] == []
    expected = [f"m{i}" for i in range(6)] + [f"b{i}" for i in range(3)]
    for url, _arn in fifo_queues:
        bodies = []
        while len(bodies) < len(expected):
            got = receive_all(sqs, url, 1)
            assert got, bodies
            assert all(m["Attributes"]["MessageGroupId"] == "g" for m in got)
            bodies.extend(m["Body"] for m in got)
        assert bodies == expected
    assert sorted(m["Body"] for m in receive_all(sqs, standard_url, 9)) == sorted(expected)
    _url, fifo_arn = fifo_queues[0]
    standard_topic = sns.create_topic(Name=name("plain"))["TopicArn"]
    assert error(sns.subscribe, TopicArn=standard_topic, Protocol="sqs", Endpoint=fifo_arn)[1] == \
        "Invalid parameter: Invalid parameter: Endpoint Reason: FIFO SQS Queues can not be subscribed to standard " \
        "SNS topics"


def test_publish_batch_checks(sns: Any, sqs: Any, queue: Queue, name: Name) -> None:
    topic = sns.create_topic(Name=name("batch"))["TopicArn"]
    url, arn = queue("batch")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    reply = sns.publish_batch(TopicArn=topic, PublishBatchRequestEntries=[
        {"Id": f"i{i}", "Message": f"m{i}"} for i in range(10)])
    assert len(reply["Successful"]) == 10
    assert sorted(m["Body"] for m in receive_all(sqs, url, 10)) == sorted(f"m{i}" for i in range(10))
    assert error(sns.publish_batch, TopicArn=topic, PublishBatchRequestEntries=[
        {"Id": f"i{i}", "Message": "m"} for i in range(11)])[0] == "TooManyEntriesInBatchRequest"
    assert error(sns.publish_batch, TopicArn=topic, PublishBatchRequestEntries=[
        {"Id": "same", "Message": "m"}, {"Id": "same", "Message": "m"}])[0] == "BatchEntryIdsNotDistinct"
    assert error(sns.publish_batch, TopicArn=topic, PublishBatchRequestEntries=[
        {"Id": "message.id", "Message": "m"}])[1] == \
        "The Id of a batch entry in the batch request contains an impermissible character: message.id"


def test_dead_letter_queue_takes_what_cannot_be_delivered(sns: Any, sqs: Any, queue: Queue, name: Name) -> None:
    topic = sns.create_topic(Name=name("dlq"))["TopicArn"]
    gone_url, gone = queue("gone")
    dlq_url, dlq = queue("dead")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=gone, Attributes={
        "RawMessageDelivery": "true", "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq})})
    sqs.delete_queue(QueueUrl=gone_url)
    sns.publish(TopicArn=topic, Message="undeliverable")
    assert [m["Body"] for m in receive_all(sqs, dlq_url, 1)] == ["undeliverable"]
    sub = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"][0]["SubscriptionArn"]
    assert error(sns.set_subscription_attributes, SubscriptionArn=sub, AttributeName="RedrivePolicy",
                 AttributeValue=json.dumps({"deadLetterTargetArn": "nope"}))[1] == \
        "Invalid parameter: RedrivePolicy: deadLetterTargetArn is an invalid arn"


def test_list_topics_pages_of_100(sns: Any, name: Name, sns_server: Any) -> None:
    from tests.sns.conftest import sns_client
    regional = sns_client(sns_server.url, region="eu-west-3")
    made = {regional.create_topic(Name=name(f"p{i:03d}"))["TopicArn"] for i in range(105)}
    first = regional.list_topics()
    assert len(first["Topics"]) == 100 and "NextToken" in first
    second = regional.list_topics(NextToken=first["NextToken"])
    assert "NextToken" not in second
    assert {t["TopicArn"] for t in first["Topics"] + second["Topics"]} == made
    assert not made & {t["TopicArn"] for t in sns.list_topics()["Topics"]}  # another region's


def test_list_subscriptions_pages_of_100(sns: Any, name: Name) -> None:
    topic = sns.create_topic(Name=name("paged"))["TopicArn"]
    for i in range(101):
        sns.subscribe(TopicArn=topic, Protocol="sms", Endpoint=f"+1555000{i:04d}")
    first = sns.list_subscriptions_by_topic(TopicArn=topic)
    assert len(first["Subscriptions"]) == 100 and base64.b64decode(first["NextToken"], validate=True)
    second = sns.list_subscriptions_by_topic(TopicArn=topic, NextToken=first["NextToken"])
    assert len(second["Subscriptions"]) == 1 and "NextToken" not in second
    seen = {s["SubscriptionArn"] for s in first["Subscriptions"] + second["Subscriptions"]}
    assert len(seen) == 101
    assert error(sns.list_subscriptions_by_topic, TopicArn=topic, NextToken="not base64!")[1] == \
        "Invalid parameter: NextToken"
    sns.delete_topic(TopicArn=topic)


def test_topic_deleted_takes_its_subscriptions(sns: Any, queue: Queue, name: Name) -> None:
    topic = sns.create_topic(Name=name("del"))["TopicArn"]
    sub = sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue("del")[1])["SubscriptionArn"]
    sns.delete_topic(TopicArn=topic)
    assert error(sns.get_subscription_attributes, SubscriptionArn=sub)[0] == "NotFound"
    assert sub not in [s["SubscriptionArn"] for s in sns.list_subscriptions()["Subscriptions"]]
    assert sns.create_topic(Name=name("del"))["TopicArn"] == topic
    assert sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"] == []


def test_tags(sns: Any, name: Name) -> None:
    topic = sns.create_topic(Name=name("tags"))["TopicArn"]
    sns.tag_resource(ResourceArn=topic, Tags=[{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}])
    sns.untag_resource(ResourceArn=topic, TagKeys=["a"])
    assert sns.list_tags_for_resource(ResourceArn=topic)["Tags"] == [{"Key": "b", "Value": "2"}]
    missing = topic + "x"
    assert error(sns.tag_resource, ResourceArn=missing, Tags=[{"Key": "a", "Value": "1"}])[:2] == \
        ("ResourceNotFound", "Resource does not exist")


def test_sqs_is_untouched(sqs: Any, queue: Queue) -> None:
    """The SQS door still answers on the same port: JSON and Query, the SNS door leaves them alone."""
    url, _arn = queue("plain")
    sqs.send_message(QueueUrl=url, MessageBody="b")
    assert receive_all(sqs, url, 1)[0]["Body"] == "b"
