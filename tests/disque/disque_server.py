"""Start and stop ``spoolq serve --disque-port`` (gunicorn + the Disque listener) on free 127.0.0.1 ports."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
import requests
from prometheus_client.parser import text_string_to_metric_families

from spoolq.observability.metrics import PUBLISH_INTERVAL
from tests.conftest import tree
from tests.e2e.spoolq_server import free_port


def stored(root: Path) -> dict[str, int]:
    """What a rejected command must leave unchanged: every file outside ``trash/`` and ``tmp/``
    and every queue directory. Left out because the server changes them on its own while these
    module-scoped tests run: acks of earlier tests unlinked from ``trash/`` in the background,
    and empty bucket directories that maintenance removes."""
    return {k: v for k, v in tree(root).items()
            if not k.startswith(("trash/", "tmp/")) and (v != -1 or k.count("/") <= 1)}


def client(port: int, **kw: object) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, protocol=2, socket_timeout=30, **kw)  # type: ignore[arg-type]


Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(server: DisqueServer) -> Samples:
    r = requests.get(server.url + "/metrics", timeout=10)
    assert r.status_code == 200
    out: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def scrape_settled(server: DisqueServer, timeout: float = 15.0) -> Samples:
    """A scrape once every process has published what it counted: each process adds up its counts
    and publishes them every ``PUBLISH_INTERVAL`` seconds, so two scrapes that far apart agree
    once the traffic before them is all in."""
    deadline = time.monotonic() + timeout
    last = scrape(server)
    while True:
        time.sleep(PUBLISH_INTERVAL + 0.3)
        now = scrape(server)
        if _traffic(now) == _traffic(last) or time.monotonic() > deadline:
            return now
        last = now


def _traffic(samples: Samples) -> Samples:
    """What the traffic under test moves: not the scrapes themselves (each one counts as a request
    of the ``metrics`` operation) and not the file system's free space, which other processes
    change."""
    return {name: [(labels, v) for labels, v in values if labels.get("operation") != "metrics"]
            for name, values in samples.items() if not name.startswith("spoolq_store_free_")}


def value(samples: Samples, metric: str, **labels: str) -> float:
    return sum(v for lab, v in samples.get(metric, []) if all(lab.get(k) == x for k, x in labels.items()))


def delta(before: Samples, after: Samples, metric: str, **labels: str) -> float:
    return value(after, metric, **labels) - value(before, metric, **labels)


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


@dataclass
class DisqueServer:
    root: Path
    log: Path
    config: Path | None = None
    port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def client(self, **kw: object) -> redis.Redis:
        return client(self.port, **kw)

    def start(self, timeout: float = 30.0) -> None:
        cmd = [sys.executable, "-m", "spoolq.cli", "serve", "--root", str(self.root), "--port", str(self.http_port),
               "--workers", "1", "--threads", "8", "--node-id", "disque-test", "--disque-port", str(self.port)]
        if self.config is not None:
            cmd += ["--config", str(self.config)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_") and k != "PROMETHEUS_MULTIPROC_DIR"}
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"spoolq serve exited with {self.proc.returncode}; log: {self.log.read_text()}")
            with contextlib.suppress(OSError, requests.RequestException), \
                    socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                if s.recv(16).startswith(b"+PONG") and requests.get(self.url + "/healthz", timeout=max(1.0, deadline - time.monotonic())).status_code == 200:
                    return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("spoolq serve --disque-port did not come up in time")

    def pids(self) -> list[int]:
        assert self.proc is not None
        return [self.proc.pid, *children(self.proc.pid)]

    def kill9(self) -> None:
        assert self.proc is not None
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._wait_gone(pids)
        self.proc = None

    @staticmethod
    def _wait_gone(pids: list[int]) -> None:
        for pid in pids:
            for _ in range(200):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is None:
            return
        pids = self.pids()
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self._wait_gone(pids)
        self.proc = None
