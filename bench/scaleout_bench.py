#!/usr/bin/env python
"""Scale-out benchmark: 1, 2 and 3 spoolq nodes on one shared file system (CephFS, a GlusterFS
volume), side by side with the same mount's raw durable-create rate.

Run it as root (never from pytest)::

    python bench/scaleout_bench.py                             # CephFS, then the replica-2 volume
    python bench/scaleout_bench.py --volume spq-dist           # the distributed-replicate 2x2 volume
    python bench/scaleout_bench.py --volume cephfs --no-collisions

It brings each file system up with ``scripts/ceph`` or ``scripts/gluster`` (test-made network
namespaces; see those scripts), runs everything in one go, prints a table and tears it down. What
it measures, per file system:

1. anchor: raw durable creates/s through one mount (create + write 1 KiB + fsync + rename +
   directory fsync, one file per op), 1 thread and 8 threads;
2. durable send msgs/s through the HTTP door (``/queue/1/_sendbatch`` of 50, 4 senders per
   node) with 1, 2 and 3 nodes (``--flush fsync``), and poll+ack msgs/s (3 pollers per node,
   limit 10) draining what was sent;
3. claim collisions per 1,000 polls (claim renames lost to another poller) with 1, 2 and 3 node
   processes of 4 poller threads each, ``--peers 0`` against ``--peers 2*nodes``: counted in
   the bench by wrapping the store's claim rename, on the store directly (one FileStore per
   mount, one process per node);
4. latency from a send acknowledged by node A to its delivery to a long poll waiting on node B.

Figures on a shared machine are noisy: compare within one run; the load average is printed.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests

from tests.multinode.cluster import (
    CEPHFS,
    VOLUMES,
    Cluster,
    file_system,
    mount_path,
    running_ceph,
    running_gluster,
    unavailable,
)

QUEUE_BATCH = 50


def raw_creates(directory: Path, threads: int, seconds: float) -> float:
    """Durable creates/s: create + write 1 KiB + fsync + rename + directory fsync per file."""
    (directory / "tmp").mkdir(parents=True, exist_ok=True)
    (directory / "dst").mkdir(exist_ok=True)
    done = [0] * threads
    stop = time.monotonic() + seconds

    def work(t: int) -> None:
        i = 0
        while time.monotonic() < stop:
            p = f"{directory}/tmp/{t}-{i}"
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, b"x" * 1024)
            os.fsync(fd)
            os.close(fd)
            os.rename(p, f"{directory}/dst/{t}-{i}")
            dfd = os.open(f"{directory}/dst", os.O_RDONLY)
            os.fsync(dfd)
            os.close(dfd)
            i += 1
        done[t] = i

    start = time.monotonic()
    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(done) / (time.monotonic() - start)


def send_rate(urls: list[str], queue: str, messages: int, per_node: int = 4) -> float:
    senders = [u for u in urls for _ in range(per_node)]
    batches = max(1, messages // QUEUE_BATCH // len(senders))

    def work(url: str, s: int) -> None:
        http = requests.Session()
        for b in range(batches):
            body = {queue: [{"s": s, "b": b, "i": i, "pad": "x" * 900} for i in range(QUEUE_BATCH)]}
            r = http.post(f"{url}/queue/1/_sendbatch", json=body, timeout=300)
            r.raise_for_status()

    start = time.monotonic()
    ts = [threading.Thread(target=work, args=(u, s)) for s, u in enumerate(senders)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return batches * QUEUE_BATCH * len(senders) / (time.monotonic() - start)


def drain_rate(urls: list[str], queue: str, per_node: int = 3) -> float:
    got = [0]
    lock = threading.Lock()

    def work(url: str) -> None:
        http = requests.Session()
        empty = 0
        while empty < 2:
            r = http.get(f"{url}/queue/1/{queue}/poll", params={"limit": 10, "ttl": 600}, timeout=120)
            msgs = r.json()
            if not msgs:
                empty += 1
                time.sleep(0.2)
                continue
            empty = 0
            http.post(f"{url}/queue/1/{queue}/ack", json=[m["id"] for m in msgs], timeout=120).raise_for_status()
            with lock:
                got[0] += len(msgs)

    start = time.monotonic()
    ts = [threading.Thread(target=work, args=(u,)) for u in urls for _ in range(per_node)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return got[0] / max(1e-9, time.monotonic() - start - 0.4)


def _collision_node(root: str, node: str, queue: str, peers: int, threads: int, out: Any) -> None:
    from spoolq.store import FileStore, claiming

    lost = [0]
    polls = [0]
    lock = threading.Lock()
    real = claiming.rename_into

    def counting(src: str, dst_dir: str, name: str, *, base: str) -> None:
        try:
            real(src, dst_dir, name, base=base)
        except FileNotFoundError:
            with lock:
                lost[0] += 1
            raise

    claiming.rename_into = counting  # type: ignore[assignment]
    store = FileStore(root, node_id=node, flush="fsync", peers=peers)

    def work() -> None:
        empty = 0
        while empty < 3:
            got = store.poll(queue, limit=10, claim_ttl=600)
            with lock:
                polls[0] += 1
            if not got:
                empty += 1
                time.sleep(0.1)
                continue
            empty = 0
            store.ack(queue, [d.receipt for d in got])

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out.put((lost[0], polls[0]))


def collisions(volume: str, nodes: int, peers: int, messages: int) -> float:
    """Claim renames lost to another poller, per 1,000 polls, ``nodes`` processes x 4 threads."""
    from spoolq.store import FileStore
    from spoolq.store.model import OutgoingMessage

    data = f"coll-{uuid.uuid4().hex[:8]}"
    queue = "c"
    filler = FileStore(mount_path(volume, 1) / data, node_id="filler", fsync=False)
    for i in range(0, messages, 100):
        filler.send_batch(queue, [OutgoingMessage(body=b"%d" % k) for k in range(i, min(i + 100, messages))],
                          create="standard")  # type: ignore[arg-type]
    filler.close()
    out: Any = mp.get_context("spawn").Queue()
    procs = [mp.get_context("spawn").Process(
        target=_collision_node, args=(str(mount_path(volume, n + 1) / data), f"node{n + 1}", queue, peers, 4, out))
        for n in range(nodes)]
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    lost, polls = sum(r[0] for r in results), sum(r[1] for r in results)
    return 1000 * lost / max(1, polls)


def wake_latency(a: str, b: str, rounds: int = 15) -> list[float]:
    queue = f"wake-{uuid.uuid4().hex[:8]}"
    requests.post(f"{a}/queue/1/{queue}/send", json="warm", timeout=60).raise_for_status()
    requests.get(f"{b}/queue/1/{queue}/poll", params={"ttl": 60, "wait": 5}, timeout=60)
    out = []
    for r in range(rounds):
        got: dict[str, float] = {}

        def wait(got: dict[str, float] = got) -> None:
            msgs = requests.get(f"{b}/queue/1/{queue}/poll", params={"ttl": 60, "wait": 15}, timeout=60).json()
            got["at"] = time.monotonic()
            requests.post(f"{b}/queue/1/{queue}/ack", json=[m["id"] for m in msgs], timeout=60)

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.5 + (r % 5) * 0.13)
        requests.post(f"{a}/queue/1/{queue}/send", json={"r": r}, timeout=60).raise_for_status()
        sent = time.monotonic()
        t.join()
        out.append(got["at"] - sent)
    return out


def bench(volume: str, args: argparse.Namespace, row: Any) -> None:
    """Every measure on ``volume``, whose file system is up."""
    with tempfile.TemporaryDirectory() as logs:
        raw1 = raw_creates(mount_path(volume, 1) / "raw1", 1, args.seconds)
        row(f"{volume}: raw durable creates/s, 1 thread (anchor)", f"{raw1:.0f}")
        raw8 = raw_creates(mount_path(volume, 1) / "raw8", 8, args.seconds)
        row(f"{volume}: raw durable creates/s, 8 threads", f"{raw8:.0f}")
        for n in (1, 2, 3):
            cluster = Cluster.start(volume, Path(logs), count=n, extra_args=("--peers", str(2 * n)))
            try:
                q = f"tp-{uuid.uuid4().hex[:8]}"
                s = send_rate(cluster.urls, q, args.messages)
                row(f"{volume}: {n} node(s): durable send msgs/s (x raw 1-thread / 8-thread)",
                    f"{s:.0f} ({s / raw1:.1f}x / {s / raw8:.1f}x)")
                d = drain_rate(cluster.urls, q)
                row(f"{volume}: {n} node(s): poll+ack msgs/s", f"{d:.0f}")
                if n == 2:
                    lat = sorted(wake_latency(cluster.urls[0], cluster.urls[1]))
                    row(f"{volume}: send on node A -> delivery on node B (long poll), p50 / max s",
                        f"{statistics.median(lat):.2f} / {lat[-1]:.2f}")
            finally:
                cluster.stop()
    if args.collisions:
        for n in (1, 2, 3):
            for peers in (0, 2 * n):
                c = collisions(volume, n, peers, 600)
                row(f"{volume}: {n} node process(es) x 4 pollers, --peers {peers}: lost claims / 1,000 polls",
                    f"{c:.0f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--volume", action="append", choices=VOLUMES,
                    help=f"a volume to measure (repeatable; default {CEPHFS} and spq-rep)")
    ap.add_argument("--messages", type=int, default=1200, help="messages sent per node count")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each raw-create cell")
    ap.add_argument("--no-collisions", dest="collisions", action="store_false",
                    help="skip the claim-collision cells (the longest part)")
    args = ap.parse_args()
    volumes = args.volume or [CEPHFS, "spq-rep"]
    for volume in volumes:
        reason = unavailable(file_system(volume))
        if reason is not None:
            print(f"scaleout_bench: {reason}", file=sys.stderr)
            return 2
    rows: list[tuple[str, str]] = []

    def row(name: str, value: str) -> None:
        rows.append((name, value))
        print(f"{name:<70} {value}  (load {os.getloadavg()[0]:.1f})", flush=True)

    for volume in volumes:
        with running_ceph() if volume == CEPHFS else running_gluster():
            bench(volume, args, row)
    print("\n| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print(f"\nvolumes {', '.join(volumes)}; {os.cpu_count()} CPUs; load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
