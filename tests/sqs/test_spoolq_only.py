"""AWS behaviour moto does not model, checked against spoolq alone (real gunicorn + FileStore):
message move tasks, ListQueues pagination, system-attribute MD5s, ReceiveRequestAttemptId, the
12-hour visibility limit, attribute ranges on SetQueueAttributes, RedriveAllowPolicy, body
characters, message attribute rules, and the Query protocol's XML."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pytest
import requests
from botocore.exceptions import ClientError

from spoolq.http.sqs.digests import md5_of_attributes

pytestmark = pytest.mark.timeout(120)

NS = {"q": "http://queue.amazonaws.com/doc/2012-11-05/"}


def _error(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as info:
        call()
    return dict(info.value.response["Error"])


def _arn(name: str) -> str:
    return f"arn:aws:sqs:us-east-1:123456789012:{name}"


def test_message_move_task_redrives_dead_letters(sqs: Any, qname: Callable[[str], str]) -> None:
    dlq = sqs.create_queue(QueueName=qname("dlq"))["QueueUrl"]
    src = sqs.create_queue(QueueName=qname("src"), Attributes={
        "RedrivePolicy": f'{{"deadLetterTargetArn": "{_arn(qname("dlq"))}", "maxReceiveCount": "1"}}'})["QueueUrl"]
    sqs.send_message_batch(QueueUrl=src, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)])
    for _ in range(2):
        got = sqs.receive_message(QueueUrl=src, MaxNumberOfMessages=10)
        for m in got.get("Messages", []):
            sqs.change_message_visibility(QueueUrl=src, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
    got = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, VisibilityTimeout=0,
                              MessageSystemAttributeNames=["DeadLetterQueueSourceArn"])
    assert {m["Attributes"]["DeadLetterQueueSourceArn"] for m in got["Messages"]} == {_arn(qname("src"))}
    assert _error(lambda: sqs.start_message_move_task(SourceArn=_arn(qname("src"))))["Code"] == \
        "InvalidParameterValue"  # the source must be a dead-letter queue
    handle = sqs.start_message_move_task(SourceArn=_arn(qname("dlq")))["TaskHandle"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        tasks = sqs.list_message_move_tasks(SourceArn=_arn(qname("dlq")), MaxResults=10)["Results"]
        if tasks and tasks[0]["Status"] == "COMPLETED":
            break
        time.sleep(0.2)
    assert tasks[0]["Status"] == "COMPLETED", tasks
    assert tasks[0]["ApproximateNumberOfMessagesMoved"] == 5
    # started without DestinationArn: listed without one (recorded: test_move_task_workflow_with_default_destination)
    assert "DestinationArn" not in tasks[0] and tasks[0]["ApproximateNumberOfMessagesToMove"] == 5
    assert "TaskHandle" not in tasks[0]
    bodies: list[str] = []
    for _ in range(5):
        bodies += [m["Body"] for m in sqs.receive_message(QueueUrl=src, MaxNumberOfMessages=10).get("Messages", [])]
    assert sorted(bodies) == [f"m{i}" for i in range(5)]
    err = _error(lambda: sqs.cancel_message_move_task(TaskHandle="bm9wZQ=="))  # not a task handle at all
    assert (err["Code"], err["Message"]) == ("InvalidParameterValue", "Value for parameter TaskHandle is invalid.")
    assert handle


def test_list_queues_pagination(sqs: Any, qname: Callable[[str], str]) -> None:
    names = [qname(f"p{i}") for i in range(5)]
    for n in names:
        sqs.create_queue(QueueName=n)
    prefix = names[0][:-3]
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        kwargs: dict[str, Any] = {"QueueNamePrefix": prefix, "MaxResults": 2}
        if token:
            kwargs["NextToken"] = token
        page = sqs.list_queues(**kwargs)
        seen += [u.rsplit("/", 1)[-1] for u in page.get("QueueUrls", [])]
        pages += 1
        token = page.get("NextToken")
        if not token:
            break
    assert seen == sorted(names) and pages == 3
    assert "NextToken" not in sqs.list_queues(QueueNamePrefix=prefix)
    assert _error(lambda: sqs.list_queues(MaxResults=1001))["Code"] == "InvalidParameterValue"


def test_system_attribute_md5_and_trace_header(sqs: Any, qname: Callable[[str], str]) -> None:
    url = sqs.create_queue(QueueName=qname())["QueueUrl"]
    trace = {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-5759e988-bd862e3fe1be46a994272793"}}
    sent = sqs.send_message(QueueUrl=url, MessageBody="x", MessageSystemAttributes=trace)
    assert sent["MD5OfMessageSystemAttributes"] == md5_of_attributes(trace)
    got = sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=["AWSTraceHeader"])["Messages"][0]
    assert got["Attributes"] == {"AWSTraceHeader": trace["AWSTraceHeader"]["StringValue"]}
    bad = {"Other": {"DataType": "String", "StringValue": "x"}}
    assert _error(lambda: sqs.send_message(QueueUrl=url, MessageBody="x", MessageSystemAttributes=bad))[
        "Code"] == "InvalidParameterValue"


def test_receive_request_attempt_id_replays(sqs: Any, qname: Callable[[str], str]) -> None:
    url = sqs.create_queue(QueueName=qname("a.fifo"), Attributes={"FifoQueue": "true",
                                                                   "ContentBasedDeduplication": "true"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="one", MessageGroupId="g")
    first = sqs.receive_message(QueueUrl=url, ReceiveRequestAttemptId="try-1")["Messages"]
    again = sqs.receive_message(QueueUrl=url, ReceiveRequestAttemptId="try-1")["Messages"]
    assert [(m["MessageId"], m["ReceiptHandle"]) for m in first] == [(m["MessageId"], m["ReceiptHandle"]) for m in again]
    assert "Messages" not in sqs.receive_message(QueueUrl=url, ReceiveRequestAttemptId="try-2")


def test_limits_moto_does_not_check(sqs: Any, qname: Callable[[str], str]) -> None:
    url = sqs.create_queue(QueueName=qname())["QueueUrl"]
    for attrs in ({"VisibilityTimeout": "43201"}, {"DelaySeconds": "-1"}, {"MessageRetentionPeriod": "59"},
                  {"MaximumMessageSize": "1023"}, {"ReceiveMessageWaitTimeSeconds": "21"}):
        err = _error(lambda a=attrs: sqs.set_queue_attributes(QueueUrl=url, Attributes=a))
        assert err["Code"] == "InvalidAttributeValue", attrs
        assert err["Message"] == f"Invalid value for the parameter {next(iter(attrs))}."
    assert _error(lambda: sqs.set_queue_attributes(QueueUrl=url, Attributes={"Bogus": "1"}))[
        "Message"] == "Unknown Attribute Bogus."
    err = _error(lambda: sqs.send_message(QueueUrl=url, MessageBody="a\x00b"))
    assert err["Code"] == "InvalidMessageContents" and "#x0" in err["Message"]
    too_many = {f"a{i}": {"DataType": "String", "StringValue": "v"} for i in range(11)}
    assert "exceeds the allowed maximum [10]" in _error(
        lambda: sqs.send_message(QueueUrl=url, MessageBody="x", MessageAttributes=too_many))["Message"]
    for name in ("AWS.x", ".lead", "trail.", "dou..ble", "sp ace"):
        attr = {name: {"DataType": "String", "StringValue": "v"}}
        assert _error(lambda a=attr: sqs.send_message(QueueUrl=url, MessageBody="x", MessageAttributes=a))[
            "Code"] == "InvalidParameterValue", name
    assert _error(lambda: sqs.send_message(QueueUrl=url, MessageBody="x", MessageAttributes={
        "n": {"DataType": "Number", "StringValue": "abc"}}))["Code"] == "InvalidParameterValue"
    assert _error(lambda: sqs.send_message(QueueUrl=url, MessageBody="x", MessageDeduplicationId="d"))[
        "Code"] == "InvalidParameterValue"  # dedup ids are FIFO-only
    assert _error(lambda: sqs.send_message(QueueUrl=url, MessageBody=""))["Code"] == "MissingParameter"
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"MaximumMessageSize": "1024"})
    big = {"k": {"DataType": "String", "StringValue": "v" * 1000}}
    assert "shorter than 1024 bytes" in _error(
        lambda: sqs.send_message(QueueUrl=url, MessageBody="y" * 30, MessageAttributes=big))["Message"]


def test_visibility_limit_counts_from_receipt(sqs: Any, qname: Callable[[str], str]) -> None:
    url = sqs.create_queue(QueueName=qname())["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="x")
    handle = sqs.receive_message(QueueUrl=url)["Messages"][0]["ReceiptHandle"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=43_000)
    err = _error(lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle,
                                                       VisibilityTimeout=43_200))
    assert "beyond the limit [43200 seconds]" in err["Message"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)
    err = _error(lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=5))
    # recorded from AWS: test_change_visibility_on_deleted_message_raises_invalid_parameter_value
    assert (err["Code"], err["Message"]) == ("InvalidParameterValue", f"Value {handle} for parameter ReceiptHandle "
                                             "is invalid. Reason: Message does not exist or is not available for "
                                             "visibility timeout change.")
    sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)  # a stale handle succeeds, as in AWS


def test_redrive_allow_policy_and_dlq_kind(sqs: Any, qname: Callable[[str], str]) -> None:
    sqs.create_queue(QueueName=qname("closed"), Attributes={"RedriveAllowPolicy": '{"redrivePermission":"denyAll"}'})
    policy = f'{{"deadLetterTargetArn": "{_arn(qname("closed"))}", "maxReceiveCount": 3}}'
    err = _error(lambda: sqs.create_queue(QueueName=qname("src"), Attributes={"RedrivePolicy": policy}))
    assert "does not allow this queue" in err["Message"]
    sqs.create_queue(QueueName=qname("f.fifo"), Attributes={"FifoQueue": "true"})
    fifo_target = f'{{"deadLetterTargetArn": "{_arn(qname("f.fifo"))}", "maxReceiveCount": 3}}'
    err = _error(lambda: sqs.create_queue(QueueName=qname("std"), Attributes={"RedrivePolicy": fifo_target}))
    assert err["Code"] == "InvalidParameterCombination"
    bad_count = f'{{"deadLetterTargetArn": "{_arn(qname("f.fifo"))}", "maxReceiveCount": 1001}}'
    assert "valid values are from 1 to 1000" in _error(lambda: sqs.create_queue(
        QueueName=qname("g.fifo"), Attributes={"FifoQueue": "true", "RedrivePolicy": bad_count}))["Message"]


def test_queues_are_scoped_by_region(spoolq_url: str, qname: Callable[[str], str]) -> None:
    from tests.sqs.harness import client

    east, west = client(spoolq_url, "us-east-1"), client(spoolq_url, "eu-west-1")
    east.create_queue(QueueName=qname())
    assert _error(lambda: west.get_queue_url(QueueName=qname()))["QueryErrorCode"] == "QueueDoesNotExist"
    url = west.create_queue(QueueName=qname(), Attributes={"VisibilityTimeout": "7"})["QueueUrl"]
    assert west.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"] == \
        f"arn:aws:sqs:eu-west-1:123456789012:{qname()}"


def _query(url: str, **params: str) -> ET.Element:
    reply = requests.post(url, data=params, timeout=30)
    return ET.fromstring(reply.content)


def test_query_protocol_round_trip(spoolq_url: str, qname: Callable[[str], str]) -> None:
    root = _query(spoolq_url, Action="CreateQueue", QueueName=qname(), **{
        "Attribute.1.Name": "VisibilityTimeout", "Attribute.1.Value": "9"})
    queue_url = root.findtext("q:CreateQueueResult/q:QueueUrl", namespaces=NS)
    assert queue_url and queue_url.endswith(qname())
    root = _query(spoolq_url, Action="SendMessage", QueueUrl=queue_url, MessageBody="hello world", **{
        "MessageAttribute.1.Name": "s", "MessageAttribute.1.Value.DataType": "String",
        "MessageAttribute.1.Value.StringValue": "v"})
    assert root.findtext("q:SendMessageResult/q:MD5OfMessageBody", namespaces=NS) == \
        "5eb63bbbe01eeed093cb22bb8f5acdc3"
    assert root.findtext("q:SendMessageResult/q:MD5OfMessageAttributes", namespaces=NS) == \
        md5_of_attributes({"s": {"DataType": "String", "StringValue": "v"}})
    # Posted to the queue URL's path, as the Java SDK v1 does (QueueUrl taken from the path).
    path_url = spoolq_url + "/123456789012/" + qname()
    root = _query(path_url, Action="ReceiveMessage", **{"AttributeName.1": "All", "MessageAttributeName.1": "All"})
    msg = root.find("q:ReceiveMessageResult/q:Message", NS)
    assert msg is not None and msg.findtext("q:Body", namespaces=NS) == "hello world"
    names = [a.findtext("q:Name", namespaces=NS) for a in msg.findall("q:Attribute", NS)]
    assert "ApproximateReceiveCount" in names
    assert msg.findtext("q:MessageAttribute/q:Value/q:StringValue", namespaces=NS) == "v"
    root = _query(spoolq_url, Action="GetQueueAttributes", QueueUrl=queue_url, **{"AttributeName.1": "All"})
    attrs = {a.findtext("q:Name", namespaces=NS): a.findtext("q:Value", namespaces=NS)
             for a in root.findall("q:GetQueueAttributesResult/q:Attribute", NS)}
    assert attrs["VisibilityTimeout"] == "9"
    reply = requests.post(spoolq_url, data={"Action": "GetQueueUrl", "QueueName": qname("missing")}, timeout=30)
    assert reply.status_code == 400
    err = ET.fromstring(reply.content)
    assert err.findtext("q:Error/q:Code", namespaces=NS) == "AWS.SimpleQueueService.NonExistentQueue"
    assert err.findtext("q:Error/q:Type", namespaces=NS) == "Sender"


def test_unknown_target_and_bad_json(spoolq_url: str) -> None:
    reply = requests.post(spoolq_url, data=b"{}", headers={"X-Amz-Target": "AmazonSQS.Frobnicate",
                                                           "Content-Type": "application/x-amz-json-1.0"}, timeout=10)
    assert reply.status_code == 400 and "UnknownOperationException" in reply.json()["__type"]
    reply = requests.post(spoolq_url, data=b"{not json", headers={"X-Amz-Target": "AmazonSQS.ListQueues",
                                                                  "Content-Type": "application/x-amz-json-1.0"},
                          timeout=10)
    assert reply.status_code == 400 and reply.headers["x-amzn-query-error"] == "InvalidParameterValue;Sender"
