#!/usr/bin/env python3
"""How true a queue's depth is, and what asking costs, at 1,000 to 1,000,000 messages (never from pytest).

    python bench/depth_bench.py --dir /mnt/x                                # 1,000 / 30,000 / 1,000,000
    python bench/depth_bench.py --dir /mnt/x --compare OLD/service --runs 3 # before/after, same data
    python bench/depth_bench.py --dir /mnt/x --depths 1000,30000 --rate 10  # sparser backlogs

What it measures is what ``ApproximateNumberOfMessages``, ``/metrics`` and the console read: the
ready count of ``counts(queue, limit=10_000)``. For each depth it fills one queue in a data
directory of its own (``fsync=False``), backdated at ``--rate`` messages per second of send time,
so the backlog spans ``depth / rate`` seconds of one-second buckets (``--rate 100``: 10,000 buckets
at 1,000,000 messages; ``--rate 12``: a day). Then, for each run and each version (the store of
this checkout, and of ``--compare``'s, in alternating order, each in a process of its own, on the
same data):

1. the first ``counts`` of a process (a process that never asked): its time and its error;
2. ``--warm`` seconds of asking every 0.5 s, as a server's metrics snapshot does, then ``--load``
   seconds of a sender (up to 125 sends a second, a fifth of them delayed 1-3 s) and a poller (up
   to 20 polls of 10 a second: six acknowledged, two released, two left to expire after 2 s) from
   another store in the same process, while the counting store goes on asking every 0.5 s;
3. 5 s after the load stopped, one ``counts`` held against the truth: the ready files on disk plus
   the claims that expired (what the ready count counts), walked file by file;
4. the cost of a call once the load stopped: ``--calls`` calls per depth, depths alternating, the
   CPU time of the calling thread (median, µs), and its ratio to the smallest depth's.

The data directories are removed at the end (``--keep`` keeps them for another run: the fill of
1,000,000 messages takes minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[1]
LIMIT = 10_000  # what the SQS door, the overview and the metrics ask with


def _store(root: Path, **kw: Any) -> Any:
    from spoolq.store.filestore import FileStore

    return FileStore(root, node_id="depth", **kw)


def fill(root: Path, depth: int, rate: int) -> None:
    from spoolq.store.model import OutgoingMessage

    seconds = max(1, depth // rate)
    base = time.time() - seconds - 120
    sent = [0]
    store = _store(root, fsync=False, clock=lambda: base + sent[0] / rate)
    store.create_queue("q")
    started = time.monotonic()
    while sent[0] < depth:
        n = min(max(1, rate), 1000, depth - sent[0])
        store.send_batch("q", [OutgoingMessage(b"m" * 64)] * n)
        sent[0] += n
    store.close()
    print(f"filled {depth:,} messages over {seconds:,} s of send time in {time.monotonic() - started:.0f} s",
          file=sys.stderr, flush=True)


def truth(root: Path) -> int:
    """Ready files plus expired claims (what the ready count counts), walked now."""
    q = root / "queues" / "q"
    now_ms = int(time.time() * 1000)
    ready = 0
    for k in os.listdir(q / "ready"):
        for b in os.listdir(q / "ready" / k):
            try:
                ready += len(os.listdir(q / "ready" / k / b))
            except FileNotFoundError:
                pass
    for s in os.listdir(q / "claimed"):
        for n in os.listdir(q / "claimed" / s):
            if int(n.split("~")[3], 16) <= now_ms:
                ready += 1
    return ready


def _load(store: Any, stop: threading.Event) -> None:
    from spoolq.store.model import OutgoingMessage

    def sender() -> None:
        rnd = random.Random()
        while not stop.wait(0.008):
            delay = rnd.uniform(1, 3) if rnd.random() < 0.2 else None
            store.send("q", OutgoingMessage(b"n" * 64, delay=delay))

    def poller() -> None:
        while not stop.wait(0.05):
            ds = store.poll("q", limit=10, claim_ttl=2.0)
            store.ack("q", [d.receipt for d in ds[:6]])
            store.release("q", [d.receipt for d in ds[6:8]])

    threads = [threading.Thread(target=f) for f in (sender, poller)]
    for t in threads:
        t.start()
    stop.wait()
    for t in threads:
        t.join()


def child(roots: list[Path], warm_seconds: float, load_seconds: float, calls: int) -> dict[str, Any]:
    """One version's measurements in this process (see the module docstring)."""
    counters = [_store(r, fsync=False) for r in roots]
    out: dict[str, Any] = {"cold_ms": [], "cold_error_pct": [], "error_pct": [], "counted": [], "truth": [],
                           "cost_us": []}
    for r, c in zip(roots, counters, strict=True):
        t0 = time.perf_counter()
        first = c.counts("q", limit=LIMIT).ready
        out["cold_ms"].append((time.perf_counter() - t0) * 1000)
        real = truth(r)
        out["cold_error_pct"].append(100.0 * (first - real) / max(real, 1))
    end = time.monotonic() + warm_seconds
    while time.monotonic() < end:
        for c in counters:
            c.counts("q", limit=LIMIT)
        time.sleep(0.5)
    for r, c in zip(roots, counters, strict=True):
        loader = _store(r, fsync=False)
        stop = threading.Event()
        t = threading.Thread(target=_load, args=(loader, stop))
        t.start()
        end = time.monotonic() + load_seconds
        while time.monotonic() < end:
            c.counts("q", limit=LIMIT)
            time.sleep(0.5)
        stop.set()
        t.join()
        loader.close()
        time.sleep(5.0)
        counted = c.counts("q", limit=LIMIT).ready
        real = truth(r)
        out["counted"].append(counted)
        out["truth"].append(real)
        out["error_pct"].append(100.0 * (counted - real) / max(real, 1))
    samples: list[list[float]] = [[] for _ in roots]
    for _ in range(calls):
        for i, c in enumerate(counters):
            t0 = time.thread_time_ns()
            c.counts("q", limit=LIMIT)
            samples[i].append((time.thread_time_ns() - t0) / 1000)
    out["cost_us"] = [statistics.median(s) for s in samples]
    for c in counters:
        c.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="where the data directories go (a file system of their own)")
    ap.add_argument("--depths", default="1000,30000,1000000")
    ap.add_argument("--rate", type=int, default=100, help="messages per second of send time in the backlog")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--warm", type=float, default=10.0, help="seconds of asking before the load")
    ap.add_argument("--load", type=float, default=3.0, help="seconds of sends and polls per depth and run")
    ap.add_argument("--calls", type=int, default=200, help="timed calls per depth")
    ap.add_argument("--service", default=str(CHECKOUT / "service"))
    ap.add_argument("--compare", default=None, help="another checkout's service/ measured on the same data")
    ap.add_argument("--keep", action="store_true", help="keep the filled data directories")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child([Path(r) for r in args.child], args.warm, args.load, args.calls)))
        return 0
    depths = [int(d) for d in args.depths.split(",")]
    base = Path(args.dir) / f"depth-bench-r{args.rate}"
    roots = [base / f"d{d}" for d in depths]
    sys.path.insert(0, args.service)
    for d, r in zip(depths, roots, strict=True):
        if not (r / "queues" / "q").exists():
            r.mkdir(parents=True, exist_ok=True)
            fill(r, d, args.rate)
    versions = {"this": args.service, **({"compare": args.compare} if args.compare else {})}
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in versions}
    try:
        for run in range(args.runs):
            order = list(versions) if run % 2 == 0 else list(reversed(versions))
            for v in order:
                env = {**os.environ, "PYTHONPATH": os.pathsep.join([versions[v], os.environ.get("PYTHONPATH", "")])}
                cmd = [sys.executable, __file__, "--warm", str(args.warm), "--load", str(args.load),
                       "--calls", str(args.calls),
                       "--dir", args.dir, "--child", *map(str, roots)]
                res = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
                results[v].append(res)
                print(f"run {run + 1} {v}: {res}  load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\n## depth_bench: rate {args.rate}/s of send time, {args.runs} run(s), {args.calls} calls, "
          f"load {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| version | depth | buckets (s of sends) | first call: ms, error % | counted / on disk, 5 s after | "
          "error % (runs) | CPU µs per call | x smallest depth |")
    print("|---|---|---|---|---|---|---|---|")
    for v, runs in results.items():
        costs = [statistics.median(r["cost_us"][i] for r in runs) for i in range(len(depths))]
        for i, d in enumerate(depths):
            errs = " / ".join(f"{r['error_pct'][i]:+.1f}" for r in runs)
            last = runs[-1]
            print(f"| {v} | {d:,} | {max(1, d // args.rate):,} | "
                  f"{statistics.median(r['cold_ms'][i] for r in runs):,.1f}, "
                  f"{statistics.median(r['cold_error_pct'][i] for r in runs):+.1f} | "
                  f"{last['counted'][i]:,} / {last['truth'][i]:,} | {errs} | {costs[i]:,.0f} | "
                  f"{costs[i] / costs[0]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
