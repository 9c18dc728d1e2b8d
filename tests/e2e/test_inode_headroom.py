"""One message is one inode: a file system that runs out of inodes is full, whatever bytes it has left.

A real ext4 made with few inodes (``mkfs.ext4 -N``, on a loop-mounted file) under a real ``spoolq
serve``: the headroom is reported before it runs out (``/metrics`` and ``check-config`` show the
free inodes next to the free bytes, below the shipped alert's threshold while sends still work),
sends are refused cleanly when it does (503 with ``Retry-After``, saying it is the inodes; ``/readyz``
says not ready), no acknowledged message is lost, and sends work again once acknowledged messages
give their inodes back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.e2e.spoolq_server import Server, free_port, metric

pytestmark = pytest.mark.slow

IMAGE_MIB = 32
INODES = 256  # mkfs.ext4 -N: 32 MiB that hold only about this many files
#: the shipped alert (deploy/prometheus/alerts.yml, SpoolqInodesAlmostExhausted) fires below this share
ALERT_SHARE = 0.05


@pytest.fixture
def few_inodes(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root (mount -o loop)")
    if shutil.which("mkfs.ext4") is None or shutil.which("losetup") is None:
        pytest.skip("needs mkfs.ext4 and losetup (scripts/system-deps crashdisk)")
    image, mnt = tmp_path / "few-inodes.img", tmp_path / "mnt"
    with open(image, "wb") as f:
        f.truncate(IMAGE_MIB << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-N", str(INODES), "-E", "nodiscard", str(image)], check=True,
                   capture_output=True, timeout=60)
    mnt.mkdir()
    subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], check=True, capture_output=True, timeout=60)
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=60)


def _check_config(root: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "spoolq.cli", "check-config", "--root", str(root)],
                          capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def test_inode_exhaustion_is_reported_before_and_refused_cleanly(few_inodes: Path, tmp_path: Path) -> None:
    root = few_inodes / "spoolq"
    server = Server(root=root, port=free_port(), config=None, workers=2, threads=4, log=tmp_path / "server.log")
    server.start()
    http = requests.Session()
    queue, acked = "inodes", []
    try:
        total = os.statvfs(few_inodes).f_files
        assert total <= 2 * INODES
        # sends until fewer than the alert's share of the inodes are left, bytes to spare
        n = 0
        while os.statvfs(few_inodes).f_favail >= ALERT_SHARE * total * 0.8:
            r = http.post(f"{server.url}/queue/1/{queue}/send", json={"n": n}, timeout=60)
            assert r.status_code == 200, r.text
            acked.append(n)
            n += 1
        assert n > INODES // 2
        report = _check_config(root)
        assert re.search(r"warning: root .* MiB free, \d+ free inodes of \d+ \(one per message\): fewer than 5%", report), report
        time.sleep(3.2)  # the metrics snapshot is up to 3 s old
        free = metric(server.url, "spoolq_store_free_inodes")
        assert 0 < free < ALERT_SHARE * metric(server.url, "spoolq_store_inodes")
        assert metric(server.url, "spoolq_store_free_bytes") > (IMAGE_MIB << 20) // 2
        assert http.get(f"{server.url}/readyz", timeout=30).status_code == 200

        # then until the file system refuses: a clean 503 that names the inodes, nothing half-stored
        refused = None
        for _ in range(2 * INODES):
            r = http.post(f"{server.url}/queue/1/{queue}/send", json={"n": n}, timeout=60)
            if r.status_code != 200:
                refused = r
                break
            acked.append(n)
            n += 1
        assert refused is not None, "the file system never ran out of inodes"
        assert refused.status_code == 503 and refused.headers.get("Retry-After"), refused.text
        assert "inode" in refused.text, refused.text
        ready = http.get(f"{server.url}/readyz", timeout=30)
        assert ready.status_code == 503 and "inode" in ready.text, ready.text
        assert "no free inodes" in _check_config(root)

        # nothing acknowledged is lost, and acknowledging gives the inodes back
        delivered: list[int] = []
        while True:
            r = http.get(f"{server.url}/queue/1/{queue}/poll", params={"limit": 100, "ttl": 600}, timeout=60)
            assert r.status_code == 200, r.text
            got = r.json()
            if not got:
                break
            delivered.extend(m["payload"]["n"] for m in got)
            assert http.post(f"{server.url}/queue/1/{queue}/ack", json=[m["id"] for m in got],
                             timeout=60).status_code == 200
        assert sorted(delivered) == acked
        r = http.post(f"{server.url}/queue/1/{queue}/send", json={"n": "after"}, timeout=60)
        assert r.status_code == 200, r.text
    finally:
        server.stop()
