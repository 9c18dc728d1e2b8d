"""The Query protocol's GET form, SigV4 in the query string, and queues per region, checked
against answers recorded from real AWS (LocalStack's AWS-validated ``TestSqsQueryApi`` and
multi-region tests in ``tests/aws/services/sqs/test_sqs.py``; each test names the one it follows).

GETs are signed with botocore's own SigV4 signer (header or presigned query string), as the
recorded tests' HTTP client does, and sent with ``requests`` to the session's gunicorn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.e2e.spoolq_server import Server, running_server
from tests.sqs.harness import ACCOUNT, client

pytestmark = pytest.mark.timeout(120)


def signed_get(url: str, params: dict[str, str] | None = None, *, region: str = "us-east-1",
               key: str = "testing", secret: str = "testing", headers: dict[str, str] | None = None,
               presigned: bool = False) -> requests.Response:
    request = AWSRequest(method="GET", url=url, params=params or {}, headers=headers or {})
    signer = SigV4QueryAuth(Credentials(key, secret), "sqs", region, expires=300) if presigned \
        else SigV4Auth(Credentials(key, secret), "sqs", region)
    signer.add_auth(request)
    prepared = request.prepare()
    return requests.get(prepared.url, headers=dict(prepared.headers), timeout=30)


@pytest.fixture
def queue_url(sqs: Any, qname: Callable[[str], str]) -> str:
    return str(sqs.create_queue(QueueName=qname())["QueueUrl"])


# ---------------------------------------------------------------- GET on a queue URL (TestSqsQueryApi)


def test_get_queue_attributes(queue_url: str) -> None:
    # test_get_queue_attributes_all, test_get_queue_attributes_with_query_args
    reply = signed_get(queue_url, {"Action": "GetQueueAttributes", "AttributeName.1": "All"})
    assert reply.ok and "<GetQueueAttributesResponse" in reply.text
    assert "<Attribute><Name>QueueArn</Name><Value>arn:aws:sqs:" in reply.text
    assert "<Attribute><Name>VisibilityTimeout</Name><Value>30" in reply.text
    assert queue_url.split("/")[-1] in reply.text
    reply = signed_get(queue_url, {"Action": "GetQueueAttributes", "AttributeName.1": "QueueArn"})
    assert reply.ok and "<Attribute><Name>QueueArn</Name>" in reply.text
    assert "<Attribute><Name>VisibilityTimeout</Name>" not in reply.text


def test_get_queue_attributes_of_a_fifo_queue(sqs: Any, qname: Callable[[str], str]) -> None:
    # test_get_queue_attributes_of_fifo_queue
    url = sqs.create_queue(QueueName=f"{qname()}.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    reply = signed_get(url, {"Action": "GetQueueAttributes", "AttributeName.1": "All"})
    assert reply.ok and "<Name>FifoQueue</Name><Value>true</Value>" in reply.text


def test_get_errors(queue_url: str) -> None:
    # test_invalid_action_raises_exception, test_valid_action_with_missing_parameter_raises_exception,
    # test_get_queue_attributes_with_invalid_arg_returns_error, test_get_create_queue_fails, test_get_list_queues_fails
    cases = [({"Action": "FooBar", "Version": "2012-11-05"}, "InvalidAction",
              "The action FooBar is not valid for this endpoint."),
             ({"Action": "SendMessage"}, "MissingParameter", "The request must contain the parameter MessageBody."),
             ({"Action": "GetQueueAttributes", "AttributeName.1": "Foobar"}, "InvalidAttributeName",
              "Unknown Attribute Foobar."),
             ({"Action": "CreateQueue", "QueueName": "other"}, "InvalidAction",
              "The action CreateQueue is not valid for this endpoint."),
             ({"Action": "ListQueues"}, "InvalidAction", "The action ListQueues is not valid for this endpoint.")]
    for params, code, message in cases:
        reply = signed_get(queue_url, params)
        assert reply.status_code == 400, (params, reply.text)
        assert f"<Code>{code}</Code>" in reply.text and "<Type>Sender</Type>" in reply.text, reply.text
        assert f"<Message>{message}</Message>" in reply.text, reply.text


def test_get_delete_queue_and_then_it_is_gone(queue_url: str, sqs: Any) -> None:
    # test_get_delete_queue, test_get_on_deleted_queue_fails
    reply = signed_get(queue_url, {"Action": "DeleteQueue"})
    assert reply.ok and "<DeleteQueueResponse " in reply.text
    reply = signed_get(queue_url, {"Action": "GetQueueAttributes", "AttributeName.1": "QueueArn"})
    assert reply.status_code == 400
    assert "<Code>AWS.SimpleQueueService.NonExistentQueue</Code>" in reply.text
    assert "<Message>The specified queue does not exist for this wsdl version" in reply.text


def test_get_send_and_receive(sqs: Any, qname: Callable[[str], str]) -> None:
    # test_get_send_and_receive_messages
    first, second = (sqs.create_queue(QueueName=qname(s))["QueueUrl"] for s in ("a", "b"))
    assert signed_get(first, {"Action": "SendMessage", "MessageBody": "foobar"}).ok
    reply = signed_get(second, {"Action": "ReceiveMessage"})
    assert reply.ok and "foobar" not in reply.text
    assert "<ReceiveMessageResult/>" in reply.text.replace(" />", "/>")
    reply = signed_get(first, {"Action": "ReceiveMessage"})
    assert reply.ok and "<Body>foobar</Body>" in reply.text and "<MD5OfBody>" in reply.text


def test_get_without_an_action(queue_url: str) -> None:
    # test_get_without_query_returns_unknown_operation, test_get_without_query_json_format_returns_returns_xml
    for headers in ({}, {"Accept": "application/json"}):
        reply = signed_get(queue_url, headers=headers)
        assert reply.status_code == 404 and "<UnknownOperationException" in reply.text, reply.text


def test_get_queue_url_on_a_queue_url(sqs: Any, qname: Callable[[str], str]) -> None:
    # test_get_queue_url_works_for_same_queue, test_get_queue_url_work_for_different_queue,
    # test_overwrite_queue_url_in_params
    first, second = (sqs.create_queue(QueueName=qname(s))["QueueUrl"] for s in ("a", "b"))
    for name, url in ((first.split("/")[-1], first), (second.split("/")[-1], second)):
        reply = signed_get(first, {"Action": "GetQueueUrl", "QueueName": name, "QueueOwnerAWSAccountId": ACCOUNT})
        assert reply.status_code == 200 and f"<QueueUrl>{url}</QueueUrl>" in reply.text, reply.text
    reply = signed_get(first, {"Action": "GetQueueAttributes", "QueueUrl": second, "AttributeName.1": "QueueArn"})
    assert reply.ok and second.split("/")[-1] in reply.text and first.split("/")[-1] not in reply.text


def test_get_on_the_endpoint_with_json_negotiation(spoolq_url: str, queue_url: str) -> None:
    # test_get_list_queues_with_query_auth
    params = {"Action": "ListQueues", "Version": "2012-11-05"}
    reply = signed_get(spoolq_url, params, headers={"Accept": "application/json"})
    assert reply.status_code == 200 and "ListQueuesResponse" in reply.json()
    assert queue_url in json.dumps(reply.json())
    reply = signed_get(spoolq_url, params)
    assert reply.status_code == 200 and b"<ListQueuesResponse" in reply.content


@pytest.mark.parametrize("body", ['{"foo": "ba\rr", "foo2": "ba&quot;r&quot;"}', json.dumps('{"foo": "ba\rr"}')])
def test_get_receive_with_json_negotiation(spoolq_url: str, queue_url: str, sqs: Any, body: str) -> None:
    # test_marker_serialization_json_protocol (what AWS answers: its is_aws_cloud() branch)
    sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    reply = signed_get(spoolq_url, {"Action": "ReceiveMessage", "QueueUrl": queue_url, "Version": "2012-11-05",
                                    "VisibilityTimeout": "0"}, headers={"Accept": "application/json"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["ReceiveMessageResponse"]["ReceiveMessageResult"]["messages"][0]["Body"] == body


def test_json_protocol_sent_to_a_queue_url(queue_url: str) -> None:
    # test_send_message_via_queue_url_with_json_protocol (what the PHP SDK does)
    sqs = client(queue_url.rsplit("/", 2)[0])
    sqs.meta.events.register("before-sign.sqs.*", lambda request, **_: setattr(request, "url", queue_url))
    reply = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1)
    assert reply["ResponseMetadata"]["HTTPHeaders"]["content-type"] == "application/x-amz-json-1.0"


# ---------------------------------------------------------------- SigV4 in the query string


@pytest.fixture(scope="module")
def signed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    config = """
api_keys:
  - name: getter
    sqs_credentials: [{access_key_id: AKIDGETTER, secret_access_key: "getter/secret"}]
    permissions: ["queue|*|*"]
"""
    with running_server(Path(tmp_path_factory.mktemp("sqs-get")), keys=False, workers=1, config_text=config,
                        extra_args=("--fsync", "never")) as server:
        yield server


def test_presigned_get_is_authenticated(signed_server: Server) -> None:
    # AWS accepts SigV4 in the query string (X-Amz-Signature ...) on the GET form
    sqs = client(signed_server.url, access_key="AKIDGETTER", secret_key="getter/secret")
    url = sqs.create_queue(QueueName="presigned")["QueueUrl"]
    ok = signed_get(url, {"Action": "SendMessage", "MessageBody": "hi"}, key="AKIDGETTER", secret="getter/secret",
                    presigned=True)
    assert ok.status_code == 200 and "<SendMessageResponse" in ok.text, ok.text
    wrong = signed_get(url, {"Action": "SendMessage", "MessageBody": "hi"}, key="AKIDGETTER", secret="nope",
                       presigned=True)
    assert wrong.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in wrong.text
    header_signed = signed_get(url, {"Action": "ReceiveMessage"}, key="AKIDGETTER", secret="getter/secret")
    assert header_signed.ok and "<Body>hi</Body>" in header_signed.text
    unsigned = requests.get(url, params={"Action": "ReceiveMessage"}, timeout=30)
    assert unsigned.status_code == 403 and "MissingAuthenticationToken" in unsigned.text


# ---------------------------------------------------------------- regions


def test_same_name_in_two_regions_is_two_queues(spoolq_url: str, qname: Callable[[str], str]) -> None:
    # test_get_queue_url_multi_region, test_list_queues_multi_region_with_endpoint_strategy_domain,
    # test_endpoint_strategy_with_multi_region
    east, central = client(spoolq_url, region="us-east-1"), client(spoolq_url, region="eu-central-1")
    name = qname()
    url1, url2 = (c.create_queue(QueueName=name)["QueueUrl"] for c in (east, central))
    assert url1 != url2 and "eu-central-1" in url2 and "us-east-1" not in url1 + url2
    assert east.get_queue_url(QueueName=name)["QueueUrl"] == url1
    assert central.get_queue_url(QueueName=name)["QueueUrl"] == url2
    assert url1 in east.list_queues(QueueNamePrefix=name).get("QueueUrls", [])
    assert url2 not in east.list_queues(QueueNamePrefix=name).get("QueueUrls", [])
    assert central.list_queues(QueueNamePrefix=name).get("QueueUrls", []) == [url2]
    assert signed_get(url1, {"Action": "SendMessage", "MessageBody": "foobar"}).ok
    reply = signed_get(url2, {"Action": "ReceiveMessage", "VisibilityTimeout": "0"}, region="eu-central-1")
    assert reply.ok and "foobar" not in reply.text
    reply = signed_get(url1, {"Action": "ReceiveMessage", "VisibilityTimeout": "0"})
    assert reply.ok and "foobar" in reply.text
    arn = central.get_queue_attributes(QueueUrl=url2, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    assert arn == f"arn:aws:sqs:eu-central-1:{ACCOUNT}:{name}"


def test_a_url_without_the_region_keeps_working(spoolq_url: str, qname: Callable[[str], str]) -> None:
    # URLs handed out before regions were in them (``/<account>/<name>``) name the request's region
    central = client(spoolq_url, region="eu-central-1")
    name = qname()
    url = central.create_queue(QueueName=name)["QueueUrl"]
    old_url = f"{spoolq_url}/{ACCOUNT}/{name}"
    central.send_message(QueueUrl=old_url, MessageBody="old")
    got = central.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert [m["Body"] for m in got] == ["old"]
