#!/usr/bin/env python3
"""Client benchmark: the ``spoolq_client.Consumer`` against a bare poll + ack loop, in one run.

Both drain a queue of ``--messages`` pre-filled messages from a real ``spoolq serve`` (gunicorn,
``--fsync never``: poll and ack need no flush either way) with ``--concurrency`` (8) threads and
a no-op handler, using the same HTTP library (httpx, one pooled client):

* ``bare``      each thread: ``GET /queue/1/q/poll?limit=10&ttl=30`` then ``POST ack`` of the ids
* ``consumer``  ``Consumer(concurrency=8, batch_size=10)``: the generated client, heartbeats,
                stats, retries, graceful stop

and prints messages handled/s of each (median of ``--runs`` runs, alternating the order), and
the ratio consumer / bare (goal >= 0.9). Not a test.

    python bench/client_bench.py [--messages 20000] [--runs 3] [--concurrency 8] [--workers 4]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT / "service"))
sys.path.insert(0, str(CHECKOUT / "clients/python"))
sys.path.insert(0, str(CHECKOUT))

from spoolq_client import Consumer, Message, SpoolqClient  # noqa: E402
from tests.e2e.spoolq_server import free_port  # noqa: E402

PAYLOAD = {"body": "x" * 200}


def start_server(root: Path, port: int, workers: int, threads: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    proc = subprocess.Popen([sys.executable, "-m", "spoolq.cli", "serve", "--root", str(root), "--port", str(port),
                             "--workers", str(workers), "--threads", str(threads), "--fsync", "never",
                             "--node-id", "bench"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        time.sleep(0.1)
    proc.terminate()
    raise SystemExit("spoolq serve did not start")


def fill(url: str, queue: str, n: int) -> None:
    with httpx.Client(base_url=url, timeout=60) as c:
        for i in range(0, n, 1000):
            c.post(f"/queue/1/{queue}/sendbatch", json=[PAYLOAD] * min(1000, n - i)).raise_for_status()


def bare(url: str, queue: str, n: int, concurrency: int) -> float:
    """Messages/s of ``concurrency`` threads looping poll + ack on one pooled httpx client."""
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    handled = 0
    lock = threading.Lock()
    done = threading.Event()
    with httpx.Client(base_url=url, timeout=60, limits=limits) as c:
        def worker() -> None:
            nonlocal handled
            while not done.is_set():
                r = c.get(f"/queue/1/{queue}/poll", params={"limit": 10, "ttl": 30, "wait": 1})
                r.raise_for_status()
                messages = r.json()
                if not messages:
                    continue
                for _ in messages:  # the no-op handler
                    pass
                c.post(f"/queue/1/{queue}/ack", json=[m["id"] for m in messages]).raise_for_status()
                with lock:
                    handled += len(messages)
                    if handled >= n:
                        done.set()
        started = time.perf_counter()
        threads = [threading.Thread(target=worker) for _ in range(concurrency)]
        for t in threads:
            t.start()
        done.wait()
        elapsed = time.perf_counter() - started
        for t in threads:
            t.join()
    return n / elapsed


def consumer(url: str, queue: str, n: int, concurrency: int) -> float:
    handled = 0
    lock = threading.Lock()
    done = threading.Event()

    def handle(message: Message) -> None:
        nonlocal handled
        with lock:
            handled += 1
            if handled >= n:
                done.set()

    with SpoolqClient(url) as client:
        c = Consumer(client, queue, handle, concurrency=concurrency, batch_size=10, claim_ttl=30, wait=1)
        started = time.perf_counter()
        c.start()
        done.wait()
        # The last batch's ack is part of the work: wait for it before stopping the clock.
        while c.stats.acked < n:
            time.sleep(0.001)
        elapsed = time.perf_counter() - started
        c.stop()
        c.join()
    return n / elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=32)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="spoolq-client-bench-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(tmp / "root", port, args.workers, args.threads)
    results: dict[str, list[float]] = {"bare": [], "consumer": []}
    try:
        for run in range(args.runs):
            order = ["bare", "consumer"] if run % 2 == 0 else ["consumer", "bare"]
            for mode in order:
                queue = f"bench-{run}-{mode}"
                fill(url, queue, args.messages)
                rate = (bare if mode == "bare" else consumer)(url, queue, args.messages, args.concurrency)
                results[mode].append(rate)
                print(f"run {run + 1} {mode:9s} {rate:8.0f} messages/s", flush=True)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    b, c = statistics.median(results["bare"]), statistics.median(results["consumer"])
    print(f"\n{args.messages} messages, {args.concurrency}-way, no-op handler, median of {args.runs} runs")
    print(f"bare poll+ack loop (httpx): {b:8.0f} messages/s")
    print(f"Consumer:                   {c:8.0f} messages/s")
    print(f"ratio Consumer / bare:      {c / b:8.2f}   (goal >= 0.9)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
