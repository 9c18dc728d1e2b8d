"""Health checks with one meaning each, on a real ``spoolq serve`` whose root fills up.

The root is a small tmpfs mounted in a mount namespace of the test's own (``unshare``; root
only); the server runs inside it and is filled through the service itself (batches of 250 KiB).
While the file system is full: ``/healthz`` (liveness) answers 200, ``/readyz`` (readiness) 503
naming the full disk, ``spoolq_store_up`` stays 1 (the store can be read), ``spoolq_store_writable``
is 0, peeks and polls work, sends answer 503 with ``Retry-After``. Acks free space and
everything is back at once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.e2e.spoolq_server import free_port

CHECKOUT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                reason="a full file system needs root and unshare(1)")


def _gauge(url: str, name: str) -> float:
    for line in requests.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not exported")


def _eventually(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            assert callable(check)
            check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


@pytest.fixture
def small_disk_server(tmp_path: Path) -> Iterator[str]:
    mnt = tempfile.mkdtemp(prefix="spoolq-full-")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env["PYTHONPATH"] = str(CHECKOUT / "service")
    script = f'mount -t tmpfs -o size=3m tmpfs {mnt} && exec "$@"'
    cmd = [sys.executable, "-m", "spoolq.cli", "serve", "--root", f"{mnt}/root", "--port", str(port),
           "--workers", "1", "--threads", "8", "--fsync", "never",
           "--max-body-bytes", "262144"]  # /readyz is 503 once a message of this size no longer fits
    with open(tmp_path / "server.log", "wb") as log:
        proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *cmd],
                                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        os.rmdir(mnt)


def test_a_full_disk_is_not_ready_but_alive_and_readable(small_disk_server: str) -> None:
    url = small_disk_server
    batch = [{"blob": "x" * (25 * 1024)}] * 10
    assert _gauge(url, "spoolq_store_writable") == 1 and _gauge(url, "spoolq_store_up") == 1
    for _ in range(64):  # 3 MiB of tmpfs: full after some 12 batches
        r = requests.post(f"{url}/queue/1/full/sendbatch", json=batch, timeout=30)
        if r.status_code == 503:
            break
        assert r.status_code == 200
    else:
        raise AssertionError("the disk never filled")
    for _ in range(200):  # then the last pages, with small sends, until nothing fits
        r = requests.post(f"{url}/queue/1/full/send", json={"n": 1}, timeout=30)
        if r.status_code == 503:
            break
        assert r.status_code == 200
    assert r.headers.get("Retry-After")
    live = requests.get(f"{url}/healthz", timeout=10)
    assert live.status_code == 200 and live.json()["status"] == "ok"
    ready = requests.get(f"{url}/readyz", timeout=10)
    assert ready.status_code == 503 and "space" in ready.json()["store"]["error"].lower()

    def full_in_metrics() -> None:
        assert _gauge(url, "spoolq_store_writable") == 0
        assert _gauge(url, "spoolq_store_up") == 1  # reads work: not "unavailable"
        assert _gauge(url, "spoolq_store_free_bytes") < 256 * 1024

    _eventually(full_in_metrics)
    assert requests.get(f"{url}/queue/1/full/peek?limit=2", timeout=10).status_code == 200
    polled = requests.get(f"{url}/queue/1/full/poll?limit=5&ttl=30", timeout=10)
    assert polled.status_code == 200 and len(polled.json()) == 5
    acked = requests.post(f"{url}/queue/1/full/ack", json=[m["id"] for m in polled.json()], timeout=10)
    assert acked.status_code == 200
    assert requests.delete(f"{url}/queue/1/full", timeout=10).status_code == 200  # the purge frees the rest

    def recovered() -> None:
        assert requests.get(f"{url}/readyz", timeout=10).status_code == 200
        assert _gauge(url, "spoolq_store_writable") == 1

    _eventually(recovered)
    assert requests.post(f"{url}/queue/1/full/send", json={"a": 1}, timeout=10).status_code == 200
