"""Start and stop a real ``spoolq serve`` (gunicorn) on a free 127.0.0.1 port for end-to-end tests."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import requests

#: Keys of the test config: K may do everything, N nothing, P only post/poll/get_status on "p-*".
KEY_ALL = "test-key-all"
KEY_NONE = "test-key-none"
KEY_PREFIX = "test-key-prefix"

CONFIG = f"""
api_keys:
  - name: all
    key: {KEY_ALL}
    permissions: ["queue|*|*"]
  - name: none
    key: {KEY_NONE}
    permissions: []
  - name: prefix
    key: {KEY_PREFIX}
    permissions: ["queue|post,poll,get_status|p-*"]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    root: Path
    port: int
    config: Path | None
    workers: int = 2
    threads: int = 16
    proc: subprocess.Popen[bytes] | None = None
    log: Path = field(default_factory=lambda: Path(os.devnull))
    node_id: str = "e2e"
    #: more ``spoolq serve`` flags, e.g. ``("--flush", "fsync", "--peers", "2")``
    extra_args: tuple[str, ...] = ()
    #: more environment for the server, e.g. ``{"PYTHONPATH": ...}``
    extra_env: dict[str, str] = field(default_factory=dict)
    #: the CA that signed the server's certificate, when it serves HTTPS (``--certfile`` in extra_args)
    tls_ca: Path | None = None
    #: a client certificate and its key in one PEM file, for a server that asks for one (``--client-ca``)
    tls_client: Path | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls_ca else 'http'}://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        cmd = [sys.executable, "-m", "spoolq.cli", "serve", "--root", str(self.root), "--port", str(self.port),
               "--workers", str(self.workers), "--threads", str(self.threads), "--node-id", self.node_id]
        if self.config is not None:
            cmd += ["--config", str(self.config)]
        cmd += list(self.extra_args)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_") and k != "PROMETHEUS_MULTIPROC_DIR"}
        env.update(self.extra_env)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"spoolq serve exited with {self.proc.returncode}; log: {self.log}")
            # no short client timeout: an abandoned probe would still be answered by a worker that
            # finished booting later, and its probe file in tmp/ would show up in the tests'
            # "nothing changed" snapshots
            with contextlib.suppress(requests.RequestException):
                if requests.get(self.url + "/healthz", timeout=max(1.0, deadline - time.monotonic()),
                                verify=str(self.tls_ca) if self.tls_ca else True,
                                cert=str(self.tls_client) if self.tls_client else None).status_code == 200:
                    return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("spoolq serve did not become healthy in time")

    def worker_pids(self) -> list[int]:
        assert self.proc is not None
        children = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == self.proc.pid:  # field 4: the parent pid
                children.append(int(entry))
        return children

    def kill9(self) -> None:
        """SIGKILL the master and every worker at once (no graceful anything)."""
        assert self.proc is not None
        pids = [self.proc.pid, *self.worker_pids()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        for pid in pids:  # workers are reparented; make sure they are gone
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        try:  # past gunicorn's graceful timeout (30 s): a stop never turns into a kill mid-request
            self.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None


def metric(url: str, name: str, *, missing: float | None = None, **labels: str) -> float:
    """The sum of ``name``'s samples with exactly ``labels`` in ``url``'s ``/metrics``; ``missing``
    when there is none (without it, a missing sample fails the test)."""
    text = requests.get(f"{url}/metrics", timeout=30).text
    want = "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else ""
    found = [float(m.group(1)) for m in re.finditer(rf"^{re.escape(name + want)} (\S+)$", text, re.M)]
    if not found and missing is not None:
        return missing
    assert found, f"{name}{want} missing from /metrics"
    return sum(found)


@contextlib.contextmanager
def running_server(tmp: Path, *, keys: bool = True, workers: int = 2, threads: int = 16,
                   config_text: str | None = None, extra_args: tuple[str, ...] = (),
                   extra_env: dict[str, str] | None = None, tls_ca: Path | None = None,
                   tls_client: Path | None = None) -> Iterator[Server]:
    config = None
    if keys or config_text is not None:
        config = tmp / "spoolq.yaml"
        config.write_text(CONFIG if config_text is None else config_text)
    server = Server(root=tmp / "root", port=free_port(), config=config, workers=workers, threads=threads,
                    log=tmp / "server.log", extra_args=extra_args, extra_env=extra_env or {}, tls_ca=tls_ca,
                    tls_client=tls_client)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def tree(root: Path) -> list[str]:
    """Every path under ``root`` (relative), for "nothing changed" assertions."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(out)
