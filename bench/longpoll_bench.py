#!/usr/bin/env python3
"""Long-poll benchmark: thousands of waiting polls on one node, with sends and short polls running.

Starts ``spoolq serve`` (real gunicorn, ``--workers``/``--threads``) on a free 127.0.0.1 port,
opens ``--waiters`` EmoDB long polls (``poll?wait=--wait&limit=1``) at once, then sends
``--messages`` messages to their queue at ``--rate``/s while short polls (``wait=0``) of another
queue run at 40/s, all from one asyncio loop over raw sockets (``tests/e2e/longpoll_load.py``).
The same sends and short polls also run without any waiter first, side by side.
Prints how late the latest long poll ended past its wait, how many messages reached the waiters
(each exactly once is checked), and send / short-poll p50 and p99. Not a test.

    python bench/longpoll_bench.py [--waiters 2000] [--wait 10] [--workers 2] [--threads 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.longpoll_load import parked_polls, run_load
from tests.e2e.spoolq_server import KEY_ALL, running_server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--waiters", type=int, default=2000)
    ap.add_argument("--wait", type=float, default=10.0)
    ap.add_argument("--messages", type=int, default=300)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=16)
    args = ap.parse_args()
    h = {"X-BV-API-Key": KEY_ALL, "Content-Type": "application/json"}
    print(f"workers={args.workers} threads={args.threads}; load average {os.getloadavg()[0]:.2f}")
    for waiters in (0, args.waiters):  # side by side: the same sends and short polls without waiters
        with tempfile.TemporaryDirectory(prefix="spoolq-lp-bench-") as tmp, \
                running_server(Path(tmp), workers=args.workers, threads=args.threads,
                               extra_args=("--access-log",)) as server:
            requests.post(f"{server.url}/queue/1/lp/send", data=json.dumps("warm"), headers=h, timeout=10)
            requests.get(f"{server.url}/queue/1/lp/poll", params={"ttl": 600}, headers=h, timeout=10)
            res = asyncio.run(run_load(server.port, KEY_ALL, waiters=waiters, wait=args.wait,
                                       messages=args.messages, send_rate=args.rate,
                                       parked=lambda: parked_polls(server.url)))
            # the server's own view: its access log times each request from its arrival
            waited = [int(m.group(1)) / 1000 for m in re.finditer(
                r'"GET /queue/1/lp/poll HTTP/1.1" 200 2 (\d+)ms', server.log.read_text())]
        print(res.summary(args.wait))
        if waited:
            print(f"  server: {len(waited)} empty answers, latest {max(waited) - args.wait:+.3f}s past the wait")
        once = sorted(res.delivered) == sorted(res.sent) if waiters else "-"
        print(f"  errors: waiters {len(res.waiter_errors)}, sends/short polls {len(res.short_errors)}; "
              f"each message delivered exactly once to a waiter: {once}; load average {os.getloadavg()[0]:.2f}")

if __name__ == "__main__":
    main()
