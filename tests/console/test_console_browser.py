"""The web console in a real browser against a real gunicorn spoolq: list -> queue -> peek -> send ->
purge -> move with progress -> cancel -> redrive, then the same console with API keys.

Every step leaves a screenshot in ``test-artifacts/console/``."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests

from tests.e2e.spoolq_server import Server

pytestmark = pytest.mark.browser

SQS_PREFIX = "sqs:123456789012:us-east-1:"


def _seed_open(url: str) -> None:
    s = requests.Session()
    assert s.post(f"{url}/queue/1/orders/sendbatch", json=[
        {"order": i, "items": [{"sku": f"A-{i}", "qty": 2}], "paid": i % 2 == 0} for i in range(40)]).ok
    for _ in range(3):
        assert s.post(f"{url}/queue/1/bulk/sendbatch", json=list(range(1000))).ok
    assert s.post(f"{url}/queue/1/bulk-copy/send", json="first").ok
    assert s.post(f"{url}/dedupq/1/events/send", json={"event": "signup"}).ok
    assert s.put(f"{url}/mq/thumbs").status_code in (200, 201)
    assert s.post(f"{url}/mq/thumbs/messages", data=b"\x89PNG...").status_code == 201
    sqs = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="console",
                       aws_secret_access_key="console")
    dlq = sqs.create_queue(QueueName="jobs-dlq")["QueueUrl"]
    jobs = sqs.create_queue(QueueName="jobs", Attributes={"RedrivePolicy": json.dumps({
        "deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:jobs-dlq", "maxReceiveCount": "3"})})["QueueUrl"]
    for i in range(5):
        sqs.send_message(QueueUrl=jobs, MessageBody=json.dumps({"job": i}))
    for i in range(4):
        sqs.send_message(QueueUrl=dlq, MessageBody=f"failed job {i}")


def _size(url: str, queue: str, key: str | None = None) -> int:
    headers = {"X-BV-API-Key": key} if key else {}
    return int(requests.get(f"{url}/queue/1/{queue}/size", headers=headers, timeout=5).text)


def _row(page: Any, store_name: str) -> Any:
    return page.locator(f"[data-testid=queue-row][data-queue='{store_name}']")


def test_console_open_mode(browser: Any, open_server: Server, artifacts: Path) -> None:
    url = open_server.url
    _seed_open(url)
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "/")
    assert page.url.endswith("/console/")
    page.wait_for_selector("[data-testid=queue-row]")

    # every door, with the names users know
    for store_name, name, door in [("orders", "orders", "EmoDB"), ("__dedupq:events", "events", "EmoDB dedup"),
                                   (SQS_PREFIX + "jobs", "jobs", "SQS"), ("mq:thumbs", "thumbs", "MQ")]:
        row = _row(page, store_name)
        assert row.locator(".qname").inner_text() == name
        assert row.locator(".badge").first.text_content() == door
    assert _row(page, SQS_PREFIX + "jobs").locator("[data-col=dead]").inner_text() == "4"

    # live rates: traffic shows up without a reload
    stop = threading.Event()

    def traffic() -> None:
        while not stop.is_set():
            requests.get(f"{url}/queue/1/events-live/poll?limit=1", timeout=5)
            requests.post(f"{url}/queue/1/live/send", json={"tick": True}, timeout=5)
            stop.wait(0.05)

    t = threading.Thread(target=traffic)
    t.start()
    try:
        page.wait_for_selector("[data-testid=queue-row][data-queue='live']", timeout=10_000)
        page.wait_for_function("""() => { const r = document.querySelector("[data-queue='live'] .rate b");
                                  return r && parseFloat(r.textContent) > 0; }""", timeout=15_000)
    finally:
        stop.set()
        t.join()
    page.screenshot(path=str(artifacts / "01-queues.png"), full_page=True)

    # filter and sort
    page.fill("[data-testid=filter]", "ord")
    page.wait_for_function("document.querySelectorAll('[data-testid=queue-row]').length === 1")
    page.fill("[data-testid=filter]", "")
    page.click("th[data-sort=ready]")
    assert page.locator("[data-testid=queue-row]").first.get_attribute("data-queue") == "bulk"

    # queue page, peek with pretty-printed payloads
    page.click("[data-queue=orders] .qname")
    page.wait_for_selector("[data-testid=queue-title]")
    assert page.locator("[data-testid=settings]").inner_text().count("30 s") >= 1
    page.click("[data-testid=peek]")
    page.wait_for_selector("[data-testid=message]")
    assert page.locator("[data-testid=message]").count() == 20
    first = page.locator("[data-testid=message] pre").first.inner_text()
    assert re.search(r'^\{\n  "items": \[', first) or '\n  "order": 0' in first
    page.screenshot(path=str(artifacts / "02-queue-peek.png"), full_page=True)

    # send a test message
    page.fill("[data-testid=send-body]", '{"from": "the console"}')
    page.click("[data-testid=send]")
    page.wait_for_selector("[data-testid=toast]:has-text('Sent')")
    assert _size(url, "orders") == 41

    # purge: disabled until the name is typed
    assert page.is_disabled("[data-testid=purge]")
    page.fill("[data-testid=purge-confirm]", "order")
    assert page.is_disabled("[data-testid=purge]")
    page.fill("[data-testid=purge-confirm]", "orders")
    page.screenshot(path=str(artifacts / "03-purge-confirm.png"), full_page=True)
    page.click("[data-testid=purge]")
    page.wait_for_selector("[data-testid=toast]:has-text('Purged')")
    assert _size(url, "orders") == 0
    page.wait_for_function("document.querySelector('[data-testid=count-ready]').textContent === '0'")

    # move with a progress bar (the store records progress every 500 messages)
    page.goto(url + "/console/#/queue/bulk")
    page.wait_for_selector("[data-testid=queue-title][data-queue=bulk]")
    page.wait_for_selector("[data-testid=move-to] option[value=bulk-copy]", state="attached")
    page.select_option("[data-testid=move-to]", "bulk-copy")
    page.fill("[data-testid=move-rate]", "600")
    page.click("[data-testid=move-start]")
    page.wait_for_selector("[data-testid=move][data-state=IN_PROGRESS]")
    page.wait_for_function("""() => { const bar = document.querySelector("[data-testid=move][data-state=IN_PROGRESS] .progress div");
                              return bar && parseFloat(bar.style.width) > 0; }""", timeout=15_000)
    page.screenshot(path=str(artifacts / "04-move-progress.png"), full_page=True)
    page.wait_for_selector("[data-testid=move][data-state=COMPLETE]", timeout=30_000)
    assert _size(url, "bulk") == 0 and _size(url, "bulk-copy") == 3001

    # cancel a slow move (a running move notices a cancel between chunks of 500 messages)
    page.goto(url + "/console/#/queue/bulk-copy")
    page.wait_for_selector("[data-testid=queue-title][data-queue=bulk-copy]")
    page.wait_for_selector("[data-testid=move-to] option[value=bulk]", state="attached")
    page.select_option("[data-testid=move-to]", "bulk")
    page.fill("[data-testid=move-rate]", "200")
    page.click("[data-testid=move-start]")
    page.click("[data-testid=move][data-state=IN_PROGRESS] [data-testid=move-cancel]")
    page.wait_for_selector("[data-testid=move][data-state=CANCELLED]", timeout=15_000)
    assert 0 < _size(url, "bulk") < 3001
    page.screenshot(path=str(artifacts / "05-move-cancelled.png"), full_page=True)

    # redrive the SQS dead-letter queue back to its source
    page.goto(url + f"/console/#/queue/{SQS_PREFIX}jobs-dlq")
    page.wait_for_selector(f"[data-testid=queue-title][data-queue='{SQS_PREFIX}jobs-dlq']")
    page.click("[data-testid=redrive]")
    page.wait_for_selector("[data-testid=toast]:has-text('Redrive')")
    page.wait_for_function("document.querySelector('[data-testid=count-ready]').textContent === '0'",
                           timeout=15_000)
    page.goto(url + f"/console/#/queue/{SQS_PREFIX}jobs")
    page.wait_for_selector(f"[data-testid=queue-title][data-queue='{SQS_PREFIX}jobs']")
    page.wait_for_function("document.querySelector('[data-testid=count-ready]')?.textContent === '9'",
                           timeout=10_000)

    # the server page
    page.goto(url + "/console/#/server")
    page.wait_for_selector("[data-testid=server-node]")
    assert page.inner_text("[data-testid=server-node]") == "e2e"
    assert page.inner_text("[data-testid=server-root]") == str(open_server.root)
    assert page.inner_text("[data-testid=server-flush]").endswith("ms")
    page.screenshot(path=str(artifacts / "06-server.png"), full_page=True)
    page.close()


def test_console_with_keys(browser: Any, keyed_server: Server, artifacts: Path) -> None:
    url = keyed_server.url
    admin = {"X-BV-API-Key": "console-admin"}
    for q in ("team-orders", "payroll"):
        assert requests.post(f"{url}/queue/1/{q}/sendbatch", json=[{"n": i} for i in range(3)], headers=admin).ok
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "/console/")
    page.wait_for_selector("[data-testid=login]", state="visible")
    page.screenshot(path=str(artifacts / "10-login.png"))
    page.fill("[data-testid=login-key]", "not-a-key")
    page.click("[data-testid=login-submit]")
    page.wait_for_selector("[data-testid=login-error]:has-text('not known')")

    # a viewer sees every queue and may do nothing
    page.fill("[data-testid=login-key]", "console-viewer")
    page.click("[data-testid=login-submit]")
    page.wait_for_selector("[data-testid=queue-row][data-queue=payroll]")
    assert page.inner_text("[data-testid=who]") == "key: viewer"
    page.goto(url + "/console/#/queue/payroll")
    page.wait_for_selector("[data-testid=queue-title]")
    for control in ("peek", "send", "send-body", "purge", "purge-confirm", "move-start", "unclaim"):
        assert page.is_disabled(f"[data-testid={control}]"), control
    page.screenshot(path=str(artifacts / "11-viewer-disabled.png"), full_page=True)
    # ... and the server refuses what the page disabled
    refused = requests.post(f"{url}/console/api/queues/payroll/purge", json={"confirm": "payroll"},
                            headers={"X-BV-API-Key": "console-viewer"}, timeout=5)
    assert refused.status_code == 403
    assert _size(url, "payroll", "console-admin") == 3

    # a team key sees only its queues, and may act on them
    page.click("[data-testid=signout]")
    page.wait_for_selector("[data-testid=login]", state="visible")
    page.fill("[data-testid=login-key]", "console-team")
    page.click("[data-testid=login-submit]")
    page.wait_for_selector("[data-testid=queue-row][data-queue=team-orders]")
    assert page.locator("[data-testid=queue-row]").count() == 1
    page.screenshot(path=str(artifacts / "12-team-queues.png"), full_page=True)
    page.click("[data-queue=team-orders] .qname")
    page.wait_for_selector("[data-testid=queue-title]")
    page.click("[data-testid=peek]")
    page.wait_for_selector("[data-testid=message]")
    page.fill("[data-testid=send-body]", '{"n": 99}')
    page.click("[data-testid=send]")
    page.wait_for_selector("[data-testid=toast]:has-text('Sent')")
    assert _size(url, "team-orders", "console-admin") == 4
    page.goto(url + "/console/#/queue/payroll")
    page.wait_for_selector("[data-testid=not-found], .card.empty")
    assert _size(url, "payroll", "console-admin") == 3
    page.close()
