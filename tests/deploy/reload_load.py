"""Reloads and stops of a real ``spoolq serve`` under load, on a machine whose cores are kept busy.

An orchestrator reloads (``kill -HUP``) or stops (``kill -TERM``) a service whenever it must,
busy machine or not. Every request made meanwhile must be answered promptly and nothing
acknowledged may be lost. The harness:

* keeps every core busy with as many spinning processes (:func:`busy_cores`), so that new
  workers boot, and old ones drain, on a machine with no idle CPU;
* runs EmoDB senders that open a new connection for every send (as ``curl`` does) and senders
  that keep one alive (as ``requests.Session`` and the SDKs do), each send with a unique body
  and a client timeout far above the limit, so that a slow answer is measured, not cut off;
* runs pollers that long-poll (``wait=1``) and acknowledge what they got;
* sends ``SIGHUP`` ``rounds`` times, each time waiting until every worker has been replaced.

*slow* counts requests answered after :data:`SLOW_SECONDS` or not at all, *lost* the
acknowledged sends never received (the pollers drain the queue at the end), *errors* any
other failure a client saw.

``python -m tests.deploy.reload_load --rounds 20`` prints the figures (``--stop`` for a
graceful stop under the same load instead, then a new server on the same root).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.e2e.spoolq_server import Server, running_server

#: an answer later than this counts as slow (well under a client's usual 10 s timeout)
SLOW_SECONDS = 5.0
#: client timeout: long enough to measure how late a late answer is
CLIENT_TIMEOUT = 30.0
QUEUE = "reload-load"
CHECKOUT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def busy_cores(count: int | None = None) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` processes (default: one per core) that spin until the block ends."""
    n = count if count is not None else (os.cpu_count() or 1)
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def hammer(attempt: Callable[[], str], clients: int) -> tuple[Callable[[], None], Counter[str]]:
    """``clients`` threads calling ``attempt`` (one request through a new connection, as ``curl``
    makes it, and its outcome: ``ok``, ``refused`` or what went wrong) until stopped; what stops
    them and their outcomes so far. A refused attempt is tried again 10 ms later."""
    outcomes: Counter[str] = Counter()
    lock, running = threading.Lock(), threading.Event()
    running.set()

    def client() -> None:
        while running.is_set():
            outcome = attempt()
            with lock:
                outcomes[outcome] += 1
            if outcome == "refused":
                time.sleep(0.01)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()

    def stop() -> None:
        running.clear()
        for t in threads:
            t.join(timeout=60)

    return stop, outcomes


@dataclass
class Figures:
    sent: set[str] = field(default_factory=set)
    received: set[str] = field(default_factory=set)
    latencies: list[float] = field(default_factory=list)
    slow: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    refused: int = 0  # connections refused while no server listened (a plain stop and start)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def request(self, what: str, started: float, failure: str | None, allowance: float = 0.0) -> None:
        """Count one request; ``allowance`` is the part of its time it asked to wait (a long poll)."""
        took = max(0.0, time.monotonic() - started - allowance)
        with self.lock:
            self.latencies.append(took)
            if took > SLOW_SECONDS or (failure is not None and "Timeout" in failure):
                self.slow.append(f"{what} {took:.1f}s {failure or ''}".strip())
            elif failure is not None and "Connection refused" in failure:
                self.refused += 1
            elif failure is not None:
                self.errors.append(f"{what}: {failure}")

    def summary(self) -> dict[str, float | int]:
        with self.lock:
            ordered = sorted(self.latencies)
            return {"requests": len(ordered), "sent": len(self.sent),
                    "lost": len(self.sent - self.received), "slow": len(self.slow),
                    "errors": len(self.errors), "refused": self.refused,
                    "max_seconds": round(ordered[-1], 2) if ordered else 0.0,
                    "p99_seconds": round(ordered[int(len(ordered) * 0.99)], 2) if ordered else 0.0}


class Load:
    """Senders and pollers against ``url`` until :meth:`stop`."""

    def __init__(self, url: str, figures: Figures, *, fresh_senders: int = 2, session_senders: int = 2,
                 pollers: int = 2, headers: dict[str, str] | None = None, verify: str | bool = True) -> None:
        self.url, self.figures, self.headers = url, figures, headers or {}
        self.verify = verify  # the CA to trust over HTTPS
        self.sending = threading.Event()
        self.polling = threading.Event()
        self.threads: list[tuple[threading.Thread, bool]] = []
        self.plan = [(self._send, False)] * fresh_senders + [(self._send, True)] * session_senders
        self.plan += [(self._poll, True)] * pollers

    def start(self) -> Load:
        self.sending.set()
        self.polling.set()
        for target, keep_alive in self.plan:
            t = threading.Thread(target=target, args=(keep_alive,), daemon=True)
            t.start()
            self.threads.append((t, target == self._send))
        return self

    def _client(self, keep_alive: bool) -> requests.Session | None:
        return requests.Session() if keep_alive else None

    def _send(self, keep_alive: bool) -> None:
        session = self._client(keep_alive)
        post = session.post if session is not None else requests.post
        while self.sending.is_set():
            body = uuid.uuid4().hex
            started = time.monotonic()
            try:
                r = post(f"{self.url}/queue/1/{QUEUE}/send", json=body, headers=self.headers, timeout=CLIENT_TIMEOUT,
                         verify=self.verify)
                failure = None if r.status_code == 200 else f"HTTP {r.status_code}"
            except requests.RequestException as e:
                failure = f"{type(e).__name__}: {e}"
            self.figures.request("send", started, failure)
            if failure is None:
                with self.figures.lock:
                    self.figures.sent.add(body)
            time.sleep(0.01)

    def _poll(self, keep_alive: bool) -> None:
        session = requests.Session()
        while self.polling.is_set():
            started = time.monotonic()
            try:
                r = session.get(f"{self.url}/queue/1/{QUEUE}/poll?ttl=10&limit=20&wait=1", headers=self.headers,
                                timeout=CLIENT_TIMEOUT, verify=self.verify)
                failure = None if r.status_code == 200 else f"HTTP {r.status_code}"
                got = r.json() if failure is None else []
            except (requests.RequestException, ValueError) as e:
                failure, got = f"{type(e).__name__}: {e}", []
            self.figures.request("poll", started, failure, allowance=1.0)
            if not got:
                continue
            with self.figures.lock:
                self.figures.received.update(m["payload"] for m in got)
            started = time.monotonic()
            try:
                a = session.post(f"{self.url}/queue/1/{QUEUE}/ack", json=[m["id"] for m in got], headers=self.headers,
                                 timeout=CLIENT_TIMEOUT, verify=self.verify)
                failure = None if a.status_code == 200 else f"HTTP {a.status_code}"
            except requests.RequestException as e:
                failure = f"{type(e).__name__}: {e}"
            self.figures.request("ack", started, failure)

    def stop_sending(self) -> None:
        self.sending.clear()
        for t, is_sender in self.threads:
            if is_sender:
                t.join(timeout=CLIENT_TIMEOUT + 10)

    def drain(self, timeout: float = 60.0) -> None:
        """Let the pollers run until every acknowledged send was received (or ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.figures.lock:
                if not self.figures.sent - self.figures.received:
                    break
            time.sleep(0.2)
        self.polling.clear()
        for t, _ in self.threads:
            t.join(timeout=CLIENT_TIMEOUT + 10)


def http_workers(server: Server) -> set[int]:
    """The gunicorn workers of ``server`` (the master's children but the Disque listener)."""
    out = set()
    for pid in server.worker_pids():
        with contextlib.suppress(OSError):
            if b"spoolq.disque" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.add(pid)
    return out


def reload_and_wait(server: Server, workers: int, timeout: float = 120.0) -> None:
    """``kill -HUP`` the master, then wait until none of the workers it had is left."""
    assert server.proc is not None
    old = http_workers(server)
    os.kill(server.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = http_workers(server)
        if not now & old and len(now) >= workers:
            return
        time.sleep(0.1)
    raise AssertionError(f"workers {sorted(old & http_workers(server))} still run {timeout} s after SIGHUP")


def slow_booting_code(workdir: Path, seconds: float) -> dict[str, str]:
    """A copy of the service whose workers take ``seconds`` longer to build the app (as on a
    machine where importing is slow: a cold page cache, a busy disk); the environment that
    runs it."""
    code = workdir / "code"
    shutil.copytree(CHECKOUT / "service" / "spoolq", code / "spoolq", ignore=shutil.ignore_patterns("__pycache__"))
    app = code / "spoolq" / "http" / "app.py"
    app.write_text(app.read_text() + f"\nimport time as _t\n\n_t.sleep({seconds})\n")
    return {"PYTHONPATH": f"{code}{os.pathsep}{CHECKOUT}"}


def run_reloads(workdir: Path, rounds: int, *, workers: int = 2, threads: int = 8,
                slow_boot: float = 0.0) -> dict[str, float | int]:
    """``rounds`` reloads under load with every core kept busy (and workers that take
    ``slow_boot`` seconds longer to boot); the clients' figures."""
    figures = Figures()
    env = slow_booting_code(workdir, slow_boot) if slow_boot else {}
    with running_server(workdir, keys=False, workers=workers, threads=threads, extra_env=env) as server, \
            busy_cores():
        load = Load(server.url, figures).start()
        try:
            time.sleep(1.0)
            for _ in range(rounds):
                reload_and_wait(server, workers)
                time.sleep(0.5)
        finally:
            load.stop_sending()
            load.drain()
    return _report(figures, rounds)


def run_stop(workdir: Path, *, workers: int = 2, threads: int = 8, seconds: float = 3.0) -> dict[str, float | int]:
    """Load, a graceful stop (SIGTERM) of the server under it with every core kept busy, then a new
    server on the same root and port that the load carries on against; the clients' figures.

    Requests the stopping server refuses or drops are *errors* (a client retries them); a request
    that waits beyond :data:`SLOW_SECONDS` is *slow*; an acknowledged send the new server does not
    deliver is *lost*."""
    figures = Figures()
    with running_server(workdir, keys=False, workers=workers, threads=threads) as server, busy_cores():
        load = Load(server.url, figures).start()
        try:
            time.sleep(seconds)
            server.stop()  # SIGTERM, then waits for the master to exit
            server.start()
            time.sleep(seconds)
        finally:
            load.stop_sending()
            load.drain()
    return _report(figures, 1)


def _report(figures: Figures, rounds: int) -> dict[str, float | int]:
    out = figures.summary()
    out["rounds"] = rounds
    for line in figures.slow[:5] + figures.errors[:5]:
        print(line, file=sys.stderr)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--stop", action="store_true", help="a graceful stop and a new server instead of reloads")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="spoolq-reload-") as tmp:
        figures = run_stop(Path(tmp)) if a.stop else run_reloads(Path(tmp), a.rounds)
    print(json.dumps(figures))
    return 1 if figures["lost"] or figures["slow"] else 0


if __name__ == "__main__":
    sys.exit(main())
