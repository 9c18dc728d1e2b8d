"""SQS behaviour real clients rely on, where moto does not model AWS (or not the same way),
checked through boto3 and raw requests against a spoolq gunicorn of this module's own, so
each rejected request can be shown to leave the data directory unchanged.

* VisibilityTimeout 0 (on ReceiveMessage, on the queue, ChangeMessageVisibility to 0)
  makes the message receivable again at once: the "release" idiom.
* ChangeMessageVisibility(+Batch) accepts any handle of the message while it is in
  flight (AWS: the visibility is the message's, not the receipt's), and once its visibility
  ended it hides the message again (AWS, recorded), unless asked for 0: MessageNotInflight.
* DeleteMessage with the most recent handle deletes, even after visibility 0.
* SendMessageBatch to a FIFO queue: a missing MessageGroupId (or MessageDeduplicationId
  without content-based deduplication) fails the whole request.
* GetQueueUrl/CreateQueue with an empty or missing QueueName, ``FifoQueue`` on a standard
  queue's name (``true``: InvalidParameterValue, as AWS answers it).
* Query protocol: CR survives the XML; an empty ``Entries=`` is EmptyBatchRequest.
"""

from __future__ import annotations

import hashlib
import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from botocore.exceptions import ClientError

from tests.conftest import tree
from tests.sqs.harness import SpoolqProcess, client

pytestmark = pytest.mark.timeout(120)

NS = {"q": "http://queue.amazonaws.com/doc/2012-11-05/"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpoolqProcess]:
    root = tmp_path_factory.mktemp("sqs-rely") / "root"
    root.mkdir()
    proc = SpoolqProcess(root, workers=2, threads=16, fsync=True)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def sqs(server: SpoolqProcess) -> Any:
    return client(server.url)


def _error(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as info:
        call()
    return {**info.value.response["Error"], "status": info.value.response["ResponseMetadata"]["HTTPStatusCode"]}


def _stable_tree(root: Path) -> dict[str, int]:
    """Every file of the data directory and its size, without the scratch space (``tmp``) and the
    empty bucket directories that the server's background maintenance may tidy meanwhile."""
    return {k: v for k, v in tree(root).items() if not k.startswith("tmp") and v >= 0}


def _unchanged(server: SpoolqProcess, call: Callable[[], Any]) -> Any:
    before = _stable_tree(server.root)
    result = call()
    assert _stable_tree(server.root) == before, "a rejected request changed the data directory"
    return result


def _json(server: SpoolqProcess, action: str, body: dict[str, Any]) -> requests.Response:
    return requests.post(server.url, data=json.dumps(body), timeout=30, headers={
        "X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": "application/x-amz-json-1.0"})


# ------------------------------------------------------------------ visibility 0


def test_visibility_zero_on_receive_makes_the_message_receivable_at_once(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="vis0-receive")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="again")
    counts = []
    for _ in range(10):  # back to back: no maintenance pass between two receives
        got = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0, MessageSystemAttributeNames=["All"])
        assert [m["Body"] for m in got.get("Messages", [])] == ["again"]
        counts.append(int(got["Messages"][0]["Attributes"]["ApproximateReceiveCount"]))
    assert counts == list(range(1, 11))
    last = got["Messages"][0]["ReceiptHandle"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=last)  # the most recent handle still deletes
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_visibility_zero_queue_attribute_and_change_to_zero(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="vis0-queue", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="q")
    for _ in range(5):
        assert [m["Body"] for m in sqs.receive_message(QueueUrl=url).get("Messages", [])] == ["q"]
    other = sqs.create_queue(QueueName="vis0-change")["QueueUrl"]
    sqs.send_message(QueueUrl=other, MessageBody="c")
    for _ in range(5):
        got = sqs.receive_message(QueueUrl=other, VisibilityTimeout=300)["Messages"]
        assert [m["Body"] for m in got] == ["c"]
        sqs.change_message_visibility(QueueUrl=other, ReceiptHandle=got[0]["ReceiptHandle"], VisibilityTimeout=0)
    got = sqs.receive_message(QueueUrl=other, VisibilityTimeout=300)["Messages"]
    sqs.change_message_visibility_batch(QueueUrl=other, Entries=[
        {"Id": "a", "ReceiptHandle": got[0]["ReceiptHandle"], "VisibilityTimeout": 0}])
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=other).get("Messages", [])] == ["c"]


# ------------------------------------------------------------------ handles of earlier receives


def test_change_visibility_with_a_handle_from_an_earlier_receive(server: SpoolqProcess, sqs: Any) -> None:
    url = sqs.create_queue(QueueName="old-handle")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="m")
    first = sqs.receive_message(QueueUrl=url, VisibilityTimeout=1)["Messages"][0]["ReceiptHandle"]
    time.sleep(1.3)
    second = sqs.receive_message(QueueUrl=url, VisibilityTimeout=300, WaitTimeSeconds=2)["Messages"][0]
    assert second["ReceiptHandle"] != first
    # the earlier handle applies to the message's current receive: here, release it
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first, VisibilityTimeout=0)
    third = sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)["Messages"][0]
    # ... or set a new timeout, through the batch call
    reply = sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
        {"Id": "old", "ReceiptHandle": first, "VisibilityTimeout": 1},
        {"Id": "older", "ReceiptHandle": second["ReceiptHandle"], "VisibilityTimeout": 1}])
    assert [e["Id"] for e in reply["Successful"]] == ["old", "older"] and not reply.get("Failed")
    assert "Messages" not in sqs.receive_message(QueueUrl=url)
    fourth = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=3, VisibilityTimeout=300)["Messages"]
    assert [m["Body"] for m in fourth] == ["m"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=fourth[0]["ReceiptHandle"], VisibilityTimeout=0)
    # not in flight at all (made visible by its current handle): releasing it again is AWS's
    # MessageNotInflight and changes nothing ...
    latest = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)["Messages"][0]["ReceiptHandle"]
    for handle in (first, third["ReceiptHandle"], latest):
        err = _unchanged(server, lambda h=handle: _error(
            lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=h, VisibilityTimeout=0)))
        assert err["Code"] == "AWS.SimpleQueueService.MessageNotInflight", err
    reply = sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
        {"Id": "x", "ReceiptHandle": first, "VisibilityTimeout": 0}])
    assert reply["Failed"][0]["Code"] == "MessageNotInflight"  # batch entries carry the short code
    # ... while a timeout hides it again, with any of its handles (recorded from AWS:
    # test_extend_message_visibility_timeout_set_in_queue)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first, VisibilityTimeout=30)
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_missing_queue_is_reported_before_the_handle(server: SpoolqProcess, sqs: Any) -> None:
    url = sqs.create_queue(QueueName="handles-here")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="h")
    handle = sqs.receive_message(QueueUrl=url, VisibilityTimeout=300)["Messages"][0]["ReceiptHandle"]
    gone = url.replace("handles-here", "handles-gone")
    for receipt in ("garbage", handle):
        calls = [lambda r=receipt: sqs.delete_message(QueueUrl=gone, ReceiptHandle=r),
                 lambda r=receipt: sqs.delete_message_batch(QueueUrl=gone, Entries=[{"Id": "a", "ReceiptHandle": r}]),
                 lambda r=receipt: sqs.change_message_visibility(QueueUrl=gone, ReceiptHandle=r,
                                                                 VisibilityTimeout=0),
                 lambda r=receipt: sqs.change_message_visibility_batch(QueueUrl=gone, Entries=[
                     {"Id": "a", "ReceiptHandle": r, "VisibilityTimeout": 0}])]
        for call in calls:
            err = _unchanged(server, lambda c=call: _error(c))
            assert (err["Code"], err["status"]) == ("AWS.SimpleQueueService.NonExistentQueue", 400), err
    assert "Messages" not in sqs.receive_message(QueueUrl=url)  # still in flight: nothing touched it


# ------------------------------------------------------------------ FIFO batches


def test_fifo_batch_without_group_or_dedup_id_fails_whole(server: SpoolqProcess, sqs: Any) -> None:
    url = sqs.create_queue(QueueName="whole.fifo", Attributes={"FifoQueue": "true",
                                                               "MaximumMessageSize": "1024"})["QueueUrl"]
    good = {"Id": "good", "MessageBody": "x", "MessageGroupId": "g", "MessageDeduplicationId": "d1"}
    err = _unchanged(server, lambda: _error(lambda: sqs.send_message_batch(QueueUrl=url, Entries=[
        good, {"Id": "nogroup", "MessageBody": "y", "MessageDeduplicationId": "d2"}])))
    assert (err["Code"], err["Message"], err["status"]) == (
        "InvalidParameterValue", "The request must contain the parameter MessageGroupId.", 400)
    err = _unchanged(server, lambda: _error(lambda: sqs.send_message_batch(QueueUrl=url, Entries=[
        good, {"Id": "nodedup", "MessageBody": "y", "MessageGroupId": "g"}])))
    assert (err["Code"], err["status"]) == ("InvalidParameterValue", 400)
    assert "ContentBasedDeduplication" in err["Message"]
    # an oversized entry stays a per-entry failure
    reply = sqs.send_message_batch(QueueUrl=url, Entries=[good, {
        "Id": "big", "MessageBody": "z" * 2000, "MessageGroupId": "g", "MessageDeduplicationId": "d3"}])
    assert [e["Id"] for e in reply["Successful"]] == ["good"]
    assert [(e["Id"], e["Code"]) for e in reply["Failed"]] == [("big", "InvalidParameterValue")]


# ------------------------------------------------------------------ names


def test_empty_or_missing_queue_name(server: SpoolqProcess, sqs: Any) -> None:
    for call in (lambda: sqs.get_queue_url(QueueName=""), lambda: sqs.create_queue(QueueName="")):
        err = _unchanged(server, lambda c=call: _error(c))
        assert (err["Code"], err["status"]) == ("InvalidParameterValue", 400), err
    for action in ("GetQueueUrl", "CreateQueue"):
        reply = _unchanged(server, lambda a=action: _json(server, a, {}))
        assert reply.status_code == 400
        assert reply.headers["x-amzn-query-error"] == "InvalidParameterValue;Sender", reply.text


def test_fifo_queue_attribute_on_a_standard_name(server: SpoolqProcess, sqs: Any) -> None:
    url = sqs.create_queue(QueueName="plain")["QueueUrl"]
    # FifoQueue=true on a name without .fifo is AWS's InvalidParameterValue (recorded:
    # test_fifo_queue_requires_suffix); any other use is InvalidAttributeName
    err = _unchanged(server, lambda: _error(
        lambda: sqs.create_queue(QueueName="plain3", Attributes={"FifoQueue": "true"})))
    assert (err["Code"], err["status"]) == ("InvalidParameterValue", 400), err
    calls = [lambda: sqs.create_queue(QueueName="plain2", Attributes={"FifoQueue": "false"}),
             lambda: sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": "false"}),
             lambda: sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": "true"})]
    for call in calls:
        err = _unchanged(server, lambda c=call: _error(c))
        assert (err["Code"], err["Message"], err["status"]) == (
            "InvalidAttributeName", "Unknown Attribute FifoQueue.", 400), err


# ------------------------------------------------------------------ query protocol


def _query(server: SpoolqProcess, **params: str) -> requests.Response:
    return requests.post(server.url, data=params, timeout=30)


def test_query_protocol_keeps_carriage_returns(server: SpoolqProcess, sqs: Any) -> None:
    url = sqs.create_queue(QueueName="cr")["QueueUrl"]
    body = "line one\r\nline two\rend"
    sent = ET.fromstring(_query(server, Action="SendMessage", QueueUrl=url, MessageBody=body, **{
        "MessageAttribute.1.Name": "a", "MessageAttribute.1.Value.DataType": "String",
        "MessageAttribute.1.Value.StringValue": "x\r\ny"}).content)
    assert sent.findtext("q:SendMessageResult/q:MD5OfMessageBody", namespaces=NS) == \
        hashlib.md5(body.encode()).hexdigest()
    root = ET.fromstring(_query(server, Action="ReceiveMessage", QueueUrl=url, **{
        "MessageAttributeName.1": "All"}).content)
    msg = root.find("q:ReceiveMessageResult/q:Message", NS)
    assert msg is not None
    assert msg.findtext("q:Body", namespaces=NS) == body
    assert msg.findtext("q:MD5OfBody", namespaces=NS) == hashlib.md5(body.encode()).hexdigest()
    assert msg.findtext("q:MessageAttribute/q:Value/q:StringValue", namespaces=NS) == "x\r\ny"


def test_query_protocol_empty_entries(server: SpoolqProcess, sqs: Any) -> None:
    url = sqs.create_queue(QueueName="empty-entries")["QueueUrl"]
    for action, member in (("SendMessageBatch", "SendMessageBatchRequestEntry"),
                           ("DeleteMessageBatch", "DeleteMessageBatchRequestEntry"),
                           ("ChangeMessageVisibilityBatch", "ChangeMessageVisibilityBatchRequestEntry")):
        for key in ("Entries", member):
            reply = _unchanged(server, lambda a=action, k=key: _query(server, Action=a, QueueUrl=url, **{k: ""}))
            assert reply.status_code == 400, reply.text
            code = ET.fromstring(reply.content).findtext("q:Error/q:Code", namespaces=NS)
            assert code == "AWS.SimpleQueueService.EmptyBatchRequest", (action, key, reply.text)
