"""Message rates of the last hour per queue, kept where every process of the server finds them.

The console draws each queue's sent / delivered / acknowledged rates from this history, so a page
opened now shows the past hour, not a sparkline that starts empty.

**Samples.** Every :data:`SAMPLE` seconds (on the wall clock's multiples of it) one process of
the server reads the per-queue totals ``spoolq_queue_messages_total{queue,operation}`` (which add
up every gunicorn worker and the Disque listener, see :mod:`spoolq.observability.metrics`) and records,
for each queue that moved, how many messages were sent, delivered and acknowledged since the
previous sample.

**Where.** Under ``spoolq serve`` the history lives in the metrics directory (the
prometheus-client multiprocess directory), beside the counters it is computed from, and has
their lifetime: it survives worker restarts, reloads (HUP) and a restarted Disque listener, and
starts over with the server, as ``/metrics`` does. Layout::

    <metrics dir>/rates/lock            flock'd by the process taking a sample
    <metrics dir>/rates/last.json       {"t": <slot>, "totals": {queue: [sent, delivered, acked]}}
                                        (the totals the next sample subtracts; replaced by rename)
    <metrics dir>/rates/<hour>.jsonl    one line per sample: {"t": <slot>, "dt": <seconds covered>,
                                        "d": {queue: [sent, delivered, acked]}} (queues that moved)

Every worker and the Disque listener run a sampler thread, started with their first request
(the listener: when it starts), which first samples at once: the first process of a new server
so takes the baseline before anything is counted. Each slot, the first to take the lock and
find the slot not yet sampled samples it, the others see ``last.json`` and skip. A
sampler that was away (nobody ran for a while) records one line covering the whole gap (``dt``),
spread evenly over its slots when read. Files of hours older than :data:`KEEP` are removed.
Totals only grow while the metrics directory lives; a total below the last one (a restarted
process whose counter files were removed) counts from zero. Without a metrics directory (one
process: ``flask run``, tests) the same samples are kept in memory and taken when read.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from spoolq.observability.metrics import Metrics

#: seconds between samples (one point of a sparkline)
SAMPLE = 5
#: how much history is kept and served (seconds)
KEEP = 3600
OPERATIONS = ("send", "poll", "ack")

Totals = dict[str, list[float]]


def current_totals(metrics: Metrics) -> Totals:
    """Per store queue: [sent, delivered, acknowledged] since the server started."""
    out: Totals = {}
    for labels, value in metrics.samples("spoolq_queue_messages_total"):
        op = labels.get("operation")
        if op in OPERATIONS:
            out.setdefault(labels["queue"], [0.0, 0.0, 0.0])[OPERATIONS.index(op)] += value
    return out


def deltas(before: Mapping[str, list[float]], now: Mapping[str, list[float]]) -> dict[str, list[float]]:
    """What moved between two totals; a total that went down counts from zero."""
    out: dict[str, list[float]] = {}
    for queue, counts in now.items():
        old = before.get(queue, [0.0, 0.0, 0.0])
        d = [c - o if c >= o else c for c, o in zip(counts, old, strict=True)]
        if any(d):
            out[queue] = d
    return out


class RateHistory:
    """The samples of one server (see the module docstring)."""

    def __init__(self, metrics: Metrics, clock: Callable[[], float] = time.time) -> None:
        self.metrics = metrics
        self.clock = clock
        self.directory = Path(metrics.directory) / "rates" if metrics.directory else None
        self._lock = threading.Lock()
        self._memory: list[dict[str, Any]] = []  # without a directory: the lines
        self._last: dict[str, Any] | None = None  # without a directory: last.json
        self._thread: threading.Thread | None = None

    # --- sampling ---------------------------------------------------------------------------

    def slot(self) -> int:
        return int(self.clock() // SAMPLE * SAMPLE)

    def sample(self) -> bool:
        """Record the current slot unless it is recorded already; whether this call recorded it."""
        slot = self.slot()
        with self._lock:
            if self.directory is None:
                return self._sample_memory(slot)
            self.directory.mkdir(exist_ok=True)
            with open(self.directory / "lock", "a+b") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return False  # another process is sampling this slot
                return self._sample_files(slot)

    def _sample_memory(self, slot: int) -> bool:
        last = self._last
        if last is not None and last["t"] >= slot:
            return False
        totals = current_totals(self.metrics)
        if last is not None:
            self._memory.append({"t": slot, "dt": slot - last["t"], "d": deltas(last["totals"], totals)})
            self._memory = [line for line in self._memory if line["t"] > slot - KEEP - SAMPLE]
        self._last = {"t": slot, "totals": totals}
        return True

    def _sample_files(self, slot: int) -> bool:
        assert self.directory is not None
        last = _read_json(self.directory / "last.json")
        if last is not None and last.get("t", 0) >= slot:
            return False
        totals = current_totals(self.metrics)
        if last is not None and isinstance(last.get("totals"), dict):
            line = {"t": slot, "dt": slot - int(last["t"]), "d": deltas(last["totals"], totals)}
            with open(self.directory / f"{slot // 3600}.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")
        tmp = self.directory / f".last.{os.getpid()}"
        tmp.write_text(json.dumps({"t": slot, "totals": totals}, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, self.directory / "last.json")
        for old in self.directory.glob("*.jsonl"):
            with contextlib.suppress(ValueError, FileNotFoundError):
                if int(old.stem) < (slot - KEEP) // 3600:
                    old.unlink()
        return True

    def start(self) -> None:
        """Sample every :data:`SAMPLE` seconds in a daemon thread of this process (call after
        fork; with a metrics directory only: without one, reads sample)."""
        if self.directory is None or self._thread is not None:
            return
        with contextlib.suppress(OSError):
            self.sample()  # at once: the first process to start takes the baseline before it counts anything
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="spoolq-rates", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            now = self.clock()
            time.sleep(SAMPLE - now % SAMPLE + 0.05 + (os.getpid() % 7) * 0.01)
            try:
                self.sample()
            except OSError:  # the metrics directory went (the server is stopping)
                continue

    # --- reading ----------------------------------------------------------------------------

    def lines(self, since: int) -> list[dict[str, Any]]:
        if self.directory is None:
            with self._lock:
                return [line for line in self._memory if line["t"] > since]
        out = []
        for hour in range(since // 3600, self.slot() // 3600 + 1):
            path = self.directory / f"{hour}.jsonl"
            with contextlib.suppress(FileNotFoundError):
                for text in path.read_text(encoding="utf-8").splitlines():
                    with contextlib.suppress(ValueError):
                        line = json.loads(text)
                        if isinstance(line, dict) and line.get("t", 0) > since:
                            out.append(line)
        return out

    def rates(self, window: int, keep: Callable[[str], bool]) -> dict[str, Any]:
        """Per queue ``keep`` accepts, messages per second in each slot of the last ``window``
        seconds, oldest first: ``{"interval", "end", "queues": {queue: {send|poll|ack: [...]}}}``.
        A slot no sample covers (before the server started, or while nobody sampled and the
        gap's line is not written yet) is ``None``; a queue that did not move has no entry."""
        if self.directory is None:
            self.sample()
        end = self.slot()
        slots = window // SAMPLE
        start = end - slots * SAMPLE  # slot i covers (start + i*SAMPLE, start + (i+1)*SAMPLE]
        covered = [False] * slots
        queues: dict[str, list[list[float]]] = {}
        for line in self.lines(start - KEEP):
            t, dt = int(line["t"]), max(SAMPLE, int(line.get("dt", SAMPLE)))
            first = max(0, (t - dt - start) // SAMPLE)  # the line covers (t - dt, t]
            last = min(slots, (t - start) // SAMPLE)
            if last <= first:
                continue
            for i in range(first, last):
                covered[i] = True
            for queue, moved in line.get("d", {}).items():
                if not keep(queue):
                    continue
                rate = [m / dt for m in moved]  # spread evenly over the slots it covers
                series = queues.setdefault(queue, [[0.0] * slots for _ in OPERATIONS])
                for op in range(len(OPERATIONS)):
                    for i in range(first, last):
                        series[op][i] += rate[op]
        out = {q: {op: [round(v, 3) if covered[i] else None for i, v in enumerate(series[n])]
                   for n, op in enumerate(OPERATIONS)} for q, series in queues.items()}
        return {"interval": SAMPLE, "end": end, "slots": slots,
                "covered": [covered[i] for i in range(slots)], "queues": out}


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None
