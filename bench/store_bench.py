#!/usr/bin/env python
"""spoolq store benchmark: the FileStore against this disk's raw durable-file limit, side by side.

Run it (never from pytest)::

    python bench/store_bench.py --quick          # smoke run, well under a minute
    python bench/store_bench.py                  # full run: 3 runs, a 1,000,000-message queue

What it prints (DESIGN.md "Performance: how we measure"; issue 2 "Benchmark"), each figure
the median of ``--runs`` runs, all measured in this one run on a data directory on the same
disk as the checkout (a temp dir beside the checkout unless ``--dir`` says where):

1. durable single-send msgs/s (1 KiB, fsync on) with 1, 8 and 16 senders, as threads sharing
   one FileStore and as processes with one FileStore each, against the raw per-file limit at
   the same counts (create + write 1 KiB + fsync + rename + directory fsync, one file per op).
2. send_batch of 100 x 1 KiB msgs/s (1 sender and 8 sender processes).
3. poll+ack msgs/s with 8 consumer processes (own FileStore each, peers=8), poll limit 1 and 10,
   on a queue pre-filled with fsync=False send_batch.
4. poll, ack and size(limit=1000) latency p50/p99 at depth 1,000 and at ``--depth-large``
   (1,000,000 by default), the two depths sampled alternately so noise hits both alike.
5. peak RSS (VmHWM / ru_maxrss) of a fresh process serving the large queue for a while.

Then a table of goals with PASS/MISS, machine facts, and the data directory is removed.
Throughput cells are time-boxed (``--duration`` seconds each); raw and store cells of one
concurrency run back to back in every run, so a noisy neighbour hits both. The VM disks here
are noisy (DESIGN.md saw 714 to 1,987 raw creates/s within one hour): compare ratios within
one run, not absolute numbers across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import multiprocessing as mp
import os
import platform
import queue as queue_mod
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spoolq.store import FileStore, OutgoingMessage

CHECKOUT = Path(__file__).resolve().parent.parent
BODY_BYTES = 1024
CONCURRENCY = (1, 8, 16)
BATCH = 100
CONSUMERS = 8
BARRIER_TIMEOUT = 300.0


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ============================================================== workers (threads or processes)


class Drained(Exception):
    """A consumer found the queue empty several times in a row."""


Op = Callable[[], int]


def _make_op(kind: str, p: dict[str, Any], wid: int) -> tuple[Op, Callable[[], dict[str, float]]]:
    """Build one worker's operation (returns messages done per call) and its closer (-> stats)."""
    body = os.urandom(BODY_BYTES)
    if kind == "raw":
        tmpd, dst = f"{p['dir']}/tmp", f"{p['dir']}/ready"
        dfd = os.open(dst, os.O_RDONLY | os.O_DIRECTORY)
        tag = f"{os.getpid()}-{threading.get_ident():x}-{wid}"
        counter = itertools.count()

        def raw_op() -> int:
            name = f"{tag}-{next(counter)}"
            tmp = f"{tmpd}/{name}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, body)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, f"{dst}/{name}")
            os.fsync(dfd)
            return 1

        def raw_close() -> dict[str, float]:
            os.close(dfd)
            return {}

        return raw_op, raw_close

    shared: FileStore | None = p.get("store")
    store = shared or FileStore(p["root"], fsync=p.get("fsync", True), peers=p.get("peers", 0))
    tally = FlushTally(store) if shared is None else None
    qname: str = p["queue"]

    def close() -> dict[str, float]:
        stats = {"flushes": float(tally.flushes), "flush_seconds": tally.seconds} if tally is not None else {}
        if shared is None:
            store.close()
        return stats

    if kind == "send":
        msg = OutgoingMessage(body=body)

        def send_op() -> int:
            store.send(qname, msg)
            return 1

        return send_op, close
    if kind == "batch":
        batch = [OutgoingMessage(body=body)] * p.get("batch", BATCH)

        def batch_op() -> int:
            return len(store.send_batch(qname, batch))

        return batch_op, close
    if kind == "consume":
        limit: int = p["limit"]
        empty = [0]

        def consume_op() -> int:
            got = store.poll(qname, limit=limit, claim_ttl=300)
            if not got:
                empty[0] += 1
                if empty[0] >= 5:
                    raise Drained
                return 0
            empty[0] = 0
            return sum(store.ack(qname, [d.receipt for d in got]))

        return consume_op, close
    raise ValueError(kind)


@dataclass
class WorkerResult:
    n: int
    t0: float
    t1: float
    drained: bool
    stats: dict[str, float] = field(default_factory=dict)


def _run_worker(kind: str, p: dict[str, Any], wid: int, duration: float, barrier: Any) -> WorkerResult:
    op, close = _make_op(kind, p, wid)
    stats: dict[str, float] = {}
    try:
        barrier.wait(timeout=BARRIER_TIMEOUT)
        t0 = time.monotonic()  # CLOCK_MONOTONIC: comparable across processes on Linux
        end = t0 + duration
        n = 0
        drained = False
        while True:
            try:
                n += op()
            except Drained:
                drained = True
                break
            if time.monotonic() >= end:
                break
        t1 = time.monotonic()
    finally:
        stats = close()
    return WorkerResult(n, t0, t1, drained, stats)


def _proc_entry(kind: str, p: dict[str, Any], wid: int, duration: float, barrier: Any, out: Any) -> None:
    try:
        out.put((wid, _run_worker(kind, p, wid, duration, barrier), None))
    except BaseException as e:
        with contextlib.suppress(Exception):
            barrier.abort()
        out.put((wid, None, f"{type(e).__name__}: {e}"))


@dataclass
class Cell:
    rate: float  # messages per second, all workers together
    n: int
    seconds: float
    drained: bool
    flushes: float
    flush_seconds: float

    @property
    def per_flush(self) -> float:
        return self.n / self.flushes if self.flushes else float("nan")

    @property
    def ms_per_flush(self) -> float:
        return 1e3 * self.flush_seconds / self.flushes if self.flushes else float("nan")


class FlushTally:
    """A store's flushes and the seconds they took, as its listeners hear of them (StoreListener)."""

    def __init__(self, store: FileStore) -> None:
        self.flushes, self.seconds = 0, 0.0
        self._lock = threading.Lock()
        store.subscribe(self)

    def messages(self, event: Any, queue: str, count: int) -> None:
        pass

    def flushed(self, seconds: float, batch: int) -> None:
        with self._lock:
            self.flushes += 1
            self.seconds += seconds


def _cell(results: Sequence[WorkerResult], shared: FlushTally | None = None) -> Cell:
    n = sum(r.n for r in results)
    seconds = max(r.t1 for r in results) - min(r.t0 for r in results)
    if shared is not None:
        flushes, flush_s = float(shared.flushes), shared.seconds
    else:
        flushes = sum(r.stats.get("flushes", 0.0) for r in results)
        flush_s = sum(r.stats.get("flush_seconds", 0.0) for r in results)
    return Cell(n / seconds if seconds > 0 else 0.0, n, seconds, any(r.drained for r in results), flushes, flush_s)


def run_threads(kind: str, p: dict[str, Any], n: int, duration: float) -> Cell:
    barrier = threading.Barrier(n)
    results: list[WorkerResult | None] = [None] * n
    errors: list[str] = []

    def target(wid: int) -> None:
        try:
            results[wid] = _run_worker(kind, p, wid, duration, barrier)
        except BaseException as e:
            barrier.abort()
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{kind} thread failed: {errors[0]}")
    return _cell([r for r in results if r is not None], p.get("tally"))


def run_procs(ctx: Any, kind: str, p: dict[str, Any], n: int, duration: float) -> Cell:
    barrier = ctx.Barrier(n)
    out = ctx.Queue()
    procs = [ctx.Process(target=_proc_entry, args=(kind, p, i, duration, barrier, out), daemon=True)
             for i in range(n)]
    for pr in procs:
        pr.start()
    results: list[WorkerResult] = []
    errors: list[str] = []
    try:
        for _ in range(n):
            _wid, res, err = out.get(timeout=BARRIER_TIMEOUT + duration + 60)
            if err:
                errors.append(err)
            else:
                results.append(res)
    finally:
        for pr in procs:
            pr.join(timeout=30)
            if pr.is_alive():
                pr.kill()
    if errors:
        raise RuntimeError(f"{kind} process failed: {errors[0]}")
    return _cell(results)


# ============================================================== filling, cleaning


def _fill_entry(root: str, qname: str, n: int, batch: int, progress: Any, spread: float) -> None:
    # spread > 0: the store's clock sweeps the last ``spread`` seconds while filling, so the
    # backlog lands in ~spread one-second buckets, as one that built up over that time would
    base = time.time() - spread - 60
    sent = 0
    store = FileStore(root, fsync=False, clock=(lambda: base + spread * sent / n) if spread else time.time)
    msg = OutgoingMessage(body=os.urandom(BODY_BYTES))
    unreported = 0
    try:
        while sent < n:
            k = min(batch, n - sent)
            store.send_batch(qname, [msg] * k)
            sent += k
            unreported += k
            if unreported >= 1000 or sent == n:
                progress.put(unreported)
                unreported = 0
    except BaseException as e:
        progress.put(f"{type(e).__name__}: {e}")
    finally:
        store.close()


def fill(ctx: Any, root: str, qname: str, n: int, procs: int, show: bool = False, batch: int = 5000,
         spread: float = 0.0) -> float:
    """Send ``n`` 1 KiB messages with fsync=False send_batch from ``procs`` processes; msgs/s.

    ``spread``: backdate the messages evenly over that many seconds (see ``_fill_entry``)."""
    if n <= 0:
        return 0.0
    if spread > 0:
        batch = max(1, min(batch, round(n / procs / spread)))
    FileStore(root, fsync=False).create_queue(qname)
    progress = ctx.Queue()
    shares = [n // procs + (1 if i < n % procs else 0) for i in range(procs)]
    workers = [ctx.Process(target=_fill_entry, args=(root, qname, s, batch, progress, spread), daemon=True)
               for s in shares if s]
    start = time.monotonic()
    for w in workers:
        w.start()
    done = 0
    bar: Any = None
    try:
        if show:
            bar = _Progress(f"filling {qname} to {n:,}", n)
        while done < n:
            try:
                item = progress.get(timeout=5)
            except queue_mod.Empty:
                if not any(w.is_alive() for w in workers):
                    raise RuntimeError("fill workers exited early") from None
                continue
            if isinstance(item, str):
                raise RuntimeError(f"fill failed: {item}")
            done += item
            if bar is not None:
                bar.advance(item)
    finally:
        if bar is not None:
            bar.close()
        for w in workers:
            w.join(timeout=60)
    return n / (time.monotonic() - start)


class _Progress:
    """rich progress bar on a terminal; plain lines every 10% otherwise (logs, CI)."""

    def __init__(self, label: str, total: int) -> None:
        self.total, self.done, self.label, self.next_mark = total, 0, label, 0.1
        self.start = time.monotonic()
        self._bar: Any = None
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
        except ImportError:
            return
        console = Console(stderr=True)
        if not console.is_terminal:
            return
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn(), console=console)
        self._bar.start()
        self._task = self._bar.add_task(label, total=total)

    def advance(self, k: int) -> None:
        self.done += k
        if self._bar is not None:
            self._bar.update(self._task, advance=k)
        elif self.done >= self.next_mark * self.total:
            el = time.monotonic() - self.start
            log(f"  {self.label}: {self.done:,}/{self.total:,} ({self.done / self.total:.0%}, "
                f"{self.done / el:,.0f} msgs/s, {el:.0f} s)")
            while self.next_mark * self.total <= self.done:
                self.next_mark += 0.1

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def drop_queue(root: str, qname: str) -> None:
    store = FileStore(root, fsync=False)
    with contextlib.suppress(Exception):
        store.delete_queue(qname)
    store.close()
    trash = Path(root) / "trash"
    for entry in list(trash.iterdir()) if trash.exists() else []:
        shutil.rmtree(entry, ignore_errors=True)


def remove_tree(ctx: Any, path: Path, procs: int) -> None:
    """rmtree, with the queues' bucket directories removed by several processes (unlink waits on I/O)."""
    buckets = [str(b) for b in path.glob("store/queues/*/*/*") if b.is_dir()]
    if len(buckets) > 8:
        with ctx.Pool(procs) as pool:
            pool.map(_rmtree_quiet, buckets, chunksize=1)
    shutil.rmtree(path, ignore_errors=True)


def _rmtree_quiet(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def reset_raw(raw: str) -> None:
    shutil.rmtree(raw, ignore_errors=True)
    os.makedirs(f"{raw}/tmp")
    os.makedirs(f"{raw}/ready")
    os.sync()


# ============================================================== latency


def pct(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, round(q * (len(s) - 1))))
    return s[k]


def device_reads(path: str) -> Callable[[], int]:
    """A reader of the completed-reads counter of the block device holding ``path`` (-1 if unknown).

    Whole-device counter: neighbours' reads count too, which is why depths are sampled alternately."""
    st = os.stat(path)
    key = (str(os.major(st.st_dev)), str(os.minor(st.st_dev)))

    def reads() -> int:
        with contextlib.suppress(OSError), open("/proc/diskstats") as f:
            for line in f:
                parts = line.split()
                if (parts[0], parts[1]) == key:
                    return int(parts[3])
        return -1

    return reads


def latency_run(root: str, queues: dict[str, str], samples: int, warmup: int) -> dict[str, dict[str, list[float]]]:
    """Latency samples, the depths taken alternately so noise hits them alike.

    First poll(limit 1) + ack, re-sending one message per ack (untimed) so the depth stays put;
    then size(limit=1000) in a loop of its own, so slow sizes do not change what a poll sees
    (the cursor re-checks bucket names once a second). Also counts block-device reads
    completed during each poll (``reads``: one value per depth)."""
    store = FileStore(root, fsync=True)
    refill = FileStore(root, fsync=False)
    msg = OutgoingMessage(body=os.urandom(BODY_BYTES))
    out: dict[str, dict[str, list[float]]] = {d: {"poll": [], "ack": [], "size": [], "reads": [0.0]}
                                              for d in queues}
    pc = time.perf_counter
    reads = device_reads(root)
    try:
        for i in range(warmup + samples):
            for depth, qname in queues.items():
                r0 = reads()
                t0 = pc()
                got = store.poll(qname, limit=1, claim_ttl=300)
                t1 = pc()
                if i >= warmup:
                    out[depth]["reads"][0] += reads() - r0
                if not got:
                    raise RuntimeError(f"queue {qname} unexpectedly empty")
                store.ack(qname, [got[0].receipt])
                t2 = pc()
                refill.send(qname, msg)  # keep the depth constant (not timed)
                if i >= warmup:
                    out[depth]["poll"].append(t1 - t0)
                    out[depth]["ack"].append(t2 - t1)
        for i in range(5 + samples):
            for depth, qname in queues.items():
                t0 = pc()
                store.size(qname, limit=1000)
                if i >= 5:
                    out[depth]["size"].append(pc() - t0)
    finally:
        store.close()
        refill.close()
    return out


# ============================================================== peak RSS (a fresh process)


def _status_kb(field_name: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    return -1


def rss_child(root: str, qname: str, seconds: float) -> None:
    """Serve ``qname`` for ``seconds``: poll 10 + ack, durable send 10, peek/size/counts; print JSON."""
    before = _status_kb("VmRSS")
    store = FileStore(root, fsync=True)
    store.start_background(1.0)  # maintenance thread, as the service runs it
    body = OutgoingMessage(body=os.urandom(BODY_BYTES))
    ops = {"poll": 0, "acked": 0, "sent": 0, "peek": 0, "size": 0}
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        got = store.poll(qname, limit=10, claim_ttl=300)
        ops["poll"] += 1
        if got:
            ops["acked"] += sum(store.ack(qname, [d.receipt for d in got]))
        store.send_batch(qname, [body] * 10)
        ops["sent"] += 10
        if i % 20 == 0:
            store.peek(qname, 10)
            store.size(qname, limit=1000)
            store.counts(qname, limit=1000)
            ops["peek"] += 1
            ops["size"] += 1
        i += 1
    store.close()
    print(json.dumps({"rss_after_import_kb": before, "vmhwm_kb": _status_kb("VmHWM"),
                      "ru_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "ops": ops}))


def measure_rss(root: str, qname: str, seconds: float) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--rss-child", root, qname, str(seconds)],
                         capture_output=True, text=True, timeout=seconds + 600, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"RSS child failed: {out.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# ============================================================== machine facts


def mount_of(path: str) -> tuple[str, str, str]:
    """(mount point, fs type, source) of the file system holding ``path``."""
    real = os.path.realpath(path)
    best = ("", "?", "?")
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            mnt = parts[4].replace("\\040", " ")
            sep = parts.index("-")
            if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
                best = (mnt, parts[sep + 1], parts[sep + 2])
    return best


def git_head() -> str:
    with contextlib.suppress(Exception):
        return subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    return "?"


# ============================================================== reporting helpers


def med(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def spread(xs: Sequence[float], fmt: str = "{:,.0f}") -> str:
    if len(xs) < 2:
        return ""
    return f"[{fmt.format(min(xs))}-{fmt.format(max(xs))}]"


def ms(x: float) -> str:
    return f"{x * 1e3:.3f}"


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


# ============================================================== main


def report_throughput(raw_thr: dict[int, list[Cell]], raw_proc: dict[int, list[Cell]],
                      send_thr: dict[int, list[Cell]], send_proc: dict[int, list[Cell]],
                      batch_cells: dict[int, list[Cell]], pa_cells: dict[int, list[Cell]],
                      pa_depth: int) -> tuple[float, float, float]:
    """Sections 1-3 of the report; returns (raw best, single-send best, send_batch best)."""
    P = print
    raw_best_all = [(med([x.rate for x in raw_thr[c]]), f"{c} thr") for c in CONCURRENCY] + \
                   [(med([x.rate for x in raw_proc[c]]), f"{c} proc") for c in CONCURRENCY]
    raw_best, raw_best_at = max(raw_best_all)
    store_all = [(med([x.rate for x in send_thr[c]]), f"{c} thr") for c in CONCURRENCY] + \
                [(med([x.rate for x in send_proc[c]]), f"{c} proc") for c in CONCURRENCY]
    send_best, send_best_at = max(store_all)

    P("\n1. durable single send, fsync on (msgs/s)")
    P(f"{'senders':>8} | {'raw thr':>16} {'raw proc':>16} | {'store thr':>16} {'store proc':>16} |"
      f" {'thr/raw-best':>12} {'proc/raw-best':>13} | msgs/flush, ms/flush: thr; proc")
    for c in CONCURRENCY:
        rt, rp = [x.rate for x in raw_thr[c]], [x.rate for x in raw_proc[c]]
        st, sp = [x.rate for x in send_thr[c]], [x.rate for x in send_proc[c]]
        mt, mp_ = med([x.per_flush for x in send_thr[c]]), med([x.per_flush for x in send_proc[c]])
        ft, fp = med([x.ms_per_flush for x in send_thr[c]]), med([x.ms_per_flush for x in send_proc[c]])
        P(f"{c:>8} | {med(rt):>7,.0f}{spread(rt):>9} {med(rp):>7,.0f}{spread(rp):>9} | "
          f"{med(st):>7,.0f}{spread(st):>9} {med(sp):>7,.0f}{spread(sp):>9} | "
          f"{ratio(med(st), raw_best):>12.2f} {ratio(med(sp), raw_best):>13.2f} | {mt:.1f}, {ft:.2f}; {mp_:.1f}, {fp:.2f}")
    P(f"raw best {raw_best:,.0f}/s ({raw_best_at}); store best {send_best:,.0f}/s ({send_best_at}); "
      f"store best / raw best = {ratio(send_best, raw_best):.2f}")

    P(f"\n2. send_batch of {BATCH} x 1 KiB, fsync on (msgs/s)")
    for c, cells in batch_cells.items():
        rates = [x.rate for x in cells]
        same = med([x.rate for x in send_proc[c]]) if c in send_proc else float("nan")
        P(f"  {c:>2} sender process(es): {med(rates):>8,.0f}/s {spread(rates):>15}  "
          f"x{ratio(med(rates), same):.1f} single-send at {c} proc, x{ratio(med(rates), send_best):.1f} "
          f"single-send best; msgs/flush {med([x.per_flush for x in cells]):.0f}, "
          f"ms/flush {med([x.ms_per_flush for x in cells]):.2f}")
    batch_best = max(med([x.rate for x in cells]) for cells in batch_cells.values())

    P(f"\n3. poll+ack, {CONSUMERS} consumer processes (own FileStore, peers={CONSUMERS}), queue pre-filled "
      f"to {pa_depth:,} (msgs/s)")
    for limit, cells in pa_cells.items():
        rates = [x.rate for x in cells]
        drained = " (drained early in some run)" if any(x.drained for x in cells) else ""
        P(f"  poll limit {limit:>2}: {med(rates):>8,.0f}/s {spread(rates):>15}  "
          f"x{ratio(med(rates), send_best):.2f} durable single-send best{drained}")
    return raw_best, send_best, batch_best



def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=None, help="runs to take the median of (default 3; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="a short smoke run (< 60 s): short cells, small queues")
    ap.add_argument("--dir", default=None,
                    help="parent of the data directory (default: the checkout's parent, i.e. the same disk)")
    ap.add_argument("--depth-large", type=int, default=None,
                    help="depth of the large queue (default 1,000,000; 20,000 with --quick)")
    ap.add_argument("--duration", type=float, default=None, help="seconds per throughput cell (3; 0.5 with --quick)")
    ap.add_argument("--samples", type=int, default=None, help="latency samples per run and depth (1500; 200 quick)")
    ap.add_argument("--rss-seconds", type=float, default=None, help="how long the RSS probe serves (20; 3 quick)")
    ap.add_argument("--spread", type=float, default=0.0,
                    help="backdate the large queue's messages evenly over this many seconds (e.g. 86400: a "
                         "backlog built up over a day, ~1 bucket per second); default 0: filled as fast as it goes")
    ap.add_argument("--latency-only", action="store_true",
                    help="only 4. (poll, ack and size latency at depth 1,000 vs --depth-large)")
    ap.add_argument("--keep", action="store_true", help="keep the data directory (for profiling)")
    ap.add_argument("--rss-child", nargs=3, metavar=("ROOT", "QUEUE", "SECONDS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rss_child:
        rss_child(args.rss_child[0], args.rss_child[1], float(args.rss_child[2]))
        return 0

    quick = args.quick
    runs = args.runs or (1 if quick else 3)
    duration = args.duration or (0.5 if quick else 3.0)
    depth_large = args.depth_large or (20_000 if quick else 1_000_000)
    samples = args.samples or (200 if quick else 1500)
    rss_seconds = args.rss_seconds or (3.0 if quick else 20.0)
    pa_depth = 15_000 if quick else 80_000  # poll+ack queue is topped up to this before each cell
    cores = os.cpu_count() or 1
    fill_procs = max(1, min(cores, 4))

    parent = Path(args.dir or CHECKOUT.parent).resolve()
    data = Path(tempfile.mkdtemp(prefix="spoolq-bench-", dir=parent))
    root = str(data / "store")
    raw = str(data / "raw")
    mnt, fstype, source = mount_of(str(data))
    same_disk = os.stat(data).st_dev == os.stat(CHECKOUT).st_dev
    load_start = os.getloadavg()
    t_start = time.monotonic()

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["spoolq.store"])

    log(f"data dir {data} ({fstype} on {source}, mounted at {mnt}; same disk as checkout: {same_disk})")
    log(f"runs={runs} duration={duration}s depth_large={depth_large:,} samples={samples} quick={quick}")

    send_thr: dict[int, list[Cell]] = {c: [] for c in CONCURRENCY}
    send_proc: dict[int, list[Cell]] = {c: [] for c in CONCURRENCY}
    raw_thr: dict[int, list[Cell]] = {c: [] for c in CONCURRENCY}
    raw_proc: dict[int, list[Cell]] = {c: [] for c in CONCURRENCY}
    batch_cells: dict[int, list[Cell]] = {1: [], 8: []}
    pa_cells: dict[int, list[Cell]] = {1: [], 10: []}
    lat: dict[str, dict[str, list[float]]] = {}  # "1k:poll:p50" -> per-run values
    rss: dict[str, Any] = {}
    buckets: dict[str, int] = {}
    fill_rate = 0.0
    try:
        FileStore(root, fsync=False).close()
        # ---- queues for the latency and RSS phases: filled once, shared by every run
        log(f"filling the latency queues (1,000 and {depth_large:,}) with {fill_procs} processes")
        fill(ctx, root, "lat-1k", 1000, 1)
        fill_rate = fill(ctx, root, "lat-large", depth_large, fill_procs, show=True, spread=args.spread)
        buckets = {q: len(os.listdir(f"{root}/queues/{q}/ready")) for q in ("lat-1k", "lat-large")}
        log(f"  filled at {fill_rate:,.0f} msgs/s into {buckets['lat-large']:,} ready buckets; os.sync()")
        os.sync()

        for run in range(1, runs + 1):
            # ---- 1. durable single send vs raw per-file limit, interleaved per concurrency
            for c in () if args.latency_only else CONCURRENCY:
                log(f"run {run}/{runs}: durable send, {c} senders (raw threads/procs, store threads/procs)")
                reset_raw(raw)
                raw_thr[c].append(run_threads("raw", {"dir": raw}, c, duration))
                reset_raw(raw)
                raw_proc[c].append(run_procs(ctx, "raw", {"dir": raw}, c, duration))
                reset_raw(raw)
                shared = FileStore(root, fsync=True)
                shared.create_queue("send")
                os.sync()
                send_thr[c].append(run_threads("send", {"store": shared, "tally": FlushTally(shared), "queue": "send"},
                                               c, duration))
                shared.close()
                drop_queue(root, "send")
                FileStore(root, fsync=False).create_queue("send")
                os.sync()
                send_proc[c].append(run_procs(ctx, "send", {"root": root, "queue": "send"}, c, duration))
                drop_queue(root, "send")
            shutil.rmtree(raw, ignore_errors=True)

            # ---- 2. send_batch of 100
            for c in () if args.latency_only else batch_cells:
                log(f"run {run}/{runs}: send_batch x{BATCH}, {c} sender process(es)")
                FileStore(root, fsync=False).create_queue("batch")
                os.sync()
                batch_cells[c].append(run_procs(ctx, "batch", {"root": root, "queue": "batch"}, c, duration))
                drop_queue(root, "batch")

            # ---- 3. poll+ack, 8 consumer processes
            for limit in () if args.latency_only else pa_cells:
                store = FileStore(root, fsync=False)
                store.create_queue("pa")
                have = store.size("pa")
                store.close()
                log(f"run {run}/{runs}: poll+ack limit {limit}, {CONSUMERS} consumer processes "
                    f"(topping up {have:,} -> {pa_depth:,})")
                fill(ctx, root, "pa", pa_depth - have, fill_procs)
                os.sync()
                pa_cells[limit].append(run_procs(ctx, "consume", {"root": root, "queue": "pa", "limit": limit,
                                                                  "peers": CONSUMERS}, CONSUMERS, duration))

            # ---- 4. latency at depth 1k and large, alternating
            log(f"run {run}/{runs}: latency, {samples} samples per depth (poll, ack, size(limit=1000))")
            os.sync()
            res = latency_run(root, {"1k": "lat-1k", "large": "lat-large"}, samples, warmup=50)
            for depth, ops in res.items():
                lat.setdefault(f"{depth}:reads_per_poll", []).append(ops.pop("reads")[0] / samples)
                for op, values in ops.items():
                    for q, name in ((0.5, "p50"), (0.99, "p99"), (1.0, "max")):
                        lat.setdefault(f"{depth}:{op}:{name}", []).append(pct(values, q))

        if not args.latency_only:
            drop_queue(root, "pa")
            # ---- 5. peak RSS of a fresh process serving the large queue
            log(f"peak RSS: a fresh process serves the {depth_large:,} queue for {rss_seconds:.0f} s")
            os.sync()
            rss = measure_rss(root, "lat-large", rss_seconds)
    finally:
        if args.keep:
            log(f"kept {data}")
        else:
            log(f"removing {data}")
            t = time.monotonic()
            remove_tree(ctx, data, fill_procs * 2)
            log(f"  removed in {time.monotonic() - t:.0f} s")

    # ================================================================ report
    P = print
    wall = time.monotonic() - t_start
    P()
    P(f"spoolq store benchmark  (git {git_head()}; median of {runs} run(s); [min-max] across runs; "
      f"{duration:g} s per throughput cell; 1 KiB bodies)")
    P("=" * 100)

    raw_best = send_best = batch_best = float("nan")
    if not args.latency_only:
        raw_best, send_best, batch_best = report_throughput(raw_thr, raw_proc, send_thr, send_proc, batch_cells,
                                                            pa_cells, pa_depth)
    P(f"\n4. latency (ms), depth 1,000 vs depth {depth_large:,}; {samples} samples per run and depth, "
      "poll limit 1, size(limit=1000)")
    P(f"  ready buckets (one per second of send time) at the start: 1k {buckets.get('lat-1k', 0):,}, "
      f"L {buckets.get('lat-large', 0):,}" + (f" (L backdated over {args.spread:,.0f} s)" if args.spread else
                                             " (L filled as fast as it goes; see --spread)"))
    P(f"{'op':>6} | {'1k p50':>8} {'1k p99':>8} {'1k max':>8} | {'L p50':>8} {'L p99':>8} {'L max':>8} | "
      f"{'p50 L/1k':>8} {'p99 L/1k':>8}")
    lat_ratios: dict[str, float] = {}
    for op in ("poll", "ack", "size"):
        v = {k: med(lat.get(f"1k:{op}:{k}", [])) for k in ("p50", "p99", "max")}
        w = {k: med(lat.get(f"large:{op}:{k}", [])) for k in ("p50", "p99", "max")}
        r50, r99 = ratio(w["p50"], v["p50"]), ratio(w["p99"], v["p99"])
        lat_ratios[f"{op} p50"], lat_ratios[f"{op} p99"] = r50, r99
        P(f"{op:>6} | {ms(v['p50']):>8} {ms(v['p99']):>8} {ms(v['max']):>8} | "
          f"{ms(w['p50']):>8} {ms(w['p99']):>8} {ms(w['max']):>8} | {r50:>8.2f} {r99:>8.2f}")
    P("  per-run p50 (ms): " + "; ".join(
        f"{op} 1k {'/'.join(ms(x) for x in lat.get(f'1k:{op}:p50', []))} "
        f"L {'/'.join(ms(x) for x in lat.get(f'large:{op}:p50', []))}" for op in ("poll", "ack", "size")))
    P(f"  block-device reads completed during a poll (whole device, per poll): "
      f"1k {med(lat.get('1k:reads_per_poll', [])):.2f}, L {med(lat.get('large:reads_per_poll', [])):.2f}")

    hwm_mb = max(rss.get("vmhwm_kb", -1), rss.get("ru_maxrss_kb", -1)) / 1024
    if not args.latency_only:
        P(f"\n5. peak RSS of a fresh process serving the {depth_large:,} queue for {rss_seconds:g} s "
          f"(poll 10 + ack, durable send 10, peek/size/counts, background maintenance)")
        P(f"  VmHWM {rss.get('vmhwm_kb', -1) / 1024:.1f} MB, ru_maxrss {rss.get('ru_maxrss_kb', -1) / 1024:.1f} MB "
          f"(after imports, before opening the store: {rss.get('rss_after_import_kb', -1) / 1024:.1f} MB); "
          f"ops {rss.get('ops')}")

    P("\nGoals")
    rows: list[tuple[str, float, str, bool]] = []
    if not args.latency_only:
        rows += [
            ("1  durable send: store best / raw best", ratio(send_best, raw_best), ">= 0.8",
             ratio(send_best, raw_best) >= 0.8),
            (f"2  send_batch({BATCH}) best / single-send best", ratio(batch_best, send_best), ">= 3",
             ratio(batch_best, send_best) >= 3),
        ]
        for limit, cells in pa_cells.items():
            r = ratio(med([x.rate for x in cells]), send_best)
            rows.append((f"3  poll+ack limit {limit} / single-send best", r, ">= 2", r >= 2))
    for k, r in lat_ratios.items():
        rows.append((f"4  {k} latency {depth_large:,}/1k", r, "<= 1.5", r <= 1.5))
    if not args.latency_only:
        rows.append((f"5  peak RSS serving {depth_large:,} (MB)", hwm_mb, "<= 150", 0 < hwm_mb <= 150))
    for name, value, goal, ok in rows:
        P(f"  {name:<46} {value:>8.2f}  {goal:<7} {'PASS' if ok else 'MISS'}")
    if depth_large != 1_000_000:
        P(f"  (depth {depth_large:,}, not 1,000,000: goals 4 and 5 are only indicative in this run)")

    P("\nMachine")
    P(f"  cores {cores}; kernel {platform.release()}; Python {platform.python_version()}; "
      f"data dir fs {fstype} ({source} on {mnt}; same device as checkout: {same_disk})")
    P(f"  load average at start {load_start[0]:.2f}, at end {os.getloadavg()[0]:.2f}; "
      f"large-queue fill {fill_rate:,.0f} msgs/s (fsync=False, {fill_procs} procs); wall {wall:.0f} s")
    P("  shared VM, other work running: absolute rates are noisy, compare ratios within this run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
