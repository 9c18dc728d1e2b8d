"""Connections that cost nothing until they speak: idle and slowloris clients do not starve the port.

A real ``spoolq serve`` with its default workers and threads (4 x 32) and default limits. Another
process (:mod:`tests.hostile.attackers`) holds 2,000 idle TCP connections (they never send a byte)
and 500 slowloris connections (a request head that grows by one byte a second and never ends)
open, opening a connection again as soon as the server closes one. Meanwhile a normal client, on
a new connection each time, sends a message and polls it, once a second: every send and every
poll must be answered within 1 s, every second of the run. Before the worker read request heads
in its event loop under a deadline, 2,000 idle connections stopped sends for over a minute and
128 slowloris connections stopped every request for good.

The run lasts ``SPOOLQ_HOSTILE_SECONDS`` (12 s by default; the goal's 60 s by hand).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
import urllib3

from tests.e2e.spoolq_server import running_server

SECONDS = float(os.environ.get("SPOOLQ_HOSTILE_SECONDS", "12"))
IDLE, SLOWLORIS = 2000, 500
#: the goal: each send and each poll answered within this, every second
WITHIN = 1.0
CHECKOUT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.hostile, pytest.mark.timeout(120 + 2 * SECONDS)]


def _raise_open_files(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"the hard limit on open files is {hard}; this probe needs {need}")
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


#: the normal client's own source address: the attackers' 30,000 connections a minute from 127.0.0.1
#: leave the server's side in TIME_WAIT, and a new connection that reused one of those port pairs
#: waited a second for its SYN to be sent again (a loopback artefact, not the server's doing)
CLIENT_ADDRESS = ("127.0.0.2", 0)


def _probe(url: str, n: int) -> tuple[float, float, str]:
    """A send and a poll, each on a new connection: (send seconds, poll seconds, what went wrong)."""
    http = urllib3.PoolManager(source_address=CLIENT_ADDRESS, retries=False,
                               timeout=urllib3.Timeout(connect=5, read=5))
    close = {"Connection": "close", "Content-Type": "application/json"}
    t0 = time.monotonic()
    try:
        r = http.request("POST", f"{url}/queue/1/probe/send", body=json.dumps({"n": n}), headers=close)
        sent = time.monotonic() - t0
        if r.status != 200:
            return sent, 0.0, f"send {r.status}: {r.data[:200]!r}"
        t1 = time.monotonic()
        r = http.request("GET", f"{url}/queue/1/probe/poll?limit=1&ttl=600", headers=close)
        polled = time.monotonic() - t1
        if r.status != 200 or not json.loads(r.data):
            return sent, polled, f"poll {r.status}: {r.data[:200]!r}"
    except urllib3.exceptions.HTTPError as e:
        return time.monotonic() - t0, 0.0, f"{type(e).__name__}: {e}"
    finally:
        http.clear()
    return sent, polled, ""


def _rss_mib(pids: list[int]) -> float:
    """The resident memory of these processes, in MiB."""
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def _metric(text: str, name: str) -> float:
    return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def test_idle_and_slowloris_connections_leave_sends_and_polls_fast(tmp_path: Path) -> None:
    _raise_open_files(IDLE + SLOWLORIS + 500)
    with running_server(tmp_path, keys=False, workers=4, threads=32) as server:
        assert not _probe(server.url, -1)[2]  # the store is made and warm before memory is measured
        workers = server.worker_pids()
        rss_before = _rss_mib(workers)
        attackers = subprocess.Popen(
            [sys.executable, "-m", "tests.hostile.attackers", "--port", str(server.port), "--idle", str(IDLE),
             "--slowloris", str(SLOWLORIS), "--seconds", str(SECONDS + 30)],
            cwd=CHECKOUT, stdout=subprocess.PIPE, text=True)
        try:
            assert attackers.stdout is not None
            assert attackers.stdout.readline().strip() == "holding"  # every attacker is connected
            # one probe a second, each on a thread of its own: a probe that hangs does not delay the next
            with ThreadPoolExecutor(max_workers=int(SECONDS)) as pool:
                start = time.monotonic()
                pending = []
                for n in range(int(SECONDS)):
                    time.sleep(max(0.0, start + n - time.monotonic()))
                    pending.append(pool.submit(_probe, server.url, n))
                probes = [f.result() for f in pending]
            rss_after = _rss_mib(workers)
            attackers.terminate()
            out, _ = attackers.communicate(timeout=30)
        finally:
            if attackers.poll() is None:
                attackers.kill()
                attackers.wait()
        held = json.loads(out.strip().splitlines()[-1])
        print(f"\nattackers: {held}; workers' memory {rss_before:.0f} MiB, then {rss_after:.0f} MiB")
        print("send s:", " ".join(f"{s:.2f}" for s, _p, _e in probes))
        print("poll s:", " ".join(f"{p:.2f}" for _s, p, _e in probes))
        failed = [(n, e) for n, (_s, _p, e) in enumerate(probes) if e]
        assert not failed, failed[:5]
        slow = [(n, round(s, 2), round(p, 2)) for n, (s, p, _e) in enumerate(probes) if s > WITHIN or p > WITHIN]
        assert not slow, f"(second, send s, poll s) over {WITHIN}s: {slow}"
        # the attack was real: the connections were held open (reopened as the server closed them)
        assert held["open_mean"] >= 0.9 * (IDLE + SLOWLORIS), held
        metrics = requests.get(f"{server.url}/metrics", timeout=(5, 5)).text
        assert _metric(metrics, "spoolq_http_connections_timed_out_total") > 0
        assert "Traceback" not in server.log.read_text()
        assert rss_after < rss_before + 25 * len(workers), (rss_before, rss_after)  # flat: no growth per connection
