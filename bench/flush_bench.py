#!/usr/bin/env python3
"""The three flushes side by side on a journaled ext4 and on XFS, idle and beside a busy writer, through
the store and through HTTP, cells alternating in one run (never from pytest). Its table decides the
default flush of each local file system (``spoolq.store.filesystems``; docs/performance.md).

    python bench/flush_bench.py                          # ext4 and XFS, idle and busy, 3 runs of 3 s cells
    python bench/flush_bench.py --fs ext4 --runs 1 --seconds 2 --workloads single,http
    python bench/flush_bench.py --fs ext4 --workloads single,batch --compare OLD/service   # before/after

With ``--compare OTHER/service`` the store cells also run the store of another checkout (in a child
process whose ``spoolq`` is that one), as more flushes named ``before-<flush>`` (``--compare-flushes``,
default ``journal``) in the same rotation as the others: before and after in one run (the HTTP
cells are left out).

Needs root (it makes, mounts and removes its own loop file systems), ``mkfs.xfs``
(``scripts/system-deps xfs``, called when missing) and ``wrk`` for the HTTP cells
(``scripts/system-deps wrk``). Each file system is a sparse file of ``--size`` GiB beside the checkout
(the disk the service would use), made with the tools' defaults (``mkfs.ext4`` keeps its journal,
``data=ordered``) and mounted with ``-o loop``; both are removed at the end.

Workloads, 1 KiB bodies, each on a fresh data directory that is removed (and the file system synced)
after its cell, so no cell pays for another's files:

* ``single``: 8 processes, each with a FileStore of its own, sending one message at a time;
* ``coalesced``: 8 processes of ``--threads`` threads each sending one message at a time, as a server's
  request threads do: a process's concurrent sends share one flush;
* ``batch``: 8 processes sending ``send_batch`` of 10;
* ``http``: ``wrk`` with ``--conns`` connections (64) sending through the EmoDB door of a ``spoolq serve``
  (4 workers x 32 threads) per file system and flush, started before the first cell.

Neighbours: ``idle``, and ``busy``: another process on the same file system writing ``--busy-mb`` MiB/s
(32) of buffered 1 MiB writes over a 256 MiB file and never flushing them itself, as a log or a
database's data files would: whatever it has dirty when a ``syncfs`` starts, that syncfs writes.

Order: for each file system, neighbour and workload, the three flushes run back to back, starting one
later each run, so a change of load hits all three. The figures are medians of ``--runs``; beside each
rate is the load average (``uptime``) when the cell ran, and the CPU time per message of the senders
(store cells: every process of the cell, user and system, flushes included) or of the server (HTTP).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT / "bench"))
import http_wrk_bench as wrkb  # noqa: E402

from spoolq.store import FileStore, OutgoingMessage  # noqa: E402

FLUSHES = ("syncfs", "journal", "fsync")
WORKLOADS = ("single", "coalesced", "batch", "http")
BODY = os.urandom(1024)
PROCS = 8
BATCH = 10


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load() -> float:
    return os.getloadavg()[0]


# ============================================================== loop file systems


@contextlib.contextmanager
def loop_fs(kind: str, parent: Path, size_gib: int) -> Iterator[Path]:
    """A fresh ``kind`` file system (ext4 or xfs) on a sparse loop file under ``parent``, mounted."""
    if kind == "xfs" and shutil.which("mkfs.xfs") is None:
        subprocess.run([str(CHECKOUT / "scripts/system-deps"), "xfs"], check=True)
    image = parent / f"spoolq-flushbench-{kind}-{os.getpid()}.img"
    mnt = Path(tempfile.mkdtemp(prefix=f"spoolq-flushbench-{kind}-"))
    with open(image, "wb") as f:
        f.truncate(size_gib * 2**30)
    mkfs = {"ext4": ["mkfs.ext4", "-q", "-F", "-i", "8192"], "xfs": ["mkfs.xfs", "-q", "-f"]}[kind]
    try:
        subprocess.run([*mkfs, str(image)], check=True)
        subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], check=True)
        try:
            yield mnt
        finally:
            for _ in range(10):
                if subprocess.run(["umount", str(mnt)], check=False).returncode == 0:
                    break
                time.sleep(1)
    finally:
        image.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            mnt.rmdir()


def _busy_writer(path: str, mb_per_s: float) -> None:
    """Write ``mb_per_s`` MiB/s of buffered 1 MiB writes over a 256 MiB file, forever."""
    chunk = os.urandom(2**20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    started, written = time.monotonic(), 0
    while True:
        os.pwrite(fd, chunk, (written % 256) * 2**20)
        written += 1
        ahead = written / mb_per_s - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)


@contextlib.contextmanager
def neighbour(mnt: Path, busy: bool, mb_per_s: float) -> Iterator[None]:
    if not busy:
        yield
        return
    proc = mp.get_context("fork").Process(target=_busy_writer, args=(str(mnt / "neighbour.dat"), mb_per_s),
                                           daemon=True)
    proc.start()
    time.sleep(2)  # the kernel's writeback of the neighbour reaches its steady state
    try:
        yield
    finally:
        proc.kill()
        proc.join()


# ============================================================== store cells


def _store_worker(workload: str, flush: str, root: str, seconds: float, threads: int, barrier: Any,
                  out: Any) -> None:
    try:
        store = FileStore(root, flush=flush)
        msg = OutgoingMessage(body=BODY)
        batch = [msg] * BATCH
        op: Callable[[], int] = ((lambda: len(store.send_batch("q", batch))) if workload == "batch"
                                 else (lambda: (store.send("q", msg), 1)[1]))
        counts: list[int] = []
        barrier.wait(120)
        t0 = time.monotonic()

        def loop() -> None:
            n = 0
            while time.monotonic() - t0 < seconds:
                n += op()
            counts.append(n)

        ts = [threading.Thread(target=loop) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        span = time.monotonic() - t0
        store.close()
        out.put((sum(counts), t0, t0 + span, None))
    except BaseException as e:
        with contextlib.suppress(Exception):
            barrier.abort()
        out.put((0, 0.0, 0.0, f"{type(e).__name__}: {e}"))


def compared_store_cell(service: str, workload: str, flush: str, root: Path, seconds: float,
                        threads: int) -> tuple[float, float]:
    """:func:`store_cell` run by a child process whose ``spoolq`` is the one under ``service``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([service, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, __file__, "--one-cell", json.dumps([workload, flush, str(root), seconds,
                                                                               threads])],
                         env=env, check=True, stdout=subprocess.PIPE).stdout
    rate, cpu = out.decode().split()[-2:]
    return float(rate), float(cpu)


def store_cell(workload: str, flush: str, root: Path, seconds: float, threads: int) -> tuple[float, float]:
    """(messages/s, CPU µs per message of the cell's processes) of one store cell on a fresh ``root``."""
    FileStore(root, fsync=False).create_queue("q")
    os.sync()
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(PROCS), ctx.Queue()
    per_proc = threads if workload == "coalesced" else 1
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ps = [ctx.Process(target=_store_worker, args=(workload, flush, str(root), seconds, per_proc, barrier, out))
          for _ in range(PROCS)]
    for p in ps:
        p.start()
    results = [out.get(timeout=300) for _ in ps]
    for p in ps:
        p.join(60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    errors = [r[3] for r in results if r[3]]
    if errors:
        raise RuntimeError(f"{workload} {flush}: {errors[0]}")
    n = sum(r[0] for r in results)
    span = max(r[2] for r in results) - min(r[1] for r in results)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return n / span, cpu / max(n, 1) * 1e6


# ============================================================== HTTP cells


class Servers:
    """One ``spoolq serve`` per (file system, flush), each on a data directory of that file system."""

    def __init__(self, workers: int, threads: int) -> None:
        self.procs: dict[tuple[str, str], subprocess.Popen[bytes]] = {}
        self.urls: dict[tuple[str, str], str] = {}
        self.workers, self.threads = workers, threads

    def start(self, fs: str, flush: str, root: Path) -> None:
        port = wrkb.free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "spoolq.cli", "serve", "--root", str(root), "--port", str(port),
             "--workers", str(self.workers), "--threads", str(self.threads), "--fsync", "always", "--flush", flush,
             "--node-id", f"flushbench-{fs}-{flush}"], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs[(fs, flush)] = proc
        self.urls[(fs, flush)] = f"http://127.0.0.1:{port}"

    def wait(self) -> None:
        for key, proc in self.procs.items():
            wrkb.wait_up(self.urls[key] + "/healthz", proc)

    def stop(self, fs: str | None = None) -> None:
        for key in [k for k in self.procs if fs is None or k[0] == fs]:
            proc = self.procs.pop(key)
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def http_cell(servers: Servers, fs: str, flush: str, queue: str, conns: int, seconds: float,
              tmp: Path) -> tuple[float, float]:
    """(requests/s, server CPU µs per request) of wrk sending through the EmoDB door to a fresh queue."""
    url, script = wrkb._door_request("EmoDB", servers.urls[(fs, flush)])
    url = url.replace("/queue/1/q/", f"/queue/1/{queue}/")
    rps, _p50, _p99, bad, cpu = wrkb.wrk(url, script, conns, seconds, tmp, servers.procs[(fs, flush)].pid)
    if bad:
        log(f"  {bad} non-2xx answers")
    return rps, cpu


# ============================================================== main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fs", default="ext4,xfs")
    ap.add_argument("--neighbours", default="idle,busy")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--flushes", default=",".join(FLUSHES))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=8, help="threads per process in the coalesced cells")
    ap.add_argument("--conns", type=int, default=64, help="wrk connections in the HTTP cells")
    ap.add_argument("--busy-mb", type=float, default=32.0, help="MiB/s the busy neighbour writes")
    ap.add_argument("--size", type=int, default=8, help="GiB of each loop file (sparse)")
    ap.add_argument("--dir", default=None, help="where the loop files go (default: beside the checkout)")
    ap.add_argument("--compare", default=None, help="another checkout's service/ dir: its store cells run too")
    ap.add_argument("--compare-flushes", default="journal", help="the flushes of the --compare store's cells")
    ap.add_argument("--one-cell", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_cell:
        workload, flush, root, seconds, threads = json.loads(args.one_cell)
        rate, cpu = store_cell(workload, flush, Path(root), seconds, threads)
        print(rate, cpu)
        return 0
    if os.geteuid() != 0:
        raise SystemExit("flush_bench: needs root (it mounts its own loop file systems)")
    workloads = args.workloads.split(",")
    flushes = args.flushes.split(",")
    if args.compare:
        flushes += [f"before-{f}" for f in args.compare_flushes.split(",")]
        if "http" in workloads:
            log("--compare: the HTTP cells are left out (they run this checkout only)")
            workloads.remove("http")
    if "http" in workloads and shutil.which("wrk") is None:
        subprocess.run([str(CHECKOUT / "scripts/system-deps"), "wrk"], check=True)
    parent = Path(args.dir or CHECKOUT.parent)
    rows: dict[tuple[str, str, str, str], list[tuple[float, float, float]]] = {}  # -> (rate, cpu µs, load)
    servers = Servers(4, 32)
    tmp = Path(tempfile.mkdtemp(prefix="spoolq-flushbench-wrk-"))
    cells = iter(range(1_000_000))
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, tmp, True)
        mounts = {fs: stack.enter_context(loop_fs(fs, parent, args.size)) for fs in args.fs.split(",")}
        stack.callback(servers.stop)
        if "http" in workloads:
            for fs, mnt in mounts.items():
                for flush in flushes:
                    servers.start(fs, flush, mnt / f"serve-{flush}")
            servers.wait()
        log(f"file systems: {', '.join(f'{fs} at {m}' for fs, m in mounts.items())}; load {load():.2f}")
        for run in range(args.runs):
            for fs, mnt in mounts.items():
                for nb in args.neighbours.split(","):
                    with neighbour(mnt, nb == "busy", args.busy_mb):
                        for workload in workloads:
                            turn = (run + len(rows)) % len(flushes)
                            for flush in flushes[turn:] + flushes[:turn]:
                                cell_no = next(cells)
                                if workload == "http":
                                    rate, cpu = http_cell(servers, fs, flush, f"q{cell_no}", args.conns,
                                                          args.seconds, tmp)
                                else:
                                    root = mnt / f"cell-{cell_no}"
                                    if flush.startswith("before-"):
                                        rate, cpu = compared_store_cell(args.compare, workload,
                                                                        flush.removeprefix("before-"), root,
                                                                        args.seconds, args.threads)
                                    else:
                                        rate, cpu = store_cell(workload, flush, root, args.seconds, args.threads)
                                    shutil.rmtree(root, ignore_errors=True)
                                rows.setdefault((fs, nb, workload, flush), []).append((rate, cpu, load()))
                                log(f"run {run + 1} {fs} {nb} {workload} {flush}: {rate:,.0f}/s, {cpu:,.0f} µs "
                                    f"CPU/msg (load {load():.2f})")
                                os.sync()
    print(f"\n## flush_bench: {args.runs} run(s) x {args.seconds:g} s cells, alternating; 8 sender processes "
          f"(coalesced: x {args.threads} threads), batches of {BATCH}, HTTP: wrk {args.conns} connections to the "
          f"EmoDB door (4 workers x 32 threads); busy neighbour {args.busy_mb:g} MiB/s; {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| fs | neighbour | workload | " + " | ".join(f"{f} msgs/s (runs) | CPU µs/msg" for f in flushes)
          + " | fastest | load (1 min) |")
    print("|---|---|---|" + "---|---|" * len(flushes) + "---|---|")
    for fs in mounts:
        for nb in args.neighbours.split(","):
            for workload in workloads:
                med = {f: statistics.median(r[0] for r in rows[(fs, nb, workload, f)]) for f in flushes}
                cells_txt = []
                for f in flushes:
                    rs = rows[(fs, nb, workload, f)]
                    cells_txt.append(f"{med[f]:,.0f} ({' / '.join(f'{r[0]:,.0f}' for r in rs)}) | "
                                     f"{statistics.median(r[1] for r in rs):,.0f}")
                best = max(med, key=lambda f: med[f])
                loads = [r[2] for f in flushes for r in rows[(fs, nb, workload, f)]]
                print(f"| {fs} | {nb} | {workload} | " + " | ".join(cells_txt)
                      + f" | {best} ({med[best] / max(min(med.values()), 1e-9):.2f}x the slowest) | "
                      f"{min(loads):.1f}-{max(loads):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
