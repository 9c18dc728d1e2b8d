"""A GlusterFS split-brain made on purpose: one damaged lock file stops no queue, and ``/readyz`` names
it with the command that resolves it, until it is resolved.

The volume is ``spq-r2``: replica 2 without client quorum (GlusterFS's default for replica 2, and not
a configuration to run spoolq on: docs/scale-out.md). A queue's ``buckets.lock`` is made again the
way two nodes would have made it while the bricks could not see each other (an older release made
it at first use): removed, then made through mount 1 while brick 2 is down, then through mount 2
while brick 1 is down. From then on every lookup of the name answers EIO on every mount. Two nodes
go on sending, polling and releasing messages into old buckets (which take that lock), ``/readyz``
stays ready and lists the file with ``gluster volume heal spq-r2 split-brain latest-mtime <path>``;
that command resolves it, ``/readyz`` stops listing it, and every message is delivered.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.spoolq_server import Server, free_port
from tests.multinode import cluster as gl

pytestmark = pytest.mark.multinode

VOLUME = "spq-r2"
QUEUE = "split-q"


@pytest.fixture
def nodes(gluster: Path, tmp_path: Path) -> Iterator[tuple[str, list[Server]]]:
    data = f"split-{uuid.uuid4().hex[:8]}"
    servers = [Server(root=gl.mount_path(VOLUME, i) / data, port=free_port(), config=None, workers=1, threads=8,
                      log=tmp_path / f"node{i}.log", node_id=f"node{i}", extra_args=("--flush", "fsync"))
               for i in (1, 2)]
    try:
        for server in servers:
            server.start(timeout=90)
        yield data, servers
    finally:
        for server in servers:
            with contextlib.suppress(Exception):
                server.stop()
        with contextlib.suppress(RuntimeError):
            gl.gluster("start-bricks", VOLUME)


def _make_through(path: Path, within: float = 60.0) -> None:
    """Make ``path`` (O_CREAT) through its mount, waiting for the mount to reach a live brick (a
    FUSE client reconnects to a restarted brick after a back-off, longer on a busy machine: 20 s
    was seen to be too short in a full CI run)."""
    deadline = time.monotonic() + within
    while True:
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
            return
        except OSError as e:
            if time.monotonic() > deadline or e.errno not in (errno.ENOTCONN, errno.EIO, errno.ENOENT):
                raise
        time.sleep(0.2)


def _split(data: str) -> Path:
    lock = f"queues/{QUEUE}/buckets.lock"
    first, second = gl.mount_path(VOLUME, 1) / data / lock, gl.mount_path(VOLUME, 2) / data / lock
    os.unlink(first)
    gl.gluster("kill-brick", VOLUME, "2")
    _make_through(first)  # brick 1 only
    gl.gluster("start-bricks", VOLUME)
    gl.wait_gluster_links(VOLUME, within=60)  # brick 2 back on every mount before brick 1 goes, if it comes
    gl.gluster("kill-brick", VOLUME, "1")
    _make_through(second)  # brick 2 only, with another identity
    gl.gluster("start-bricks", VOLUME)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # both bricks back: the split shows on every mount
        try:
            os.stat(first)
        except OSError as e:
            if e.errno == errno.EIO:
                with contextlib.suppress(OSError):
                    os.stat(second)
                    continue
                return first
        time.sleep(0.5)
    raise AssertionError(f"{lock} did not split:\n{gl.gluster('heal-info', VOLUME)}")


def _damaged(url: str) -> list[dict[str, Any]]:
    r = requests.get(f"{url}/readyz", timeout=60)
    assert r.status_code == 200, r.text  # the node stays ready: it goes round the file
    damaged: list[dict[str, Any]] = r.json()["store"].get("damaged", [])
    return damaged


@pytest.mark.timeout(600)
# It passes run alone. In full CI runs, though, the mount that must write the second copy had still not
# reconnected to its restarted brick 60 s later (ENOTCONN), so the split could not be made and the run
# spent two minutes to learn nothing: the tier runs it when asked, until the test makes its split
# without waiting on a FUSE client's reconnection.
@pytest.mark.skipif(not os.environ.get("SPOOLQ_GLUSTER_SPLIT_BRAIN"),
                    reason="SPOOLQ_GLUSTER_SPLIT_BRAIN=1 runs it: making the split waits on a mount's "
                           "reconnection to a restarted brick, over 60 s in full CI runs")
@pytest.mark.xfail(raises=OSError, strict=False,
                   reason="the split needs a mount to reconnect to a restarted brick, which took over 60 s in full CI runs")
def test_a_split_lock_file_stops_no_queue_and_readyz_names_it_until_resolved(
        nodes: tuple[str, list[Server]]) -> None:
    data, (one, two) = nodes
    http = requests.Session()
    for i in range(20):
        http.post(f"{one.url}/queue/1/{QUEUE}/send", json={"tag": f"before-{i}"}, timeout=60).raise_for_status()
    claimed = http.get(f"{one.url}/queue/1/{QUEUE}/poll", params={"limit": 10, "ttl": 600}, timeout=60).json()
    assert len(claimed) == 10
    time.sleep(3)  # their buckets are old now: putting them back takes the bucket lock

    lock = _split(data)
    print(gl.gluster("heal-info", VOLUME))

    # the queue goes on through both nodes: releases into the old buckets, sends, polls
    for m in claimed:  # a renew to 0 releases a claim (EmoDB)
        done = http.post(f"{two.url}/queue/1/{QUEUE}/renew", params={"ttl": 0}, json=[m["id"]], timeout=60)
        assert done.status_code == 200, done.text
    for i in range(10):
        done = http.post(f"{two.url}/queue/1/{QUEUE}/send", json={"tag": f"after-{i}"}, timeout=60)
        assert done.status_code == 200, done.text
    [named] = [d for d in _damaged(two.url) if d["path"].endswith(f"{QUEUE}/buckets.lock")]
    inside = f"/{data}/queues/{QUEUE}/buckets.lock"
    assert f"gluster volume heal {VOLUME} split-brain latest-mtime {inside}" in named["fix"], named

    gl.gluster("resolve", VOLUME, inside)  # what /readyz said to run
    deadline = time.monotonic() + 30
    while _damaged(two.url) and time.monotonic() < deadline:
        time.sleep(1)
    assert not _damaged(two.url)
    os.stat(lock)

    tags: list[str] = []
    for node in (one, two, one, two):
        got = http.get(f"{node.url}/queue/1/{QUEUE}/poll", params={"limit": 100, "ttl": 600}, timeout=60).json()
        tags += [m["payload"]["tag"] for m in got]
        if got:
            http.post(f"{node.url}/queue/1/{QUEUE}/ack", json=[m["id"] for m in got], timeout=60).raise_for_status()
    assert sorted(tags) == sorted([f"before-{i}" for i in range(20)] + [f"after-{i}" for i in range(10)])
