"""Creating and deleting queues in the console, in Chromium against a real gunicorn spoolq with the
Disque door on: a queue of every door's kind made in the console is then used through that door's
own client (boto3, redis-cli's protocol, /mq, /queue/1, /dedupq/1); deleting works for every door,
capital letters included; "Delete empty queues" keeps a queue that got a message meanwhile; and
with API keys, what a key may not do is refused with the data directory left exactly as it was.

Screenshots: ``30-new-queue.png``, ``31-create-refused.png``, ``32-delete-queue.png``,
``33-delete-empty.png``, ``34-delete-empty-done.png``, ``35-viewer-refused.png``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
import redis
import requests
from botocore.exceptions import ClientError

from spoolq.http.console.base import LIST_MAX_AGE
from tests.console.conftest import data_state, settled_state
from tests.e2e.spoolq_server import Server

pytestmark = pytest.mark.browser

SQS = "sqs:123456789012:us-east-1:"


def _sqs(url: str) -> Any:
    return boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="console",
                        aws_secret_access_key="console")


def _create(page: Any, kind: str, name: str, *, cbd: bool = False, shot: Path | None = None) -> None:
    page.click("[data-testid=new-queue]")
    page.wait_for_selector("[data-testid=dialog]", state="visible")
    page.select_option("[data-testid=new-kind]", kind)
    page.fill("[data-testid=new-name]", name)
    if cbd:
        page.check("[data-testid=new-cbd]")
    if shot is not None:
        page.screenshot(path=str(shot), full_page=True)
    page.click("[data-testid=new-submit]")


def _listed(page: Any) -> set[str]:
    page.wait_for_selector("[data-testid=queues], [data-testid=no-queues]")
    return {r.get_attribute("data-queue") for r in page.locator("[data-testid=queue-row]").all()}


def _listed_once_current(page: Any, holds: Callable[[set[str]], bool]) -> set[str]:
    """The console's list once it shows what ``holds`` expects, or as it is when the list's
    documented age (``LIST_MAX_AGE``: a worker other than the one that made the change may
    answer from its snapshot) has surely passed."""
    deadline = time.monotonic() + LIST_MAX_AGE + 2
    listed = _listed(page)
    while not holds(listed) and time.monotonic() < deadline:
        time.sleep(0.25)
        page.reload()
        listed = _listed(page)
    return listed


def test_create_use_and_delete_queues_of_every_door(browser: Any, disque_server: Server, artifacts: Path) -> None:
    url = disque_server.url
    jobs = redis.Redis(port=disque_server.disque_port, protocol=2, socket_timeout=10)  # type: ignore[attr-defined]
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "/console/")
    page.wait_for_selector("[data-testid=no-queues]")

    made = [("emodb", "orders-new", "orders-new"), ("dedup", "events-new", "__dedupq:events-new"),
            ("sqs", "Orders", SQS + "Orders"), ("sqs-fifo", "Payments", SQS + "Payments.fifo"),
            ("mq", "Thumbs", "mq:Thumbs"), ("disque", "MyJobs", "disque:MyJobs")]
    for kind, name, store_name in made:
        _create(page, kind, name, cbd=kind == "sqs-fifo",
                shot=artifacts / "30-new-queue.png" if kind == "sqs-fifo" else None)
        page.wait_for_selector(f"[data-testid=queue-title][data-queue='{store_name}']")
        page.goto(url + "/console/#/")
    wanted = {s for _k, _n, s in made}
    assert _listed_once_current(page, lambda listed: listed >= wanted) >= wanted

    # a queue's page opens by the name its door gives it, and shows the full one
    page.goto(url + "/console/#/queue/Payments.fifo")
    page.wait_for_selector(f"[data-testid=queue-title][data-queue='{SQS}Payments.fifo']")
    assert page.evaluate("location.hash") == "#/queue/" + (SQS + "Payments.fifo").replace(":", "%3A")
    page.goto(url + "/console/#/")

    # each is its door's queue, as if that door had made it
    sqs = _sqs(url)
    fifo = sqs.get_queue_url(QueueName="Payments.fifo")["QueueUrl"]
    attrs = sqs.get_queue_attributes(QueueUrl=fifo, AttributeNames=["All"])["Attributes"]
    assert attrs["FifoQueue"] == "true" and attrs["ContentBasedDeduplication"] == "true"
    sqs.send_message(QueueUrl=fifo, MessageBody="pay", MessageGroupId="g")
    sqs.send_message(QueueUrl=sqs.get_queue_url(QueueName="Orders")["QueueUrl"], MessageBody="o")
    assert requests.get(f"{url}/mq/Thumbs", timeout=5).status_code == 200
    assert requests.post(f"{url}/mq/Thumbs/messages", data=b"png", timeout=5).status_code == 201
    jobs.execute_command("ADDJOB", "MyJobs", "job-1", "0")
    assert jobs.execute_command("QLEN", "MyJobs") == 1
    assert requests.post(f"{url}/queue/1/orders-new/send", json={"n": 1}, timeout=5).ok
    assert requests.post(f"{url}/dedupq/1/events-new/send", json={"e": 1}, timeout=5).ok

    # a name the door would refuse, and one that exists: refused in the dialog, nothing changed
    before = settled_state(disque_server.root)
    _create(page, "emodb", "Orders")
    page.wait_for_selector("[data-testid=new-error]:has-text('not a EmoDB queue name')")
    page.screenshot(path=str(artifacts / "31-create-refused.png"), full_page=True)
    page.select_option("[data-testid=new-kind]", "mq")
    page.fill("[data-testid=new-name]", "Thumbs")
    page.click("[data-testid=new-submit]")
    page.wait_for_selector("[data-testid=new-error]:has-text('already exists')")
    page.keyboard.press("Escape")
    assert data_state(disque_server.root) == before

    # delete, every door, capital letters included
    for _kind, name, store_name in made:
        page.goto(url + "/console/#/queue/" + requests.utils.quote(store_name, safe=""))
        page.wait_for_selector(f"[data-testid=queue-title][data-queue='{store_name}']")
        assert page.is_disabled("[data-testid=delete-queue]")
        page.fill("[data-testid=delete-confirm]", name if not store_name.endswith(".fifo") else name + ".fifo")
        if store_name == "disque:MyJobs":
            page.screenshot(path=str(artifacts / "32-delete-queue.png"), full_page=True)
        page.click("[data-testid=delete-queue]")
        page.wait_for_selector("[data-testid=toast]:has-text('Deleted the')")
        page.wait_for_selector("[data-testid=queues], [data-testid=no-queues]")
    assert not _listed_once_current(page, lambda listed: not listed & wanted) & wanted
    with pytest.raises(ClientError, match=r"NonExistentQueue|QueueDoesNotExist"):
        sqs.get_queue_url(QueueName="Orders")
    assert requests.get(f"{url}/mq/Thumbs", timeout=5).status_code == 404
    assert jobs.execute_command("QLEN", "MyJobs") == 0
    assert jobs.execute_command("QSTAT", "MyJobs") is None
    assert not [n for n in (disque_server.root / "queues").iterdir() if "orders-new" in n.name]
    page.close()


def test_delete_empty_queues_keeps_one_that_got_a_message(browser: Any, disque_server: Server,
                                                          artifacts: Path) -> None:
    url = disque_server.url
    jobs = redis.Redis(port=disque_server.disque_port, protocol=2, socket_timeout=10)  # type: ignore[attr-defined]
    # an emptied queue, a misspelled one, an emptied Disque queue with capitals, one in use
    polled = requests.post(f"{url}/queue/1/emptied/send", json={"x": 1}, timeout=5)
    assert polled.ok
    claimed = requests.get(f"{url}/queue/1/emptied/poll?limit=1", timeout=5).json()
    assert requests.post(f"{url}/queue/1/emptied/ack", json=[claimed[0]["id"]], timeout=5).ok
    assert requests.post(f"{url}/queue/1/ordres/send", json={"typo": True}, timeout=5).ok
    assert requests.delete(f"{url}/queue/1/ordres", timeout=5).ok
    job = jobs.execute_command("ADDJOB", "OldJobs", "j", "0")
    jobs.execute_command("ACKJOB", job)
    assert requests.post(f"{url}/queue/1/busy/send", json={"work": 1}, timeout=5).ok
    assert requests.post(f"{url}/queue/1/late/send", json={"x": 1}, timeout=5).ok
    assert requests.delete(f"{url}/queue/1/late", timeout=5).ok

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "/console/")
    page.wait_for_selector("[data-testid=queue-row][data-queue=busy]")
    page.click("[data-testid=delete-empty]")
    page.wait_for_selector("[data-testid=empty-list]")
    offered = {c.get_attribute("value") for c in page.locator("[data-testid=empty-pick]").all()}
    assert offered == {"emptied", "ordres", "disque:OldJobs", "late"}
    page.screenshot(path=str(artifacts / "33-delete-empty.png"), full_page=True)
    # a message arrives while the dialog is open: that queue is kept, with its message
    assert requests.post(f"{url}/queue/1/late/send", json={"arrived": True}, timeout=5).ok
    page.click("[data-testid=empty-submit]")
    page.wait_for_selector("[data-testid=toast]:has-text('Deleted 3 empty queues; kept 1')")
    page.wait_for_function("!document.querySelector(\"[data-queue='disque:OldJobs']\")")
    page.screenshot(path=str(artifacts / "34-delete-empty-done.png"), full_page=True)
    assert _listed(page) >= {"busy", "late"} and not _listed(page) & {"emptied", "ordres", "disque:OldJobs"}
    assert requests.get(f"{url}/queue/1/late/peek", timeout=5).json()[0]["payload"] == {"arrived": True}
    assert requests.get(f"{url}/queue/1/busy/size", timeout=5).text == "1"
    page.close()


def test_keys_that_may_not_create_or_delete_change_nothing(browser: Any, keyed_server: Server,
                                                           artifacts: Path) -> None:
    url = keyed_server.url
    admin = {"X-BV-API-Key": "console-admin"}
    assert requests.post(f"{url}/queue/1/stays/send", json={"n": 1}, headers=admin, timeout=5).ok
    assert requests.post(f"{url}/queue/1/empty-one/send", json={"n": 1}, headers=admin, timeout=5).ok
    assert requests.delete(f"{url}/queue/1/empty-one", headers=admin, timeout=5).ok
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "/console/")
    page.wait_for_selector("[data-testid=login]", state="visible")
    page.fill("[data-testid=login-key]", "console-viewer")
    page.click("[data-testid=login-submit]")
    page.wait_for_selector("[data-testid=queue-row][data-queue=stays]")
    before = settled_state(keyed_server.root)

    _create(page, "emodb", "viewer-made")
    page.wait_for_selector("[data-testid=new-error]:has-text('may not create the EmoDB queue')")
    page.screenshot(path=str(artifacts / "35-viewer-refused.png"), full_page=True)
    page.keyboard.press("Escape")
    page.click("[data-testid=delete-empty]")
    page.wait_for_selector("[data-testid=no-empty]")
    page.keyboard.press("Escape")
    page.goto(url + "/console/#/queue/stays")
    page.wait_for_selector("[data-testid=queue-title][data-queue=stays]")
    assert page.is_disabled("[data-testid=delete-confirm]") and page.is_disabled("[data-testid=delete-queue]")
    viewer = {"X-BV-API-Key": "console-viewer"}
    for path, body in [("/queues/stays/delete", {"confirm": "stays"}), ("/queues/delete-empty", {"queues": ["empty-one"]}),
                       ("/queues", {"door": "sqs", "name": "nope"})]:
        r = requests.post(f"{url}/console/api{path}", json=body, headers=viewer, timeout=5)
        assert r.status_code == 403, (path, r.text)
    # the team key may do everything on team-* queues: an EmoDB one it may create, an SQS one
    # not (SQS permissions name sqs:ACCOUNT:REGION:team-x, and CreateQueue needs admin there)
    team = {"X-BV-API-Key": "console-team"}
    r = requests.post(f"{url}/console/api/queues", json={"door": "sqs", "name": "team-x"}, headers=team, timeout=5)
    assert r.status_code == 403 and "that needs admin" in json.loads(r.text)["message"]
    assert data_state(keyed_server.root) == before
    r = requests.post(f"{url}/console/api/queues", json={"door": "queue", "name": "team-x"}, headers=team, timeout=5)
    assert r.status_code == 200
    page.close()
