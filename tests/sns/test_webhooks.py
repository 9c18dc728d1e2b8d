"""HTTP subscriptions: only to allowed endpoints, the SubscriptionConfirmation handshake, signed
notifications, AWS's retries, a dead-letter queue for what never got through, no redirects followed."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from botocore.exceptions import ClientError
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from spoolq.config.declared_topics import allowed_http_endpoints
from spoolq.http.sns.webhooks import allowed
from tests.sns.conftest import receive_all, sns_client, sqs_client
from tests.sqs.harness import SpoolqProcess


class Endpoint:
    """A local HTTP endpoint: records every POST; ``/fail...`` answers 500, ``/redirect`` 302 to ``/stolen``."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.received.append((self.path, {k.lower(): v for k, v in self.headers.items()},
                                       json.loads(body) if body[:1] == b"{"
                                       else {"raw": body.decode()}))
                if self.path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", f"http://127.0.0.1:{outer.port}/stolen")
                else:
                    self.send_response(500 if self.path.startswith("/fail") else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, path: str, count: int, kind: str | None = None, timeout: float = 20) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = [body for p, headers, body in self.received
                   if p == path and (kind is None or headers.get("x-amz-sns-message-type") == kind)]
            if len(got) >= count:
                return got
            time.sleep(0.1)
        raise AssertionError(f"{path}: {len(got)} of {count} {kind or ''} posts: {self.received}")


@pytest.fixture(scope="module")
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    yield e
    e.server.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, endpoint: Endpoint) -> Iterator[SpoolqProcess]:
    base = tmp_path_factory.mktemp("sns-http")
    (base / "root").mkdir()
    config = base / "config.yaml"
    config.write_text(yaml.safe_dump({"sns": {"http_endpoints": [f"http://127.0.0.1:{endpoint.port}/"]}}))
    process = SpoolqProcess(base / "root", workers=1, threads=8, config=config)
    process.start()
    yield process
    process.stop()


def _verify(body: dict[str, Any], fields: tuple[str, ...]) -> None:
    cert = x509.load_pem_x509_certificate(requests.get(body["SigningCertURL"], timeout=10).content)
    signed = "".join(f"{k}\n{body[k]}\n" for k in fields if k in body)
    algorithm = hashes.SHA256() if body["SignatureVersion"] == "2" else hashes.SHA1()
    cert.public_key().verify(base64.b64decode(body["Signature"]), signed.encode(), padding.PKCS1v15(), algorithm)


def test_handshake_and_delivery(server: SpoolqProcess, endpoint: Endpoint) -> None:
    sns = sns_client(server.url)
    topic = sns.create_topic(Name="hooks")["TopicArn"]
    url = f"http://127.0.0.1:{endpoint.port}/hook"
    assert sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=url)["SubscriptionArn"] == "pending confirmation"
    (confirmation,) = endpoint.wait("/hook", 1, "SubscriptionConfirmation")
    _verify(confirmation, ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"))
    sns.publish(TopicArn=topic, Message="before confirmation")  # not delivered: pending
    assert requests.get(confirmation["SubscribeURL"], timeout=10).status_code == 200  # unsigned, as AWS
    (sub,) = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert sub["SubscriptionArn"].startswith(topic + ":")
    sns.publish(TopicArn=topic, Message="hello", Subject="s")
    (note,) = endpoint.wait("/hook", 1, "Notification")
    assert note["Message"] == "hello" and note["Type"] == "Notification"
    _verify(note, ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"))
    headers = next(h for p, h, b in endpoint.received if b.get("Message") == "hello")
    assert headers["x-amz-sns-subscription-arn"] == sub["SubscriptionArn"]


def test_only_allowed_endpoints_are_contacted(server: SpoolqProcess, endpoint: Endpoint) -> None:
    """A subscription to an endpoint the operator does not allow is made, stays pending, and is
    never contacted (no confirmation, no notification)."""
    sns = sns_client(server.url)
    topic = sns.create_topic(Name="closed")["TopicArn"]
    other = Endpoint()  # a live endpoint that is not in the allow-list
    try:
        elsewhere = f"http://127.0.0.1:{other.port}/x"
        for url in ("http://169.254.169.254/latest/meta-data", elsewhere):
            assert sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=url)["SubscriptionArn"] == \
                "pending confirmation"
        sns.publish(TopicArn=topic, Message="for nobody")
        time.sleep(2)
        assert other.received == []
    finally:
        other.server.shutdown()
    with pytest.raises(ClientError) as e:
        sns.subscribe(TopicArn=topic, Protocol="https", Endpoint="http://127.0.0.1/")
    assert e.value.response["Error"]["Code"] == "InvalidParameter"
    assert allowed("http://a:1/x/y", ("http://a:1/x/",)) and not allowed("http://a:1/xy", ("http://a:1/x/",))
    assert not allowed("http://a.evil/", ("http://a/",))
    with pytest.raises(ValueError, match=r"sns\.http_endpoints\[0\]"):
        allowed_http_endpoints({"sns": {"http_endpoints": ["ftp://x/"]}})


def _confirmed(sns: Any, endpoint: Endpoint, topic: str, path: str, **attributes: str) -> None:
    sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=f"http://127.0.0.1:{endpoint.port}{path}",
                  Attributes=attributes)
    (confirmation,) = endpoint.wait(path, 1, "SubscriptionConfirmation")
    requests.get(confirmation["SubscribeURL"], timeout=10).raise_for_status()


def test_retries_then_dead_letter_queue(server: SpoolqProcess, endpoint: Endpoint, tmp_path: Path) -> None:
    sns, sqs = sns_client(server.url), sqs_client(server.url)
    topic = sns.create_topic(Name="flaky")["TopicArn"]
    dlq_url = sqs.create_queue(QueueName="hooks-dlq")["QueueUrl"]
    policy = {"healthyRetryPolicy": {"numRetries": 2, "minDelayTarget": 0, "maxDelayTarget": 0}}
    endpoint.received.clear()
    # the confirmation to /fail fails too: confirm through the token it carried
    sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=f"http://127.0.0.1:{endpoint.port}/fail",
                  Attributes={"DeliveryPolicy": json.dumps(policy), "RawMessageDelivery": "true",
                              "RedrivePolicy": json.dumps({"deadLetterTargetArn":
                                                           "arn:aws:sqs:us-east-1:123456789012:hooks-dlq"})})
    token = endpoint.wait("/fail", 1, "SubscriptionConfirmation")[0]["Token"]
    sns.confirm_subscription(TopicArn=topic, Token=token)
    endpoint.received.clear()
    sns.publish(TopicArn=topic, Message="never answered")
    assert len(endpoint.wait("/fail", 3, "Notification")) == 3  # the first try and 2 retries
    assert [m["Body"] for m in receive_all(sqs, dlq_url, 1, wait=5)] == ["never answered"]


def test_redirects_are_not_followed(server: SpoolqProcess, endpoint: Endpoint) -> None:
    sns = sns_client(server.url)
    topic = sns.create_topic(Name="redirected")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=f"http://127.0.0.1:{endpoint.port}/redirect")
    endpoint.wait("/redirect", 1, "SubscriptionConfirmation")
    time.sleep(1)
    assert not [p for p, _h, _b in endpoint.received if p == "/stolen"]


def test_a_pending_retry_does_not_hold_up_a_stop(tmp_path: Path, endpoint: Endpoint) -> None:
    """A confirmation whose endpoint failed waits 20 s for its next try; stopping the service drops
    it (HTTP deliveries live in the process) instead of waiting for it."""
    (tmp_path / "root").mkdir()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"sns": {"http_endpoints": [f"http://127.0.0.1:{endpoint.port}/"]}}))
    process = SpoolqProcess(tmp_path / "root", workers=1, threads=4, config=config)
    process.start()
    try:
        sns = sns_client(process.url)
        topic = sns.create_topic(Name="stopping")["TopicArn"]
        sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=f"http://127.0.0.1:{endpoint.port}/fail-stop")
        endpoint.wait("/fail-stop", 1, "SubscriptionConfirmation")
        proc = process.proc
        assert proc is not None
        started = time.monotonic()
    finally:
        process.stop()
    assert time.monotonic() - started < 10 and proc.returncode == 0, proc.returncode
