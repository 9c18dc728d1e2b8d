"""Message move tasks checked against answers recorded from real AWS (LocalStack's AWS-validated
``tests/aws/services/sqs/test_sqs_move_task.py`` and its snapshot; each test names the one it
follows), through boto3 against the session's gunicorn."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.sqs.harness import ACCOUNT

pytestmark = pytest.mark.timeout(120)


def _arn(name: str) -> str:
    return f"arn:aws:sqs:us-east-1:{ACCOUNT}:{name}"


def _error(call: Callable[[], Any]) -> tuple[str, str, int]:
    with pytest.raises(ClientError) as info:
        call()
    err = info.value.response["Error"]
    return err["Code"], err["Message"], info.value.response["ResponseMetadata"]["HTTPStatusCode"]


def _handle(task_id: str, source_arn: str) -> str:
    return base64.b64encode(json.dumps({"taskId": task_id, "sourceArn": source_arn}).encode()).decode()


def _dlq_pipe(sqs: Any, qname: Callable[[str], str], messages: int) -> tuple[str, str]:
    """source queue -> dead-letter queue after one receive, with ``messages`` dead letters in it"""
    dlq = sqs.create_queue(QueueName=qname("dlq"))["QueueUrl"]
    src = sqs.create_queue(QueueName=qname("src"), Attributes={"RedrivePolicy": json.dumps(
        {"deadLetterTargetArn": _arn(qname("dlq")), "maxReceiveCount": 1})})["QueueUrl"]
    sqs.send_message_batch(QueueUrl=src, Entries=[{"Id": str(i), "MessageBody": f"message-{i}"}
                                                  for i in range(messages)])
    for _ in range(2):
        sqs.receive_message(QueueUrl=src, VisibilityTimeout=0, MaxNumberOfMessages=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        count = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"])
        if count["Attributes"]["ApproximateNumberOfMessages"] == str(messages):
            break
        sqs.receive_message(QueueUrl=src, VisibilityTimeout=0, MaxNumberOfMessages=10)
    return src, dlq


def _finished(sqs: Any, source_arn: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        task = sqs.list_message_move_tasks(SourceArn=source_arn)["Results"][0]
        if task["Status"] != "RUNNING" or time.monotonic() > deadline:
            return dict(task)
        time.sleep(0.2)


def test_basic_move_task_workflow(sqs: Any, qname: Callable[[str], str]) -> None:
    # test_basic_move_task_workflow: the handle decodes to {"taskId": <uuid>, "sourceArn": ...}
    _, dlq = _dlq_pipe(sqs, qname, 2)
    destination = sqs.create_queue(QueueName=qname("dest"))["QueueUrl"]
    handle = sqs.start_message_move_task(SourceArn=_arn(qname("dlq")), DestinationArn=_arn(qname("dest")))["TaskHandle"]
    decoded = json.loads(base64.b64decode(handle))
    assert uuid.UUID(decoded["taskId"]) and decoded["sourceArn"] == _arn(qname("dlq"))
    task = _finished(sqs, _arn(qname("dlq")))
    task.pop("StartedTimestamp")
    assert task == {"ApproximateNumberOfMessagesMoved": 2, "ApproximateNumberOfMessagesToMove": 2,
                    "DestinationArn": _arn(qname("dest")), "SourceArn": _arn(qname("dlq")), "Status": "COMPLETED"}
    got = sqs.receive_message(QueueUrl=destination, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]
    assert {m["Body"] for m in got} == {"message-0", "message-1"}
    assert not sqs.receive_message(QueueUrl=dlq).get("Messages")


def test_move_task_workflow_with_default_destination(sqs: Any, qname: Callable[[str], str]) -> None:
    # test_move_task_workflow_with_default_destination: listed without DestinationArn
    src, _ = _dlq_pipe(sqs, qname, 2)
    handle = sqs.start_message_move_task(SourceArn=_arn(qname("dlq")))["TaskHandle"]
    assert json.loads(base64.b64decode(handle))["sourceArn"] == _arn(qname("dlq"))
    task = _finished(sqs, _arn(qname("dlq")))
    task.pop("StartedTimestamp")
    assert task == {"ApproximateNumberOfMessagesMoved": 2, "ApproximateNumberOfMessagesToMove": 2,
                    "SourceArn": _arn(qname("dlq")), "Status": "COMPLETED"}
    got = sqs.receive_message(QueueUrl=src, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]
    assert {m["Body"] for m in got} == {"message-0", "message-1"}


def test_move_task_workflow_with_multiple_sources_as_default_destination(
        aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_move_task_workflow_with_multiple_sources_as_default_destination: two queues dead-letter into
    # one; a task without DestinationArn returns each message to its own source, listed without one
    dlq = aws_sqs.create_queue(QueueName=qname("dlq"))["QueueUrl"]
    redrive = {"RedrivePolicy": json.dumps({"deadLetterTargetArn": _arn(qname("dlq")), "maxReceiveCount": 1})}
    src1, src2 = (aws_sqs.create_queue(QueueName=qname(n), Attributes=redrive)["QueueUrl"] for n in ("s1", "s2"))
    for url, tag in ((src1, 1), (src2, 2)):
        aws_sqs.send_message(QueueUrl=url, MessageBody=f"message-{tag}-1")
        aws_sqs.send_message(QueueUrl=url, MessageBody=f"message-{tag}-2")
    for url in (src1, src1, src1, src1, src2, src2, src2, src2):
        aws_sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)
    deadline = time.monotonic() + 10
    while aws_sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"])[
            "Attributes"]["ApproximateNumberOfMessages"] != "4":
        assert time.monotonic() < deadline, "the four messages did not reach the dead-letter queue"
        for url in (src1, src2):
            aws_sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)
    aws_sqs.start_message_move_task(SourceArn=_arn(qname("dlq")))
    task = _finished(aws_sqs, _arn(qname("dlq")))
    task.pop("StartedTimestamp")
    assert task == {"ApproximateNumberOfMessagesMoved": 4, "ApproximateNumberOfMessagesToMove": 4,
                    "SourceArn": _arn(qname("dlq")), "Status": "COMPLETED"}
    for url, tag in ((src1, 1), (src2, 2)):
        got = aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]
        assert {m["Body"] for m in got} == {f"message-{tag}-1", f"message-{tag}-2"}, url
    assert not aws_sqs.receive_message(QueueUrl=dlq, WaitTimeSeconds=1).get("Messages")


def test_move_task_cancel(sqs: Any, qname: Callable[[str], str]) -> None:
    # test_move_task_cancel: a running task lists its handle and what it has to move; cancelled, it keeps both counts
    _dlq_pipe(sqs, qname, 10)
    sqs.create_queue(QueueName=qname("dest"))
    handle = sqs.start_message_move_task(SourceArn=_arn(qname("dlq")), DestinationArn=_arn(qname("dest")),
                                         MaxNumberOfMessagesPerSecond=1)["TaskHandle"]
    time.sleep(1.5)
    running = sqs.list_message_move_tasks(SourceArn=_arn(qname("dlq")))["Results"][0]
    assert (running["Status"], running["TaskHandle"], running["ApproximateNumberOfMessagesToMove"],
            running["MaxNumberOfMessagesPerSecond"]) == ("RUNNING", handle, 10, 1)
    moved = sqs.cancel_message_move_task(TaskHandle=handle)["ApproximateNumberOfMessagesMoved"]
    after = sqs.list_message_move_tasks(SourceArn=_arn(qname("dlq")))["Results"][0]
    assert after["Status"] == "CANCELLED" and "TaskHandle" not in after
    assert after["ApproximateNumberOfMessagesMoved"] == moved
    assert after["ApproximateNumberOfMessagesToMove"] == 10


def test_move_task_errors(sqs: Any, qname: Callable[[str], str]) -> None:
    # test_cancel_with_invalid_task_handle, test_cancel_with_invalid_source_arn_in_task_handle,
    # test_cancel_with_invalid_task_id_in_task_handle, test_source_needs_redrive_policy,
    # test_destination_needs_to_exist, test_start_multiple_move_tasks
    assert _error(lambda: sqs.cancel_message_move_task(TaskHandle="foobared")) == (
        "InvalidParameterValue", "Value for parameter TaskHandle is invalid.", 400)
    gone = _handle("10f57157-fc38-4da9-a113-4de7e12d05dd", _arn(qname("doesnt-exist")))
    assert _error(lambda: sqs.cancel_message_move_task(TaskHandle=gone)) == (
        "ResourceNotFoundException", "The resource that you specified for the SourceArn parameter doesn't exist.", 404)
    sqs.create_queue(QueueName=qname("plain"))
    no_task = _handle("10f57157-fc38-4da9-a113-4de7e12d05aa", _arn(qname("plain")))
    assert _error(lambda: sqs.cancel_message_move_task(TaskHandle=no_task)) == (
        "ResourceNotFoundException", "Task does not exist.", 404)
    sqs.create_queue(QueueName=qname("dest"))
    assert _error(lambda: sqs.start_message_move_task(SourceArn=_arn(qname("plain")),
                                                      DestinationArn=_arn(qname("dest")))) == (
        "InvalidParameterValue", "Source queue must be configured as a Dead Letter Queue.", 400)
    _dlq_pipe(sqs, qname, 3)
    assert _error(lambda: sqs.start_message_move_task(SourceArn=_arn(qname("dlq")),
                                                      DestinationArn=_arn(qname("dest")) + "doesntexist")) == (
        "ResourceNotFoundException", "The resource that you specified for the DestinationArn parameter doesn't exist.",
        404)
    sqs.start_message_move_task(SourceArn=_arn(qname("dlq")), DestinationArn=_arn(qname("dest")),
                                MaxNumberOfMessagesPerSecond=1)
    assert _error(lambda: sqs.start_message_move_task(SourceArn=_arn(qname("dlq")),
                                                      DestinationArn=_arn(qname("dest")))) == (
        "InvalidParameterValue", "There is already a task running. Only one active task is allowed for a source "
                                 "queue arn at a given time.", 400)


def test_dead_letter_keeps_message_id_attributes_and_receive_count(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_dead_letter_queue_message_attributes, test_dead_letter_queue_max_receive_count: in the dead-letter
    # queue a message has its MessageId, attributes and AWSTraceHeader, the source's ARN, and the receive count
    # it had there plus the new receive (2 after one receive in a source with maxReceiveCount 1)
    dlq = aws_sqs.create_queue(QueueName=qname("dlq"))["QueueUrl"]
    src = aws_sqs.create_queue(QueueName=qname("src"), Attributes={"RedrivePolicy": json.dumps(
        {"deadLetterTargetArn": _arn(qname("dlq")), "maxReceiveCount": 1})})["QueueUrl"]
    trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    attributes = {"MyAttribute": {"StringValue": "foobar", "DataType": "String"}}
    sent = aws_sqs.send_message(QueueUrl=src, MessageBody="message-1", MessageAttributes=attributes,
                                MessageSystemAttributes={"AWSTraceHeader": {"StringValue": trace,
                                                                            "DataType": "String"}})
    other = aws_sqs.send_message(QueueUrl=src, MessageBody="message-2")
    before: list[dict[str, Any]] = []
    for _ in range(4):
        before += aws_sqs.receive_message(QueueUrl=src, VisibilityTimeout=0, AttributeNames=["All"],
                                          MessageAttributeNames=["All"]).get("Messages", [])
    assert sorted((m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in before) == [
        ("message-1", "1"), ("message-2", "1")]
    got = aws_sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, WaitTimeSeconds=5, AttributeNames=["All"],
                                  MessageAttributeNames=["All"])["Messages"]
    by_body = {m["Body"]: m for m in got}
    assert set(by_body) == {"message-1", "message-2"}
    assert by_body["message-1"]["MessageId"] == sent["MessageId"]
    assert by_body["message-2"]["MessageId"] == other["MessageId"]
    for m in got:
        assert m["Attributes"]["ApproximateReceiveCount"] == "2"
        assert m["Attributes"]["DeadLetterQueueSourceArn"] == _arn(qname("src"))
    assert by_body["message-1"]["Attributes"]["AWSTraceHeader"] == trace
    assert by_body["message-1"]["MessageAttributes"] == attributes
