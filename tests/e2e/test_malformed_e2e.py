"""Malformed requests through real gunicorn, on every door: chunked bodies over the limit get 413 in
the door's format and store nothing, a chunked body under the limit is stored byte for byte, bad
chunk framing is 400, deep JSON is 400, and no response is ever an HTML page."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from tests.conftest import tree
from tests.e2e.rawhttp import Reply, exchange, request
from tests.e2e.spoolq_server import Server, running_server

pytestmark = pytest.mark.timeout(120)

LIMIT = 65536
SQS_JSON = {"X-Amz-Target": "AmazonSQS.SendMessage", "Content-Type": "application/x-amz-json-1.0"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
EMO = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("malformed"), keys=False, workers=1,
                        extra_args=("--max-body-bytes", str(LIMIT), "--fsync", "never")) as srv:
        yield srv


@pytest.fixture(scope="module")
def queue_url(server: Server) -> str:
    body = json.dumps({"QueueName": "malformed"}).encode()
    reply = exchange(server.port, request("POST", "/", {**SQS_JSON, "X-Amz-Target": "AmazonSQS.CreateQueue"}, body))
    assert reply is not None and reply.status == 200, reply
    url: str = json.loads(reply.body)["QueueUrl"]
    created = exchange(server.port, request("PUT", "/mq/big", {}))
    assert created is not None and created.status in (200, 201), created
    return url


def _sends(queue_url: str, payload: bytes) -> dict[str, tuple[str, str, dict[str, str], bytes]]:
    """One send request per door carrying ``payload`` as the message body."""
    text = payload.decode("ascii")
    return {
        "emodb": ("POST", "/queue/1/big/send", EMO, json.dumps(text).encode()),
        "mq": ("POST", "/mq/big/messages", {"Content-Type": "application/octet-stream"}, payload),
        "sqs-json": ("POST", "/", SQS_JSON, json.dumps({"QueueUrl": queue_url, "MessageBody": text}).encode()),
        "sqs-query": ("POST", "/", FORM, urlencode({"Action": "SendMessage", "QueueUrl": queue_url,
                                                    "MessageBody": text}).encode()),
    }


def _assert_door_error(door: str, reply: Reply | None, status: int) -> None:
    assert reply is not None, f"{door}: no answer"
    assert reply.status == status, (door, reply.status, reply.body[:300])
    assert not reply.html, (door, reply)
    if door == "emodb":
        assert reply.content_type.startswith("application/json")
        json.loads(reply.body)
    elif door == "mq":
        assert reply.content_type.startswith("text/plain")
    elif door == "sqs-json":
        assert reply.content_type.startswith("application/x-amz-json-1.0")
        assert "__type" in json.loads(reply.body)
        assert "x-amzn-query-error" in reply.headers
    else:
        assert reply.content_type.startswith("text/xml")
        assert ET.fromstring(reply.body).tag.endswith("ErrorResponse")


def _payload(size: int) -> bytes:
    return base64.b64encode(os.urandom(size))[:size]


@pytest.mark.parametrize("door", ["emodb", "mq", "sqs-json", "sqs-query"])
def test_chunked_body_over_the_limit_is_413_and_stores_nothing(server: Server, queue_url: str, door: str) -> None:
    before = tree(server.root)
    method, path, headers, body = _sends(queue_url, _payload(100_000))[door]
    assert len(body) > LIMIT
    reply = exchange(server.port, request(method, path, headers, body, chunk=True))
    _assert_door_error(door, reply, 413)
    assert tree(server.root) == before


@pytest.mark.parametrize("door", ["sqs-json", "sqs-query"])
def test_declared_body_over_the_limit_is_an_sqs_413(server: Server, queue_url: str, door: str) -> None:
    before = tree(server.root)
    method, path, headers, body = _sends(queue_url, _payload(100_000))[door]
    _assert_door_error(door, exchange(server.port, request(method, path, headers, body)), 413)
    assert tree(server.root) == before


def test_chunked_bodies_under_the_limit_are_stored_byte_for_byte(server: Server, queue_url: str) -> None:
    payload = _payload(LIMIT - 2000)
    sends = _sends(queue_url, payload)
    reply = exchange(server.port, request(*sends["mq"][:3], sends["mq"][3], chunk=True))
    assert reply is not None and reply.status == 201, reply
    got = exchange(server.port, request("GET", "/mq/big/messages", {}))
    assert got is not None and got.status == 200 and got.body == payload

    small = _payload(30_000)
    method, path, headers, body = _sends(queue_url, small)["sqs-query"]
    reply = exchange(server.port, request(method, path, headers, body, chunk=True))
    assert reply is not None and reply.status == 200, reply
    ns = {"s": "http://queue.amazonaws.com/doc/2012-11-05/"}
    md5 = ET.fromstring(reply.body).find(".//s:MD5OfMessageBody", ns)
    assert md5 is not None and md5.text == hashlib.md5(small).hexdigest()

    method, path, headers, body = _sends(queue_url, small)["emodb"]
    reply = exchange(server.port, request(method, path, headers, body, chunk=True))
    assert reply is not None and reply.status == 200, reply
    peek = exchange(server.port, request("GET", "/queue/1/big/peek?limit=1", {}))
    assert peek is not None and json.loads(peek.body)[0]["payload"] == small.decode()


BAD_FRAMING = {
    "non-hex size": b"zz\r\nhello\r\n0\r\n\r\n",
    "data without CRLF": b"5\r\nhelloXX0\r\n\r\n",
    "huge size": b"ffffffffffffffffffffffff\r\nab\r\n0\r\n\r\n",
    "truncated": b"10\r\nabc",
}


@pytest.mark.parametrize("door", ["emodb", "mq", "sqs-json", "sqs-query"])
@pytest.mark.parametrize("framing", sorted(BAD_FRAMING))
def test_bad_chunk_framing_is_400(server: Server, queue_url: str, door: str, framing: str) -> None:
    before = tree(server.root)
    method, path, headers, _ = _sends(queue_url, b"x")[door]
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", "Transfer-Encoding: chunked",
            *(f"{k}: {v}" for k, v in headers.items())]
    raw = ("\r\n".join(head) + "\r\n\r\n").encode() + BAD_FRAMING[framing]
    reply = exchange(server.port, raw, half_close=True)
    _assert_door_error(door, reply, 400)
    assert tree(server.root) == before


@pytest.mark.parametrize("body", [b"[" * 20_000, b'{"QueueName":' + b'{"a":' * 10_000 + b"1" + b"}" * 10_001])
def test_deeply_nested_json_on_the_sqs_json_protocol_is_400(server: Server, body: bytes) -> None:
    before = tree(server.root)
    headers = {**SQS_JSON, "X-Amz-Target": "AmazonSQS.CreateQueue"}
    _assert_door_error("sqs-json", exchange(server.port, request("POST", "/", headers, body)), 400)
    assert tree(server.root) == before


def test_deeply_dotted_query_parameter_is_400(server: Server) -> None:
    before = tree(server.root)
    body = b"Action=CreateQueue&QueueName=deep&" + b"Attribute." * 5_000 + b"x=1"
    _assert_door_error("sqs-query", exchange(server.port, request("POST", "/", FORM, body)), 400)
    assert tree(server.root) == before


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/queue/1//alpha/peek"), ("GET", "/mq/%2f/messages"), ("GET", "/dedupq/1//alpha/peek"),
    ("GET", "/queue/1/alpha//peek"), ("GET", "//"), ("GET", "/mq//"), ("GET", "/queue/1/alpha/peek/"),
    ("OPTIONS", "/queue/1/alpha/peek"), ("OPTIONS", "/mq/alpha/messages"), ("OPTIONS", "/"),
    ("OPTIONS", "/healthz"), ("GET", "/mq/never-sent/messages"), ("HEAD", "/queue/1/alpha/peek"),
    ("GET", "/"), ("DELETE", "/123456789012/malformed"),
])
def test_never_html(server: Server, method: str, path: str) -> None:
    reply = exchange(server.port, request(method, path, {}))
    assert reply is not None
    assert not reply.html, (method, path, reply)
    assert not 300 <= reply.status < 400, (method, path, reply)
    assert reply.status < 500
    if not reply.body:
        assert reply.content_type == "" or method == "HEAD", (method, path, reply)
    elif path.startswith("/mq"):
        assert reply.content_type.startswith("text/plain"), (method, path, reply)
    elif path.startswith(("/queue", "/dedupq", "/healthz")):
        assert reply.content_type.startswith("application/json"), (method, path, reply)
    elif path.startswith("/123456789012") or path in ("/", "//"):
        assert reply.content_type.startswith(("text/xml", "application/x-amz-json-1.0")), (method, path, reply)
    else:
        assert reply.content_type.startswith(("application/json", "text/plain")), (method, path, reply)


@pytest.mark.parametrize("door", ["emodb", "mq", "sqs-json", "sqs-query"])
def test_body_shorter_than_its_content_length_is_400_and_stores_nothing(server: Server, queue_url: str,
                                                                         door: str) -> None:
    before = tree(server.root)
    method, path, headers, body = _sends(queue_url, _payload(1000))[door]
    raw = request(method, path, headers, body).replace(f"Content-Length: {len(body)}".encode(),
                                                       f"Content-Length: {len(body) + 500}".encode())
    _assert_door_error(door, exchange(server.port, raw, half_close=True), 400)
    assert tree(server.root) == before
