"""NodeFlush (spoolq.store.nodeflush): processes of one node share flushes, and honest failures.

Each :class:`NodeFlush` instance opens its own descriptor of the shared file, so instances in
threads of one process contend for the flush lock exactly as processes do; the first test also
runs in real processes. The property checked everywhere: a caller returns only after a flush
that *started after* its call began, whichever process ran it, and a failed flush fails every
caller it covered.
"""

from __future__ import annotations

import errno
import itertools
import multiprocessing as mp
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from spoolq.store.nodeflush import NodeFlush, shared_path

PROCS = 4
CALLS = 25


def _proc_caller(root: str, out: str, go: float) -> None:
    """Child: call flush CALLS times from 2 threads; log calls (start, end) and led flushes (start, end)."""
    nf = NodeFlush(Path(root))
    lock = threading.Lock()
    lines: list[str] = []

    def run() -> None:
        start = time.monotonic()
        time.sleep(0.003)  # a flush long enough for other processes to queue up
        with lock:
            lines.append(f"F {start} {time.monotonic()}\n")

    mutex = threading.Lock()  # GroupCommit lets one thread per process into NodeFlush at a time

    def loop() -> None:
        while time.monotonic() < go:
            time.sleep(0.001)
        for _ in range(CALLS):
            start = time.monotonic()
            with mutex:
                nf.flush(run)
            with lock:
                lines.append(f"C {start} {time.monotonic()}\n")

    threads = [threading.Thread(target=loop) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(out, "w") as f:
        f.writelines(lines)


def test_processes_share_flushes_and_every_caller_is_covered(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    go = time.monotonic() + 1.0
    outs = [tmp_path / f"out-{i}" for i in range(PROCS)]
    procs = [ctx.Process(target=_proc_caller, args=(str(tmp_path), str(o), go)) for o in outs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0, "a flush caller failed or hung"
    calls: list[tuple[float, float]] = []
    flushes: list[tuple[float, float]] = []
    for o in outs:
        for line in o.read_text().splitlines():
            kind, a, b = line.split()
            (calls if kind == "C" else flushes).append((float(a), float(b)))
    assert len(calls) == PROCS * 2 * CALLS
    uncovered = [c for c in calls if not any(c[0] < f[0] and f[1] <= c[1] for f in flushes)]
    assert not uncovered, f"{len(uncovered)} calls returned without a flush that began after them"
    # no two flushes overlap: one leader at a time on the node
    spans = sorted(flushes)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), "two processes flushed at once"
    assert len(flushes) <= len(calls) * 0.75, f"{len(flushes)} flushes for {len(calls)} calls: no sharing"
    print(f"{len(calls)} calls in {PROCS} processes, {len(flushes)} flushes")


def test_a_failed_flush_fails_every_process_it_covered(tmp_path: Path) -> None:
    """X leads flush 1 (held); L and W queue with need = 2; flush 2 fails: both L and W fail."""
    x, lw = NodeFlush(tmp_path), [NodeFlush(tmp_path), NodeFlush(tmp_path)]
    in_first, release_first = threading.Event(), threading.Event()
    runs: list[str] = []

    def held() -> None:
        runs.append("held")
        in_first.set()
        assert release_first.wait(10)

    def failing() -> None:
        runs.append("failing")
        raise OSError(errno.EIO, "Input/output error")

    results: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            lw[i].flush(failing)
            results[i] = "ok"
        except OSError as e:
            results[i] = e.errno

    tx = threading.Thread(target=x.flush, args=(held,))
    tx.start()
    assert in_first.wait(10)
    waiters = [threading.Thread(target=call, args=(i,)) for i in range(2)]
    for t in waiters:
        t.start()
    time.sleep(0.3)  # both have read `started` (= 1) and queue on the lock
    release_first.set()
    tx.join(10)
    for t in waiters:
        t.join(10)
    assert runs == ["held", "failing"], f"flushes run: {runs}"
    assert results == {0: errno.EIO, 1: errno.EIO}, f"callers covered by the failed flush got {results}"
    # a later caller needs a later flush, which succeeds
    ok: list[str] = []
    x.flush(lambda: ok.append("ran"))
    assert ok == ["ran"]


def _leader_that_hangs(root: str, ready_path: str) -> None:
    nf = NodeFlush(Path(root))

    def hang() -> None:
        Path(ready_path).write_text("in flush")
        time.sleep(120)

    nf.flush(hang)


def test_a_leader_killed_mid_flush_does_not_block_the_node(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    marker = tmp_path / "in-flush"
    leader = ctx.Process(target=_leader_that_hangs, args=(str(tmp_path), str(marker)))
    leader.start()
    try:
        deadline = time.monotonic() + 20
        while not marker.exists():
            assert time.monotonic() < deadline, "the leader never started its flush"
            time.sleep(0.01)
        waiter = NodeFlush(tmp_path)
        ran: list[float] = []
        t = threading.Thread(target=waiter.flush, args=(lambda: ran.append(time.monotonic()),))
        t.start()
        time.sleep(0.2)
        assert not ran, "a second leader flushed while the first held the lock"
        killed = time.monotonic()
        assert leader.pid is not None
        os.kill(leader.pid, signal.SIGKILL)
        t.join(10)
        assert not t.is_alive(), "the node stayed blocked after its leader died"
        assert ran and ran[0] >= killed, "the waiter returned without a flush of its own"
    finally:
        leader.kill()
        leader.join(10)


def test_roots_do_not_share_a_sequence_and_fork_reopens(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert shared_path(tmp_path / "a") != shared_path(tmp_path / "b")
    nf = NodeFlush(tmp_path / "a")
    nf.flush(lambda: None)
    pid = os.fork()
    if pid == 0:  # the child must not share the parent's lock descriptor
        code = 1
        try:
            nf.flush(lambda: None)
            code = 0 if nf._pid == os.getpid() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    nf.close()


def test_a_leader_raising_something_else_records_no_success(tmp_path: Path) -> None:
    nf = NodeFlush(tmp_path)
    with pytest.raises(RuntimeError):
        nf.flush(lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    ran: list[int] = []
    NodeFlush(tmp_path).flush(lambda: ran.append(1))
    assert ran == [1], "a caller after a broken flush must get a flush of its own"
