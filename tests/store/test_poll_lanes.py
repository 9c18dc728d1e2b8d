"""Pollers split each bucket into lanes (``cursor.py``), as many as the live pollers registered in
``pollers.lock`` without being told, or as ``peers`` says; each process has a lane of its own while
there are lanes enough, and claim tokens are drawn in bulk without a forked child
ever repeating its parent's.

The multi-process drain under load, with the lost renames counted, is in ``test_multiprocess.py``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spoolq.store import FileStore, OutgoingMessage, cursor
from spoolq.store import layout as L
from spoolq.store.cursor import STALE_AFTER, HomeLane, ReadyCursor

LANES = 4


def _lane(name: str) -> int:
    return int(name[33:36], 16) % LANES


def _bucket(tmp_path: Path, count: int) -> tuple[str, list[str]]:
    """A ready bucket of ``count`` message names (random words spread over the lanes)."""
    bucket = tmp_path / "ready" / "00000001" / "00000001000"
    bucket.mkdir(parents=True)
    names = []
    for i in range(count):
        mid = f"{1000 + i:012x}{'a' * 8}{i:08x}{os.urandom(4).hex()}{'0' * 4}"
        names.append(L.ready_name(mid, 0, 0))
        (bucket / names[-1]).touch()
    return str(bucket), names


def _drain(cursor: ReadyCursor, bucket: str, peers: int, home: int) -> list[str]:
    def buckets() -> Iterator[tuple[str, str]]:
        yield "00000001000", bucket

    out: list[str] = []
    while len(out) < 1000:
        got = cursor.take(buckets, 7, peers, home, "")
        out.extend(name for _directory, name in got)
        if len(got) < 7:
            break
    return out


def test_without_peers_a_listing_goes_oldest_first(tmp_path: Path) -> None:
    bucket, names = _bucket(tmp_path, 60)
    assert _drain(ReadyCursor(), bucket, 0, 0)[:60] == sorted(names)


def test_with_peers_the_home_lane_goes_first_then_each_other_lane_newest_first(tmp_path: Path) -> None:
    bucket, names = _bucket(tmp_path, 200)
    home = 2
    order = _drain(ReadyCursor(), bucket, LANES - 1, home)[:200]
    assert sorted(order) == sorted(names)  # every message once
    expected = sorted(n for n in names if _lane(n) == home)
    for k in range(1, LANES):
        expected += sorted((n for n in names if _lane(n) == (home + k) % LANES), reverse=True)
    assert order == expected


@pytest.mark.parametrize("peers", [0, 1])
def test_a_listing_others_claimed_from_is_listed_again_in_lanes(tmp_path: Path, peers: int) -> None:
    """With lanes, after STALE_AFTER candidates in a row that another poller had taken, the cursor
    drops the rest of its listing: the next take lists the bucket again and sees what is left.
    Without lanes (every poller sweeps the same order) it goes on through its listing."""
    bucket, names = _bucket(tmp_path, 100)
    cursor = ReadyCursor()

    def buckets() -> Iterator[tuple[str, str]]:
        yield "00000001000", bucket

    first = cursor.take(buckets, 10, peers, 0, "")
    listed = [n for _d, n in cursor.items]
    for name in sorted(names)[:80]:  # another poller took these meanwhile
        os.unlink(f"{bucket}/{name}")
    cursor.report(STALE_AFTER, STALE_AFTER, claimed=False)
    again = [n for _d, n in cursor.take(buckets, 10, peers, 0, "")]
    if peers:
        assert again == [n for n in listed if n in set(sorted(names)[80:])][:10]  # listed again
    else:
        assert again == listed[10:20]  # the same listing, on
    assert cursor.lost == STALE_AFTER and len(first) == 10


def _lanes_of_processes(lock_file: str, count: int) -> list[int]:
    """The home lanes of ``count`` processes started one after another, all alive together."""
    children = []
    lanes = []
    for _ in range(count):
        report_r, report_w = os.pipe()
        hold_r, hold_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe and holds its lane
            try:
                os.close(hold_w)  # its read ends when the parent closes the last write end
                for _pid, earlier in children:
                    os.close(earlier)
                os.write(report_w, b"%d" % HomeLane(lock_file).lane(LANES))
                os.read(hold_r, 1)
            finally:
                os._exit(0)
        os.close(report_w)
        os.close(hold_r)
        lanes.append(int(os.read(report_r, 16)))
        os.close(report_r)
        children.append((pid, hold_w))
    for pid, hold_w in children:
        os.close(hold_w)
        os.waitpid(pid, 0)
    return lanes


def test_processes_polling_together_get_lanes_of_their_own(tmp_path: Path) -> None:
    """Four processes, four lanes: each its own, whatever their pids; a fifth shares one. Their
    lanes are free again once they are gone."""
    lock_file = str(tmp_path / "pollers.lock")
    lanes = _lanes_of_processes(lock_file, LANES + 1)
    assert sorted(lanes[:LANES]) == list(range(LANES))
    assert 0 <= lanes[LANES] < LANES
    assert sorted(_lanes_of_processes(lock_file, LANES)) == list(range(LANES))


def test_a_process_keeps_its_lane_and_others_go_round_it(tmp_path: Path) -> None:
    lock_file = str(tmp_path / "pollers.lock")
    mine = HomeLane(lock_file)
    lane = mine.lane(LANES)
    try:
        assert mine.lane(LANES) == lane
        others = _lanes_of_processes(lock_file, LANES - 1)
        assert sorted([lane, *others]) == list(range(LANES))
    finally:
        mine.close()


def test_claim_tokens_of_a_forked_child_are_its_own() -> None:
    ours = {L.new_token() for _ in range(3)}  # the parent has drawn a batch: the child must not reuse it
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.write(write, ",".join(L.new_token() for _ in range(600)).encode())
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    theirs = data.decode().split(",")
    ours |= {L.new_token() for _ in range(600)}
    assert len(theirs) == len(set(theirs)) == 600 and len(ours) == 603
    assert not ours & set(theirs)
    assert all(len(t) == 16 and int(t, 16) >= 0 for t in theirs)


def test_threads_drawing_claim_tokens_at_once_never_get_the_same_one() -> None:
    drawn: list[list[str]] = [[] for _ in range(8)]

    def draw(mine: list[str]) -> None:
        mine.extend(L.new_token() for _ in range(5000))

    threads = [threading.Thread(target=draw, args=(mine,)) for mine in drawn]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [token for mine in drawn for token in mine]
    assert len(every) == len(set(every)) == 40_000


def test_a_poller_alone_with_peers_still_drains_every_lane(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "root", node_id="n", fsync=False, peers=3)
    try:
        store.create_queue("q")
        sent = {r.id for r in store.send_batch("q", [OutgoingMessage(body=b"m%d" % i) for i in range(300)])}
        got: list[str] = []
        while batch := store.poll("q", limit=10, claim_ttl=30):
            got.extend(d.message.id for d in batch)
            assert store.ack("q", [d.receipt for d in batch]) == [True] * len(batch)
        assert sorted(got) == sorted(sent)
    finally:
        store.close()


class _Pollers:
    """Processes holding their lanes as live pollers do (``HomeLane.lanes`` without peers), each
    until it is let go."""

    def __init__(self, lock_file: str) -> None:
        self.lock_file = lock_file
        self.children: list[tuple[int, int]] = []  # (pid, write end the child waits on)

    def start(self) -> tuple[int, int]:
        """One more poller: the (lanes, home) it saw."""
        report_r, report_w = os.pipe()
        hold_r, hold_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe and holds its lane
            try:
                os.close(hold_w)
                for _pid, earlier in self.children:
                    os.close(earlier)
                lanes, home = HomeLane(self.lock_file).lanes(0)
                os.write(report_w, b"%d %d" % (lanes, home))
                os.read(hold_r, 1)
            finally:
                os._exit(0)
        os.close(report_w)
        os.close(hold_r)
        lanes, home = (int(x) for x in os.read(report_r, 32).split())
        os.close(report_r)
        self.children.append((pid, hold_w))
        return lanes, home

    def stop(self, index: int) -> None:
        pid, hold_w = self.children.pop(index)
        os.close(hold_w)
        os.waitpid(pid, 0)

    def stop_all(self) -> None:
        while self.children:
            self.stop(0)


def test_lanes_follow_the_live_pollers_without_being_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without peers, a poller alone has one lane (oldest first); each poller that joins takes the
    first free byte and counts every live one, its home lane its byte's rank; one that goes frees
    its byte, the count and the ranks follow on the next count, and the next poller fills the hole."""
    monkeypatch.setattr(cursor, "LIVE_RECHECK", 0.0)
    monkeypatch.setattr(cursor, "LIVE_RECHECK_FIRST", 0.0)
    lock_file = str(tmp_path / "pollers.lock")
    mine = HomeLane(lock_file)
    pollers = _Pollers(lock_file)
    try:
        assert mine.lanes(0) == (1, 0)
        assert [pollers.start() for _ in range(3)] == [(2, 1), (3, 2), (4, 3)]
        assert mine.lanes(0) == (4, 0)
        pollers.stop(0)  # byte 1 is free again: bytes 0, 2 and 3 held
        assert mine.lanes(0) == (3, 0)
        assert pollers.start() == (4, 1)  # the hole filled
        pollers.stop_all()
        assert mine.lanes(0) == (1, 0)
        assert mine.lanes(3) == (4, mine.lane(4))  # told: --peers overrides the count
    finally:
        pollers.stop_all()
        mine.close()


class _Clock:
    """``time`` as cursor.py reads it, standing still until moved."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_a_count_of_live_pollers_is_kept_then_counted_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A count is kept LIVE_RECHECK_FIRST after one that changed, twice as long after each that did
    not, up to LIVE_RECHECK."""
    clock = _Clock()
    monkeypatch.setattr(cursor, "time", clock)
    first, steady = cursor.LIVE_RECHECK_FIRST, cursor.LIVE_RECHECK
    lock_file = str(tmp_path / "pollers.lock")
    mine = HomeLane(lock_file)
    pollers = _Pollers(lock_file)
    try:
        assert mine.lanes(0) == (1, 0)  # counted: 1, as before it counted (kept 2 x first)
        pollers.start()
        clock.now += 1.9 * first
        assert mine.lanes(0) == (1, 0)  # kept
        clock.now += 0.2 * first
        assert mine.lanes(0) == (2, 0)  # counted again: changed, so kept only `first`
        pollers.stop_all()
        clock.now += 1.1 * first
        assert mine.lanes(0) == (1, 0)
        for _ in range(12):  # steady: the count is kept longer each time, up to `steady`
            clock.now += steady * 1.01
            assert mine.lanes(0) == (1, 0)
        pollers.start()
        clock.now += steady * 0.9
        assert mine.lanes(0) == (1, 0)  # kept for `steady`, no longer
        clock.now += steady * 0.2
        assert mine.lanes(0) == (2, 0)
    finally:
        pollers.stop_all()
        mine.close()


def test_pollers_far_apart_in_the_lock_file_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A byte held past a gap of free ones shorter than the count's look-ahead is counted, and a
    poller left alone, its byte far from 0, has one lane again: oldest first."""
    monkeypatch.setattr(cursor, "LIVE_RECHECK", 0.0)
    monkeypatch.setattr(cursor, "LIVE_RECHECK_FIRST", 0.0)
    lock_file = str(tmp_path / "pollers.lock")
    pollers = _Pollers(lock_file)
    try:
        for _ in range(6):
            pollers.start()
        for index in (3, 2, 1, 0):  # bytes 0-3 free, 4 and 5 held
            pollers.stop(index)
        mine = HomeLane(lock_file)
        try:
            assert mine.lanes(0) == (3, 0)  # bytes 0, 4 and 5
            pollers.start()  # byte 1
            assert mine.lanes(0) == (4, 0)
            pollers.stop_all()
            assert mine.lanes(0) == (1, 0)
        finally:
            mine.close()
        for _ in range(3):
            pollers.start()  # bytes 0, 1, 2
        last = HomeLane(lock_file)
        try:
            assert last.lanes(0) == (4, 3)  # byte 3
            pollers.stop_all()
            assert last.lanes(0) == (1, 0)  # alone, at byte 3
        finally:
            last.close()
    finally:
        pollers.stop_all()


def test_processes_polling_with_default_settings_split_the_buckets(tmp_path: Path) -> None:
    """Two stores in two processes, default settings, one queue: each claims its own lane first."""
    root = tmp_path / "root"
    store = FileStore(root, node_id="n", fsync=False)
    try:
        store.create_queue("q")
        store.send_batch("q", [OutgoingMessage(body=b"m%d" % i) for i in range(400)])
        read_r, read_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child polls once the parent holds its lane, and reports
            try:
                child = FileStore(root, node_id="n", fsync=False)
                os.read(go_r, 1)
                ids = [d.message.id for d in child.poll("q", limit=10, claim_ttl=60)]
                os.write(read_w, ",".join(ids).encode())
                os.read(go_r, 1)  # holds its byte until the parent has polled
            finally:
                os._exit(0)
        assert store.poll("q", limit=1, claim_ttl=60)  # this process holds byte 0
        os.write(go_w, b"x")  # the child's first poll: byte 1, two lanes
        theirs = os.read(read_r, 65536).decode().split(",")
        time.sleep(cursor.LIVE_RECHECK + 0.1)  # this process counts again: two pollers live
        ours = [d.message.id for d in store.poll("q", limit=10, claim_ttl=60)]
        os.write(go_w, b"x")
        os.waitpid(pid, 0)
        for fd in (read_r, read_w, go_r, go_w):
            os.close(fd)
        lanes = {int(mid[33:36], 16) % 2 for mid in ours}, {int(mid[33:36], 16) % 2 for mid in theirs}
        assert lanes == ({0}, {1}), lanes
    finally:
        store.close()
