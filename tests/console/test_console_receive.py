"""Receiving messages in the console, in Chromium against a real gunicorn spoolq with the Disque door:
receive with a claim, then acknowledge, release or delete each; delete one message by id (a Disque
job id too); a message whose claim expired and that a worker received since is not acknowledged
from the console behind that worker's back. The queues are ones
other doors made with capital letters (``sqs:123456789012:us-east-1:Orders``, ``disque:MyJobs``),
reached from the list and checked through their own doors afterwards. A key that may only look
gets every control disabled and every call refused, the data directory unchanged.

Screenshots: ``40-received.png``, ``41-acted.png``, ``42-disque-claim-lost.png``,
``43-viewer-cannot-receive.png``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import boto3
import pytest
import redis
import requests

from spoolq.queues import job_ids as job_ids_module
from tests.console.conftest import data_state, settled_state
from tests.e2e.spoolq_server import Server

pytestmark = pytest.mark.browser

ORDERS = "sqs:123456789012:us-east-1:Orders"


def _counts(url: str, store_name: str, key: str | None = None) -> dict[str, int]:
    headers = {"X-BV-API-Key": key} if key else {}
    q = requests.get(f"{url}/console/api/queues/{store_name}", headers=headers, timeout=5).json()
    return {k: q[k] for k in ("ready", "claimed", "delayed")}


def _card(page: Any, n: int) -> Any:
    return page.locator("[data-testid=message]").nth(n)


def test_receive_acknowledge_release_delete_on_queues_named_with_capitals(
        browser: Any, disque_server: Server, artifacts: Path) -> None:
    url = disque_server.url
    sqs = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="console",
                       aws_secret_access_key="console")
    orders = sqs.create_queue(QueueName="Orders")["QueueUrl"]
    for i in range(3):
        sqs.send_message(QueueUrl=orders, MessageBody=f'{{"order": {i}}}')
    jobs = redis.Redis(port=disque_server.disque_port, protocol=2, socket_timeout=10)  # type: ignore[attr-defined]
    job_ids = [jobs.execute_command("ADDJOB", "MyJobs", f"job-{i}", "0").decode() for i in range(3)]

    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(url + "/console/")
    page.click(f"[data-queue='{ORDERS}'] .qname")
    page.wait_for_selector(f"[data-testid=queue-title][data-queue='{ORDERS}']")

    # receive two with a claim
    page.select_option("[data-testid=recv-limit]", "5")
    page.fill("[data-testid=recv-vt]", "300")
    page.click("[data-testid=receive]")
    page.wait_for_selector("[data-testid=message][data-state=received]")
    assert page.locator("[data-testid=message][data-state=received]").count() == 3
    assert _counts(url, ORDERS) == {"ready": 0, "claimed": 3, "delayed": 0}
    assert "claimed by you until" in _card(page, 0).inner_text().lower()
    page.screenshot(path=str(artifacts / "40-received.png"), full_page=True)

    # acknowledge the first, release the second, delete the third
    _card(page, 0).locator("[data-testid=msg-ack]").click()
    page.wait_for_selector("[data-testid=message][data-state=acknowledged]")
    _card(page, 1).locator("[data-testid=msg-release]").click()
    page.wait_for_selector("[data-testid=message][data-state=released]")
    _card(page, 2).locator("[data-testid=msg-delete]").click()
    page.wait_for_selector("[data-testid=message][data-state=deleted]")
    page.wait_for_function("document.querySelector('[data-testid=count-claimed]').textContent === '0'")
    page.screenshot(path=str(artifacts / "41-acted.png"), full_page=True)
    # the SQS door agrees: only the released one is left, received once before
    got = sqs.receive_message(QueueUrl=orders, MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"])
    assert [(m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in got["Messages"]] == [('{"order": 1}', "2")]
    sqs.delete_message(QueueUrl=orders, ReceiptHandle=got["Messages"][0]["ReceiptHandle"])
    # a test send from the console reaches SQS consumers of the capitalised queue
    page.fill("[data-testid=send-body]", '{"from": "console"}')
    page.click("[data-testid=send]")
    page.wait_for_selector("[data-testid=toast]:has-text('Sent')")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=orders)["Messages"]] == ['{"from": "console"}']

    # the Disque queue MyJobs: from the list, delete a job by its Disque id, acknowledge one
    page.goto(url + "/console/#/")
    page.click("[data-queue='disque:MyJobs'] .qname")
    page.wait_for_selector("[data-testid=queue-title][data-queue='disque:MyJobs']")
    page.fill("[data-testid=delete-id]", job_ids[2])
    page.click("[data-testid=delete-by-id]")
    page.wait_for_selector("[data-testid=toast]:has-text('Deleted D-')")
    assert jobs.execute_command("QLEN", "MyJobs") == 2
    page.fill("[data-testid=delete-id]", job_ids[2])
    page.click("[data-testid=delete-by-id]")
    page.wait_for_selector("[data-testid=toast]:has-text('no message')")
    page.click("[data-testid=receive]")
    page.wait_for_selector("[data-testid=message][data-state=received]")
    received = _card(page, 0).get_attribute("data-id")  # a standard queue's order is best effort
    acked, left = sorted(job_ids[:2], key=lambda j: job_ids_module.to_store(j) != received)
    _card(page, 0).locator("[data-testid=msg-ack]").click()
    page.wait_for_selector("[data-testid=message][data-state=acknowledged]")
    assert jobs.execute_command("QLEN", "MyJobs") == 1
    assert job_ids_module.to_store(acked) == received and jobs.execute_command("SHOW", acked) is None

    # the console's claim expired and a worker received the job since: acknowledging from the
    # console does nothing (the worker's claim stands) and says so
    page.fill("[data-testid=recv-vt]", "1")
    page.click("[data-testid=receive]")
    page.wait_for_selector("[data-testid=message][data-state=received]")
    time.sleep(1.2)
    got_jobs = None
    for _ in range(50):
        got_jobs = jobs.execute_command("GETJOB", "NOHANG", "FROM", "MyJobs")
        if got_jobs:
            break
        time.sleep(0.1)
    assert got_jobs and [j[1].decode() for j in got_jobs] == [left]
    _card(page, 0).locator("[data-testid=msg-ack]").click()
    page.wait_for_selector("[data-testid=message][data-state='claim lost']")
    page.wait_for_selector("[data-testid=toast]:has-text('nothing done')")
    page.screenshot(path=str(artifacts / "42-disque-claim-lost.png"), full_page=True)
    assert jobs.execute_command("ACKJOB", left) == 1  # the worker's claim was left alone
    page.close()


def test_a_key_that_may_only_look_cannot_receive_or_delete(browser: Any, keyed_server: Server,
                                                            artifacts: Path) -> None:
    url = keyed_server.url
    admin = {"X-BV-API-Key": "console-admin"}
    assert requests.post(f"{url}/queue/1/ledger/sendbatch", json=[{"n": 1}, {"n": 2}], headers=admin, timeout=5).ok
    msg_id = requests.get(f"{url}/queue/1/ledger/peek", headers=admin, timeout=5).json()[0]["id"]
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "/console/#/queue/ledger")
    page.wait_for_selector("[data-testid=login]", state="visible")
    page.fill("[data-testid=login-key]", "console-viewer")
    page.click("[data-testid=login-submit]")
    page.wait_for_selector("[data-testid=queue-title][data-queue=ledger]")
    before = settled_state(keyed_server.root)
    for control in ("receive", "delete-id", "delete-by-id", "peek"):
        assert page.is_disabled(f"[data-testid={control}]"), control
    page.screenshot(path=str(artifacts / "43-viewer-cannot-receive.png"), full_page=True)
    viewer = {"X-BV-API-Key": "console-viewer"}
    for path, body in [("receive", {}), ("ack", {"receipts": [msg_id]}), ("release", {"receipts": [msg_id]}),
                       (f"messages/{msg_id}/delete", {})]:
        r = requests.post(f"{url}/console/api/queues/ledger/{path}", json=body, headers=viewer, timeout=5)
        assert r.status_code == 403, (path, r.text)
    assert data_state(keyed_server.root) == before
    assert _counts(url, "ledger", "console-admin") == {"ready": 2, "claimed": 0, "delayed": 0}
    page.close()


def test_a_press_held_across_a_refresh_still_clicks(browser: Any, disque_server: Server) -> None:
    """The page refreshes every two seconds; a refresh that came between a button's press and its
    release used to redraw the page under the pointer, and the click was lost without a word."""
    url = disque_server.url
    assert requests.post(f"{url}/queue/1/presses/send", json={"n": 1}, timeout=5).ok
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(url + "/console/#/queue/presses")
    page.wait_for_selector("[data-testid=queue-title][data-queue=presses]")
    page.click("[data-testid=receive]")
    page.wait_for_selector("[data-testid=message][data-state=received]")
    ack = page.locator("[data-testid=msg-ack]").element_handle()
    ack.hover()
    page.mouse.down()
    with page.expect_response(lambda r: "/console/api/queues/presses" in r.url, timeout=10_000):
        pass  # a refresh has fetched the queue while the button is held
    page.wait_for_timeout(500)  # and would have drawn it by now
    assert ack.evaluate("b => b.isConnected"), "the refresh redrew the page under a held press"
    page.mouse.up()
    page.wait_for_selector("[data-testid=message][data-state=acknowledged]", timeout=5_000)
    assert _counts(url, "presses") == {"ready": 0, "claimed": 0, "delayed": 0}
    page.wait_for_function("document.querySelector('[data-testid=count-ready]').textContent === '0'")
    page.close()
