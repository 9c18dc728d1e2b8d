"""Rates with history kept on the server, in Chromium against a real gunicorn spoolq with two
workers: traffic runs for a while, then every worker is killed (SIGKILL; gunicorn starts new
ones), and a page opened afterwards shows the recent past at once (the sparklines of the list and
the queue's one-hour charts), not an empty line that fills while you watch.

Screenshots: ``70-rates-after-restart.png``, ``71-queue-rates.png``."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.console.conftest import _server
from tests.e2e.spoolq_server import Server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _server(tmp_path_factory.mktemp("console-rates"), None)


def _traffic(url: str, seconds: float) -> int:
    """About 20 sends a second to "steady", each polled and acknowledged; returns how many."""
    s = requests.Session()
    sent = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert s.post(f"{url}/queue/1/steady/sendbatch", json=[{"n": sent}, {"n": sent + 1}], timeout=5).ok
        sent += 2
        got = s.get(f"{url}/queue/1/steady/poll?limit=10", timeout=5).json()
        assert s.post(f"{url}/queue/1/steady/ack", json=[m["id"] for m in got], timeout=5).ok
        time.sleep(0.1)
    return sent


def _restart_workers(server: Server) -> None:
    old = set(server.worker_pids())
    for pid in old:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = set(server.worker_pids())
        if len(now) == len(old) and not now & old:
            break
        time.sleep(0.2)
    for _ in range(20):  # both new workers answer
        assert requests.get(f"{server.url}/healthz", timeout=10).status_code == 200


def test_a_page_opened_after_worker_restarts_shows_the_recent_past(browser: Any, server: Server,
                                                                   artifacts: Path) -> None:
    url = server.url
    assert requests.post(f"{url}/queue/1/quiet/send", json={"n": 1}, timeout=5).ok
    sent = _traffic(url, 16)
    assert sent > 100
    time.sleep(6)  # the last point is recorded
    _restart_workers(server)

    rates = requests.get(f"{url}/console/api/rates?window=600", timeout=5).json()
    steady = rates["queues"]["steady"]
    assert sum(v for v in steady["send"] if v) * rates["interval"] == pytest.approx(sent, rel=0.05)
    assert len([v for v in steady["ack"] if v]) >= 3
    assert "quiet" not in rates["queues"] or not any(rates["queues"]["quiet"]["poll"])

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "/console/")
    page.wait_for_selector("[data-queue=steady]")
    # at the first render, before any live figure exists: the past is drawn
    for op in ("send", "poll", "ack"):
        spark = page.locator(f"[data-queue=steady] .rate[data-op={op}] svg")
        assert float(spark.get_attribute("data-max") or 0) > 5, op
        assert int(spark.get_attribute("data-points") or 0) >= 3, op
    page.screenshot(path=str(artifacts / "70-rates-after-restart.png"), full_page=True)
    page.click("[data-queue=steady] .qname")
    page.wait_for_selector("[data-testid=queue-title][data-queue=steady]")
    chart = page.locator(".bigrate[data-op=ack] svg")
    assert float(chart.get_attribute("data-max") or 0) > 5
    assert int(chart.get_attribute("data-points") or 0) >= 3
    page.click("[data-testid=rates-window][data-window='3600']")
    page.wait_for_selector("[data-testid=rates-window][data-window='3600'].on")
    chart = page.locator(".bigrate[data-op=send] svg")
    assert float(chart.get_attribute("data-max") or 0) > 5 and int(chart.get_attribute("data-points") or 0) >= 3
    page.screenshot(path=str(artifacts / "71-queue-rates.png"), full_page=True)

    # and it keeps going: new traffic after the restart joins the same history
    t = threading.Thread(target=_traffic, args=(url, 8))
    t.start()
    t.join()
    time.sleep(6)
    later = requests.get(f"{url}/console/api/rates?window=600", timeout=5).json()["queues"]["steady"]["send"]
    assert len([v for v in later if v]) > len([v for v in steady["send"] if v])
    page.close()
