"""Invariant 3 (one claimant) and 4 (nothing lost) across processes and nodes sharing one root.

8 independent processes, each with its own FileStore, poll and ack one queue of 20,000
messages with a claim ttl far longer than the test: every message must be delivered
exactly once (a second delivery could only come from two claimants of one message) and
none may be missing. With default settings the processes count each other as live pollers
(``pollers.lock``), split each bucket into lanes (cursor.py) and seldom reach for a message another
one took; told of their peers (``peers``) they do the same with the count they were given. Either
way they lose fewer than one claim rename in five messages (about one in twenty measured), where
pollers sweeping side by side lose more than one per message.
"""

from __future__ import annotations

import collections
import time
from pathlib import Path

import pytest

from spoolq.store import FileStore, OutgoingMessage

from .helpers import Child, files_under, make_body

N = 20_000
QUEUE = "mp"


def _fill(root: Path) -> dict[str, str]:
    store = FileStore(root, node_id="filler", fsync=False)
    store.create_queue(QUEUE)
    sent: dict[str, str] = {}
    for start in range(0, N, 1000):
        tags = [str(i) for i in range(start, start + 1000)]
        results = store.send_batch(QUEUE, [OutgoingMessage(body=make_body(t)) for t in tags])
        sent.update((r.id, t) for r, t in zip(results, tags, strict=True))
    assert len(sent) == N, "send_batch returned duplicate ids"
    assert store.size(QUEUE) == N
    store.close()
    return sent


def _run_consumers(root: Path, tmp_path: Path, children: list[Child], nodes: list[str],
                   peers: int) -> tuple[list[list[tuple[str, str, int]]], int]:
    """What each process delivered, and how many claim renames they lost to each other."""
    go = tmp_path / "go"
    outs = [tmp_path / f"out-{i}" for i in range(len(nodes))]
    procs = [Child("consume", str(root), node, QUEUE, str(out), str(go), str(peers))
             for node, out in zip(nodes, outs, strict=True)]
    children.extend(procs)
    for p in procs:
        assert p.readline() == "ready"
    go.touch()  # all 8 start polling at once
    for p in procs:
        rc = p.wait(timeout=150)
        assert rc == 0, f"consumer failed: {p.stderr()}"
    per_process = []
    for out in outs:
        rows = []
        for line in out.read_text().splitlines():
            assert line != "timeout", "a consumer ran out of time before the queue was empty"
            assert not line.startswith("ackfail"), f"an ack of a live claim failed: {line}"
            mid, tag, rc = line.split("\t")
            rows.append((mid, tag, int(rc)))
        per_process.append(rows)
    return per_process, sum(int((tmp_path / f"{out.name}.lost").read_text()) for out in outs)


def _assert_exactly_once(root: Path, sent: dict[str, str], per_process: list[list[tuple[str, str, int]]]) -> None:
    delivered = [row for rows in per_process for row in rows]
    counts = collections.Counter(mid for mid, _tag, _rc in delivered)
    twice = [mid for mid, c in counts.items() if c > 1]
    assert not twice, f"{len(twice)} messages delivered more than once, e.g. {twice[:5]}"
    missing = set(sent) - set(counts)
    assert not missing, f"{len(missing)} messages never delivered, e.g. {sorted(missing)[:5]}"
    unknown = set(counts) - set(sent)
    assert not unknown, f"{len(unknown)} delivered ids were never sent, e.g. {sorted(unknown)[:5]}"
    for mid, tag, rc in delivered:
        assert sent[mid] == tag, f"message {mid} carried body {tag!r}, sent as {sent[mid]!r}"
        assert rc == 1, f"message {mid} has receive count {rc} although no claim expired"
    assert sum(1 for rows in per_process if rows) >= 2, "the work was not shared at all: test proves nothing"
    store = FileStore(root, node_id="checker")
    assert store.size(QUEUE) == 0
    assert store.claim_count(QUEUE) == 0
    assert files_under(root / "corrupt") == []


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize(("nodes", "peers"), [
    pytest.param(["node-a"] * 8, 0, id="one-node-8-processes-default-settings"),
    pytest.param(["node-a"] * 8, 7, id="one-node-8-processes-in-lanes"),
    pytest.param(["node-a"] * 4 + ["node-b"] * 4, 7, id="two-nodes-4-processes-each"),
])
def test_eight_processes_deliver_each_message_exactly_once(root: Path, tmp_path: Path, children: list[Child],
                                                            nodes: list[str], peers: int) -> None:
    t0 = time.monotonic()
    sent = _fill(root)
    t1 = time.monotonic()
    per_process, lost = _run_consumers(root, tmp_path, children, nodes, peers)
    t2 = time.monotonic()
    _assert_exactly_once(root, sent, per_process)
    print(f"fill {t1 - t0:.1f}s, drain {t2 - t1:.1f}s, per process: {[len(r) for r in per_process]}, "
          f"lost claim renames: {lost}")
    assert lost < N / 5, f"{lost} claim renames lost for {N} messages: the pollers did not split the buckets"
