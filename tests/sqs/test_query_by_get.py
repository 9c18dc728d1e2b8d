"""The SQS query protocol by GET, as AWS takes it: aiosqs (a client that sends every action as a GET)
sends 64 KiB bodies, several at once, and a 1 MiB one; a request line over spoolq's bound gets 414 as
an SQS ``<ErrorResponse>``, never a foreign format. Real gunicorn (``spoolq.testing``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import socket
from collections.abc import Iterator

import pytest

from spoolq.testing import RunningSpoolq, spoolq_server

aiosqs = pytest.importorskip("aiosqs")


@pytest.fixture(scope="module")
def server() -> Iterator[RunningSpoolq]:
    with spoolq_server(queues=[{"name": "big", "door": "sqs"}], workers=2, threads=8) as running:
        yield running


def _client(server: RunningSpoolq) -> object:
    host = server.url.removeprefix("http://")
    client = aiosqs.SQSClient(region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test",
                              host=host, timeout_sec=60)
    client.endpoint_url = server.url  # aiosqs assumes https
    return client


async def _send_all(server: RunningSpoolq, bodies: list[str]) -> list[dict[str, str]]:
    async with _client(server) as client:  # type: ignore[attr-defined]
        url = (await client.get_queue_url(queue_name="big"))["QueueUrl"]
        return list(await asyncio.gather(*(client.send_message(queue_url=url, message_body=b) for b in bodies)))


def _send_all_in_a_thread(server: RunningSpoolq, bodies: list[str]) -> list[dict[str, str]]:
    """:func:`_send_all` on an event loop of its own thread: a Playwright session of the browser tests,
    still open in this process, keeps an event loop running in the main thread."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _send_all(server, bodies)).result()


def _drain(server: RunningSpoolq) -> dict[str, str]:
    sqs = server.sqs_client()
    url = server.queue_url("big")
    out: dict[str, str] = {}
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            return out
        for m in got:
            out[m["MessageId"]] = m["Body"]
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


def test_64_kib_bodies_by_get_are_sent_several_at_once(server: RunningSpoolq) -> None:
    bodies = [(f"{i:02d}é" + "x" * 65_536)[:65_536] for i in range(8)]  # a 2-byte character: %C3%A9 in the URL
    sent = _send_all_in_a_thread(server, bodies)
    for body, answer in zip(bodies, sent, strict=True):
        assert answer["MD5OfMessageBody"] == hashlib.md5(body.encode()).hexdigest()
    received = _drain(server)
    assert sorted(received.values()) == sorted(bodies)


def test_a_1_mib_message_by_get(server: RunningSpoolq) -> None:
    body = "é" * (1_048_576 // 2 - 8)  # 1 MiB less a little, every byte percent-encoded: a 3 MiB request line
    [answer] = _send_all_in_a_thread(server, [body])
    assert answer["MD5OfMessageBody"] == hashlib.md5(body.encode()).hexdigest()
    assert list(_drain(server).values()) == [body]


def _raw(server: RunningSpoolq, line: bytes) -> bytes:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(line + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := s.recv(65_536):
            answer += chunk
    return answer


def test_a_request_line_over_the_bound_is_refused_in_the_doors_format(server: RunningSpoolq) -> None:
    over = b"a" * (4 * 1024 * 1024 + 10)
    sqs = _raw(server, b"GET /?Action=SendMessage&QueueUrl=x&MessageBody=" + over)
    head, _, body = sqs.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 414 ") and b"Content-Type: text/xml" in head
    assert body.startswith(b'<?xml version="1.0"?><ErrorResponse') and b"<Code>RequestURITooLong</Code>" in body
    queue_url_path = _raw(server, b"GET /123456789012/big?Action=SendMessage&MessageBody=" + over)
    assert b"<ErrorResponse" in queue_url_path
    emodb = _raw(server, b"GET /queue/1/" + over + b"/size")
    head, _, body = emodb.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 414 ") and body.startswith(b'{"message": "HTTP 414 URI Too Long')
    assert _drain(server) == {}, "nothing was sent"


def test_a_malformed_json_protocol_request_is_refused_in_json(server: RunningSpoolq) -> None:
    answer = _raw(server, b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: AmazonSQS.SendMessage\r\nContent-Length: 2\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n{}\r\n\r\nGET /")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"Content-Type: application/x-amz-json-1.0" in head
    assert body.startswith(b'{"__type": "com.amazonaws.sqs#InvalidRequest"')
