"""Unit tests of the SQS door without a server: MD5s, Query folding, XML, errors, SigV4, names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from flask import Blueprint, Flask

from spoolq.access.auth import Authenticator
from spoolq.http.context import Services
from spoolq.http.sqs import create_blueprint
from spoolq.http.sqs import queues as sqs_queues
from spoolq.http.sqs.context import Caller, store_name_of_arn, unwrap_receipt, wrap_receipt
from spoolq.http.sqs.digests import md5_of_attributes, md5_of_body
from spoolq.http.sqs.errors import ReceiptHandleIsInvalid
from spoolq.http.sqs.wire import parse_query
from spoolq.observability.metrics import Metrics
from spoolq.settings.server import Settings
from spoolq.store import FileStore
from spoolq.store.model import OutgoingMessage, QueueCounts

pytestmark = pytest.mark.timeout(60)


def test_md5_reference_values() -> None:
    assert md5_of_body("hello world") == "5eb63bbbe01eeed093cb22bb8f5acdc3"
    attrs = {"s": {"DataType": "String", "StringValue": "v"}, "n": {"DataType": "Number", "StringValue": "42"},
             "b": {"DataType": "Binary", "BinaryValue": "AAE="}}
    assert md5_of_attributes(attrs) == "629b7b56f4a59c3a266eb70391d1d690"
    assert md5_of_attributes({"k": {"DataType": "String", "StringValue": "x"}}) == "a45daa70926828a2f0a1db3418e6feb4"


def test_query_parameters_fold_into_json_shapes() -> None:
    folded = parse_query({
        "QueueUrl": "u", "MaxNumberOfMessages": "5", "AttributeName.2": "B", "AttributeName.1": "A",
        "Attribute.1.Name": "VisibilityTimeout", "Attribute.1.Value": "9", "Tag.1.Key": "t", "Tag.1.Value": "v",
        "SendMessageBatchRequestEntry.1.Id": "a", "SendMessageBatchRequestEntry.1.MessageBody": "x",
        "SendMessageBatchRequestEntry.1.MessageAttribute.1.Name": "k",
        "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType": "String",
        "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue": "s",
        "SendMessageBatchRequestEntry.2.Id": "b", "SendMessageBatchRequestEntry.2.MessageBody": "y"})
    assert folded["MaxNumberOfMessages"] == 5
    assert folded["AttributeNames"] == ["A", "B"]
    assert folded["Attributes"] == {"VisibilityTimeout": "9"}
    assert folded["Tags"] == {"t": "v"}
    assert folded["Entries"] == [
        {"Id": "a", "MessageBody": "x", "MessageAttributes": {"k": {"DataType": "String", "StringValue": "s"}}},
        {"Id": "b", "MessageBody": "y"}]


def test_receipt_handles_belong_to_their_queue() -> None:
    handle = wrap_receipt("sqs:123456789012:us-east-1:a", "0:abc~1", 1_700_000_000.5)
    assert unwrap_receipt("sqs:123456789012:us-east-1:a", handle) == ("0:abc~1", 1_700_000_000.5)
    for queue, bad in (("sqs:123456789012:us-east-1:b", handle), ("sqs:123456789012:us-east-1:a", "garbage!")):
        with pytest.raises(ReceiptHandleIsInvalid):
            unwrap_receipt(queue, bad)


def test_names_urls_and_arns() -> None:
    caller = Caller("123456789012", "eu-west-1", None, "http://h:1")
    assert caller.queue_from_url("https://queue.amazonaws.com/123456789012/q.fifo") == \
        "sqs:123456789012:eu-west-1:q.fifo"
    assert caller.queue_from_url("q") == "sqs:123456789012:eu-west-1:q"
    assert store_name_of_arn("arn:aws:sqs:us-east-2:210987654321:x") == "sqs:210987654321:us-east-2:x"
    assert store_name_of_arn("arn:aws:sns:us-east-2:210987654321:x") is None


def _blueprint(settings: Settings, store: FileStore) -> Blueprint:
    """The SQS door alone over ``store``, as create_app wires it."""
    return create_blueprint(Services(settings, Authenticator.from_settings(settings), Metrics(), store))


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    config = tmp_path / "c.yaml"
    config.write_text("sqs_credentials:\n  AKID: secret\n", encoding="utf-8")
    store = FileStore(tmp_path / "root", fsync=False)
    app = Flask("t")
    app.register_blueprint(_blueprint(Settings(root=tmp_path / "root", config=config), store))
    return app


def _signed(action: str, body: dict[str, Any], secret: str = "secret") -> tuple[bytes, dict[str, str]]:
    data = json.dumps(body).encode()
    req = AWSRequest("POST", "http://localhost/", data=data, headers={
        "X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": "application/x-amz-json-1.0"})
    SigV4Auth(Credentials("AKID", secret), "sqs", "eu-central-1").add_auth(req)
    return data, dict(req.headers.items())


def test_sigv4_accepts_botocore_signatures_and_rejects_others(app: Flask) -> None:
    client = app.test_client()
    data, headers = _signed("CreateQueue", {"QueueName": "q"})
    reply = client.post("/", data=data, headers=headers)
    assert reply.status_code == 200, reply.data
    # signed for eu-central-1, not the default region: the URL names the region
    assert json.loads(reply.data) == {"QueueUrl": "http://localhost/eu-central-1/123456789012/q"}
    data, headers = _signed("ListQueues", {}, secret="nope")
    reply = client.post("/", data=data, headers=headers)
    assert reply.status_code == 403
    assert reply.headers["x-amzn-query-error"] == "SignatureDoesNotMatch;Sender"
    reply = client.post("/", data=b"{}", headers={"X-Amz-Target": "AmazonSQS.ListQueues"})
    assert reply.status_code == 403 and json.loads(reply.data)["__type"].endswith("MissingAuthenticationToken")


def test_error_body_and_header(tmp_path: Path) -> None:
    app = Flask("t")
    app.register_blueprint(_blueprint(Settings(root=tmp_path), FileStore(tmp_path / "r", fsync=False)))
    reply = app.test_client().post("/", data=json.dumps({"QueueName": "missing"}),
                                   headers={"X-Amz-Target": "AmazonSQS.GetQueueUrl",
                                            "Content-Type": "application/x-amz-json-1.0"})
    assert reply.status_code == 400
    assert json.loads(reply.data) == {"__type": "com.amazonaws.sqs#QueueDoesNotExist",
                          "message": "The specified queue does not exist."}
    assert reply.headers["x-amzn-query-error"] == "AWS.SimpleQueueService.NonExistentQueue;Sender"


def test_queue_attributes_at_depth_count_what_they_must_and_estimate_the_rest(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An exact count lists every message file: seconds for millions. ApproximateNumberOfMessages
    reads up to a bound and estimates the rest from the buckets it read."""
    monkeypatch.setattr(sqs_queues, "APPROXIMATE_COUNT_LIMIT", 1000, raising=False)  # 10,000 served: shorter
    sent = 0
    store = FileStore(tmp_path / "root", fsync=False, clock=lambda: 1_700_000_000 + sent // 100)
    app = Flask("t")
    app.register_blueprint(_blueprint(Settings(root=tmp_path / "root"), store))
    client = app.test_client()
    headers = {"Content-Type": "application/x-amz-json-1.0"}

    def call(action: str, body: dict[str, Any]) -> Any:
        reply = client.post("/", data=json.dumps(body), headers={**headers, "X-Amz-Target": f"AmazonSQS.{action}"})
        assert reply.status_code == 200, reply.data
        return json.loads(reply.data)

    url = call("CreateQueue", {"QueueName": "deep"})["QueueUrl"]
    name = "sqs:123456789012:us-east-1:deep"
    depth = 3000
    while sent < depth:  # 100 a second: 30 one-second buckets
        store.send_batch(name, [OutgoingMessage(body=b"x" * 100)] * 100)
        sent += 100
    limits: list[int | None] = []
    real_counts = store.counts

    def recording_counts(queue: str, limit: int | None = None) -> QueueCounts:
        limits.append(limit)
        return real_counts(queue, limit)

    monkeypatch.setattr(store, "counts", recording_counts)
    attrs = call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})["Attributes"]
    assert limits == [1000]
    assert abs(int(attrs["ApproximateNumberOfMessages"]) - depth) <= depth // 10
    store.poll(name, limit=7, claim_ttl=60)
    attrs = call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["ApproximateNumberOfMessagesNotVisible"]})
    assert attrs == {"Attributes": {"ApproximateNumberOfMessagesNotVisible": "7"}}
