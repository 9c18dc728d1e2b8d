"""The audit end to end, as a user runs it: a real ``spoolq serve`` (HTTP and Disque doors), the
archive turned on through the service (the CLI, the settings API, an SQS attribute), traffic through
EmoDB, SQS, MQ and Disque with redeliveries and dead-lettering, then ``spoolq pipeline audit`` on the
server's own data directory, and every figure of every row checked.

The counts (acknowledged, redelivered, redeliveries, dead-lettered) are known from the traffic the
test made. The timings come from the archive; the test checks each record against the clock around
the calls that made it, then recomputes every percentile in plain Python."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import boto3
import pytest
import redis
import requests

from tests.cli.run import CHECKOUT, ok, spoolq
from tests.e2e.spoolq_server import free_port, running_server

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

ACCOUNT = "123456789012"
ORDERS = f"sqs:{ACCOUNT}:us-east-1:orders"
ORDERS_DLQ = f"sqs:{ACCOUNT}:us-east-1:orders-dlq"
FIGURES = ("acked", "receive_p50", "receive_p95", "receive_p99", "ack_p50", "ack_p95", "ack_p99",
           "redelivered", "redeliveries", "dead_lettered")


class Traffic:
    """What the test did to each queue: receive counts of the acknowledged messages, and a clock
    window around the sends and acks of each queue."""

    def __init__(self) -> None:
        self.receives: dict[str, list[int]] = defaultdict(list)
        self.window: dict[str, list[float]] = {}

    def during(self, queue: str) -> Any:
        test = self

        class Window:
            def __enter__(self) -> None:
                test.window.setdefault(queue, [time.time(), 0.0])

            def __exit__(self, *exc: object) -> None:
                test.window[queue][1] = time.time()
        return Window()


def emodb_traffic(url: str, t: Traffic) -> None:
    """300 messages; 30 released once (2 receives), 10 poison released twice (the third receive
    moves them to jobs-dlq), then the dead-letter queue drained."""
    with t.during("jobs"):
        body = [{"n": i} for i in range(300)]
        requests.post(f"{url}/queue/1/jobs/sendbatch", json=body, timeout=30).raise_for_status()
        got = requests.get(f"{url}/queue/1/jobs/poll", params={"ttl": 120, "limit": 1000}, timeout=30).json()
        assert len(got) == 300
        by_n = {m["payload"]["n"]: m["id"] for m in got}
        once, poison = [by_n[n] for n in range(30)], [by_n[n] for n in range(30, 40)]
        done = [by_n[n] for n in range(40, 300)]
        requests.post(f"{url}/queue/1/jobs/ack", json=done, timeout=30).raise_for_status()
        t.receives["jobs"] += [1] * len(done)
        requests.post(f"{url}/queue/1/jobs/renew", params={"ttl": 0}, json=once + poison, timeout=30).raise_for_status()
        again = requests.get(f"{url}/queue/1/jobs/poll", params={"ttl": 120, "limit": 1000}, timeout=30).json()
        assert sorted(m["id"] for m in again) == sorted(once + poison)
        requests.post(f"{url}/queue/1/jobs/ack", json=once, timeout=30).raise_for_status()
        t.receives["jobs"] += [2] * len(once)
        requests.post(f"{url}/queue/1/jobs/renew", params={"ttl": 0}, json=poison, timeout=30).raise_for_status()
        # the third receive of a message that was received max_receives (2) times dead-letters it
        assert requests.get(f"{url}/queue/1/jobs/poll", params={"limit": 1000}, timeout=30).json() == []
    with t.during("jobs-dlq"):
        dead = requests.get(f"{url}/queue/1/jobs-dlq/poll", params={"meta": "true", "limit": 1000}, timeout=30).json()
        assert len(dead) == 10
        requests.post(f"{url}/queue/1/jobs-dlq/ack", json=[m["id"] for m in dead], timeout=30).raise_for_status()
        t.receives["jobs-dlq"] += [m["receiveCount"] for m in dead]


def sqs_traffic(url: str, t: Traffic) -> None:
    """200 messages; 20 made visible again once; 5 poison (maxReceiveCount 2) end in orders-dlq."""
    sqs = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="any",
                       aws_secret_access_key="any")
    dlq_url = sqs.create_queue(QueueName="orders-dlq", Attributes={"spoolq:Archive": "true"})["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    q_url = sqs.create_queue(QueueName="orders", Attributes={
        "spoolq:Archive": "true", "VisibilityTimeout": "120",
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2})})["QueueUrl"]

    def receive_all(queue_url: str, expect: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < expect:
            got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                      AttributeNames=["ApproximateReceiveCount"]).get("Messages", [])
            assert got or len(out) == expect, (len(out), expect)
            out += got
        return out

    def delete(queue_url: str, messages: list[dict[str, Any]]) -> None:
        for i in range(0, len(messages), 10):
            sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(k), "ReceiptHandle": m["ReceiptHandle"]} for k, m in enumerate(messages[i:i + 10])])

    def show_again(messages: list[dict[str, Any]]) -> None:
        for i in range(0, len(messages), 10):
            sqs.change_message_visibility_batch(QueueUrl=q_url, Entries=[
                {"Id": str(k), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                for k, m in enumerate(messages[i:i + 10])])

    with t.during(ORDERS):
        for i in range(0, 200, 10):
            sqs.send_message_batch(QueueUrl=q_url, Entries=[
                {"Id": str(k), "MessageBody": json.dumps({"order": i + k})} for k in range(10)])
        first = receive_all(q_url, 200)
        by_order = {json.loads(m["Body"])["order"]: m for m in first}
        again_once = [by_order[n] for n in range(20)]
        poison = [by_order[n] for n in range(20, 25)]
        delete(q_url, [by_order[n] for n in range(25, 200)])
        t.receives[ORDERS] += [1] * 175
        show_again(again_once + poison)
        second = receive_all(q_url, 25)
        delete(q_url, [m for m in second if json.loads(m["Body"])["order"] < 20])
        t.receives[ORDERS] += [2] * 20
        show_again([m for m in second if json.loads(m["Body"])["order"] >= 20])
        assert "Messages" not in sqs.receive_message(QueueUrl=q_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    with t.during(ORDERS_DLQ):
        dead = receive_all(dlq_url, 5)
        delete(dlq_url, dead)
        t.receives[ORDERS_DLQ] += [int(m["Attributes"]["ApproximateReceiveCount"]) for m in dead]


def mq_traffic(url: str, t: Traffic) -> None:
    with t.during("mq:mail"):
        for i in range(100):
            assert requests.post(f"{url}/mq/mail/messages", data=f"mail {i}".encode(), timeout=10).status_code == 201
        for _ in range(100):
            r = requests.get(f"{url}/mq/mail/messages", timeout=10)
            assert r.status_code == 200
            assert requests.delete(f"{url}/mq/mail/messages/{r.headers['X-Message-Id']}", timeout=10).status_code == 200
        t.receives["mq:mail"] += [1] * 100


def disque_traffic(port: int, t: Traffic) -> None:
    """100 jobs through redis-py as pip gives it (RESP3); 10 NACKed once."""
    with t.during("disque:render"), redis.Redis(host="127.0.0.1", port=port, socket_timeout=30) as r:
        for i in range(100):
            r.execute_command("ADDJOB", "render", f"frame {i}", 0, "RETRY", 120)
        jobs = r.execute_command("GETJOBS", "COUNT", 100, "FROM", "render")
        assert len(jobs) == 100
        nacked = [j[1] for j in jobs[:10]]
        assert r.execute_command("NACK", *nacked) == 10
        assert r.execute_command("ACKJOB", *[j[1] for j in jobs[10:]]) == 90
        again = r.execute_command("GETJOBS", "COUNT", 100, "FROM", "render")
        assert sorted(j[1] for j in again) == sorted(nacked)
        assert r.execute_command("ACKJOB", *nacked) == 10
        t.receives["disque:render"] += [1] * 90 + [2] * 10


def archived(root: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((root / "archive").glob("*/*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line]
    return out


def percentile(values: list[float], p: float) -> float:
    v = sorted(values)
    pos = (len(v) - 1) * p
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def test_audit_of_a_real_server_with_archive_turned_on_through_the_service(tmp_path: Path) -> None:
    disque_port = free_port()
    t = Traffic()
    with running_server(tmp_path, keys=False, workers=2, threads=8, extra_args=("--disque-port", str(disque_port))) as s:
        # archive on through the service: the CLI, the settings API, an SQS attribute (in sqs_traffic)
        ok(spoolq("send", "jobs-dlq", "made before the archive was on", url=s.url))
        ok(spoolq("purge", "jobs-dlq", "--yes", url=s.url))
        ok(spoolq("send", "jobs", "made before the archive was on", url=s.url))
        ok(spoolq("purge", "jobs", "--yes", url=s.url))
        ok(spoolq("settings", "jobs-dlq", "--archive", "on", url=s.url))
        ok(spoolq("settings", "jobs", "--archive", "on", "--archive-retention", "7d",
                  "--dead-letter-queue", "jobs-dlq", "--max-receives", "2", url=s.url))
        assert requests.put(f"{s.url}/mq/mail", timeout=10).status_code == 201
        with redis.Redis(host="127.0.0.1", port=disque_port, protocol=2) as r:
            r.execute_command("ACKJOB", r.execute_command("ADDJOB", "render", "seed", 0))  # creates the queue
        for store in ("mq:mail", "disque:render"):
            r = requests.post(f"{s.url}/queue/1/{store}/_settings", json={"archive": True}, timeout=10)
            assert r.status_code == 200 and r.json()["archive"] is True, r.text

        emodb_traffic(s.url, t)
        sqs_traffic(s.url, t)
        mq_traffic(s.url, t)
        disque_traffic(disque_port, t)

        total = sum(len(v) for v in t.receives.values())
        deadline = time.monotonic() + 120
        while len(records := archived(s.root)) < total and time.monotonic() < deadline:
            time.sleep(1)  # maintenance compacts acknowledged messages into segments
        assert len(records) == total, (len(records), total)

    # the archive holds exactly what the traffic acknowledged, with times inside the test's clock
    by_queue: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        by_queue[rec["queue"]].append(rec)
    assert set(by_queue) == set(t.receives)
    sources = {"jobs-dlq": "jobs", ORDERS_DLQ: ORDERS}  # a dead-lettered message keeps its send time
    for queue, recs in by_queue.items():
        assert sorted(r["receive_count"] for r in recs) == sorted(t.receives[queue]), queue
        start, end = t.window[sources.get(queue, queue)][0], t.window[queue][1]
        for r in recs:
            assert start - 1 <= r["sent_at"] <= r["first_received_at"] <= r["acked_at"] <= end + 1, (queue, r)

    out = tmp_path / "audit"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(str(CHECKOUT / p) for p in ("service", "clients/python", "clients/spark")))
    done = subprocess.run([sys.executable, "-m", "spoolq.cli", "pipeline", "--master", "local[2]", "audit",
                           str(s.root), "--out", str(out), "--dead-letter", "jobs-dlq=jobs",
                           "--dead-letter", f"{ORDERS_DLQ}={ORDERS}"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Traceback" not in done.stderr

    import pyarrow.parquet as pq

    rows = pq.read_table(out / "audit.parquet").to_pylist()
    got = {(r["queue"], int(r["hour"].timestamp())): r for r in rows}
    want: dict[tuple[str, int], dict[str, float]] = {}
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["queue"], int(r["acked_at"] // 3600) * 3600)].append(r)
    for key, recs in groups.items():
        fig: dict[str, float] = {"acked": len(recs), "redelivered": sum(r["receive_count"] > 1 for r in recs),
                                 "redeliveries": sum(r["receive_count"] - 1 for r in recs), "dead_lettered": 0}
        for p in (50, 95, 99):
            fig[f"receive_p{p}"] = percentile([r["first_received_at"] - r["sent_at"] for r in recs], p / 100)
            fig[f"ack_p{p}"] = percentile([r["acked_at"] - r["sent_at"] for r in recs], p / 100)
        want[key] = fig
    for dlq, source in (("jobs-dlq", "jobs"), (ORDERS_DLQ, ORDERS)):
        for (queue, hour), fig in list(want.items()):
            if queue == dlq:
                want.setdefault((source, hour), {"acked": 0, "redelivered": 0, "redeliveries": 0})
                want[(source, hour)]["dead_lettered"] = fig["acked"]
    assert set(got) == set(want)
    for key, w in want.items():
        for col in FIGURES:
            if col in w:
                assert got[key][col] == pytest.approx(w[col], abs=1e-9), (key, col)
            else:
                assert got[key][col] is None, (key, col)
    # and the figures the traffic fixes, whatever the hours
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (queue, _hour), r in got.items():
        for col in ("acked", "redelivered", "redeliveries", "dead_lettered"):
            totals[queue][col] += r[col]
    assert dict(totals["jobs"]) == {"acked": 290, "redelivered": 30, "redeliveries": 30, "dead_lettered": 10}
    assert totals["jobs-dlq"]["acked"] == 10 and totals["jobs-dlq"]["redelivered"] == 10
    assert dict(totals[ORDERS]) == {"acked": 195, "redelivered": 20, "redeliveries": 20, "dead_lettered": 5}
    assert totals[ORDERS_DLQ]["acked"] == 5
    assert dict(totals["mq:mail"]) == {"acked": 100, "redelivered": 0, "redeliveries": 0, "dead_lettered": 0}
    assert dict(totals["disque:render"]) == {"acked": 100, "redelivered": 10, "redeliveries": 10, "dead_lettered": 0}
    report = (out / "report.html").read_text()
    assert f'<span id="grand-total">{total}</span>' in report
