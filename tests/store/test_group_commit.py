"""GroupCommit (spoolq.store.group_commit): one flush for many concurrent callers, and honest failures.

The real flush (syncfs) is replaced by an instrumented one so the tests can check the
property that matters: a caller returns only after a flush that *started after* its
call began (so everything it wrote before calling is covered), and a failed flush fails
every caller it covered, and only those.
"""

from __future__ import annotations

import errno
import threading
import time
from pathlib import Path

import pytest

from spoolq.errors import StorageUnavailable
from spoolq.store.group_commit import GroupCommit

THREADS = 16
CALLS = 10


class Recorder:
    """Stands in for ``_do_flush``: counts writes seen at the start of each flush."""

    def __init__(self, seconds: float = 0.005) -> None:
        self.lock = threading.Lock()
        self.writes = 0  # callers' writes made so far (a write happens before each flush() call)
        self.durable_writes = 0  # writes covered by a completed flush
        self.flushes = 0
        self.seconds = seconds

    def write(self) -> int:
        with self.lock:
            self.writes += 1
            return self.writes

    def __call__(self, paths: list[str]) -> None:
        with self.lock:
            covered = self.writes
        time.sleep(self.seconds)
        with self.lock:
            self.flushes += 1
            self.durable_writes = max(self.durable_writes, covered)


def _run_threads(n: int, target) -> None:  # type: ignore[no-untyped-def]
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a flush() caller never returned"


def test_concurrent_callers_share_flushes_and_each_is_covered(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    gc = GroupCommit(tmp_path, enabled=True)
    rec = Recorder()
    monkeypatch.setattr(gc, "_do_flush", rec)
    start = threading.Barrier(THREADS)
    uncovered: list[str] = []

    def caller(i: int) -> None:
        start.wait()
        for _ in range(CALLS):
            mine = rec.write()
            gc.flush()
            if rec.durable_writes < mine:
                uncovered.append(f"thread {i}: write {mine} returned, durable only up to {rec.durable_writes}")

    _run_threads(THREADS, caller)
    callers = THREADS * CALLS
    assert not uncovered, "\n".join(uncovered[:5])
    assert 1 <= rec.flushes < callers, f"{rec.flushes} flushes for {callers} concurrent callers: no grouping"
    assert rec.flushes <= callers // 2, f"{rec.flushes} flushes for {callers} callers: grouping too weak"
    print(f"{callers} callers, {rec.flushes} flushes")


def test_real_flush_works_and_is_counted(tmp_path: Path) -> None:
    gc = GroupCommit(tmp_path, enabled=True)
    (tmp_path / "f").write_bytes(b"x")
    _run_threads(8, lambda i: gc.flush())
    assert 1 <= gc.flushes <= 8
    gc.close()


def test_disabled_group_commit_never_flushes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gc = GroupCommit(tmp_path, enabled=False)
    rec = Recorder()
    monkeypatch.setattr(gc, "_do_flush", rec)
    _run_threads(4, lambda i: gc.flush())
    assert rec.flushes == 0


def test_failed_flush_fails_every_caller_it_covered_and_only_those(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Flush #1 succeeds (A), #2 fails with EIO (covers B1..Bn), #3 succeeds (C1..Cm, who came during #2)."""
    gc = GroupCommit(tmp_path, enabled=True)
    release_first, release_second = threading.Event(), threading.Event()
    entered = [threading.Event() for _ in range(3)]
    calls: list[int] = []

    def fake(paths: list[str]) -> None:
        n = len(calls)
        calls.append(n)
        if n < 3:
            entered[n].set()
        if n == 0:
            assert release_first.wait(10)
        elif n == 1:
            assert release_second.wait(10)
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(gc, "_do_flush", fake)
    results: dict[str, object] = {}

    def call(name: str) -> None:
        try:
            gc.flush()
            results[name] = "ok"
        except StorageUnavailable as e:
            results[name] = e
        except Exception as e:  # anything else is a failure of the test subject
            results[name] = f"bare {type(e).__name__}: {e}"

    def start(name: str) -> threading.Thread:
        t = threading.Thread(target=call, args=(name,))
        t.start()
        return t

    def wait_issued(n: int) -> None:
        deadline = time.monotonic() + 10
        while gc.tickets.issued < n:
            assert time.monotonic() < deadline, "callers did not queue up"
            time.sleep(0.001)

    threads = [start("A")]
    assert entered[0].wait(10)  # A leads flush #1 and blocks in it
    bs = [f"B{i}" for i in range(6)]
    threads += [start(b) for b in bs]
    wait_issued(1 + len(bs))  # every B holds a ticket issued after flush #1 started
    release_first.set()
    assert entered[1].wait(10)  # one B leads flush #2 (covering all Bs), which will fail
    cs = [f"C{i}" for i in range(5)]
    threads += [start(c) for c in cs]
    wait_issued(1 + len(bs) + len(cs))  # every C holds a ticket issued after flush #2 started
    release_second.set()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads), "a caller hung after a failed flush"

    assert results["A"] == "ok"
    for b in bs:
        e = results[b]
        assert isinstance(e, StorageUnavailable), f"{b}, covered by the failed flush, got {e!r}"
        assert "EIO" in str(e) and e.retry_after > 0
        assert isinstance(e.__cause__, OSError) and e.__cause__.errno == errno.EIO
    for c in cs:
        assert results[c] == "ok", f"{c} came after the failed flush started but got {results[c]!r}"
    assert len(calls) == 3, f"expected 3 flushes (ok, failed, ok), saw {len(calls)}"

    # and the store recovers: the next caller gets a fresh, successful flush
    gc.flush()
    assert len(calls) == 4


class _CountingFlush:
    """A TicketedFlush over a flush that records how many tickets had been issued when it started."""

    def __init__(self, seconds: float = 0.0) -> None:
        from spoolq.store.ticketed_flush import TicketedFlush

        self.started_at: list[int] = []
        self.seconds = seconds
        self.tickets = TicketedFlush(self._once, "flushing")

    def _once(self) -> None:
        self.started_at.append(self.tickets.issued)
        time.sleep(self.seconds)


def test_a_leader_waits_for_an_announced_writer_and_one_flush_covers_both(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writer A has announced itself and is still writing when B leads a flush: B's flush starts only
    once A has taken its ticket, so one flush covers both (without the wait: two flushes)."""
    import spoolq.store.ticketed_flush as tf

    monkeypatch.setattr(tf, "GATHER_SECONDS", 10.0)
    f = _CountingFlush()
    f.tickets._last_seconds = 10.0  # as if the last flush had taken that long
    f.tickets.announce()  # A begins its writes
    b = threading.Thread(target=f.tickets.flush)
    b.start()
    deadline = time.monotonic() + 5
    while f.tickets.issued < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(0.05)
    assert f.started_at == [], "the leader flushed while an announced writer was still writing"
    f.tickets.flush(announced=True)  # A is done writing
    b.join(5)
    assert not b.is_alive()
    assert f.started_at == [2], f"flushes started at tickets {f.started_at}: A was not covered by B's flush"


def test_a_withdrawn_announcement_releases_the_waiting_leader(monkeypatch: pytest.MonkeyPatch) -> None:
    import spoolq.store.ticketed_flush as tf

    monkeypatch.setattr(tf, "GATHER_SECONDS", 10.0)
    f = _CountingFlush()
    f.tickets._last_seconds = 10.0
    f.tickets.announce()
    started = time.monotonic()
    b = threading.Thread(target=f.tickets.flush)
    b.start()
    time.sleep(0.05)
    f.tickets.withdraw()  # A's writes failed: it will not flush
    b.join(5)
    assert not b.is_alive() and time.monotonic() - started < 5
    assert f.started_at == [1]


def test_a_leader_waits_no_longer_than_the_gather_time_nor_the_last_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    """An announced writer that stalls (no core, say) delays a flush by GATHER_SECONDS at most, and by
    no more than the last flush took."""
    import spoolq.store.ticketed_flush as tf

    monkeypatch.setattr(tf, "GATHER_SECONDS", 0.05)
    f = _CountingFlush()
    f.tickets.flush()  # the first flush: nothing to measure it by, so no wait
    f.tickets._last_seconds = 10.0
    f.tickets.announce()
    started = time.monotonic()
    f.tickets.flush()
    assert 0.04 <= time.monotonic() - started < 3
    monkeypatch.setattr(tf, "GATHER_SECONDS", 10.0)
    f.seconds = 0.05
    f.tickets.flush()  # takes 0.05 s: the next wait is at most that
    started = time.monotonic()
    f.tickets.flush()
    assert 0.04 <= time.monotonic() - started - f.seconds < 3
    f.tickets.withdraw()
    f.seconds = 0.0
    started = time.monotonic()
    f.tickets.flush()  # nobody announced: no wait
    assert time.monotonic() - started < 0.04
    assert f.started_at == [1, 2, 3, 4, 5]


def test_announced_concurrent_callers_are_each_covered_by_a_flush_that_started_after_their_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The group-commit rule with announcements, under load: a caller returns only after a flush that
    started after its write; failed writers withdraw; flushes are shared."""
    gc = GroupCommit(tmp_path, enabled=True)
    rec = Recorder(seconds=0.002)
    monkeypatch.setattr(gc, "_do_flush", rec)
    start = threading.Barrier(THREADS)
    uncovered: list[str] = []

    def caller(i: int) -> None:
        start.wait()
        for n in range(CALLS):
            assert gc.announce()
            time.sleep(0.0002)  # writing its files
            if (i + n) % 7 == 0:
                gc.withdraw()  # a write that failed
                continue
            mine = rec.write()
            gc.flush(announced=True)
            if rec.durable_writes < mine:
                uncovered.append(f"thread {i}: write {mine} returned, durable only up to {rec.durable_writes}")

    _run_threads(THREADS, caller)
    assert not uncovered, "\n".join(uncovered[:5])
    assert 1 <= rec.flushes <= rec.writes // 2, f"{rec.flushes} flushes for {rec.writes} writes"
    assert gc.tickets._announced == 0


def test_a_disabled_group_commit_announces_nothing(tmp_path: Path) -> None:
    gc = GroupCommit(tmp_path, enabled=False)
    assert gc.announce() is False
    assert gc.tickets._announced == 0

