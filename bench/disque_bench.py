#!/usr/bin/env python3
"""Disque door benchmark: pipelined ADDJOB and GETJOB+ACKJOB against the HTTP door and Redis.

Side by side in one run, at 1 and 8 concurrent connections, 16 jobs per round trip, ~100-byte
bodies, for ``--seconds`` each:

* ``disque``  spoolq's Disque door: a pipeline of 16 ``ADDJOB``; ``GETJOB COUNT 16`` then one
  ``ACKJOB`` of what came back
* ``http``    the EmoDB door on the same store: ``sendbatch`` of 16; ``poll?limit=16`` then ``ack``
* ``redis``   Redis 7 with ``appendonly yes`` / ``appendfsync always`` (Debian's redis-server,
  started here on a free port in a temp dir): a pipeline of 16 ``LPUSH``; a pipeline of 16
  ``BLMOVE q processing RIGHT LEFT`` then 16 ``LREM processing`` (the reliable-queue pattern)

Every spoolq send is durable before its reply (group commit), as every Redis write is with
appendfsync always. Prints jobs/s per case and the ratios. Not a test.

    python bench/disque_bench.py [--seconds 5] [--root DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import redis
import requests

CHECKOUT = Path(__file__).resolve().parents[1]
BODY = "x" * 100
BATCH = 16


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listening on {port}")


@contextlib.contextmanager
def spoolq(root: Path) -> Iterator[tuple[int, int]]:
    http, dq = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    proc = subprocess.Popen([sys.executable, "-m", "spoolq.cli", "serve", "--root", str(root), "--port", str(http),
                             "--disque-port", str(dq), "--workers", "2", "--node-id", "bench"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        wait_port(dq)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"http://127.0.0.1:{http}/healthz", timeout=1).ok:
                    break
            time.sleep(0.1)
        yield http, dq
    finally:
        proc.terminate()
        proc.wait(30)


@contextlib.contextmanager
def redis_server(tmp: Path) -> Iterator[int | None]:
    if shutil.which("redis-server") is None and subprocess.run([str(CHECKOUT / "scripts/system-deps"), "redis"]).returncode:
        print("redis-server missing and scripts/system-deps redis could not install it: skipping Redis")
        yield None
        return
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp),
                             "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                             "--protected-mode", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        yield port
    finally:
        proc.terminate()
        proc.wait(30)


def run(conc: int, seconds: float, setup: Callable[[], object], step: Callable[[object], int]) -> float:
    """Jobs/s of ``conc`` threads each looping ``step(state)`` (returns jobs done) for ``seconds``."""
    counts = [0] * conc
    start = threading.Barrier(conc + 1)
    stop = threading.Event()

    def worker(i: int) -> None:
        state = setup()
        start.wait()
        while not stop.is_set():
            counts[i] += step(state)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(conc)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.monotonic()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - t0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--root", type=Path, help="directory for the store and Redis (default: a temp dir in the checkout)")
    a = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="disque-bench-", dir=a.root or CHECKOUT))
    results: dict[tuple[str, str, int], float] = {}
    try:
        with spoolq(tmp / "root") as (http, dq), redis_server(tmp) as rport:
            def rc(port: int) -> Callable[[], object]:
                return lambda: redis.Redis(port=port, protocol=2)

            def dq_add(c: object) -> int:
                pipe = c.pipeline(transaction=False)  # type: ignore[attr-defined]
                for _ in range(BATCH):
                    pipe.execute_command("ADDJOB", "bench", BODY, 0)
                return len(pipe.execute())

            def dq_get(c: object) -> int:
                rows = c.execute_command("GETJOB", "NOHANG", "COUNT", BATCH, "FROM", "bench")  # type: ignore[attr-defined]
                if not rows:
                    return 0
                c.execute_command("ACKJOB", *[row[1] for row in rows])  # type: ignore[attr-defined]
                return len(rows)

            url = f"http://127.0.0.1:{http}/queue/1/bench-http"

            def http_add(s: object) -> int:
                r = s.post(url + "/sendbatch", json=[BODY] * BATCH, timeout=30)  # type: ignore[attr-defined]
                r.raise_for_status()
                return BATCH

            def http_get(s: object) -> int:
                msgs = s.get(url + "/poll", params={"limit": BATCH, "ttl": 30}, timeout=30).json()  # type: ignore[attr-defined]
                if not msgs:
                    return 0
                s.post(url + "/ack", json=[m["id"] for m in msgs], timeout=30).raise_for_status()  # type: ignore[attr-defined]
                return len(msgs)

            def redis_add(c: object) -> int:
                pipe = c.pipeline(transaction=False)  # type: ignore[attr-defined]
                for _ in range(BATCH):
                    pipe.lpush("bench", BODY)
                return len(pipe.execute())

            def redis_get(c: object) -> int:
                pipe = c.pipeline(transaction=False)  # type: ignore[attr-defined]
                for _ in range(BATCH):
                    pipe.execute_command("BLMOVE", "bench", "processing", "RIGHT", "LEFT", "0.01")
                got = [v for v in pipe.execute() if v is not None]
                if got:
                    pipe = c.pipeline(transaction=False)  # type: ignore[attr-defined]
                    for v in got:
                        pipe.lrem("processing", 1, v)
                    pipe.execute()
                return len(got)

            cases: list[tuple[str, Callable[[], object], Callable[[object], int], Callable[[object], int]]] = [
                ("disque", rc(dq), dq_add, dq_get), ("http", requests.Session, http_add, http_get)]
            if rport is not None:
                cases.append(("redis", rc(rport), redis_add, redis_get))
            for conc in (1, 8):
                for name, setup, add, get in cases:
                    results[(name, "add", conc)] = run(conc, a.seconds, setup, add)
                    results[(name, "get+ack", conc)] = run(conc, a.seconds, setup, get)
                    print(f"{name:7s} conc={conc}  add {results[(name, 'add', conc)]:9.0f} jobs/s   "
                          f"get+ack {results[(name, 'get+ack', conc)]:9.0f} jobs/s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nload: {os.getloadavg()[0]:.1f} (1-min average), {os.cpu_count()} CPUs")
    print("| op | conns | Disque door | HTTP door | Redis 7 (fsync always) | Disque/HTTP | Disque/Redis |")
    print("|---|---|---|---|---|---|---|")
    for op in ("add", "get+ack"):
        for conc in (1, 8):
            d, h = results[("disque", op, conc)], results[("http", op, conc)]
            rr = results.get(("redis", op, conc))
            print(f"| {op} | {conc} | {d:.0f} | {h:.0f} | {f'{rr:.0f}' if rr else '-'} | {d / h:.2f} | "
                  f"{f'{d / rr:.2f}' if rr else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
