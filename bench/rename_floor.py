#!/usr/bin/env python
"""What each state change's rename costs when every process does it at once (no spoolq code).

    python bench/rename_floor.py                       # every pattern, 8 processes
    python bench/rename_floor.py --patterns claim,ack-trash,ack-own-trash --reps 5

Every state change of a message after its send is a rename (claim, renew, release, requeue, ack,
delayed -> ready, dead-letter, move). On Linux a rename within one directory locks that directory;
a rename between two directories also takes the file system's rename lock, and each directory's
lock, so a directory that every process renames into or out of is where they queue. Each of
``--procs`` processes first makes ``--files`` 1 KiB files of its own in the pattern's source
directories (untimed), then renames them as fast as it can for ``--seconds`` (the clock stops at
its last rename if it runs out). Nothing is flushed: these state changes are not flushed by the
store either. Patterns, named by the state change that renames that way:

* ``renew``: within ``claimed/<shard>/`` (16 shards shared by all processes; a new name);
* ``claim``: ``ready/<ksec>/<bucket>/`` (one bucket, as a queue's current second) into
  ``claimed/<shard>/``;
* ``release``: ``claimed/<shard>/`` into the ready bucket (claim expiry, requeue, ``unclaim_all``);
* ``ack-trash``: ``claimed/<shard>/`` into the one ``trash/`` every process shares (the ack);
* ``ack-own-trash``: the same into a ``trash/<pid>/`` of the process's own;
* ``ack-unlink``: the claimed file unlinked where it is (no rename);
* ``delayed``: ``delayed/<due-second>/`` into the ready bucket (a due delay);
* ``move``: one queue's ready bucket into another queue's (dead-letter, move).

Prints renames/s per pattern (median of ``--reps`` alternating cells) and each one's ratio to
``renew`` (a rename that stays in its directory).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BODY = os.urandom(1024)
BUCKET = "ready/00001764/00001764000"
PATTERNS = ("renew", "claim", "release", "ack-trash", "ack-own-trash", "ack-unlink", "delayed", "move")


def _dirs(pattern: str, root: str, idx: int) -> tuple[str, str | None]:
    """(source directory prefix, destination directory) of ``pattern``; a ``claimed`` source is
    spread over 16 shards by the caller, a None destination means unlink."""
    claimed = f"{root}/q/claimed"
    return {
        "renew": (claimed, None),
        "claim": (f"{root}/q/{BUCKET}", claimed),
        "release": (claimed, f"{root}/q/{BUCKET}"),
        "ack-trash": (claimed, f"{root}/trash"),
        "ack-own-trash": (claimed, f"{root}/trash/{idx}"),
        "ack-unlink": (claimed, None),
        "delayed": (f"{root}/q/delayed/00001764000", f"{root}/q/{BUCKET}"),
        "move": (f"{root}/q/{BUCKET}", f"{root}/other/{BUCKET}"),
    }[pattern]


def _stage(root: str, idx: int, files: int, pattern: str) -> list[str]:
    """Put this worker's ``files`` files (``w<idx>-<i>``, wherever the cell before left them, or
    made anew) into ``pattern``'s source directories, untimed; their paths there."""
    src, dst = _dirs(pattern, root, idx)
    sharded = src.endswith("/claimed")
    prefix = f"w{idx}-"
    where: dict[int, str] = {}
    for d, _subdirs, names in os.walk(root):
        for n in names:
            if n.startswith(prefix):
                where[int(n[len(prefix):].split("~")[0])] = f"{d}/{n}"
    sources: list[str] = []
    for i in range(files):
        d = f"{src}/{i % 16:x}" if sharded else src
        if i < 16 or not sharded:
            os.makedirs(d, exist_ok=True)
        path = f"{d}/{prefix}{i}"
        old = where.get(i)
        if old is None:
            with open(path, "wb") as f:
                f.write(BODY)
        elif old != path:
            os.rename(old, path)
        sources.append(path)
    if dst is not None:
        os.makedirs(dst, exist_ok=True)
    for s in range(16):
        os.makedirs(f"{root}/q/claimed/{s:x}", exist_ok=True)
    return sources


def _worker(pattern: str, root: str, idx: int, files: int, seconds: float, barrier: Any, out: Any) -> None:
    try:
        sources = _stage(root, idx, files, pattern)
        _src, dst = _dirs(pattern, root, idx)
        claimed = f"{root}/q/claimed"
        barrier.wait(300)
        t0 = time.monotonic()
        end = t0 + seconds
        n = 0
        for path in sources:
            if time.monotonic() >= end:
                break
            name = os.path.basename(path)
            if pattern == "ack-unlink":
                os.unlink(path)
            elif pattern == "renew":
                os.rename(path, f"{path}~r")
            elif pattern == "claim":
                os.rename(path, f"{claimed}/{n % 16:x}/{name}~c")
            else:
                os.rename(path, f"{dst}/{name}")
            n += 1
        out.put((n, time.monotonic() - t0, None))
    except BaseException as e:
        barrier.abort()
        out.put((0, 0.0, f"{type(e).__name__}: {e}"))


def run_cell(pattern: str, root: Path, procs: int, files: int, seconds: float) -> float:
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(procs), ctx.Queue()
    ps = [ctx.Process(target=_worker, args=(pattern, str(root), i, files, seconds, barrier, out), daemon=True)
          for i in range(procs)]
    for p in ps:
        p.start()
    results = [out.get(timeout=seconds + 600) for _ in ps]
    for p in ps:
        p.join(30)
    errors = [e for _n, _t, e in results if e]
    if errors:
        raise RuntimeError(f"{pattern}: {errors[0]}")
    return sum(n for n, _t, _e in results) / max(t for _n, t, _e in results)


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/var/tmp/spoolq-rename-floor", help="on the disk to measure")
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--files", type=int, default=3000, help="files each process renames at most per cell")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--settle", type=float, default=1.0, help="pause after each cell's delete")
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    args = ap.parse_args(argv)
    patterns = args.patterns.split(",")
    unknown = set(patterns) - set(PATTERNS)
    if unknown:
        ap.error(f"unknown patterns: {', '.join(sorted(unknown))}")
    root = Path(args.dir) / f"rename-floor-{time.time_ns()}"
    root.mkdir(parents=True)
    rates: dict[str, list[float]] = {}
    try:
        for rep in range(args.reps):
            for p in patterns:
                os.sync()
                rate = run_cell(p, root, args.procs, args.files, args.seconds)
                rates.setdefault(p, []).append(rate)
                print(f"rep {rep + 1} {p:14s} {rate:9,.0f} renames/s ({load()})", flush=True)
                os.sync()
                time.sleep(args.settle)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ref = statistics.median(rates["renew"]) if "renew" in rates else None
    print(f"\n{args.procs} processes, {args.reps} x {args.seconds:g} s alternating cells, medians; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {load()}")
    print("\n| pattern | renames/s | reps | x renew |\n|---|---|---|---|")
    for p in patterns:
        med = statistics.median(rates[p])
        rel = f"{med / ref:.2f}" if ref else "?"
        print(f"| {p} | {med:,.0f} | {' / '.join(f'{x:,.0f}' for x in rates[p])} | {rel} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
