"""The console's test send in Chromium against a real gunicorn spoolq: a body that is not JSON is
refused with where it fails (and the data directory stays as it was) unless the user chooses to
send it as text.

Screenshots: ``20-send-invalid-json.png``, ``21-send-as-text.png``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from tests.console.conftest import data_state, settled_state
from tests.e2e.spoolq_server import Server

pytestmark = pytest.mark.browser


def test_invalid_json_is_refused_never_sent_as_a_string(browser: Any, open_server: Server, artifacts: Path) -> None:
    url = open_server.url
    assert requests.post(f"{url}/queue/1/inbox/send", json={"seed": 1}, timeout=5).ok
    assert requests.delete(f"{url}/queue/1/inbox", timeout=5).ok  # EmoDB's purge: the queue stays, empty
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url + "/console/#/queue/inbox")
    page.wait_for_selector("[data-testid=queue-title][data-queue=inbox]")
    before = settled_state(open_server.root)

    page.fill("[data-testid=send-body]", '{"broken": ')
    page.wait_for_selector("[data-testid=send-check]:has-text('Not valid JSON')")
    page.click("[data-testid=send]")
    page.wait_for_selector("[data-testid=toast]:has-text('not valid JSON')")
    page.screenshot(path=str(artifacts / "20-send-invalid-json.png"), full_page=True)
    # the server refuses it too, whoever calls the API
    refused = page.evaluate("""async () => { const r = await fetch('/console/api/queues/inbox/messages',
        {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({body: '{"broken": '})});
        return [r.status, (await r.json()).message]; }""")
    assert refused[0] == 400 and "not valid JSON (line 1, column 12" in refused[1]
    assert data_state(open_server.root) == before
    assert requests.get(f"{url}/queue/1/inbox/size", timeout=5).text == "0"

    # sent as text only when the user says so; EmoDB consumers then see a JSON string
    page.check("[data-testid=send-format-text]")
    page.wait_for_function("document.querySelector('[data-testid=send-check]').textContent === ''")
    page.click("[data-testid=send]")
    page.wait_for_selector("[data-testid=toast]:has-text('Sent as text')")
    page.screenshot(path=str(artifacts / "21-send-as-text.png"), full_page=True)
    polled = requests.get(f"{url}/queue/1/inbox/poll?limit=5", timeout=5).json()
    assert [m["payload"] for m in polled] == ['{"broken": ']

    # valid JSON is sent as JSON: EmoDB consumers get the object
    page.check("[data-testid=send-format-json]")
    page.fill("[data-testid=send-body]", '{\n  "fixed": true\n}')
    page.wait_for_selector("[data-testid=send-check]:has-text('Valid JSON')")
    page.click("[data-testid=send]")
    page.wait_for_selector("[data-testid=toast]:has-text('Sent 0')")
    polled = requests.get(f"{url}/queue/1/inbox/poll?limit=5", timeout=5).json()
    assert [m["payload"] for m in polled] == [{"fixed": True}]
    page.close()
