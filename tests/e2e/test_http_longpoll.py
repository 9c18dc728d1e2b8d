"""Long polls through gunicorn: they wake promptly across worker processes and do not starve short requests."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.e2e.spoolq_server import KEY_ALL, running_server

pytestmark = [pytest.mark.timeout(120), pytest.mark.alone]
H = {"X-BV-API-Key": KEY_ALL, "Content-Type": "application/json"}


def test_long_poll_wakes_on_send_and_short_requests_stay_fast(tmp_path: Path) -> None:
    with running_server(tmp_path, workers=2, threads=32) as server:
        url = server.url
        # 40 idle long polls on other queues hold 40 threads for 6 s.
        idle = [threading.Thread(target=lambda i=i: requests.get(
            f"{url}/queue/1/idle-{i}/poll", params={"wait": 6}, headers=H, timeout=60)) for i in range(40)]
        for t in idle:
            t.daemon = True
            t.start()
        time.sleep(0.5)
        result: dict[str, object] = {}

        def waiter() -> None:
            t0 = time.monotonic()
            r = requests.get(f"{url}/queue/1/wake/poll", params={"wait": 15}, headers=H, timeout=60)
            result["elapsed"] = time.monotonic() - t0
            result["body"] = r.json()

        w = threading.Thread(target=waiter)
        w.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        r = requests.get(f"{url}/queue/1/other/size", headers=H, timeout=10)
        assert r.status_code == 200 and time.monotonic() - t0 < 1.0, "a short request waited behind long polls"
        s = requests.Session()  # a new connection: likely another worker than the waiter's
        assert s.post(f"{url}/queue/1/wake/send", data=json.dumps("hi"), headers=H, timeout=10).status_code == 200
        w.join(timeout=30)
        assert [m["payload"] for m in result["body"]] == ["hi"]  # type: ignore[attr-defined]
        assert float(result["elapsed"]) < 5.0, f"long poll woke after {result['elapsed']} s"  # type: ignore[arg-type]
