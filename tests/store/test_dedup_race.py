"""Dedup queues under racing identical sends: one pending copy per body, whatever sends at once.

Four processes with four threads each send the same payloads, each twice, in shuffled orders,
starting at the same instant, while a poller in this process claims and acknowledges some of
them (a claimed copy no longer absorbs sends, so a later identical send is a new message). At
the end every body has exactly one pending copy, unless it was claimed meanwhile: then at most
one copy per claim plus one pending. Without the marker lock (check, write and flush as one
step) two racing sends of one body both miss each other's marker and both store a copy.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from spoolq.store import FileStore, QueueKind, catalog
from tests.inside import catalog_of

from .helpers import Child

SCRIPT = Path(__file__).with_name("dedup_race_worker.py")


def _pending_counts(store: FileStore, queue: str) -> Counter[bytes]:
    return Counter(m.body for m in store.peek(queue, limit=1000))


def _start_senders(root: Path, start: Path, seeds: range) -> list[Child]:
    """One sender child per seed, waiting for ``start`` to exist."""
    return [Child(str(root), f"n{seed}", "d", str(start), str(seed), script=SCRIPT) for seed in seeds]


def _finish(children: list[Child]) -> None:
    for c in children:
        c.proc.kill()
        c.proc.wait()


def test_racing_identical_sends_leave_one_pending_copy(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = FileStore(root, node_id="t", fsync=False)
    store.create_queue("d", QueueKind.DEDUP)
    start = tmp_path / "start"
    children = _start_senders(root, start, range(4))
    try:
        start.touch()
        for c in children:
            assert c.readline(timeout=120) == "done"
    finally:
        _finish(children)
    counts = _pending_counts(store, "d")
    assert set(counts) == {f"payload-{i}".encode() for i in range(40)}
    assert {b: n for b, n in counts.items() if n > 1} == {}
    store.close()


def test_racing_sends_beside_polls_never_lose_and_never_double_pending(tmp_path: Path) -> None:
    """The same race while this process keeps claiming: a claimed body may be sent again (a new
    pending copy), but no body ever has two pending copies, and none is lost."""
    root = tmp_path / "root"
    store = FileStore(root, node_id="t", fsync=False)
    store.create_queue("d", QueueKind.DEDUP)
    start = tmp_path / "start"
    children = _start_senders(root, start, range(10, 13))
    claimed: Counter[bytes] = Counter()
    try:
        start.touch()
        while any(c.proc.poll() is None for c in children):
            for d in store.poll("d", limit=3, claim_ttl=600):
                claimed[d.message.body] += 1
                store.ack("d", [d.receipt])
        for c in children:
            assert c.readline(timeout=120) == "done"
    finally:
        _finish(children)
    pending = _pending_counts(store, "d")
    assert {b: n for b, n in pending.items() if n > 1} == {}
    assert set(pending) | set(claimed) == {f"payload-{i}".encode() for i in range(40)}
    store.close()


def test_threads_looking_up_a_queue_at_once_share_one_handle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first lookups of a queue, racing in several threads of one process, end with one handle.
    Its dedup lock descriptor and mutexes are what keep the threads' identical sends apart: two
    handles lock through two descriptors of one file, which a process's record locks do not tell
    apart, and the first handle's descriptor, closed when it is dropped, takes the other's locks
    with it. (The race above met this: two pending copies of one body from one process.)"""
    FileStore(tmp_path, fsync=False).create_queue("d", QueueKind.DEDUP)
    store = FileStore(tmp_path, fsync=False)  # a process that has not looked at "d" yet
    threads = 4
    everyone_read = threading.Barrier(threads)
    real_read_json = catalog.read_json

    def read_json_together(path: Path, **kwargs: Any) -> Any:
        data = real_read_json(path, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):
            everyone_read.wait(timeout=5)  # every thread has missed the cache before any fills it
        return data

    monkeypatch.setattr(catalog, "read_json", read_json_together)
    handles: list[object] = []
    workers = [threading.Thread(target=lambda: handles.append(catalog_of(store).find("d"))) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=30)
    assert len(handles) == threads
    assert len({id(h) for h in handles}) == 1
    assert catalog_of(store).find("d") is handles[0]
    store.close()
