"""Invariant 9 through gunicorn: sends never fail while long pollers drain the same queue.

The shape that once failed 276 of 800 sends with 503: many long pollers (``poll?wait=1``, then
ack) and a few senders on one queue, here over 4 gunicorn workers (each with its own maintenance
thread) with fsync on, through the EmoDB door and the SQS door (unmodified boto3, long polls of
``WaitTimeSeconds=1`` then DeleteMessageBatch). 3,000 sends in all (nearly four times the shape
that failed, where a third of the sends failed): every one must succeed, and every sent value must
be delivered and acknowledged.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import requests

from tests.e2e.spoolq_server import running_server
from tests.sqs.harness import client

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
JSON = {"Content-Type": "application/json"}
EMODB_SENDERS, EMODB_PER_SENDER = 4, 500
SQS_SENDERS, SQS_PER_SENDER = 2, 500
EMODB_POLLERS, SQS_POLLERS = 12, 4


def test_no_send_fails_while_long_pollers_drain(tmp_path: Path) -> None:
    failures: list[str] = []
    received: set[int] = set()
    lock = threading.Lock()
    senders_done = threading.Event()
    with running_server(tmp_path, keys=False, workers=4, threads=32) as server:
        sqs = client(server.url)
        queue_url = sqs.create_queue(QueueName="contended")["QueueUrl"]

        def emodb_sender(base: int) -> None:
            s = requests.Session()
            for value in range(base, base + EMODB_PER_SENDER):
                r = s.post(f"{server.url}/queue/1/contended/send", data=json.dumps(value), headers=JSON, timeout=60)
                if r.status_code != 200:
                    failures.append(f"emodb send {value}: {r.status_code} {r.text[:200]}")

        def sqs_sender(base: int) -> None:
            c = client(server.url)
            for value in range(base, base + SQS_PER_SENDER):
                try:
                    c.send_message(QueueUrl=queue_url, MessageBody=str(value))
                except Exception as e:  # every failure is recorded; the client never retries
                    failures.append(f"sqs send {value}: {e!r}")

        def emodb_poller() -> None:
            s = requests.Session()
            while True:
                r = s.get(f"{server.url}/queue/1/contended/poll", params={"ttl": 300, "limit": 10, "wait": 1},
                          timeout=60)
                if r.status_code != 200:
                    failures.append(f"emodb poll: {r.status_code} {r.text[:200]}")
                    return
                got = r.json()
                if not got:
                    if senders_done.is_set():
                        return
                    continue
                a = s.post(f"{server.url}/queue/1/contended/ack", data=json.dumps([m["id"] for m in got]),
                           headers=JSON, timeout=60)
                if a.status_code != 200:
                    failures.append(f"emodb ack: {a.status_code}")
                with lock:
                    received.update(m["payload"] for m in got)

        def sqs_poller() -> None:
            c = client(server.url)
            while True:
                got = c.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                        VisibilityTimeout=300).get("Messages", [])
                if not got:
                    if senders_done.is_set():
                        return
                    continue
                out = c.delete_message_batch(QueueUrl=queue_url, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
                if out.get("Failed"):
                    failures.append(f"sqs delete: {out['Failed'][:2]}")
                with lock:
                    received.update(-int(m["Body"]) - 1 for m in got)  # SQS values kept apart: -1, -2, ...

        senders = [threading.Thread(target=emodb_sender, args=(n * EMODB_PER_SENDER,)) for n in range(EMODB_SENDERS)]
        senders += [threading.Thread(target=sqs_sender, args=(n * SQS_PER_SENDER,)) for n in range(SQS_SENDERS)]
        pollers = [threading.Thread(target=emodb_poller) for _ in range(EMODB_POLLERS)]
        pollers += [threading.Thread(target=sqs_poller) for _ in range(SQS_POLLERS)]
        for t in pollers + senders:
            t.start()
        for t in senders:
            t.join(timeout=800)
        senders_done.set()
        for t in pollers:
            t.join(timeout=120)

    assert not failures, f"{len(failures)} failed calls, first: {failures[:3]}"
    expected = set(range(EMODB_SENDERS * EMODB_PER_SENDER)) | {
        -v - 1 for v in range(SQS_SENDERS * SQS_PER_SENDER)}
    missing = expected - received
    assert not missing, f"{len(missing)} sent messages never delivered, e.g. {sorted(missing)[:5]}"
