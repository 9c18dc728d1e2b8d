"""Faults across nodes on GlusterFS: one node cut off from the bricks, a brick killed, mid-storm.

Three nodes serve one replica-2 volume; node 3's mount goes through a network namespace of its own
(``scripts/gluster isolable``), so its network to glusterd and the bricks can be cut and restored
while the others keep theirs. The volume's ``network.ping-timeout`` is 5 s for the test (Gluster's
default is 42 s), so a request stuck behind a dead connection fails within seconds.

While senders on every node send without pause, the storm cuts node 3's network for 10 s, then
kills the first brick's process for 10 s (with replica 2 the volume loses quorum: read-only), then
starts it again. Every send must answer 200 or 503 with ``Retry-After``: nothing else, no hang.
After the storm and the heal every acknowledged message is delivered, and no message is handed out
twice while claimed (one claim of 600 s covers the whole drain).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.multinode import cluster as gl
from tests.multinode.cluster import Cluster

pytestmark = pytest.mark.multinode

VOLUME = "spq-rep"
ISOLATED = 3  # the node whose network is cut
CLAIM = 600


@pytest.fixture(scope="module")
def nodes(gluster: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    gl.gluster("isolable", VOLUME, str(ISOLATED))
    gl.gluster("set", VOLUME, "network.ping-timeout", "5")
    cluster = Cluster.start(VOLUME, tmp_path_factory.mktemp("faults"), extra_args=("--peers", "5"))
    try:
        yield cluster
    finally:
        cluster.stop()
        for args in (("heal", VOLUME, str(ISOLATED)), ("start-bricks", VOLUME),
                     ("reset", VOLUME, "network.ping-timeout"), ("remount", VOLUME, str(ISOLATED))):
            try:
                gl.gluster(*args)
            except RuntimeError as e:
                print(f"teardown: {e}")


class Storm:
    """Senders on every node until stopped; what each send answered."""

    def __init__(self, urls: list[str], queue: str) -> None:
        self.urls, self.queue = urls, queue
        self.acked: list[str] = []
        self.answers: Counter[str] = Counter()
        self.per_node: Counter[str] = Counter()  # sends answered 200, by node index
        self.slowest: dict[str, float] = {}  # longest send (seconds), by node index
        self.bad: list[str] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._send, args=(u, f"{i}-{k}"))
                        for i, u in enumerate(urls) for k in range(3)]

    def _send(self, url: str, who: str) -> None:
        http = requests.Session()
        n = 0
        while not self.stop.is_set():
            n += 1
            tag = f"{who}-{n}"
            started = time.monotonic()
            try:
                r = http.post(f"{url}/queue/1/{self.queue}/send", json={"tag": tag}, timeout=60)
            except requests.RequestException as e:
                with self.lock:
                    self.bad.append(f"{tag}: {type(e).__name__} after {time.monotonic() - started:.1f}s")
                continue
            took = time.monotonic() - started
            node = who.split("-")[0]
            with self.lock:
                self.slowest[node] = max(self.slowest.get(node, 0.0), took)
                if r.status_code == 200:
                    self.per_node[node] += 1
                    self.acked.append(tag)
                    self.answers["200"] += 1
                elif r.status_code == 503 and r.headers.get("Retry-After"):
                    self.answers["503+Retry-After"] += 1
                    time.sleep(0.2)
                else:
                    self.bad.append(f"{tag}: {r.status_code} {r.headers.get('Retry-After')!r} {r.text[:200]}")

    def count(self) -> tuple[int, Counter[str]]:
        with self.lock:
            return len(self.acked), Counter(self.answers) + Counter({f"node{int(k) + 1}": v
                                                                      for k, v in self.per_node.items()})


def _drain(urls: list[str], queue: str, deadline: float = 300.0) -> list[tuple[str, str]]:
    """Claim (600 s) and ack everything through every node: (message id, tag) per delivery."""
    sessions = [requests.Session() for _ in urls]
    out: list[tuple[str, str]] = []
    quiet = 0
    end = time.monotonic() + deadline
    while quiet < 3 and time.monotonic() < end:
        got_any = False
        for url, http in zip(urls, sessions, strict=True):
            r = http.get(f"{url}/queue/1/{queue}/poll", params={"limit": 100, "ttl": CLAIM}, timeout=60)
            if r.status_code != 200:
                continue
            got: list[dict[str, Any]] = r.json()
            if got:
                got_any = True
                out.extend((m["id"], m["payload"]["tag"]) for m in got)
                http.post(f"{url}/queue/1/{queue}/ack", json=[m["id"] for m in got], timeout=60)
        quiet = 0 if got_any else quiet + 1
        if not got_any:
            time.sleep(1.0)
    return out


@pytest.mark.timeout(900)
def test_a_partitioned_node_and_a_killed_brick_lose_nothing(nodes: Cluster) -> None:
    queue = f"faults-{uuid.uuid4().hex[:8]}"
    storm = Storm(nodes.urls, queue)
    phases: list[tuple[str, int, Counter[str]]] = []

    def mark(name: str) -> None:
        acked, answers = storm.count()
        phases.append((name, acked, answers))

    for t in storm.threads:
        t.start()
    try:
        time.sleep(5)
        mark("before")
        gl.gluster("partition", VOLUME, str(ISOLATED))
        time.sleep(10)
        mark("node 3 cut off")
        gl.gluster("heal", VOLUME, str(ISOLATED))
        time.sleep(8)
        mark("healed")
        gl.gluster("kill-brick", VOLUME, "1")
        time.sleep(10)
        mark("brick 1 killed")
        gl.gluster("start-bricks", VOLUME)
        time.sleep(10)
        mark("brick 1 back")
    finally:
        storm.stop.set()
        for t in storm.threads:
            t.join(timeout=120)
    for name, acked, answers in phases:
        print(f"{name}: {acked} acknowledged, answers so far {dict(answers)}")
    print(f"longest send per node: {({f'node{int(k) + 1}': round(v, 1) for k, v in storm.slowest.items()})}")
    assert not storm.bad, storm.bad[:10]
    assert storm.answers["200"] > 0

    delivered = _drain(nodes.urls, queue)
    ids = Counter(i for i, _tag in delivered)
    tags = Counter(tag for _i, tag in delivered)
    lost = [tag for tag in storm.acked if tags[tag] == 0]
    twice = [i for i, n in ids.items() if n > 1]
    print(f"acknowledged {len(storm.acked)}, answers {dict(storm.answers)}, delivered {len(delivered)} "
          f"({len(tags)} distinct), lost {len(lost)}, delivered twice within a claim {len(twice)}")
    assert not lost, lost[:10]
    assert not twice, twice[:10]
