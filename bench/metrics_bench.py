#!/usr/bin/env python3
"""The cost of metrics on the hot path: EmoDB send and poll+ack with metrics on vs off, side by side.

One app over one real FileStore, in prometheus-client's multiprocess mode (as under ``spoolq
serve``: every sample is a write to a shared mmap file), switched between rounds: "off" replaces
the recording calls (the request counter/histogram in ``after_request``) with no-ops and takes
the metrics' listener off the store (message counters, flushes); "on" puts them back. (Two separate apps differ by several percent from each other even with identical
settings, so one app is switched instead.) Rounds alternate on/off so load from other processes
hits both alike. Each op is timed in CPU time of this thread (``time.thread_time``: the
metrics cost is CPU, and CPU time is far less disturbed by other processes than wall time on a
shared machine), and in wall time; the figures are the median round. A third line times the
recording calls alone (what one send adds: the request counter and histogram, the door and
queue message counters), which does not depend on the store at all.

    .venv/bin/python bench/metrics_bench.py                 # fsync never (the worst case ratio)
    .venv/bin/python bench/metrics_bench.py --fsync always  # with the group-commit flush, on --root's disk
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

_MP_DIR = tempfile.mkdtemp(prefix="spoolq-bench-metrics-")
os.environ["PROMETHEUS_MULTIPROC_DIR"] = _MP_DIR  # before prometheus_client is imported

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))

from flask import Flask  # noqa: E402

from spoolq.http.app import create_app  # noqa: E402
from spoolq.settings.server import Settings  # noqa: E402
from spoolq.store import FileStore  # noqa: E402


class Switch:
    """Turns the recording of one app's metrics off and on again."""

    def __init__(self, app: Flask, store: FileStore) -> None:
        self.services = app.extensions["spoolq"]
        self.store = store
        self.counting = True  # create_app subscribed the metrics' listener to the store

    def set(self, on: bool) -> None:
        m = self.services.metrics
        if on:
            for name in ("observe", "messages"):
                m.__dict__.pop(name, None)
            if not self.counting:
                self.services._unsubscribe = self.store.subscribe(self.services.store_counts)
        else:
            m.observe = lambda *a, **k: None
            m.messages = lambda *a, **k: None
            if self.counting and self.services._unsubscribe is not None:
                self.services._unsubscribe()
        self.counting = on


def sends(app: Flask, queue: str, n: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per send."""
    client = app.test_client()
    cpu, wall = time.thread_time(), time.perf_counter()
    for i in range(n):
        r = client.post(f"/queue/1/{queue}/send", json={"i": i, "payload": "x" * 200})
        assert r.status_code == 200, r.data
    return (time.thread_time() - cpu) / n, (time.perf_counter() - wall) / n


def polls(app: Flask, queue: str, n: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per poll of one message plus its ack."""
    client = app.test_client()
    client.post(f"/queue/1/{queue}/sendbatch", json=[{"i": i} for i in range(n)])
    cpu, wall = time.thread_time(), time.perf_counter()
    got = 0
    while got < n:
        msgs = client.get(f"/queue/1/{queue}/poll?limit=1&ttl=30").get_json()
        if not msgs:
            break
        client.post(f"/queue/1/{queue}/ack", json=[m["id"] for m in msgs])
        got += len(msgs)
    return (time.thread_time() - cpu) / max(got, 1), (time.perf_counter() - wall) / max(got, 1)


def recording_cost(app: Flask, n: int = 20_000) -> float:
    """CPU seconds of what metrics add to one send: request counter + histogram, message counters."""
    m = app.extensions["spoolq"].metrics
    cpu = time.thread_time()
    for _ in range(n):
        m.observe("queue", "send", 200, 0.001)
        m.messages("queue", "send", 1, "bench-queue")
    return (time.thread_time() - cpu) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=None, help="data directory (default: a temporary one)")
    ap.add_argument("--fsync", choices=["always", "never"], default="never")
    ap.add_argument("--ops", type=int, default=2000, help="sends (and polls) per round")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    base = args.root or Path(tempfile.mkdtemp(prefix="spoolq-bench-"))
    fsync = args.fsync == "always"
    store = FileStore(base, node_id="bench", fsync=fsync)
    app = create_app(Settings(root=base, node_id="bench", fsync=fsync), store=store)
    switch = Switch(app, store)
    results: dict[str, dict[str, list[tuple[float, float]]]] = {k: {"send": [], "poll": []} for k in ("on", "off")}
    for r in range(args.rounds):
        order = ("on", "off") if r % 2 == 0 else ("off", "on")
        for name in order:
            switch.set(name == "on")
            results[name]["send"].append(sends(app, f"s{r}{name}", args.ops))
            results[name]["poll"].append(polls(app, f"p{r}{name}", args.ops))
    switch.set(True)
    load = os.getloadavg()
    print(f"metrics cost, fsync {args.fsync}, {args.ops} ops x {args.rounds} rounds, "
          f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'op':<6}{'':>6}{'off us/op':>12}{'on us/op':>12}{'cost':>9}")
    for op in ("send", "poll"):
        for label, i in (("cpu", 0), ("wall", 1)):
            off = statistics.median(x[i] for x in results["off"][op]) * 1e6
            on = statistics.median(x[i] for x in results["on"][op]) * 1e6
            print(f"{op:<6}{label:>6}{off:>12.1f}{on:>12.1f}{(on / off - 1) * 100:>8.1f}%")
    rec = recording_cost(app) * 1e6
    send_cpu = statistics.median(x[0] for x in results["off"]["send"]) * 1e6
    print(f"recording one send's metrics: {rec:.1f} us CPU = {rec / send_cpu * 100:.1f}% of a send's CPU")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
