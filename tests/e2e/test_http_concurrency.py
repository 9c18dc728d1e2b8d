"""End to end under load: many pollers over 4 gunicorn workers, and kill -9 during a send storm."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import requests

from tests.e2e.spoolq_server import KEY_ALL, Server, free_port, running_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
H = {"X-BV-API-Key": KEY_ALL, "Content-Type": "application/json"}


def _drain(url: str, queue: str) -> list[object]:
    """Every payload left in ``queue`` (claimed for an hour so each is seen once)."""
    s = requests.Session()
    out: list[object] = []
    while True:
        got = s.get(f"{url}/queue/1/{queue}/poll", params={"ttl": 3600, "limit": 1000}, headers=H, timeout=60).json()
        if not got:
            return out
        out.extend(m["payload"] for m in got)


def test_16_pollers_4_workers_each_message_once(tmp_path: Path) -> None:
    total, queue = 10_000, "load"
    with running_server(tmp_path, workers=4, threads=16) as server:
        s = requests.Session()
        for start in range(0, total, 1000):
            r = s.post(f"{server.url}/queue/1/{queue}/sendbatch", data=json.dumps(list(range(start, start + 1000))),
                       headers=H, timeout=60)
            assert r.status_code == 200
        seen: Counter[int] = Counter()
        lock = threading.Lock()
        errors: list[str] = []

        def consumer() -> None:
            c = requests.Session()
            empty = 0
            while empty < 3:
                r = c.get(f"{server.url}/queue/1/{queue}/poll", params={"ttl": 120, "limit": 10}, headers=H,
                          timeout=60)
                if r.status_code != 200:
                    errors.append(f"poll {r.status_code} {r.text[:100]}")
                    return
                got = r.json()
                if not got:
                    empty += 1
                    time.sleep(0.05)
                    continue
                empty = 0
                a = c.post(f"{server.url}/queue/1/{queue}/ack", data=json.dumps([m["id"] for m in got]),
                           headers=H, timeout=60)
                if a.status_code != 200:
                    errors.append(f"ack {a.status_code}")
                with lock:
                    seen.update(m["payload"] for m in got)

        threads = [threading.Thread(target=consumer) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=500)
        assert not errors, errors[:5]
        assert set(seen) == set(range(total)), f"lost {total - len(seen)}"
        assert [k for k, n in seen.items() if n > 1] == []
        assert s.get(f"{server.url}/queue/1/{queue}/size", headers=H, timeout=30).text == "0"


def test_kill9_during_send_storm_loses_no_acknowledged_send(tmp_path: Path) -> None:
    queue = "storm"
    acked: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()
    with running_server(tmp_path, workers=2, threads=16) as server:
        def producer(base: int) -> None:
            c = requests.Session()
            i = 0
            while not stop.is_set():
                value = base + i
                i += 1
                try:
                    r = c.post(f"{server.url}/queue/1/{queue}/send", data=json.dumps(value), headers=H, timeout=10)
                except requests.RequestException:
                    continue
                if r.status_code == 200:
                    with lock:
                        acked.append(value)

        threads = [threading.Thread(target=producer, args=(n * 1_000_000,)) for n in range(8)]
        for t in threads:
            t.start()
        time.sleep(3.0)
        server.kill9()
        stop.set()
        for t in threads:
            t.join(timeout=30)
        assert len(acked) > 50, "the storm did not get going"
        restarted = Server(root=server.root, port=free_port(), config=server.config, workers=2, threads=8,
                           log=tmp_path / "restart.log")
        restarted.start()
        try:
            found = _drain(restarted.url, queue)
        finally:
            restarted.stop()
    missing = set(acked) - set(found)
    assert not missing, f"{len(missing)} acknowledged sends lost, e.g. {sorted(missing)[:5]}"
    assert all(isinstance(v, int) for v in found), "a torn or corrupt message was delivered"
