"""The rate history behind the console's sparklines (spoolq.observability.rates), with a settable clock and
settable totals: several processes share one history in the metrics directory and sample each
slot once; a process that starts later (a restarted worker) reads what the others recorded; a gap
is spread over the slots it covers; a total that went down counts from zero; old hours go."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from spoolq.observability.metrics import Metrics
from spoolq.observability.rates import KEEP, SAMPLE, RateHistory
from tests.conftest import FakeClock


class FakeMetrics:
    """What RateHistory reads of the metrics: the directory and the per-queue totals."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = str(directory) if directory else None
        self.totals: dict[tuple[str, str], float] = {}

    def samples(self, name: str) -> list[tuple[dict[str, str], float]]:
        assert name == "spoolq_queue_messages_total"
        return [({"queue": q, "operation": op}, v) for (q, op), v in self.totals.items()]

    def add(self, queue: str, op: str, n: float) -> None:
        self.totals[(queue, op)] = self.totals.get((queue, op), 0.0) + n


def history(metrics: FakeMetrics, clock: FakeClock) -> RateHistory:
    return RateHistory(cast(Metrics, metrics), clock=clock)


def every(_q: str) -> bool:
    return True


def test_processes_share_one_history_and_each_slot_is_sampled_once(tmp_path: Path) -> None:
    clock = FakeClock(1_790_000_000.0)  # a multiple of SAMPLE
    metrics = FakeMetrics(tmp_path)
    workers = [history(metrics, clock) for _ in range(3)]
    assert [w.sample() for w in workers] == [True, False, False]  # the baseline
    for _ in range(4):
        clock.advance(SAMPLE)
        metrics.add("orders", "send", 10)  # 2/s
        metrics.add("orders", "ack", 5)
        assert sorted(w.sample() for w in workers) == [False, False, True]
    restarted = history(metrics, clock)  # a worker that starts now sees the same past
    r = restarted.rates(60, every)
    assert r["interval"] == SAMPLE and r["slots"] == 12 and r["end"] == int(clock.now)
    assert r["covered"] == [False] * 8 + [True] * 4
    assert r["queues"]["orders"]["send"][-4:] == [2.0] * 4
    assert r["queues"]["orders"]["ack"][-4:] == [1.0] * 4
    assert r["queues"]["orders"]["poll"][-4:] == [0.0] * 4
    assert r["queues"]["orders"]["send"][:8] == [None] * 8
    assert restarted.rates(60, lambda q: q != "orders")["queues"] == {}


def test_a_gap_is_spread_and_a_total_that_went_down_counts_from_zero(tmp_path: Path) -> None:
    clock = FakeClock(1_790_000_000.0)
    metrics = FakeMetrics(tmp_path)
    h = history(metrics, clock)
    metrics.add("q", "poll", 100)
    h.sample()
    clock.advance(4 * SAMPLE)  # nobody sampled for three slots
    metrics.add("q", "poll", 40)
    h.sample()
    assert h.rates(60, every)["queues"]["q"]["poll"][-4:] == [2.0] * 4
    clock.advance(SAMPLE)
    metrics.totals[("q", "poll")] = 5.0  # the process that counted them went away with its files
    h.sample()
    assert h.rates(60, every)["queues"]["q"]["poll"][-1] == 1.0


def test_only_the_kept_hours_stay(tmp_path: Path) -> None:
    clock = FakeClock(1_790_002_800.0)
    metrics = FakeMetrics(tmp_path)
    h = history(metrics, clock)
    h.sample()
    for _ in range(3):
        clock.advance(KEEP)
        metrics.add("q", "send", 1)
        h.sample()
    hours = sorted(int(p.stem) for p in (tmp_path / "rates").glob("*.jsonl"))
    assert hours and min(hours) >= (int(clock.now) - KEEP) // 3600


def test_without_a_metrics_directory_reads_sample(tmp_path: Path) -> None:
    clock = FakeClock(1_790_000_000.0)
    metrics = FakeMetrics(None)
    h = history(metrics, clock)
    assert h.rates(60, every)["queues"] == {}  # the first read takes the baseline
    clock.advance(SAMPLE)
    metrics.add("q", "send", 25)
    got: dict[str, Any] = h.rates(60, every)
    assert got["queues"]["q"]["send"][-1] == 5.0
    h.start()  # no thread without a directory
    assert h._thread is None
