"""A streaming query whose driver is killed with SIGKILL mid-batch, then restarted from its checkpoint.

The driver runs in its own process (``stream_driver.py``) with only ``queue`` and Spark's
``checkpointLocation`` (the service from ``SPOOLQ_URL``); the test kills the driver and every
process under it (the JVM, Spark's Python workers, the source runner) at once, while a batch is
claimed and already in the sink but not committed. Then it starts the same query again.

What must hold (docs/spark.md): nothing is lost; the batch that was cut off is re-run with exactly
the rows it had; no message reaches two different batches while the restart comes within
``claimTtl``; after the claims expired, no more than the cut-off batch can repeat; and in the end
nothing is left claimed and the service forgot every batch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.spoolq_server import KEY_ALL, Server

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

DRIVER = Path(__file__).with_name("stream_driver.py")
CHECKOUT = Path(__file__).resolve().parents[2]
MESSAGES = 3000
PER_BATCH = 400


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children[ppid].append(int(entry))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def kill9_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the driver and everything it started (Spark's Python daemons leave its process group)."""
    for _ in range(3):
        victims = {proc.pid} | descendants(proc.pid)
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    proc.wait(30)


def driver(server: Server, queue: str, tmp: Path, *extra: str, log: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SPOOLQ_URL": server.url, "SPOOLQ_API_KEY": KEY_ALL, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": str(CHECKOUT)}
    with open(tmp / log, "wb") as out:
        return subprocess.Popen([sys.executable, str(DRIVER), queue, str(tmp / "checkpoint"), str(tmp / "out"),
                                 *extra], env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp)


def wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"the driver ended ({proc.returncode}) before {path.name}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {path.name} within {timeout}s:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def batches_written(out: Path) -> dict[int, list[list[str]]]:
    """batch id -> the id lists of every attempt that reached the sink."""
    found: dict[int, list[list[str]]] = defaultdict(list)
    for p in out.glob("*.json"):
        found[int(p.name.split("-")[0])].append(json.loads(p.read_text()))
    return found


def crash_and_restart(server: Server, client: Any, queue: str, tmp: Path, claim_ttl: int,
                      before_restart: float) -> dict[int, list[list[str]]]:
    client.send_batch(queue, [{"n": i} for i in range(MESSAGES)])
    options = ["--option", f"maxMessagesPerTrigger={PER_BATCH}", "--option", f"claimTtl={claim_ttl}"]
    first = driver(server, queue, tmp, "--kill-at", "2", *options, log="first.log")
    try:
        wait_for(tmp / "out" / "reached-2", first, 600, tmp / "first.log")
    finally:
        kill9_tree(first)
    held = client.claim_count(queue)
    assert held >= 1, "the cut-off batch should still be claimed"
    time.sleep(before_restart)
    second = driver(server, queue, tmp, log="second.log")  # only queue + checkpointLocation this time
    try:
        assert second.wait(600) == 0, (tmp / "second.log").read_text()[-3000:]
    finally:
        if second.poll() is None:
            kill9_tree(second)
    return batches_written(tmp / "out")


def check_nothing_lost(written: dict[int, list[list[str]]], client: Any, queue: str, server: Server) -> list[str]:
    every = [i for attempts in written.values() for ids in attempts for i in ids]
    assert client.size(queue) == 0 and client.claim_count(queue) == 0
    records = server.root / "batches" / queue
    assert not records.exists() or list(records.iterdir()) == []  # every batch acknowledged and forgotten
    assert len(set(every)) == MESSAGES
    # the batch that was cut off was re-run with exactly its rows
    assert len(written[2]) == 2 and sorted(written[2][0]) == sorted(written[2][1]) and written[2][0]
    return [i for b in sorted(written) for i in written[b][0]]  # one attempt of each batch


def test_sigkill_mid_batch_then_restart_within_the_claim_ttl_loses_nothing_and_repeats_nothing(
        server: Server, client: Any, queue: str, tmp_path: Path) -> None:
    written = crash_and_restart(server, client, queue, tmp_path, claim_ttl=300, before_restart=0)
    once_each = check_nothing_lost(written, client, queue, server)
    assert len(once_each) == MESSAGES  # no message in two batches: exactly once per batch id
    assert all(len(attempts) == 1 for b, attempts in written.items() if b != 2)


def test_sigkill_then_restart_after_the_claims_expired_repeats_at_most_the_cut_off_batch(
        server: Server, client: Any, queue: str, tmp_path: Path) -> None:
    written = crash_and_restart(server, client, queue, tmp_path, claim_ttl=5, before_restart=8)
    once_each = check_nothing_lost(written, client, queue, server)
    assert len(once_each) - MESSAGES <= PER_BATCH  # the documented bound: the batch whose claims ran out
