"""Editing a queue's settings in the console, in Chromium against a real gunicorn spoolq, through
the settings API every door shares (``/queue/1/<queue>/_settings``): visibility timeout, delay,
retention, receive wait, max receives and dead-letter queue, archive on/off and its retention.
What the console saved is what the doors then do (boto3 reads the SQS attributes, an EmoDB poll
claims for the new visibility timeout, an acknowledged message is archived). A value the server
refuses is shown under the form and changes nothing; so is a key that may not change settings.

Screenshots: ``50-settings-edit.png``, ``51-settings-refused.png``, ``52-settings-saved.png``,
``53-settings-viewer.png``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests

from tests.console.conftest import data_state, settled_state
from tests.e2e.spoolq_server import Server

pytestmark = pytest.mark.browser

SQS = "sqs:123456789012:us-east-1:"


def _edit(page: Any, fields: dict[str, str]) -> None:
    page.click("[data-testid=settings-edit]")
    page.wait_for_selector("[data-testid=settings-form]")
    for name, value in fields.items():
        page.fill(f"[data-testid=set-{name}]", value)


def test_edit_settings_and_the_doors_follow(browser: Any, open_server: Server, artifacts: Path) -> None:
    url = open_server.url
    for q in ("work", "work-dlq"):
        assert requests.post(f"{url}/queue/1/{q}/send", json={"seed": q}, timeout=5).ok
    sqs = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="console",
                       aws_secret_access_key="console")
    jobs = sqs.create_queue(QueueName="Jobs")["QueueUrl"]
    sqs.create_queue(QueueName="Jobs-dlq")
    page = browser.new_page(viewport={"width": 1440, "height": 1100})

    # an EmoDB queue: every setting at once
    page.goto(url + "/console/#/queue/work")
    page.wait_for_selector("[data-testid=queue-title][data-queue=work]")
    _edit(page, {"visibility": "2m", "delay": "0", "retention": "3d", "wait": "10s", "archive-retention": "30d"})
    page.select_option("[data-testid=set-dlq]", "work-dlq")
    page.fill("[data-testid=set-max-receives]", "3")
    page.check("[data-testid=set-archive]")
    page.screenshot(path=str(artifacts / "50-settings-edit.png"), full_page=True)
    page.click("[data-testid=settings-save]")
    page.wait_for_selector("[data-testid=toast]:has-text('Settings saved')")
    page.wait_for_selector("[data-testid=settings-archive]:has-text('on, kept 30 d')")
    assert "work-dlq after 3 receives" in page.inner_text("[data-testid=settings-dlq]")
    page.screenshot(path=str(artifacts / "52-settings-saved.png"), full_page=True)
    saved = requests.get(f"{url}/queue/1/work/_settings", timeout=5).json()
    assert saved == {"queue": "work", "kind": "emodb", "visibility_timeout": 120, "delay": 0, "retention": 259200,
                     "receive_wait": 10, "max_message_bytes": 1048576,
                     "dead_letter": {"queue": "work-dlq", "max_receives": 3}, "archive": True,
                     "archive_retention": 2592000}
    # a receive that names no time claims for the new visibility timeout (EmoDB polls always name
    # one), and an acknowledged message is archived
    started = time.time()
    got = requests.post(f"{url}/console/api/queues/work/receive", json={}, timeout=5).json()["messages"]
    assert 115 < got[0]["claimed_until"] - started < 125
    assert requests.post(f"{url}/queue/1/work/ack", json=[got[0]["id"]], timeout=5).ok
    deadline = time.monotonic() + 15  # maintenance compacts acked messages into a segment
    records: list[dict[str, Any]] = []
    while not records and time.monotonic() < deadline:
        records = [json.loads(line) for seg in (open_server.root / "archive").glob("work/*.jsonl")
                   for line in seg.read_text().splitlines()]
        time.sleep(0.2)
    assert [(r["id"], json.loads(r["body"])) for r in records] == [(got[0]["id"], {"seed": "work"})]

    # an SQS queue: a value outside SQS's range is refused, nothing changes
    page.goto(url + "/console/#/queue/" + requests.utils.quote(SQS + "Jobs", safe=""))
    page.wait_for_selector(f"[data-testid=queue-title][data-queue='{SQS}Jobs']")
    before = settled_state(open_server.root)
    _edit(page, {"delay": "16m"})
    page.click("[data-testid=settings-save]")
    page.wait_for_selector("[data-testid=settings-error]:has-text('delay must be between 0 and 900')")
    page.screenshot(path=str(artifacts / "51-settings-refused.png"), full_page=True)
    page.fill("[data-testid=set-delay]", "soon")
    page.click("[data-testid=settings-save]")
    page.wait_for_selector("[data-testid=settings-error]:has-text('Delivery delay: write a number')")
    assert data_state(open_server.root) == before
    # the dead-letter list offers only SQS queues of the same account and region
    offered = {o.get_attribute("value") for o in page.locator("[data-testid=set-dlq] option").all()}
    assert offered == {"", SQS + "Jobs-dlq"}
    page.fill("[data-testid=set-delay]", "15m")
    page.fill("[data-testid=set-visibility]", "45")
    page.select_option("[data-testid=set-dlq]", SQS + "Jobs-dlq")
    page.fill("[data-testid=set-max-receives]", "2")
    page.click("[data-testid=settings-save]")
    page.wait_for_selector("[data-testid=toast]:has-text('Settings saved')")
    attrs = sqs.get_queue_attributes(QueueUrl=jobs, AttributeNames=["All"])["Attributes"]
    assert attrs["DelaySeconds"] == "900" and attrs["VisibilityTimeout"] == "45"
    assert json.loads(attrs["RedrivePolicy"]) == {
        "deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:Jobs-dlq", "maxReceiveCount": 2}
    # and the dead-letter queue can be removed again
    _edit(page, {})
    page.select_option("[data-testid=set-dlq]", "")
    page.click("[data-testid=settings-save]")
    page.wait_for_selector("[data-testid=settings-dlq]:has-text('none')")
    assert "RedrivePolicy" not in sqs.get_queue_attributes(QueueUrl=jobs, AttributeNames=["All"])["Attributes"]
    page.close()


def test_a_key_that_may_not_change_settings(browser: Any, keyed_server: Server, artifacts: Path) -> None:
    url = keyed_server.url
    admin = {"X-BV-API-Key": "console-admin"}
    assert requests.post(f"{url}/queue/1/tuned/send", json={"n": 1}, headers=admin, timeout=5).ok
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "/console/#/queue/tuned")
    page.wait_for_selector("[data-testid=login]", state="visible")
    page.fill("[data-testid=login-key]", "console-viewer")
    page.click("[data-testid=login-submit]")
    page.wait_for_selector("[data-testid=queue-title][data-queue=tuned]")
    before = settled_state(keyed_server.root)
    assert page.is_disabled("[data-testid=settings-edit]")
    page.screenshot(path=str(artifacts / "53-settings-viewer.png"), full_page=True)
    r = requests.post(f"{url}/queue/1/tuned/_settings", json={"archive": True},
                      headers={"X-BV-API-Key": "console-viewer"}, timeout=5)
    assert r.status_code == 403
    assert data_state(keyed_server.root) == before
    assert requests.get(f"{url}/queue/1/tuned/_settings", headers=admin, timeout=5).json()["archive"] is False
    page.close()
