"""Empty ready buckets: removed at once by pollers (local disks, CephFS) or by maintenance under the
queue's bucket lock (GlusterFS, where an rmdir meeting a rename into the same directory can hang
both: see ``spoolq.store.bucket_guard``). Both modes run here on the local file system, the
guarded one chosen explicitly.

The load test runs senders, pollers that release, ack or let short claims expire, and maintenance
passes in separate processes on one root. Each process records when every rmdir of a directory and
every rename, link or mkdir into one began and ended (``time.monotonic`` is one clock for every
process); every rmdir is held open 5 ms to widen the window. Guarded removal must never overlap a
rename into the directory it removes. Both modes must lose nothing, deliver nothing twice within a
claim, and leave no bucket behind.
"""

from __future__ import annotations

import collections
import itertools
import json
import multiprocessing
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from spoolq.store import FileStore, OutgoingMessage, bucket_guard
from spoolq.store.filesystems import empty_bucket_removal

QUEUE = "eb"
TTL = 0.3  # seconds: the pollers' claims, short enough to expire during the test
#: a claim's expiry is counted from the store's clock in whole milliseconds, rounded down
SLACK = 0.005


def bucket_dirs(root: Path, queue: str = QUEUE) -> list[str]:
    ready = root / "queues" / queue / "ready"
    return sorted(f"{k}/{b}" for k in os.listdir(ready) for b in os.listdir(ready / k)) if ready.is_dir() else []


class Clock:
    """The store's clock, started 100 s into a thousand-second group so that a test that moves it
    on by at most 900 s keeps its buckets in one ksec directory (which would otherwise be empty and
    removable too about one run in sixteen)."""

    def __init__(self) -> None:
        self.now = time.time() // 1000 * 1000 + 100

    def __call__(self) -> float:
        return self.now


def test_the_file_system_decides() -> None:
    assert empty_bucket_removal("/")[0] == "immediate"  # whatever local file system holds /
    with pytest.raises(Exception, match="empty_buckets"):
        FileStore("/tmp/never-made-spoolq-root-for-this-test", empty_buckets="sometimes")


@pytest.mark.parametrize("mode", ["immediate", "guarded"])
def test_an_emptied_old_bucket_goes_when_its_mode_says(root: Path, mode: str) -> None:
    clock = Clock()
    store = FileStore(root, fsync=False, clock=clock, empty_buckets=mode)
    store.create_queue(QUEUE)
    store.send_batch(QUEUE, [OutgoingMessage(body=b"x")])
    [d] = store.poll(QUEUE, claim_ttl=60)
    store.ack(QUEUE, [d.receipt])
    clock.now += 3  # past the write window
    assert store.poll(QUEUE) == []
    if mode == "immediate":
        assert bucket_dirs(root) == []  # the poller that found it empty removed it
        return
    assert len(bucket_dirs(root)) == 1  # pollers leave it to maintenance
    store.maintain()
    assert len(bucket_dirs(root)) == 1  # younger than REMOVE_AFTER_MS
    clock.now += bucket_guard.REMOVE_AFTER_MS / 1000
    assert store.maintain()["buckets_removed"] == 1
    assert bucket_dirs(root) == []
    assert len(os.listdir(root / "queues" / QUEUE / "ready")) == 1  # its ksec: it holds this second's buckets
    clock.now += 1000
    assert store.maintain()["buckets_removed"] == 1
    assert os.listdir(root / "queues" / QUEUE / "ready") == []


def test_guarded_removal_waits_for_a_rename_in_another_process(root: Path) -> None:
    clock = Clock()
    store = FileStore(root, fsync=False, clock=clock, empty_buckets="guarded")
    store.create_queue(QUEUE)
    store.send_batch(QUEUE, [OutgoingMessage(body=b"x")])
    [d] = store.poll(QUEUE, claim_ttl=60)
    store.ack(QUEUE, [d.receipt])
    clock.now += 60
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from spoolq.store import bucket_guard\n"
         f"with bucket_guard.renaming({os.path.realpath(root / 'queues' / QUEUE)!r}):\n"
         "    print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(bucket_guard.__file__).parents[2])})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert store.maintain()["buckets_removed"] == 0  # a rename into an old bucket may be under way
        assert len(bucket_dirs(root)) == 1
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert store.maintain()["buckets_removed"] == 1


# ------------------------------------------------------------------ the load test


def _instrument(events: list[tuple[str, str, float, float]]) -> None:
    """Record every rmdir, and every rename, link and mkdir into a directory, with its times."""
    real_rmdir, real_rename, real_link, real_mkdir = os.rmdir, os.rename, os.link, os.mkdir
    lock = threading.Lock()

    def note(kind: str, directory: str, t0: float) -> None:
        with lock:
            events.append((kind, os.path.normpath(str(directory)), t0, time.monotonic()))

    def rmdir(path: Any, *args: Any, **kwargs: Any) -> None:
        t0 = time.monotonic()
        try:
            time.sleep(0.005)
            real_rmdir(path, *args, **kwargs)
        finally:
            note("rmdir", path, t0)

    def into(real: Callable[..., None], target_arg: int) -> Callable[..., None]:
        def call(*args: Any, **kwargs: Any) -> None:
            t0 = time.monotonic()
            try:
                real(*args, **kwargs)
            finally:
                note("into", os.path.dirname(str(args[target_arg])), t0)
        return call

    os.rmdir = rmdir  # type: ignore[assignment]
    os.rename = into(real_rename, 1)  # type: ignore[assignment]
    os.link = into(real_link, 1)  # type: ignore[assignment]
    os.mkdir = into(real_mkdir, 0)  # type: ignore[assignment]


def _sender(root: str, mode: str, name: str, seconds: float, out: str) -> None:
    events: list[tuple[str, str, float, float]] = []
    _instrument(events)
    store = FileStore(root, node_id=name, fsync=False, empty_buckets=mode)
    sent, n = [], 0
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        tags = [f"{name}-{n}-{i}" for i in range(5)]
        n += 1
        delay = 0.3 if n % 4 == 0 else 0.0  # some come due later, into their (by then older) buckets
        store.send_batch(QUEUE, [OutgoingMessage(body=t.encode(), delay=delay) for t in tags])
        sent.extend(tags)
        time.sleep(0.02)
    store.close()
    Path(out).write_text(json.dumps({"sent": sent, "events": events}))


def _poller(root: str, mode: str, name: str, seconds: float, out: str) -> None:
    events: list[tuple[str, str, float, float]] = []
    _instrument(events)
    store = FileStore(root, node_id=name, fsync=False, empty_buckets=mode, peers=3)
    rows: list[list[Any]] = []
    stop = time.monotonic() + seconds
    rng = random.Random(name)

    def maintain() -> None:
        while time.monotonic() < stop:
            store.maintain()
            time.sleep(0.2)

    maintainer = threading.Thread(target=maintain)
    maintainer.start()
    while time.monotonic() < stop:
        t0 = time.monotonic()
        got = store.poll(QUEUE, limit=5, claim_ttl=TTL)
        t1 = time.monotonic()
        for d in got:
            tag = d.message.body.decode()
            rows.append(["got", tag, d.message.id, t0, t1])
            choice = "ack" if d.message.receive_count >= 4 else rng.choice(["ack", "release", "expire"])
            if choice == "expire":
                continue
            a0 = time.monotonic()
            ok = (store.ack if choice == "ack" else store.release)(QUEUE, [d.receipt])[0]
            rows.append([choice, tag, d.message.id, a0, time.monotonic(), ok])
        if not got:
            time.sleep(0.01)
    maintainer.join()
    store.close()
    Path(out).write_text(json.dumps({"rows": rows, "events": events}))


def _overlaps(events: list[tuple[str, str, float, float]]) -> list[tuple[str, float]]:
    """(directory, seconds) of every rmdir that overlapped a rename, link or mkdir into it."""
    into: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for kind, d, t0, t1 in events:
        if kind == "into":
            into[d].append((t0, t1))
    return [(d, min(t1, b1) - max(t0, b0)) for kind, d, t0, t1 in events if kind == "rmdir"
            for b0, b1 in into.get(d, []) if b0 < t1 and t0 < b1]


def _twice(rows: list[list[Any]]) -> list[str]:
    """Tags delivered while an earlier delivery's claim was surely still live (not released, acked
    or expired by then), or delivered again after an acknowledgement; and tags acked twice."""
    by_tag: dict[str, list[list[Any]]] = collections.defaultdict(list)
    for r in rows:
        by_tag[r[1]].append(r)
    bad = []
    for tag, rs in by_tag.items():
        gots = sorted((r for r in rs if r[0] == "got"), key=lambda r: r[3])
        ends = {}  # a delivery's (poll start) -> the earliest its claim surely ended
        for g in gots:
            done = [r[3] for r in rs if r[0] in ("ack", "release") and r[5] and r[3] >= g[4]]
            ends[g[3]] = min([g[3] + TTL - SLACK, *done])
        acks = [r for r in rs if r[0] == "ack" and r[5]]
        if len(acks) > 1:
            bad.append(tag)
            continue
        for a, b in itertools.pairwise(gots):
            if b[3] > a[4] and b[4] < ends[a[3]]:
                bad.append(tag)
        if acks and any(g[3] > acks[0][4] for g in gots):
            bad.append(tag)
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["immediate", "guarded"])
def test_buckets_go_under_mixed_load_and_nothing_is_lost_or_doubled(root: Path, tmp_path: Path, mode: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bucket_guard, "REMOVE_AFTER_MS", 1500)  # the children are forked: they see it too
    setup = FileStore(root, fsync=False, empty_buckets=mode)
    setup.create_queue(QUEUE)
    setup.close()
    ctx = multiprocessing.get_context("fork")
    outs = {f"s{i}": tmp_path / f"s{i}.json" for i in range(2)} | {f"p{i}": tmp_path / f"p{i}.json" for i in range(3)}
    procs = [ctx.Process(target=_sender, args=(str(root), mode, n, 3.0, str(o))) for n, o in outs.items()
             if n[0] == "s"]
    procs += [ctx.Process(target=_poller, args=(str(root), mode, n, 7.0, str(o))) for n, o in outs.items()
              if n[0] == "p"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0, f"a worker failed ({p.exitcode})"
    results = {n: json.loads(o.read_text()) for n, o in outs.items()}
    sent = [t for res in results.values() for t in res.get("sent", [])]
    rows = [r for res in results.values() for r in res.get("rows", [])]
    events = [tuple(e) for res in results.values() for e in res["events"]]

    # what the pollers left, drained once their last claims ran out; the store's clock 60 s ahead
    # makes every bucket old enough for either mode to remove
    time.sleep(TTL + 0.2)
    later = FileStore(root, fsync=False, empty_buckets=mode, clock=lambda: time.time() + 60)
    while got := later.poll(QUEUE, limit=100, claim_ttl=600):
        t0 = time.monotonic()
        rows += [["got", d.message.body.decode(), d.message.id, t0, t0] for d in got]
        a0 = time.monotonic()
        rows += [["ack", d.message.body.decode(), d.message.id, a0, a0, ok]
                 for d, ok in zip(got, later.ack(QUEUE, [d.receipt for d in got]), strict=True)]
    later.maintain()
    assert later.poll(QUEUE) == [] and later.size(QUEUE) == 0 and later.claim_count(QUEUE) == 0
    later.close()

    acked = collections.Counter(r[1] for r in rows if r[0] == "ack" and r[5])
    lost = set(sent) - set(acked)
    twice = _twice(rows)
    overlaps = _overlaps(events)  # type: ignore[arg-type]
    rmdirs = sum(1 for e in events if e[0] == "rmdir")
    print(f"\n{mode}: {len(sent)} sent, {sum(1 for r in rows if r[0] == 'got')} deliveries, "
          f"{sum(1 for r in rows if r[0] == 'release' and r[5])} releases, {rmdirs} rmdirs by pollers' processes, "
          f"{len(overlaps)} rmdirs overlapping a rename into their directory, lost {len(lost)}, twice {len(twice)}")
    assert len(sent) > 300 and rmdirs > 0
    assert (sorted(lost)[:5], len(lost)) == ([], 0)
    assert (twice[:5], len(twice)) == ([], 0), [r for r in rows if r[1] in twice[:2]]
    assert bucket_dirs(root) == []
    assert not [b for b in os.listdir(root / "queues" / QUEUE) if b == "delayed"
                and os.listdir(root / "queues" / QUEUE / "delayed")]
    if mode == "guarded":
        assert overlaps == []
