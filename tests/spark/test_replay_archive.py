"""Replay of archived messages, end to end through the service, checked message by message.

A real gunicorn spoolq: N messages (12,000: more than one archive segment holds, so the archive
has at least two, and more than one streaming batch takes, so the stream commits at least twice;
``SPOOLQ_REPLAY_MESSAGES=100000`` for the size this was first proven at) sent through
``/queue/1``, the queue's archive turned on through the service (``spoolq settings QUEUE
--archive on``), every message consumed by the Spark streaming source (batch claims, acknowledged
after Spark commits), the store's own compaction writing the archive segments; then ``spoolq
pipeline replay`` (its own Spark driver process, as a user runs it) sends them all into another
queue, and every replayed message is compared with the archived one it came from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.spoolq_server import KEY_ALL, Server
from tests.spark.conftest import opts

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1800)]

N = int(os.environ.get("SPOOLQ_REPLAY_MESSAGES", "12000"))
#: messages a streaming batch takes at most: N takes more than one
PER_TRIGGER = max(1, (N * 2) // 3)
SPOOLQ = Path(sys.executable).with_name("spoolq")


def cli(server: Server, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPOOLQ_URL": server.url, "SPOOLQ_API_KEY": KEY_ALL, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([str(SPOOLQ), *args], env=env, capture_output=True, text=True, timeout=timeout)


def archived(root: Path, queue: str) -> dict[str, str]:
    """id -> body of every archived record of ``queue``."""
    out: dict[str, str] = {}
    for seg in (root / "archive" / queue).glob("*.jsonl"):
        for line in seg.read_text().splitlines():
            rec = json.loads(line)
            out[rec["id"]] = rec["body"]
    return out


def test_replay_of_every_archived_message_checked_one_by_one(
        spark: Any, server: Server, client: Any, queue: str, tmp_path: Path) -> None:
    source, target = queue, f"{queue}-replayed"
    client.send(source, {"n": -1})  # the queue exists, so its settings can be changed
    client.ack(source, [m.id for m in client.poll(source, limit=1, ttl=30)])
    changed = cli(server, "settings", source, "--archive", "on")
    assert changed.returncode == 0, changed.stderr
    assert json.loads(cli(server, "settings", source, "--json").stdout)["archive"] is True

    for start in range(0, N, 1000):
        client.send_batch(source, [{"n": i, "tag": f"m{i:06d}"} for i in range(start, start + 1000)])
    query = (spark.readStream.format("spoolq").options(**opts(server, source, maxMessagesPerTrigger=PER_TRIGGER)).load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(900)
    assert client.size(source) == 0 and client.claim_count(source) == 0
    assert len(query.recentProgress) >= 2, "the stream took every message in one batch: the test proves less"

    # The service's maintenance compacts acknowledged messages into segments. The first message was
    # acknowledged before the archive was turned on, so exactly the N streamed ones are archived.
    deadline = time.monotonic() + 180
    records = archived(server.root, source)
    while len(records) < N and time.monotonic() < deadline:
        time.sleep(1)
        records = archived(server.root, source)
    bodies = {mid: body for mid, body in records.items() if json.loads(body)["n"] >= 0}
    assert len(bodies) == N == len(records), f"{len(bodies)} of {N} archived, {len(records)} records"
    assert len(list((server.root / "archive" / source).glob("*.jsonl"))) >= 2, "one segment: the test proves less"

    dry = cli(server, "pipeline", "--master", "local[2]", "replay", str(server.root), target, "--queue", source,
              "--where", "get_json_object(payload, '$.n') >= 0", "--dry-run")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert json.loads(dry.stdout.strip().splitlines()[-1])["matched"] == N
    assert client.list_queues(prefix=target) == []

    run = cli(server, "pipeline", "--master", "local[2]", "replay", str(server.root), target, "--queue", source,
              "--where", "get_json_object(payload, '$.n') >= 0")
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1])["sent"] == N
    assert f"sent {N:,} messages" in run.stderr  # the progress line's last word

    got: dict[int, str] = {}
    repeats = 0
    while True:
        batch = client.poll(target, limit=1000, ttl=120)
        if not batch:
            break
        for m in batch:
            n = m.payload["n"]
            repeats += n in got
            got[n] = json.dumps(m.payload, separators=(",", ":"))
        client.ack(target, [m.id for m in batch])
    assert repeats == 0
    want = {json.loads(body)["n"]: body for body in bodies.values()}
    assert sorted(got) == list(range(N))
    mismatched = [n for n in range(N) if got[n] != want[n]]
    assert mismatched == [], f"{len(mismatched)} replayed bodies differ, e.g. n={mismatched[:5]}"
