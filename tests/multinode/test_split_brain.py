"""A GlusterFS split-brain made on purpose: one damaged lock file stops no queue, and ``/readyz`` names
it with the command that resolves it, until it is resolved.

The volume is ``spq-r2``: replica 2 without client quorum (GlusterFS's default for replica 2, and not
a configuration to run spoolq on: docs/scale-out.md). A queue's ``buckets.lock`` is made again the
way two nodes would have made it while the bricks could not see each other (an older release made
it at first use): removed through the volume, then made on each brick with its own identity
(GFID), each brick's copy of the directory blaming the other for the entry, which is what two writes
made while the bricks could not see each other leave behind. Made on the bricks, the split needs no
brick to stop: a FUSE mount reconnects to a restarted brick only after a back-off (over 60 s seen on a
busy machine), which made the split unreliable to make through the mounts. From then on every lookup
of the name answers EIO on every mount. Two nodes
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


#: an AFR changelog (data, metadata, entry pending counts, big-endian): one entry operation pending
ENTRY_PENDING = (0).to_bytes(4, "big") * 2 + (1).to_bytes(4, "big")


def _brick(index: int) -> Path:
    return gl.gluster_dir() / "bricks" / f"s{index}"


def _make_on_brick(index: int, inside: str) -> None:
    """Make ``inside`` (a path inside the volume) on brick ``index`` alone, with a new GFID and its
    ``.glusterfs`` link, and mark the brick's copy of its directory as blaming the other brick for
    an entry operation (as a create made while the other brick was down leaves it)."""
    path, gfid = _brick(index) / inside, uuid.uuid4()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, f"made through node {index}\n".encode())
    finally:
        os.close(fd)
    os.setxattr(path, "trusted.gfid", gfid.bytes)
    link = _brick(index) / ".glusterfs" / gfid.hex[:2] / gfid.hex[2:4] / str(gfid)
    link.parent.mkdir(parents=True, exist_ok=True)
    os.link(path, link)
    os.setxattr(path.parent, f"trusted.afr.{VOLUME}-client-{2 - index}", ENTRY_PENDING)


def _split(data: str) -> Path:
    inside = f"{data}/queues/{QUEUE}/buckets.lock"
    first, second = gl.mount_path(VOLUME, 1) / inside, gl.mount_path(VOLUME, 2) / inside
    os.unlink(first)  # through the volume: gone from both bricks
    for index in (1, 2):
        if (_brick(index) / inside).exists():
            raise AssertionError(f"{inside} is still on brick {index} after its unlink")
    _make_on_brick(1, inside)
    time.sleep(1.1)  # brick 2's copy is the newer one (latest-mtime resolves to it)
    _make_on_brick(2, inside)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the split shows on every mount once it looks the name up again
        try:
            os.stat(first)
        except OSError as e:
            if e.errno == errno.EIO:
                with contextlib.suppress(OSError):
                    os.stat(second)
                    continue
                return first
        time.sleep(0.5)
    raise AssertionError(f"{inside} did not split:\n{gl.gluster('heal-info', VOLUME)}")


def _damaged(url: str) -> list[dict[str, Any]]:
    r = requests.get(f"{url}/readyz", timeout=60)
    assert r.status_code == 200, r.text  # the node stays ready: it goes round the file
    damaged: list[dict[str, Any]] = r.json()["store"].get("damaged", [])
    return damaged


@pytest.mark.timeout(600)
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
