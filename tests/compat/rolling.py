"""A rolling upgrade on one shared data directory, under load: the scenario the local test
(``test_rolling_upgrade.py``) and the multinode tier (GlusterFS, CephFS) run.

Two nodes serve one root (locally one directory; in the multinode tier the same directory through
two mounts of a shared file system). Both start on the previous version (its own code, checked out
from its commit: :data:`PREVIOUS`), then, while senders and consumers work through both:

1. node 2 is stopped and started on this version: the previous version and this one share the root
   (this one records the on-disk format and makes the lock files the previous one lacks, while the
   previous one serves);
2. node 1 is stopped and started on this version.

Senders send tagged messages to a standard and a dedup queue through both nodes (a refused or failed
send is not counted; a send answered 200 is), consumers poll through both with a claim longer than
the test and acknowledge (an acknowledgement that fails is sent again through the other node). At
the end everything left is drained through both nodes. The guarantee: every acknowledged send is
delivered (0 lost), and no message is delivered twice (no claim ends within the test, so a second
delivery would be one within a claim).

A poll whose answer never came (its node was stopped, or it outlasted the client's timeout, after
it had claimed) leaves its messages claimed, as SQS leaves a lost receive's messages invisible:
they come back when the claim ends, which is after the test. So when any poll lost its answer, the
drain first ends every claim (``unclaimall``, load stopped: every claim left is a lost answer's or
a failed acknowledgement's) and drains again; a message whose acknowledgement never got through
may then come twice and is left out of that count.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from tests.compat.make_corpus import REPO, checked_out
from tests.e2e.spoolq_server import Server, free_port

#: the previous version: main on 28 November 2026, the last without a format file
PREVIOUS = "7d23772"
QUEUES = ("rolling", "rolling-dedup")
CLAIM = 900  # longer than the test: a second delivery of a message would be one within its claim


@contextlib.contextmanager
def previous_version() -> Iterator[Path]:
    """The previous version's tree (its ``service/`` goes first on ``PYTHONPATH``)."""
    with checked_out(PREVIOUS) as tree:
        yield tree


@dataclass
class Node:
    name: str
    root: Path
    log: Path
    extra_args: tuple[str, ...] = ()
    server: Server | None = None
    versions: list[str] = field(default_factory=list)

    def start(self, tree: Path | None) -> None:
        """Serve ``root`` with the code of ``tree`` (None: this checkout's)."""
        env = {"PYTHONPATH": str(tree / "service")} if tree is not None else {}
        self.server = Server(root=self.root, port=free_port(), config=None, workers=2, threads=8, log=self.log,
                             node_id=self.name, extra_args=self.extra_args, extra_env=env)
        self.server.start(timeout=90)
        self.versions.append(requests.get(f"{self.server.url}/healthz", timeout=30).json().get("version", "?"))

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url


class Load:
    """Senders and consumers through every node, until stopped."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.acked: dict[str, list[str]] = {q: [] for q in QUEUES}
        self.delivered: list[tuple[str, str, str]] = []  # (queue, id, tag)
        self.unacked: list[tuple[str, str]] = []  # (queue, id) whose acknowledgement never got through
        self.lost_answers = 0  # polls that may have claimed without their answer reaching us
        self.answers: Counter[str] = Counter()
        self.counter = itertools.count()
        self.threads = [threading.Thread(target=self._send, args=(i, q), daemon=True)
                        for i in range(len(nodes)) for q in QUEUES for _ in range(2)]
        self.threads += [threading.Thread(target=self._consume, args=(i, q), daemon=True)
                         for i in range(len(nodes)) for q in QUEUES]

    def _door(self, queue: str) -> str:
        return "dedupq" if queue.endswith("-dedup") else "queue"

    def _send(self, node: int, queue: str) -> None:
        http = requests.Session()
        while not self.stop.is_set():
            tag = f"{queue}-{node}-{next(self.counter)}"
            try:
                r = http.post(f"{self.nodes[node].url}/{self._door(queue)}/1/{queue}/send", json={"tag": tag},
                              timeout=30)
            except (requests.RequestException, AssertionError):
                self._note("send failed (node restarting)")
                time.sleep(0.2)
                continue
            if r.status_code == 200:
                with self.lock:
                    self.acked[queue].append(tag)
            self._note(f"send {r.status_code}")
            time.sleep(0.01)

    def _consume(self, node: int, queue: str) -> None:
        http = requests.Session()
        while not self.stop.is_set():
            got = self.poll_once(http, node, queue)
            if got is None:
                time.sleep(0.2)
            elif not got:
                time.sleep(0.05)

    def poll_once(self, http: requests.Session, node: int, queue: str) -> list[dict[str, Any]] | None:
        """One poll through ``node`` and the acknowledgement of what it got (through any node)."""
        try:
            r = http.get(f"{self.nodes[node].url}/{self._door(queue)}/1/{queue}/poll",
                         params={"limit": 20, "ttl": CLAIM}, timeout=30)
        except requests.ConnectionError as e:
            if _refused(e):
                self._note("poll refused (node restarting)")
            else:
                self._lost_answer(f"poll failed ({type(e).__name__})")
            return None
        except (requests.RequestException, AssertionError) as e:
            self._lost_answer(f"poll failed ({type(e).__name__})")
            return None
        self._note(f"poll {r.status_code}")
        if r.status_code != 200:
            return None
        got: list[dict[str, Any]] = r.json()
        with self.lock:
            self.delivered.extend((queue, m["id"], m["payload"]["tag"]) for m in got)
        if got:
            self._ack(http, node, queue, [m["id"] for m in got])
        return got

    def _ack(self, http: requests.Session, node: int, queue: str, ids: list[str]) -> None:
        for attempt in range(40):
            target = self.nodes[(node + attempt) % len(self.nodes)]
            with contextlib.suppress(requests.RequestException, AssertionError):
                r = http.post(f"{target.url}/{self._door(queue)}/1/{queue}/ack", json=ids, timeout=30)
                if r.status_code == 200:
                    return
            time.sleep(0.25)
        with self.lock:
            self.unacked.extend((queue, i) for i in ids)

    def _note(self, what: str) -> None:
        with self.lock:
            self.answers[what] += 1

    def _lost_answer(self, what: str) -> None:
        self._note(what)
        with self.lock:
            self.lost_answers += 1

    def drain(self) -> None:
        """Everything left, through both nodes; after a lost answer, every claim ended first."""
        http = requests.Session()
        if self.lost_answers:
            for queue in QUEUES:
                r = http.post(f"{self.nodes[0].url}/{self._door(queue)}/1/{queue}/unclaimall", timeout=30)
                assert r.status_code == 200, r.text
        for queue in QUEUES:
            quiet = 0
            while quiet < 3 * len(self.nodes):
                for node in range(len(self.nodes)):
                    got = self.poll_once(http, node, queue)
                    quiet = quiet + 1 if not got else 0
                    time.sleep(0.05 if got else 0.3)


@dataclass
class Outcome:
    acked: int
    delivered: int
    lost: list[str]
    twice: list[str]
    answers: dict[str, int]
    versions: dict[str, list[str]]
    lost_answers: int = 0

    def __str__(self) -> str:
        return (f"acknowledged {self.acked}, delivered {self.delivered}, lost {len(self.lost)}, "
                f"delivered twice within a claim {len(self.twice)}; polls whose answer was lost "
                f"{self.lost_answers} (their claims ended before the last drain); answers {self.answers}; "
                f"versions served {self.versions}")


def rolling_upgrade(old_tree: Path, roots: tuple[Path, Path], logs: Path, extra_args: tuple[str, ...] = (),
                    phase_seconds: float = 6.0) -> Outcome:
    """The scenario of the module docstring; ``roots``: the shared directory as each node sees it."""
    nodes = [Node(f"node{i + 1}", root, logs / f"node{i + 1}.log", extra_args) for i, root in enumerate(roots)]
    try:
        for node in nodes:
            node.start(old_tree)
        load = Load(nodes)
        for t in load.threads:
            t.start()
        time.sleep(phase_seconds)  # the previous version on both nodes
        nodes[1].stop()
        nodes[1].start(None)  # mixed: the previous version on node 1, this one on node 2
        time.sleep(phase_seconds)
        nodes[0].stop()
        nodes[0].start(None)  # both upgraded
        time.sleep(phase_seconds)
        load.stop.set()
        for t in load.threads:
            t.join(timeout=60)
        load.drain()
    finally:
        for node in nodes:
            with contextlib.suppress(Exception):
                node.stop()
    acked = [t for q in QUEUES for t in load.acked[q]]
    tags = Counter(tag for _q, _i, tag in load.delivered)
    ids = Counter((q, i) for q, i, _tag in load.delivered)
    never_acked = set(load.unacked)
    return Outcome(acked=len(acked), delivered=len(load.delivered), lost=[t for t in acked if not tags[t]],
                   twice=[f"{q}:{i}" for (q, i), n in ids.items() if n > 1 and (q, i) not in never_acked], answers=dict(load.answers),
                   versions={n.name: n.versions for n in nodes}, lost_answers=load.lost_answers)


def _refused(e: requests.ConnectionError) -> bool:
    """Whether the connection was refused: nothing was asked of the node (urllib3 keeps the
    errno's text in the message it wraps)."""
    return "Connection refused" in str(e)


def git_available() -> str | None:
    """Why the previous version cannot be checked out here, or None."""
    if not (REPO / ".git").exists():
        return "not a git checkout: the previous version cannot be checked out"
    done = os.system(f"git -C {REPO} cat-file -e {PREVIOUS}^{{commit}} 2>/dev/null")
    return None if done == 0 else f"commit {PREVIOUS} is not in this clone (a shallow clone?)"
