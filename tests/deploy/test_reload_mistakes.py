"""After a reload refused for a mistake, the service keeps the config it had, also in a worker
that starts later; and a worker that fails to boot outside a reload does not stop the service
(:mod:`spoolq.http.gunicorn.arbiter`)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import requests

from tests.deploy.broken_reloads import GOOD, KEY, Mistakes, _await_refusal, code_copy
from tests.deploy.reload_load import http_workers
from tests.e2e.spoolq_server import Server, running_server
from tests.tls.conftest import make_pki

pytestmark = pytest.mark.slow


def _replaced(server: Server, pid: int, timeout: float = 60.0) -> set[int]:
    """SIGKILL the worker ``pid``; the workers once its replacement has started."""
    before = http_workers(server)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = http_workers(server)
        if pid not in now and now - before:
            return now
        time.sleep(0.1)
    raise AssertionError(f"worker {pid} was not replaced in {timeout} s")


def _ready(server: Server, verify: str, timeout: float = 60.0) -> dict[str, object]:
    """/readyz once a worker answers it (a replacement may still be booting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return dict(requests.get(f"{server.url}/readyz", verify=verify, timeout=30).json())
        except requests.RequestException:
            assert time.monotonic() < deadline
            time.sleep(0.2)


def test_a_worker_started_after_a_refused_reload_serves_the_config_in_force(tmp_path: Path) -> None:
    """A mistake in the config file and a broken certificate on disk, refused by a reload; then the
    only worker dies. Its replacement serves with the identities and the certificate the service
    had, not with the files on disk (which would have failed every key and every handshake)."""
    pki = make_pki(tmp_path / "pki")
    with running_server(tmp_path, keys=False, config_text=GOOD, workers=1, threads=4, tls_ca=pki.ca,
                        extra_args=("--certfile", str(pki.cert), "--keyfile", str(pki.key))) as server:
        assert server.proc is not None and server.config is not None
        verify = str(pki.ca)
        mistakes = Mistakes(server.config, pki.cert, server.config)
        mistakes.make("tls")
        server.config.write_text(GOOD.replace(KEY, "k-other"))  # valid, but not accepted with the bad certificate
        os.kill(server.proc.pid, signal.SIGHUP)
        _await_refusal(server, 1)
        (worker,) = http_workers(server)
        _replaced(server, worker)
        ready = _ready(server, verify)
        assert ready["config"]["reload"] == "failed", ready  # type: ignore[index]
        answer = requests.get(f"{server.url}/queue/1/reload-load/size", headers={"X-BV-API-Key": KEY}, verify=verify,
                              timeout=30)
        assert answer.status_code == 200, answer.text  # the key in force, over the certificate in force
        mistakes.undo()
        server.config.write_text(GOOD.replace(KEY, "k-other"))
        os.kill(server.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + 60
        while _ready(server, verify)["config"]["reload"] != "ok":  # type: ignore[index]
            assert time.monotonic() < deadline, "the good reload did not apply"
            time.sleep(0.2)
        refused = requests.get(f"{server.url}/queue/1/reload-load/size", headers={"X-BV-API-Key": KEY},
                               verify=verify, timeout=30)
        assert refused.status_code == 403  # the good reload put the new key in force


def test_a_worker_that_fails_to_boot_outside_a_reload_does_not_stop_the_service(tmp_path: Path) -> None:
    """New code on disk that does not import, then a worker dies: gunicorn would halt the whole
    service. The other worker keeps serving; once the code is fixed the next try boots."""
    env, app = code_copy(tmp_path)
    with running_server(tmp_path, keys=False, config_text=GOOD, workers=2, threads=4, extra_env=env) as server:
        assert server.proc is not None and server.config is not None
        mistakes = Mistakes(server.config, server.config, app)
        mistakes.make("boot")
        first, second = sorted(http_workers(server))
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while "failed to boot" not in server.log.read_text():
            assert time.monotonic() < deadline, "no worker was started again"
            time.sleep(0.1)
        for _ in range(20):
            answer = requests.get(f"{server.url}/queue/1/reload-load/size", headers={"X-BV-API-Key": KEY}, timeout=30)
            assert answer.status_code == 200
        assert server.proc.poll() is None and http_workers(server) == {second}
        assert "a new worker is started again in 10 s" in server.log.read_text()
        mistakes.undo()
        deadline = time.monotonic() + 60
        steady_since, workers = time.monotonic(), http_workers(server)
        while len(workers) < 2 or time.monotonic() - steady_since < 3:  # a failing boot exits within a second
            assert time.monotonic() < deadline, "no worker booted once the code was fixed"
            time.sleep(0.2)
            now = http_workers(server)
            if now != workers:
                steady_since, workers = time.monotonic(), now
        assert server.proc.poll() is None
