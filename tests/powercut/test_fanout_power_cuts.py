"""An acknowledged fan-out survives a power cut in all of its queues, in every flush mode.

Each cut: a publisher process (``fanout_worker.py``) fans messages out to 10 queues (8 standard,
2 FIFO) from 3 threads on the crash disk; after a random 0.3-1.5 s the power is cut (a random
share of the disk's pending blocks persisted, some torn), the disk reboots (``e2fsck`` must find
nothing), the store opens and every queue is drained: every acknowledged fan-out must be in every
one of the 10 queues, whole, and each FIFO queue must hold each thread's messages in order.

The store with its flushes off runs under the same harness and must lose acknowledged fan-outs:
the harness can tell a flush from none. ``SPOOLQ_SNS_CUTS`` sets the cuts per mode (CI: 2; by
hand: 50, about 40 minutes).
"""

from __future__ import annotations

import os
import random
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spoolq.store import FileStore
from tests.powercut.crashdisk import CrashDisk
from tests.powercut.fanout_worker import FIFO, STANDARD
from tests.sns.conftest import drain

pytestmark = pytest.mark.powercut

CHECKOUT = Path(__file__).resolve().parents[2]
CUTS = int(os.environ.get("SPOOLQ_SNS_CUTS", "2"))


def _publish_until_cut(disk: CrashDisk, root: Path, flush: str, cut: int, rng: random.Random) -> list[str]:
    env = dict(os.environ, PYTHONPATH=f"{CHECKOUT}:{CHECKOUT / 'service'}")
    proc = subprocess.Popen([sys.executable, "-m", "tests.powercut.fanout_worker", str(root), flush, str(cut)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=CHECKOUT, env=env)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready and proc.stdout.readline().strip() == b"ready", proc.stderr.read() if proc.stderr else ""
    try:
        time.sleep(rng.uniform(0.3, 1.5))
    finally:
        disk.cut(seed=rng.randrange(1 << 30), persist=rng.choice([0.0, rng.random()]), torn=rng.random() * 0.5,
                 kill=[proc.pid])
        out, _err = proc.communicate(timeout=60)
    return [line.split()[1] for line in out.decode().splitlines() if line.startswith("acked ")]


def _check(root: Path, flush: str, acked: list[str]) -> tuple[int, int]:
    """(acknowledged fan-outs missing from some queue, FIFO queues out of order)."""
    store = FileStore(root, node_id="checker", flush=None if flush == "none" else flush)
    missing = disorder = 0
    try:
        for name in STANDARD + FIFO:
            bodies: list[str] = []
            for batch in drain(store, name):
                for d in batch:
                    text = d.message.body.decode()
                    body = text[:len(text) // 8]
                    assert body * 8 == text, f"a torn message was delivered from {name}"
                    bodies.append(body)
            found = set(bodies)
            missing += sum(1 for b in acked if b not in found)
            if name in FIFO:
                for thread in {b.split("-")[1] for b in bodies}:
                    seq = [int(b.rsplit("-", 1)[1]) for b in bodies if b.split("-")[1] == thread
                           and b.startswith(bodies[0].split("-")[0])]
                    disorder += seq != sorted(seq)
    finally:
        store.close()
    return missing, disorder


def _cuts(crash_disk: CrashDisk, flush: str, cuts: int) -> tuple[int, int, int]:
    seed = int(os.environ.get("SPOOLQ_CRASH_SEED") or time.time_ns())
    print(f"SPOOLQ_CRASH_SEED={seed}")
    rng = random.Random(seed)
    acked_total = missing_total = disorder_total = 0
    for cut in range(cuts):
        # without flushes a cut may keep a queue's directory and lose its meta: a fresh root each time
        root = crash_disk.mountpoint / ("root" if flush != "none" else f"root{cut}")
        acked = _publish_until_cut(crash_disk, root, flush, cut, rng)
        assert crash_disk.reboot_checked() == ""
        missing, disorder = _check(root, flush, acked)
        acked_total += len(acked)
        missing_total += missing
        disorder_total += disorder
    print(f"{flush}: {cuts} cuts, {acked_total} acknowledged fan-outs to 10 queues, {missing_total} copies "
          f"missing, {disorder_total} FIFO queues out of order")
    return acked_total, missing_total, disorder_total


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("flush", ["syncfs", "journal", "fsync"])
def test_acknowledged_fan_outs_survive_power_cuts(crash_disk: CrashDisk, flush: str) -> None:
    acked, missing, disorder = _cuts(crash_disk, flush, CUTS)
    assert acked > 0
    assert missing == 0 and disorder == 0


@pytest.mark.timeout(900)
def test_without_flushes_fan_outs_are_lost(crash_disk: CrashDisk) -> None:
    acked, missing, _disorder = _cuts(crash_disk, "none", 1)
    assert acked > 0 and missing > 0, "the harness lost nothing without flushes"
