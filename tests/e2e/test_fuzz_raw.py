"""Fuzz tier: malformed HTTP over raw sockets against a real gunicorn, every door.

A seeded generator (``SPOOLQ_FUZZ_SEED``, ``SPOOLQ_FUZZ_COUNT``; defaults 20261122 and 1500)
builds requests from broken request lines, headers, chunk framing, bodies and credentials
aimed at the EmoDB, MQ and SQS doors, once against an open server and once against one with
an identity configured (so SigV4 and API-key checks see the garbage too). The rule: no answer is 5xx, no answer is HTML, every worker is still
the same process afterwards and ``/healthz`` answers 200. Counts are printed (``-s``) and
written to ``SPOOLQ_FUZZ_REPORT`` when set.
"""

from __future__ import annotations

import collections
import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.rawhttp import exchange
from tests.e2e.spoolq_server import Server, running_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SEED = int(os.environ.get("SPOOLQ_FUZZ_SEED", "20261122"))
COUNT = int(os.environ.get("SPOOLQ_FUZZ_COUNT", "1500"))
TIME_BUDGET = 240.0
LIMIT = 65536

PATHS = ["/queue/1/fz/send", "/queue/1/fz/sendbatch", "/queue/1/fz/poll", "/queue/1/fz/ack", "/queue/1/fz/peek",
         "/queue/1/_sendbatch", "/dedupq/1/fz/send", "/mq/fz/messages", "/mq/fz", "/", "/123456789012/fz",
         "/healthz", "/metrics", "/queue/1//fz/peek", "/mq/%2f/messages", "/queue/1/%00/send", "/%ff%fe",
         "/queue/1/" + "a" * 500 + "/send", "/mq/fz/messages/" + "b" * 300, "/queue/1/fz/../../etc/passwd"]
METHODS = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE", "CONNECT", "get", "P0ST",
           "", "GET GET", "\x00", "M" * 40]
VERSIONS = ["HTTP/1.1", "HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/9.9", "HTTP/1.1x", "HTTP/", "http/1.1", "",
            "HTTP/1.01"]
TARGETS = ["SendMessage", "ReceiveMessage", "CreateQueue", "SendMessageBatch", "DeleteMessage", "Nope",
           "ListQueues", "GetQueueAttributes"]
CONTENT_TYPES = ["application/json", "application/x-amz-json-1.0", "application/x-www-form-urlencoded",
                 "text/plain", "application/octet-stream", "multipart/form-data; boundary=zz",
                 "application/json; charset=utf-7", "", "*/*", "application/x-www-form-urlencoded; charset=\x01"]


def _body(rng: random.Random) -> bytes:
    kind = rng.randrange(10)
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 2000))
    if kind == 1:
        depth = rng.choice([10, 500, 5000, 20000])
        return b"[" * depth + b"]" * rng.choice([0, depth])
    if kind == 2:
        return json.dumps({"QueueName": "fz", "QueueUrl": "http://h/123456789012/fz",
                           "MessageBody": "x" * rng.randrange(0, 300_000),
                           "Entries": [{"Id": str(i)} for i in range(rng.randrange(0, 20))]}).encode()
    if kind == 3:
        pairs = [(rng.choice(["Action", "QueueName", "QueueUrl", "MessageBody", "Attribute.1.Name",
                              "Attribute." * rng.randrange(1, 50) + "x", "%zz", "=", "&&"]),
                  rng.choice(["SendMessage", "CreateQueue", "fz", "%", "\xff", "x" * 1000]))
                 for _ in range(rng.randrange(1, 8))]
        return "&".join(f"{k}={v}" for k, v in pairs).encode("utf-8", "replace")
    if kind == 4:
        return b'"' + b"a" * rng.choice([10, LIMIT - 10, LIMIT + 10, 200_000]) + b'"'
    if kind == 5:
        return rng.choice([b"{", b"}", b"null", b"[1,2", b'{"a":}', b"\xef\xbb\xbf[]", b"[\"\\ud800\"]",
                           b'["' + b"\\u0000" * 100 + b'"]', b"1e999999", b"-"])
    if kind == 6:
        return json.dumps([rng.choice(["id", 1, None, {"a": []}]) for _ in range(rng.randrange(0, 50))]).encode()
    return rng.choice([b"", b"x", b"hello world", b"\r\n\r\n", b"0\r\n\r\n"])


def _chunked(rng: random.Random, body: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(body):
        n = rng.randrange(1, 20000)
        piece = body[i:i + n]
        size = f"{len(piece):x}"
        mutation = rng.randrange(14)
        if mutation == 0:
            size = size.upper() + ";ext=1"
        elif mutation == 1:
            size = "zz"
        elif mutation == 2:
            size = f"{len(piece) + rng.randrange(1, 50):x}"
        elif mutation == 3:
            size = "-" + size
        elif mutation == 4:
            size = "f" * rng.randrange(9, 40)
        elif mutation == 5:
            size = " " + size
        sep = b"\r\n" if mutation != 6 else b"\n"
        tail = b"\r\n" if mutation != 7 else rng.choice([b"", b"XX", b"\n"])
        out += size.encode() + sep + piece + tail
        i += n
    end = rng.choice([b"0\r\n\r\n", b"0\r\n\r\n", b"0\r\nX-Trailer: 1\r\n\r\n", b"", b"0\r\n", b"1\r\n"])
    return bytes(out + end)


def _request(rng: random.Random) -> bytes:
    method = rng.choice(METHODS[:6]) if rng.random() < 0.7 else rng.choice(METHODS)
    path = rng.choice(PATHS)
    if rng.random() < 0.1:
        path = "".join(chr(rng.randrange(0, 256)) for _ in range(rng.randrange(1, 60)))
    if rng.random() < 0.05:
        path = "/" + "x" * rng.choice([5000, 9000])
    version = rng.choice(VERSIONS[:3]) if rng.random() < 0.8 else rng.choice(VERSIONS)
    line = " ".join(p for p in (method, path, version) if p or rng.random() < 0.5)
    body = _body(rng)
    headers = ["Host: 127.0.0.1", "Connection: close"]
    ctype = rng.choice(CONTENT_TYPES)
    if ctype:
        headers.append(f"Content-Type: {ctype}")
    if path == "/" or rng.random() < 0.2:
        headers.append(f"X-Amz-Target: AmazonSQS.{rng.choice(TARGETS)}")
    framing = rng.randrange(8)
    if framing <= 2:
        headers.append("Transfer-Encoding: chunked")
        payload = _chunked(rng, body)
    elif framing == 3:
        headers.append(f"Content-Length: {len(body) + rng.choice([-5, 5, 1000, 10**12])}")
        payload = body
    elif framing == 4:
        headers += [f"Content-Length: {len(body)}", f"Content-Length: {len(body) + 1}"]
        payload = body
    elif framing == 5:
        headers += [f"Content-Length: {len(body)}", rng.choice(["Transfer-Encoding: chunked",
                                                                "Transfer-Encoding: gzip, chunked",
                                                                "Transfer-Encoding: identity"])]
        payload = body
    else:
        headers.append(f"Content-Length: {len(body)}")
        payload = body
    for _ in range(rng.choice([0, 0, 0, 1, 3])):
        headers.append(rng.choice(["NoColon", " folded: x", "X-Null: a\x00b", "X-Big: " + "y" * 9000,
                                   "Content-Length: abc", "Content-Length: -1", ": empty-name", "X-Ü: 1",
                                   "Expect: 100-continue", "X-BV-API-Key: " + "k" * 100,
                                   "Authorization: AWS4-HMAC-SHA256 Credential=x/1/2/3/aws4_request"]))
    if rng.random() < 0.3:
        date = rng.choice(["20261122T000000Z", "2026-11-22", "99999999T999999Z", "", "\x7f"])
        headers += [rng.choice([
            "Authorization: AWS4-HMAC-SHA256 Credential=AKIDFUZZ/20261122/us-east-1/sqs/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
            "Authorization: AWS4-HMAC-SHA256 Credential=AKIDFUZZ/2026/../sqs/aws4_request, SignedHeaders=;;;, "
            "Signature=zz",
            "Authorization: AWS4-HMAC-SHA256 Credential=" + "A" * 3000,
            "Authorization: Basic Zm9vOmJhcg==", "X-BV-API-Key: k-fuzz", "X-BV-API-Key: " + "\xff" * 10,
            "X-Amz-Content-SHA256: " + rng.choice(["UNSIGNED-PAYLOAD", "0" * 64, "zz"])]),
            f"X-Amz-Date: {date}"]
    if rng.random() < 0.05:
        headers += [f"X-H{i}: v" for i in range(150)]
    rng.shuffle(headers)
    sep = "\r\n" if rng.random() < 0.95 else "\n"
    return (line + sep + sep.join(headers) + sep + sep).encode("latin-1", "replace") + payload


KEYED = """
api_keys:
  - name: fuzz
    key: k-fuzz
    sqs_credentials: [{access_key_id: AKIDFUZZ, secret_access_key: fuzz-secret}]
    permissions: ["queue|*|*"]
"""


@pytest.fixture(scope="module", params=["open", "keyed"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    keyed = request.param == "keyed"
    with running_server(tmp_path_factory.mktemp("fuzz"), keys=False, workers=2, threads=8,
                        config_text=KEYED if keyed else None,
                        extra_args=("--max-body-bytes", str(LIMIT), "--fsync", "never")) as srv:
        yield srv


def test_fuzz_raw_http(server: Server) -> None:
    rng = random.Random(SEED + (1 if server.config is not None else 0))
    workers = sorted(server.worker_pids())
    statuses: collections.Counter[int] = collections.Counter()
    silent = 0
    bad: list[str] = []
    started = time.monotonic()
    sent = 0
    for n in range(COUNT):
        if time.monotonic() - started > TIME_BUDGET:
            break
        raw = _request(rng)
        sent += 1
        try:
            reply = exchange(server.port, raw, timeout=15, half_close=True)
        except TimeoutError:
            bad.append(f"#{n}: no answer within 15 s: {raw[:120]!r}")
            continue
        if reply is None:
            silent += 1
            continue
        statuses[reply.status] += 1
        if reply.status >= 500:
            bad.append(f"#{n}: {reply.status} {reply.body[:200]!r} for {raw[:160]!r}")
        if reply.html:
            bad.append(f"#{n}: HTML answer {reply.status} for {raw[:160]!r}")
    health = exchange(server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    summary = {"mode": "keyed" if server.config is not None else "open", "seed": SEED, "sent": sent, "answered": sum(statuses.values()), "closed_without_answer": silent,
               "5xx": sum(v for k, v in statuses.items() if k >= 500), "html": sum("HTML" in b for b in bad),
               "by_status": dict(sorted(statuses.items())), "seconds": round(time.monotonic() - started, 1),
               "workers_unchanged": sorted(server.worker_pids()) == workers,
               "healthz": health.status if health else None}
    print("fuzz:", json.dumps(summary))
    out = os.environ.get("SPOOLQ_FUZZ_REPORT")
    if out:
        with Path(out).open("a", encoding="utf-8") as f:
            f.write(json.dumps(summary) + "\n")
    assert not bad, "\n".join(bad[:20])
    assert summary["healthz"] == 200
    assert summary["workers_unchanged"], "a worker died or was restarted during the fuzz run"
    assert sent >= min(COUNT, 500)
