"""Which door takes a request to ``/``: SNS's requests (SigV4 scope ``sns``, or unsigned with an
SNS-only action) go to the SNS door, everything else to SQS as before (Flask test client, in-memory store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from spoolq.http.app import create_app
from spoolq.settings.server import Settings
from tests.http.fakes import FakeStore


@pytest.fixture
def client(tmp_path: Path) -> FlaskClient:
    (tmp_path / "root").mkdir()
    return create_app(Settings(root=tmp_path / "root", fsync=False), store=FakeStore()).test_client()


def scope(service: str) -> dict[str, str]:
    return {"Authorization": f"AWS4-HMAC-SHA256 Credential=AKID/20261129/us-east-1/{service}/aws4_request, "
                             "SignedHeaders=host, Signature=" + "0" * 64}


def test_sns_requests_reach_the_sns_door(client: FlaskClient) -> None:
    made = client.post("/", data={"Action": "CreateTopic", "Name": "t"}, headers=scope("sns"))
    assert made.status_code == 200 and b"<CreateTopicResponse" in made.data
    unsigned = client.post("/", data={"Action": "ListTopics"})
    assert unsigned.status_code == 200 and b"arn:aws:sns:us-east-1:123456789012:t" in unsigned.data
    by_get = client.get("/?Action=ListTopics")
    assert by_get.status_code == 200 and b"<ListTopicsResponse" in by_get.data
    json_reply = client.post("/", data={"Action": "ListTopics"}, headers={"Accept": "application/json"})
    assert json_reply.json["ListTopicsResponse"]["ListTopicsResult"]["Topics"] == [
        {"TopicArn": "arn:aws:sns:us-east-1:123456789012:t"}]
    unknown = client.post("/", data={"Action": "CreateSMSSandboxPhoneNumber"}, headers=scope("sns"))
    assert unknown.status_code == 400 and b"<Code>InvalidAction</Code>" in unknown.data


def test_sqs_requests_stay_with_sqs(client: FlaskClient) -> None:
    made = client.post("/", data=json.dumps({"QueueName": "q"}),
                       headers={"X-Amz-Target": "AmazonSQS.CreateQueue", "Content-Type": "application/x-amz-json-1.0"})
    assert made.status_code == 200 and "QueueUrl" in json.loads(made.data)
    query = client.post("/", data={"Action": "CreateQueue", "QueueName": "q2"}, headers=scope("sqs"))
    assert query.status_code == 200 and b"<CreateQueueResponse" in query.data
    unsigned = client.post("/", data={"Action": "ListQueues"})
    assert unsigned.status_code == 200 and b"<ListQueuesResponse" in unsigned.data
    # an SQS action signed for SNS is SNS's: SNS has no such action
    wrong_scope = client.post("/", data={"Action": "ListQueues"}, headers=scope("sns"))
    assert wrong_scope.status_code == 400 and b"The action ListQueues is not valid for this web service." in \
        wrong_scope.data
