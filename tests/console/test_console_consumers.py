"""Who is consuming, in Chromium against a real gunicorn spoolq (two workers) with the Disque door:
SQS long polls, an EmoDB long poll and blocked Disque GETJOBs waiting on queues, whichever worker
or process holds them, show in the list and on the queue's page with the time of the latest poll;
when messages arrive and the polls are answered, the count goes back to zero.

Screenshots: ``60-consumers-list.png``, ``61-consumers-queue.png``."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import boto3
import pytest
import redis
import requests

from tests.e2e.spoolq_server import Server

pytestmark = pytest.mark.browser

ORDERS = "sqs:123456789012:us-east-1:Orders"


def _waiting(page: Any, store_name: str, n: int) -> None:
    page.wait_for_function(
        """([q, n]) => { const c = document.querySelector(`[data-queue='${q}'] [data-col=consumers]`);
                         return c && c.textContent.includes(`${n} waiting`); }""", arg=[store_name, n], timeout=15_000)


def test_long_polls_and_blocked_getjobs_per_queue(browser: Any, disque_server: Server, artifacts: Path) -> None:
    url = disque_server.url
    port = disque_server.disque_port  # type: ignore[attr-defined]
    sqs = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="console",
                       aws_secret_access_key="console")
    orders = sqs.create_queue(QueueName="Orders")["QueueUrl"]
    assert requests.post(f"{url}/queue/1/idle/send", json={"never": "polled"}, timeout=5).ok
    jobs = redis.Redis(port=port, protocol=2, socket_timeout=30)
    jobs.execute_command("ADDJOB", "MyJobs", "warm-up", "0")
    assert jobs.execute_command("GETJOB", "NOHANG", "FROM", "MyJobs")  # the queue exists, now empty
    assert requests.post(f"{url}/queue/1/work/send", json={"n": 0}, timeout=5).ok
    assert requests.get(f"{url}/queue/1/work/poll?limit=1", timeout=5).json()

    got: dict[str, list[Any]] = {"sqs": [], "disque": [], "emodb": []}

    def sqs_poll() -> None:
        got["sqs"].append(sqs.receive_message(QueueUrl=orders, WaitTimeSeconds=20).get("Messages", []))

    def getjob() -> None:
        got["disque"].append(redis.Redis(port=port, protocol=2, socket_timeout=30).execute_command(
            "GETJOB", "TIMEOUT", "20000", "FROM", "MyJobs"))

    def emodb_poll() -> None:
        got["emodb"].append(requests.get(f"{url}/queue/1/work/poll?limit=1&wait=20", timeout=30).json())

    waiters = [threading.Thread(target=f) for f in (sqs_poll, sqs_poll, getjob, getjob, getjob, emodb_poll)]
    for t in waiters:
        t.start()
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(url + "/console/")
        _waiting(page, ORDERS, 2)
        _waiting(page, "disque:MyJobs", 3)
        _waiting(page, "work", 1)
        assert "no polls" in page.inner_text("[data-queue=idle] [data-col=consumers]")
        assert "polled" in page.inner_text(f"[data-queue='{ORDERS}'] [data-col=consumers]")
        page.screenshot(path=str(artifacts / "60-consumers-list.png"), full_page=True)

        page.click("[data-queue='disque:MyJobs'] .qname")
        page.wait_for_selector("[data-testid=consumer-door][data-door=disque]")
        assert page.inner_text("[data-testid=consumer-door][data-door=disque] [data-col=waiting]") == "3 blocked GETJOBs"
        page.screenshot(path=str(artifacts / "61-consumers-queue.png"), full_page=True)

        # messages arrive: the waiting polls are answered and leave the count
        for i in range(3):
            jobs.execute_command("ADDJOB", "MyJobs", f"job-{i}", "0")
        page.wait_for_function("""() => document.querySelector(
            "[data-testid=consumer-door][data-door=disque] [data-col=waiting]").textContent === '0'""", timeout=15_000)
        assert page.inner_text("[data-testid=consumer-door][data-door=disque] [data-col=last-poll]") in (
            "just now", "1 s ago", "2 s ago", "3 s ago")
        for i in range(2):
            sqs.send_message(QueueUrl=orders, MessageBody=f"o{i}")
        assert requests.post(f"{url}/queue/1/work/send", json={"n": 1}, timeout=5).ok
        for t in waiters:
            t.join(timeout=25)
        page.goto(url + "/console/")
        page.wait_for_function(f"""() => !document.querySelector("[data-queue='{ORDERS}'] .waiting")""", timeout=15_000)
    finally:
        for t in waiters:
            t.join(timeout=25)
        page.close()
    assert sorted(j[0][2] for j in got["disque"]) == [b"job-0", b"job-1", b"job-2"]
    assert sorted(m[0]["Body"] for m in got["sqs"] if m) == ["o0", "o1"]
    assert [p[0]["payload"] for p in got["emodb"]] == [{"n": 1}]
