"""SQS answers checked against answers recorded from real AWS, through real boto3 in both
protocols (``aws_sqs``: a JSON client and a Query client) against the session's gunicorn.

Every expected value below comes from a public recording made against AWS: LocalStack's
AWS-validated snapshot tests (``tests/aws/services/sqs/test_sqs.py`` and its
``test_sqs.snapshot.json``, each recording dated there). Each test names the recorded test it
follows. Nothing here is written from memory of how AWS answers.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests
from botocore.exceptions import ClientError

from tests.sqs.harness import ACCOUNT

pytestmark = pytest.mark.timeout(120)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _protocol(sqs: Any) -> str:
    return str(sqs.meta.service_model.protocol)


def _error(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as info:
        call()
    err = dict(info.value.response["Error"])
    err["status"] = info.value.response["ResponseMetadata"]["HTTPStatusCode"]
    err["request_id"] = info.value.response["ResponseMetadata"]["HTTPHeaders"].get("x-amzn-requestid", "")
    return err


def _expect(err: dict[str, Any], sqs: Any, code: str, json_type: str, message: str, status: int = 400) -> None:
    """The recorded error: JSON carries the shape name as QueryErrorCode, Query has none."""
    assert (err["Code"], err["Message"], err["status"]) == (code, message, status), err
    if _protocol(sqs) == "json":
        assert err["QueryErrorCode"] == json_type, err
    assert UUID.match(err["request_id"]), err  # every answer, errors too, carries a request id


def _fifo(sqs: Any, name: str, **attributes: str) -> str:
    return str(sqs.create_queue(QueueName=f"{name}.fifo", Attributes={"FifoQueue": "true", **attributes})["QueueUrl"])


# ---------------------------------------------------------------- ids


def test_message_id_is_a_uuid_and_the_same_on_receive(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_message_with_attributes_should_be_enqueued; every recording shows MessageId as <uuid:n>
    url = aws_sqs.create_queue(QueueName=qname())["QueueUrl"]
    attributes = {"timestamp": {"DataType": "Number", "StringValue": "1614717034367"}}
    sent = aws_sqs.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=attributes)
    batch = aws_sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "b", "MessageBody": "b"}])["Successful"]
    got = aws_sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"], MaxNumberOfMessages=10,
                                  WaitTimeSeconds=1)["Messages"]
    assert UUID.match(sent["MessageId"]) and UUID.match(batch[0]["MessageId"])
    ids = {m["Body"]: m["MessageId"] for m in got}
    assert ids == {"test": sent["MessageId"], "b": batch[0]["MessageId"]}
    assert [m["MessageAttributes"] for m in got if m["Body"] == "test"] == [attributes]


def test_sender_id_is_the_callers_account(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_receive_message_attribute_names_filters: SenderId is the caller's id (one per caller), not the
    # access key; with any key in open mode the caller is the account
    url = aws_sqs.create_queue(QueueName=qname())["QueueUrl"]
    aws_sqs.send_message(QueueUrl=url, MessageBody="x")
    got = aws_sqs.receive_message(QueueUrl=url, AttributeNames=["SenderId"], WaitTimeSeconds=1)["Messages"]
    assert got[0]["Attributes"] == {"SenderId": ACCOUNT}


def test_batch_reply_omits_an_empty_failed_list(sqs: Any, qname: Callable[[str], str]) -> None:
    # test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size[sqs]: no "Failed" key
    url = sqs.create_queue(QueueName=qname())["QueueUrl"]
    reply = sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "a"}])
    assert "Failed" not in reply and len(reply["Successful"]) == 1
    handle = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"][0]["ReceiptHandle"]
    reply = sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
        {"Id": "c", "ReceiptHandle": handle, "VisibilityTimeout": 5}])
    assert "Failed" not in reply
    assert "Failed" not in sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": "d", "ReceiptHandle": handle}])


# ---------------------------------------------------------------- error shapes and texts


def test_non_existent_queue(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_non_existent_queue: the Query protocol words it "for this wsdl version"
    url = aws_sqs.create_queue(QueueName=qname())["QueueUrl"]
    aws_sqs.delete_queue(QueueUrl=url)
    text = "The specified queue does not exist." if _protocol(aws_sqs) == "json" else \
        "The specified queue does not exist for this wsdl version."
    for call in (lambda: aws_sqs.get_queue_attributes(QueueUrl=url), lambda: aws_sqs.get_queue_url(QueueName=qname())):
        _expect(_error(call), aws_sqs, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", text)


def test_parameter_errors_name_the_exception_shape(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_send_receive_max_number_of_messages, test_send_empty_message, test_send_receive_wait_time_seconds
    url = aws_sqs.create_queue(QueueName=qname())["QueueUrl"]
    _expect(_error(lambda: aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=11)), aws_sqs,
            "InvalidParameterValue", "InvalidParameterValueException",
            "Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.")
    _expect(_error(lambda: aws_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=21)), aws_sqs,
            "InvalidParameterValue", "InvalidParameterValueException",
            "Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.")
    _expect(_error(lambda: aws_sqs.send_message(QueueUrl=url, MessageBody="")), aws_sqs,
            "MissingParameter", "MissingRequiredParameterException",
            "The request must contain the parameter MessageBody.")


def test_queue_exists_with_a_different_attribute(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_create_queue_with_different_attributes_raises_exception
    name = qname()
    url = aws_sqs.create_queue(QueueName=name, Attributes={"ReceiveMessageWaitTimeSeconds": "1",
                                                          "DelaySeconds": "1"})["QueueUrl"]
    assert aws_sqs.create_queue(QueueName=name)["QueueUrl"] == url
    assert aws_sqs.create_queue(QueueName=name, Attributes={"DelaySeconds": "1"})["QueueUrl"] == url
    err = _error(lambda: aws_sqs.create_queue(QueueName=name, Attributes={"ReceiveMessageWaitTimeSeconds": "1",
                                                                         "DelaySeconds": "2"}))
    _expect(err, aws_sqs, "QueueAlreadyExists", "QueueNameExists",
            "A queue already exists with the same name and a different value for attribute DelaySeconds")


def test_fifo_attributes_on_a_standard_queue(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_create_standard_queue_with_fifo_attribute_raises_error, test_fifo_queue_requires_suffix
    name = qname()
    for attribute, value, message in (
            ("FifoQueue", "false", "Unknown Attribute FifoQueue."),
            ("ContentBasedDeduplication", "false", "Unknown Attribute ContentBasedDeduplication."),
            ("DeduplicationScope", "queue", "You can specify the DeduplicationScope only when FifoQueue is set to true."),
            ("FifoThroughputLimit", "perQueue",
             "You can specify the FifoThroughputLimit only when FifoQueue is set to true.")):
        err = _error(lambda a=attribute, v=value: aws_sqs.create_queue(QueueName=name, Attributes={a: v}))
        _expect(err, aws_sqs, "InvalidAttributeName", "InvalidAttributeName", message)
    err = _error(lambda: aws_sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true"}))
    assert (err["Code"], err["status"]) == ("InvalidParameterValue", 400), err


def test_message_attribute_names_and_values(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_send_message_with_invalid_string_attributes, test_invalid_string_attributes_cause_invalid_parameter_value_error,
    # test_send_message_with_empty_string_attribute
    url = aws_sqs.create_queue(QueueName=qname())["QueueUrl"]
    valid = {"attr.1øßä": {"StringValue": "Valida", "DataType": "String"}}
    aws_sqs.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=valid)
    got = aws_sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"], WaitTimeSeconds=1)["Messages"]
    assert got[0]["MessageAttributes"] == valid
    bad_value = {"attr1": {"StringValue": f"Invalid-{chr(8)},{chr(11)}", "DataType": "String"}}
    err = _error(lambda: aws_sqs.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=bad_value))
    assert err["Code"] == "InvalidParameterValue", err
    invalid_names = [f"{p}-Invalid-attr" for p in ("aWs.", "AMAZON.", ".")] + \
        [f"Invalid-{c}-attr" for c in ("!", '"', "§", "(", "?")] + ["L" * 257, "Invalid."]
    for name in invalid_names:
        attribute = {name: {"StringValue": "Valid", "DataType": "String"}}
        err = _error(lambda a=attribute: aws_sqs.send_message(QueueUrl=url, MessageBody="t", MessageAttributes=a))
        assert "Invalid" in f"{err['Code']} {err['Message']}", (name, err)
    for data_type in ("Invalid", f"Number.{'L' * 256}"):
        attribute = {"Attribute_name": {"StringValue": "Valid", "DataType": data_type}}
        err = _error(lambda a=attribute: aws_sqs.send_message(QueueUrl=url, MessageBody="t", MessageAttributes=a))
        assert "Invalid" in f"{err['Code']} {err['Message']}", (data_type, err)
    empty = {"ErrorDetails": {"StringValue": "", "DataType": "String"}}
    _expect(_error(lambda: aws_sqs.send_message(QueueUrl=url, MessageBody="test", MessageAttributes=empty)), aws_sqs,
            "InvalidParameterValue", "InvalidParameterValueException",
            "Message (user) attribute 'ErrorDetails' must contain a non-empty value of type 'String'.")


def test_fifo_batch_without_group_id(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_send_batch_missing_message_group_id_for_fifo_queue: the whole batch, InvalidParameterValue
    # (not SendMessage's MissingParameter)
    url = _fifo(aws_sqs, qname(), ContentBasedDeduplication="true")
    err = _error(lambda: aws_sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "a"}]))
    _expect(err, aws_sqs, "InvalidParameterValue", "InvalidParameterValueException",
            "The request must contain the parameter MessageGroupId.")
    # test_posting_to_fifo_requires_deduplicationid_group_id: SendMessage's answer
    _expect(_error(lambda: aws_sqs.send_message(QueueUrl=url, MessageBody="a")), aws_sqs,
            "MissingParameter", "MissingRequiredParameterException",
            "The request must contain the parameter MessageGroupId.")


def test_batch_entry_too_long(sqs: Any, qname: Callable[[str], str]) -> None:
    # test_send_batch_message_size: a batch entry words the limit differently from SendMessage
    url = sqs.create_queue(QueueName=qname(), Attributes={"MaximumMessageSize": "1024"})["QueueUrl"]
    reply = sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "ok", "MessageBody": "a" * 1024},
                                                          {"Id": "big", "MessageBody": "a" * 1025}])
    assert reply["Failed"] == [{"Id": "big", "SenderFault": True, "Code": "InvalidParameterValue",
                                "Message": "One or more parameters cannot be validated. Reason: Message must be "
                                           "shorter than 1024 bytes."}]
    assert [s["Id"] for s in reply["Successful"]] == ["ok"]


def test_permission_policy_version_and_missing_label(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_sqs_permission_lifecycle
    name = qname()
    url = aws_sqs.create_queue(QueueName=name)["QueueUrl"]
    aws_sqs.add_permission(QueueUrl=url, AWSAccountIds=[ACCOUNT], Actions=["ReceiveMessage"], Label="perm")
    policy = json.loads(aws_sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"]["Policy"])
    arn = f"arn:aws:sqs:us-east-1:{ACCOUNT}:{name}"
    assert policy == {"Version": "2008-10-17", "Id": f"{arn}/SQSDefaultPolicy", "Statement": [
        {"Sid": "perm", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
         "Action": "SQS:ReceiveMessage", "Resource": arn}]}
    aws_sqs.remove_permission(QueueUrl=url, Label="perm")
    assert "Attributes" not in aws_sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])
    _expect(_error(lambda: aws_sqs.remove_permission(QueueUrl=url, Label="perm")), aws_sqs,
            "InvalidParameterValue", "InvalidParameterValueException",
            "Value perm for parameter Label is invalid. Reason: can't find label.")


# ---------------------------------------------------------------- visibility and deletes


def test_change_visibility_after_it_expired_hides_the_message_again(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_change_message_visibility_after_visibility_timeout_expiration (200),
    # test_extend_message_visibility_timeout_set_in_queue (the message stays hidden)
    url = aws_sqs.create_queue(QueueName=qname(), Attributes={"VisibilityTimeout": "1"})["QueueUrl"]
    aws_sqs.send_message(QueueUrl=url, MessageBody="test")
    handle = aws_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"][0]["ReceiptHandle"]
    for _ in range(3):
        time.sleep(1.2)
        aws_sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=2)
        assert aws_sqs.receive_message(QueueUrl=url).get("Messages", []) == []
    got = aws_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"]
    assert [m["Body"] for m in got] == ["test"]


def test_change_visibility_of_a_deleted_message(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_change_visibility_on_deleted_message_raises_invalid_parameter_value
    url = aws_sqs.create_queue(QueueName=qname())["QueueUrl"]
    aws_sqs.send_message(QueueUrl=url, MessageBody="foo")
    handle = aws_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"][0]["ReceiptHandle"]
    aws_sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=42)
    aws_sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)
    err = _error(lambda: aws_sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=42))
    _expect(err, aws_sqs, "InvalidParameterValue", "InvalidParameterValueException",
            f"Value {handle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not "
            "available for visibility timeout change.")
    # test_delete_message_with_deleted_receipt_handle: deleting again is no error (standard queue)
    aws_sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)


def test_fifo_delete_with_an_expired_handle(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_delete_after_visibility_timeout, test_fifo_delete_after_visibility_timeout_extended
    url = _fifo(aws_sqs, qname(), VisibilityTimeout="1", ContentBasedDeduplication="true")
    aws_sqs.send_message(QueueUrl=url, MessageBody="foobar", MessageGroupId="1")
    handle = aws_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"][0]["ReceiptHandle"]
    time.sleep(1.1)
    _expect(_error(lambda: aws_sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)), aws_sqs,
            "InvalidParameterValue", "InvalidParameterValueException",
            f"Value {handle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.")
    aws_sqs.send_message(QueueUrl=url, MessageBody="second", MessageGroupId="2")
    got = aws_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, MaxNumberOfMessages=10)["Messages"]
    extended = next(m["ReceiptHandle"] for m in got if m["Body"] == "second")
    aws_sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=extended, VisibilityTimeout=5)
    time.sleep(1.5)
    aws_sqs.delete_message(QueueUrl=url, ReceiptHandle=extended)  # within the extended visibility: deletes
    time.sleep(4)
    assert [m["Body"] for m in aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                                        WaitTimeSeconds=2).get("Messages", [])] == ["foobar"]


def test_fifo_send_with_delay_zero_takes_the_queue_delay(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_queue_send_message_with_zero_delay_defaults_to_queue_delay
    url = _fifo(aws_sqs, qname(), ContentBasedDeduplication="true", DelaySeconds="2")
    aws_sqs.send_message(QueueUrl=url, MessageBody="message-1", MessageGroupId="1", DelaySeconds=0)
    assert aws_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []
    time.sleep(2)
    got = aws_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=2)["Messages"]
    assert [m["Body"] for m in got] == ["message-1"]
    # test_fifo_queue_send_message_with_delay_seconds_fails: any other per-message delay is refused
    _expect(_error(lambda: aws_sqs.send_message(QueueUrl=url, MessageBody="m", MessageGroupId="1", DelaySeconds=2)),
            aws_sqs, "InvalidParameterValue", "InvalidParameterValueException",
            "Value 2 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not "
            "valid for this queue type.")


# ---------------------------------------------------------------- attributes of messages


def test_aws_trace_header_from_the_xray_header(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_aws_trace_header_propagation
    trace = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1"

    def add_xray_header(request: Any, **_kwargs: Any) -> None:
        request.headers["X-Amzn-Trace-Id"] = trace

    url = aws_sqs.create_queue(QueueName=qname())["QueueUrl"]
    aws_sqs.meta.events.register("before-send.sqs.SendMessage", add_xray_header)
    aws_sqs.send_message(QueueUrl=url, MessageBody="test",
                         MessageAttributes={"timestamp": {"StringValue": "1493147359900", "DataType": "Number"}})
    got = aws_sqs.receive_message(QueueUrl=url, AttributeNames=["SentTimestamp", "AWSTraceHeader"],
                                  MessageAttributeNames=["All"], WaitTimeSeconds=2)["Messages"][0]
    assert got["Attributes"]["AWSTraceHeader"] == trace
    assert set(got["Attributes"]) == {"SentTimestamp", "AWSTraceHeader"}
    assert got["MD5OfMessageAttributes"] == "235c5c510d26fb653d073faed50ae77c"


def test_message_attribute_name_filters(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_receive_message_message_attribute_names_filters
    url = aws_sqs.create_queue(QueueName=qname(), Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    attributes = {"Help.Me": {"DataType": "String", "StringValue": "Me"},
                  "Hello": {"DataType": "String", "StringValue": "There"},
                  "General": {"DataType": "String", "StringValue": "Kenobi"}}
    sent = aws_sqs.send_message(QueueUrl=url, MessageBody="msg", MessageAttributes=attributes)
    assert sent["MD5OfMessageAttributes"] == "4c360f3fdafd970e05fae2f149d997f5"

    def names(filters: list[str]) -> set[str]:
        got = aws_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, MessageAttributeNames=filters)["Messages"][0]
        return set(got.get("MessageAttributes", {}))

    assert names([]) == set()
    for every in (["All"], ["*"], [".*"]):
        assert names(every) == set(attributes), every
    assert names(["Foo", "Help"]) == set()
    assert names(["Hello", "General"]) == {"Hello", "General"}
    assert names(["Foo", "Hello"]) == {"Hello"}
    assert names(["Hel.*"]) == {"Hello", "Help.Me"}
    assert names(["AWS."]) == set()


def test_an_empty_name_list_in_the_query_form(spoolq_url: str, sqs: Any, qname: Callable[[str], str]) -> None:
    # test_receive_message_attribute_names_filters[sqs_query] (and the message- and system-attribute
    # filters): a Query client sends an empty list as the bare member, ``MessageAttributeNames=`` as
    # the SDKs' Query model names it or ``MessageAttributeName=`` flattened; AWS answers as for no list
    url = sqs.create_queue(QueueName=qname(), Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="msg",
                     MessageAttributes={"Foo": {"DataType": "String", "StringValue": "Bar"}})
    for empty in ("MessageAttributeNames", "MessageAttributeName", "MessageSystemAttributeNames"):
        form = {"Action": "ReceiveMessage", "Version": "2012-11-05", "QueueUrl": url, "WaitTimeSeconds": "2",
                "AttributeName.1": "All", empty: ""}
        reply = requests.post(spoolq_url, data=form, timeout=30)
        assert reply.status_code == 200, (empty, reply.text)
        assert "<Body>msg</Body>" in reply.text and "<MessageAttribute>" not in reply.text, reply.text
        assert "<Name>ApproximateReceiveCount</Name>" in reply.text and "<Name>SenderId</Name>" in reply.text
    form = {"Action": "ReceiveMessage", "QueueUrl": url, "WaitTimeSeconds": "2", "AttributeNames": "",
            "MessageAttributeName.1": "All"}
    reply = requests.post(spoolq_url, data=form, timeout=30)
    assert reply.status_code == 200 and "<Name>Foo</Name>" in reply.text and "<Attribute>" not in reply.text


def test_delete_with_an_illegal_receipt_handle(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_delete_message_with_illegal_receipt_handle
    url = aws_sqs.create_queue(QueueName=qname())["QueueUrl"]
    err = _error(lambda: aws_sqs.delete_message(QueueUrl=url, ReceiptHandle="garbage"))
    assert (err["Code"], err["Message"], err["status"]) == (
        "ReceiptHandleIsInvalid", 'The input receipt handle "garbage" is not a valid receipt handle.', 400), err


# ---------------------------------------------------------------- the request id of every answer


def test_every_answer_carries_a_request_id(spoolq_url: str) -> None:
    # AWS answers every request, errors included, with x-amzn-RequestId
    seen = set()
    for reply in (requests.post(spoolq_url, data={"Action": "NoSuchAction"}, timeout=10),
                  requests.post(spoolq_url, headers={"X-Amz-Target": "AmazonSQS.ListQueues",
                                                     "Content-Type": "application/x-amz-json-1.0"}, data="{", timeout=10),
                  requests.put(spoolq_url, timeout=10),
                  requests.post(spoolq_url, data={"Action": "ListQueues"}, timeout=10)):
        request_id = reply.headers.get("x-amzn-RequestId", "")
        assert uuid.UUID(request_id) and request_id not in seen, (reply.status_code, reply.headers)
        seen.add(request_id)


# ---------------------------------------------------------------- FIFO deduplication scope


def test_deduplication_keeps_the_scope_the_queue_was_created_with(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_fifo_change_to_high_throughput_after_creation, test_fifo_change_to_regular_throughput_after_creation:
    # switching DeduplicationScope later changes the attribute, not how AWS deduplicates
    def bodies(url: str, **kwargs: Any) -> list[str]:
        got = aws_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1, **kwargs).get("Messages", [])
        for m in got:
            if not kwargs:
                aws_sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        return [m["Body"] for m in got]

    queue = _fifo(aws_sqs, qname("q"), ContentBasedDeduplication="false", DeduplicationScope="queue")
    aws_sqs.send_message(QueueUrl=queue, MessageBody="Test1", MessageGroupId="group1", MessageDeduplicationId="same")
    assert bodies(queue) == ["Test1"]
    aws_sqs.send_message(QueueUrl=queue, MessageBody="Test2", MessageGroupId="group2", MessageDeduplicationId="same")
    assert bodies(queue, VisibilityTimeout=0) == []
    aws_sqs.set_queue_attributes(QueueUrl=queue, Attributes={"DeduplicationScope": "messageGroup",
                                                             "FifoThroughputLimit": "perMessageGroupId"})
    shown = aws_sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
    assert (shown["DeduplicationScope"], shown["FifoThroughputLimit"]) == ("messageGroup", "perMessageGroupId")
    aws_sqs.send_message(QueueUrl=queue, MessageBody="Test3", MessageGroupId="group3", MessageDeduplicationId="same")
    assert bodies(queue) == []
    aws_sqs.send_message(QueueUrl=queue, MessageBody="Test4", MessageGroupId="group4", MessageDeduplicationId="d2")
    assert bodies(queue) == ["Test4"]
    aws_sqs.send_message(QueueUrl=queue, MessageBody="Test5", MessageGroupId="group5", MessageDeduplicationId="d2")
    assert bodies(queue) == []

    group = _fifo(aws_sqs, qname("g"), ContentBasedDeduplication="false", DeduplicationScope="messageGroup",
                  FifoThroughputLimit="perMessageGroupId")
    aws_sqs.send_message(QueueUrl=group, MessageBody="Test1", MessageGroupId="group1", MessageDeduplicationId="same")
    assert bodies(group) == ["Test1"]
    aws_sqs.send_message(QueueUrl=group, MessageBody="Test2", MessageGroupId="group2", MessageDeduplicationId="same")
    assert bodies(group) == ["Test2"]
    aws_sqs.set_queue_attributes(QueueUrl=group, Attributes={"DeduplicationScope": "queue",
                                                             "FifoThroughputLimit": "perQueue"})
    aws_sqs.send_message(QueueUrl=group, MessageBody="Test3", MessageGroupId="group3", MessageDeduplicationId="same")
    assert bodies(group) == ["Test3"]


def test_fifo_queue_attribute_on_set(aws_sqs: Any, qname: Callable[[str], str]) -> None:
    # test_set_unsupported_attribute_standard, test_set_unsupported_attribute_fifo
    url = aws_sqs.create_queue(QueueName=qname())["QueueUrl"]
    for value in ("true", "false"):
        _expect(_error(lambda v=value: aws_sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": v})),
                aws_sqs, "InvalidAttributeName", "InvalidAttributeName", "Unknown Attribute FifoQueue.")
    fifo = _fifo(aws_sqs, qname("f"))
    aws_sqs.set_queue_attributes(QueueUrl=fifo, Attributes={"FifoQueue": "true"})
    _expect(_error(lambda: aws_sqs.set_queue_attributes(QueueUrl=fifo, Attributes={"FifoQueue": "false"})), aws_sqs,
            "InvalidAttributeValue", "InvalidAttributeValue",
            "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.")
