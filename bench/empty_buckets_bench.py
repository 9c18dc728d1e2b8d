#!/usr/bin/env python
"""What empty ready buckets left in place cost a poll, and what removing them costs.

    python bench/empty_buckets_bench.py                      # 0, 1,000, 10,000, 100,000 empty buckets
    python bench/empty_buckets_bench.py --buckets 100000 --root /mnt/gluster/x

A standard queue's messages live in one directory per send second. A poller that finds a bucket
empty removes it at once on local disks and CephFS; on GlusterFS only maintenance does, under the
queue's bucket lock (``spoolq.store.bucket_guard``). Where nothing removed them, a poll of a queue
whose backlog is drained would list every empty bucket older than its first message on each refill
of its cursor (at least once a second). For each count of empty buckets (one per second, as one
send a second leaves behind) this prints:

* ``poll, none removed``: the median time of a poll of the empty queue while the buckets stay
  (a guarded store whose maintenance has not run; nothing else removes them);
* ``first poll, immediate``: the one poll of an immediate-mode store that walks and removes them all;
* ``maintenance, guarded``: one maintenance pass that removes them under the bucket lock (they are
  old enough), a pass reading as far as a poll's cursor would (bounded, see ``remove_empty_buckets``),
  so it is repeated until none is left: ``passes`` and the total time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from spoolq.store import FileStore
from spoolq.store import layout as L

QUEUE = "empties"


def make_empties(root: Path, count: int, newest_s: int) -> None:
    store = FileStore(root, fsync=False, empty_buckets="guarded")
    store.create_queue(QUEUE)
    store.close()
    qdir = root / "queues" / QUEUE
    for s in range(newest_s - count, newest_s):
        bucket = L.std_bucket(s * 1000)
        os.makedirs(qdir / L.ready_path(bucket), exist_ok=True)


def poll_times(store: FileStore, polls: int) -> list[float]:
    out = []
    for _ in range(polls):
        t0 = time.perf_counter()
        assert store.poll(QUEUE, limit=10, claim_ttl=30) == []
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--buckets", type=int, nargs="*", default=[0, 1000, 10_000, 100_000])
    ap.add_argument("--polls", type=int, default=5)
    ap.add_argument("--root", type=Path, default=None, help="a directory to work in (default: a temp dir)")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(dir=args.root))
    newest = int(time.time()) - 3600  # all of them older than any write window or removal age
    print(f"{'empty buckets':>13} | {'poll, none removed':>18} | {'first poll, immediate':>21} | "
          f"{'maintenance, guarded':>20} | passes")
    try:
        for count in args.buckets:
            cells = []
            root = base / f"kept-{count}"
            make_empties(root, count, newest)
            kept = FileStore(root, fsync=False, empty_buckets="guarded", maintenance_interval=1e9)
            kept.poll(QUEUE)  # warm: the handle, the first listing
            cells.append(statistics.median(poll_times(kept, args.polls)))
            kept.close()
            root = base / f"immediate-{count}"
            make_empties(root, count, newest)
            immediate = FileStore(root, fsync=False, empty_buckets="immediate", maintenance_interval=1e9)
            cells.append(poll_times(immediate, 1)[0])
            immediate.close()
            root = base / f"guarded-{count}"
            make_empties(root, count, newest)
            guarded = FileStore(root, fsync=False, empty_buckets="guarded", maintenance_interval=1e9)
            t0, passes = time.perf_counter(), 0
            while True:
                passes += 1
                if not guarded.maintain().get("buckets_removed"):
                    break
            cells.append(time.perf_counter() - t0)
            guarded.close()
            print(f"{count:>13,} | {cells[0] * 1000:>15.1f} ms | {cells[1] * 1000:>18.1f} ms | "
                  f"{cells[2] * 1000:>17.1f} ms | {passes}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
