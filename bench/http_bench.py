#!/usr/bin/env python3
"""HTTP benchmark: spoolq through gunicorn vs the HTTP ceiling vs the store in-process.

Side by side in one run, with keep-alive clients (``requests.Session``) at 1 and 8
concurrent clients:

* ``send``      durable sends/s: ``POST /queue/1/<q>/send`` (fsync always)
* ``poll+ack``  messages/s: ``GET poll?limit=10`` then ``POST ack`` of what came back
* ``trivial``   requests/s of a trivial Flask endpoint on the same gunicorn configuration
  (the HTTP ceiling of the machine for this client)
* ``store``     the same send / poll+ack calls on a FileStore in this process, same concurrency

and prints the ratios (send requests/s and poll+ack requests/s against the trivial
requests/s; HTTP against in-process) with p50/p99 request latency. Not a test.

    python bench/http_bench.py [--seconds 5] [--workers 4] [--threads 32] [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

J = {"Content-Type": "application/json"}
PAYLOAD = json.dumps({"body": "x" * 1000})  # ~1 KiB messages


def trivial_server(port: int, workers: int, threads: int) -> None:
    """Child mode: the trivial Flask app on spoolq's gunicorn options."""
    from flask import Flask

    from spoolq.http.gunicorn.server import SpoolqApplication, gunicorn_options
    from spoolq.settings.server import Settings

    app = Flask("trivial")

    @app.post("/hello")
    def hello() -> tuple[bytes, int, dict[str, str]]:
        return b'{"success":true}', 200, {"Content-Type": "application/json"}

    settings = Settings(port=port, workers=workers, threads=threads, node_id="bench")
    SpoolqApplication(settings, gunicorn_options(settings), lambda _settings: app).run()


def wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        if proc.poll() is not None:
            raise RuntimeError("server exited")
        try:
            requests.get(url, timeout=1)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def run(clients: int, seconds: float, make_op: Callable[[], Callable[[], int]]) -> tuple[float, float, float, int]:
    """(operations/s, p50 ms, p99 ms, requests) of ``clients`` threads each calling its op in a loop."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    counts = [0] * clients
    start_gate = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def worker(i: int) -> None:
        op = make_op()
        start_gate.wait()
        lat = latencies[i]
        while time.perf_counter() < stop_at[0]:
            t0 = time.perf_counter()
            counts[i] += op()
            lat.append(time.perf_counter() - t0)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    stop_at[0] = time.perf_counter() + seconds
    start_gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    all_lat = sorted(x for lat in latencies for x in lat)
    if not all_lat:
        return 0.0, 0.0, 0.0, 0
    p50 = statistics.median(all_lat) * 1000
    p99 = all_lat[min(len(all_lat) - 1, int(len(all_lat) * 0.99))] * 1000
    return sum(counts) / elapsed, p50, p99, len(all_lat)


def http_ops(url: str) -> dict[str, Callable[[], Callable[[], int]]]:
    def send() -> Callable[[], int]:
        s = requests.Session()

        def op() -> int:
            r = s.post(f"{url}/queue/1/bench-send/send", data=PAYLOAD, headers=J)
            assert r.status_code == 200, r.text
            return 1
        return op

    def poll_ack() -> Callable[[], int]:
        s = requests.Session()

        def op() -> int:
            got = s.get(f"{url}/queue/1/bench-poll/poll", params={"limit": 10, "ttl": 60}).json()
            if got:
                r = s.post(f"{url}/queue/1/bench-poll/ack", data=json.dumps([m["id"] for m in got]), headers=J)
                assert r.status_code == 200
            return len(got)
        return op

    def trivial() -> Callable[[], int]:
        s = requests.Session()

        def op() -> int:
            s.post(f"{url}/hello", data=PAYLOAD, headers=J)
            return 1
        return op

    return {"send": send, "poll+ack": poll_ack, "trivial": trivial}


def store_ops(store: object) -> dict[str, Callable[[], Callable[[], int]]]:
    from spoolq.store.model import OutgoingMessage, QueueKind

    st: object = store
    body = PAYLOAD.encode()

    def send() -> Callable[[], int]:
        def op() -> int:
            st.send("bench-send", OutgoingMessage(body), create=QueueKind.STANDARD)  # type: ignore[attr-defined]
            return 1
        return op

    def poll_ack() -> Callable[[], int]:
        def op() -> int:
            got = st.poll("bench-poll", limit=10, claim_ttl=60)  # type: ignore[attr-defined]
            if got:
                st.ack("bench-poll", [d.message.id for d in got])  # type: ignore[attr-defined]
            return len(got)
        return op

    return {"send": send, "poll+ack": poll_ack}


def prefill(url: str, n: int) -> None:
    s = requests.Session()
    batch = json.dumps([json.loads(PAYLOAD)] * 500)
    for _ in range(n // 500):
        s.post(f"{url}/queue/1/bench-poll/sendbatch", data=batch, headers=J).raise_for_status()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--root", type=Path, default=None, help="data dir on the disk to measure (default: a temp dir)")
    ap.add_argument("--trivial-server", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trivial_server is not None:
        trivial_server(args.trivial_server, args.workers, args.threads)
        return 0

    from tests.e2e.spoolq_server import free_port

    tmp = Path(tempfile.mkdtemp(prefix="spoolq-bench-"))
    root = args.root or tmp / "http-root"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    procs: list[subprocess.Popen[bytes]] = []
    results: dict[tuple[str, str, int], tuple[float, float, float, int]] = {}
    try:
        tport, sport = free_port(), free_port()
        procs.append(subprocess.Popen([sys.executable, __file__, "--trivial-server", str(tport), "--workers",
                                       str(args.workers), "--threads", str(args.threads)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen([sys.executable, "-m", "spoolq.cli", "serve", "--root", str(root), "--port",
                                       str(sport), "--workers", str(args.workers), "--threads", str(args.threads),
                                       "--fsync", "always"], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        turl, surl = f"http://127.0.0.1:{tport}", f"http://127.0.0.1:{sport}"
        wait_healthy(turl + "/", procs[0])
        wait_healthy(surl + "/healthz", procs[1])
        for clients in (1, 8):
            results[("http", "trivial", clients)] = run(clients, args.seconds, http_ops(turl)["trivial"])
            results[("http", "send", clients)] = run(clients, args.seconds, http_ops(surl)["send"])
            prefill(surl, 20_000 if clients == 1 else 40_000)
            results[("http", "poll+ack", clients)] = run(clients, args.seconds, http_ops(surl)["poll+ack"])
            requests.delete(f"{surl}/queue/1/bench-poll")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)

    from spoolq.store import FileStore

    store = FileStore(tmp / "store-root", node_id="bench", fsync=True)
    try:
        for clients in (1, 8):
            results[("store", "send", clients)] = run(clients, args.seconds, store_ops(store)["send"])
            from spoolq.store.model import OutgoingMessage, QueueKind

            for _ in range(80 if clients == 1 else 160):
                store.send_batch("bench-poll", [OutgoingMessage(PAYLOAD.encode())] * 500, create=QueueKind.STANDARD)
            results[("store", "poll+ack", clients)] = run(clients, args.seconds, store_ops(store)["poll+ack"])
            store.purge("bench-poll")
    finally:
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"spoolq HTTP benchmark: gunicorn gthread {args.workers} workers x {args.threads} threads, "
          f"fsync always, ~1 KiB messages, {args.seconds:g} s per cell, keep-alive requests.Session clients")
    print(f"{'workload':<10}{'clients':>8}{'http ops/s':>12}{'req/s':>9}{'p50 ms':>8}{'p99 ms':>8}"
          f"{'trivial req/s':>15}{'vs trivial':>11}{'store ops/s':>13}{'http/store':>11}")
    for clients in (1, 8):
        triv = results[("http", "trivial", clients)]
        print(f"{'trivial':<10}{clients:>8}{triv[0]:>12.0f}{triv[0]:>9.0f}{triv[1]:>8.2f}{triv[2]:>8.2f}")
        for w in ("send", "poll+ack"):
            ops, p50, p99, nreq = results[("http", w, clients)]
            req_s = nreq / args.seconds * (2 if w == "poll+ack" else 1)
            sto = results[("store", w, clients)][0]
            print(f"{w:<10}{clients:>8}{ops:>12.0f}{req_s:>9.0f}{p50:>8.2f}{p99:>8.2f}{triv[0]:>15.0f}"
                  f"{req_s / triv[0] if triv[0] else 0:>11.2f}{sto:>13.0f}{ops / sto if sto else 0:>11.2f}")
    print("(poll+ack: ops = messages; one op = poll(limit=10) + ack, two requests; its latency is the pair's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
