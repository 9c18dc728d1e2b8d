"""``kill -HUP`` (what ``systemctl reload`` sends) reloads a running ``spoolq serve`` under load:
new workers, the same sockets, the same Prometheus multiprocess directory, no client error."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import redis
import requests

from tests.e2e.spoolq_server import Server, free_port, running_server


def _metrics_dir(worker_pids: list[int]) -> str:
    """The multiprocess directory the workers write (a file named after each worker's pid)."""
    import glob
    import tempfile

    for base in ("/dev/shm", tempfile.gettempdir()):
        for pid in worker_pids:
            found = glob.glob(f"{base}/spoolq-metrics-*/*_{pid}.db")
            if found:
                return os.path.dirname(found[0])
    raise AssertionError("no metrics directory found")


def _http_workers(server: Server) -> set[int]:
    """The gunicorn workers (the master's children but the Disque listener); a child that exits
    between the listing and the read of its command line is not one of them any more."""
    workers = set()
    for pid in server.worker_pids():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"spoolq.disque" not in cmdline:
            workers.add(pid)
    return workers


def test_hup_reloads_workers_and_keeps_serving(tmp_path: Path) -> None:
    disque_port = free_port()
    with running_server(tmp_path, keys=False, workers=2, threads=8,
                        extra_args=("--disque-port", str(disque_port))) as server:
        assert server.proc is not None
        url, master = server.url, server.proc.pid
        requests.get(f"{url}/healthz", timeout=10)
        metrics_dir = _metrics_dir(list(_http_workers(server)))
        old_workers = _http_workers(server)
        first_workers = set(old_workers)
        errors: list[str] = []
        sent: list[int] = []
        stop = threading.Event()

        def send_and_poll(n: int) -> None:
            with requests.Session() as s:
                i = 0
                while not stop.is_set():
                    try:
                        r = s.post(f"{url}/queue/1/hup-{n}/send", json={"i": i}, timeout=30)
                        if r.status_code != 200:
                            errors.append(f"send {r.status_code}")
                        else:
                            sent.append(i)
                        p = s.get(f"{url}/queue/1/hup-{n}/poll?ttl=30&limit=5&wait=0.2", timeout=30)
                        if p.status_code != 200:
                            errors.append(f"poll {p.status_code}")
                    except requests.RequestException as e:
                        errors.append(f"{type(e).__name__}: {e}")
                    i += 1

        threads = [threading.Thread(target=send_and_poll, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(1.0)
            for _ in range(2):
                os.kill(master, signal.SIGHUP)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    now = _http_workers(server)
                    if len([p for p in now if p not in old_workers]) >= 2:
                        break
                    time.sleep(0.1)
                time.sleep(1.5)
                old_workers |= _http_workers(server)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        assert server.proc.poll() is None, "the master exited on HUP"
        assert not errors, errors[:5]
        assert len(sent) > 20
        assert os.path.isdir(metrics_dir), "the metrics directory was removed by a reload"
        new_workers = _http_workers(server)
        assert new_workers and not new_workers & first_workers, "HUP did not replace the workers"
        r = requests.get(f"{url}/metrics", timeout=10)
        assert r.status_code == 200 and "spoolq_http_requests_total" in r.text
        assert requests.get(f"{url}/healthz", timeout=10).status_code == 200
        with redis.Redis(host="127.0.0.1", port=disque_port, protocol=2, socket_timeout=10) as disque:
            assert disque.execute_command("ADDJOB", "hup", "job", 0)
        log = (tmp_path / "server.log").read_text()
        assert "Worker failed to boot" not in log and "No such file or directory" not in log
    assert not os.path.exists(metrics_dir), "the metrics directory outlived the service"


def test_a_stop_answers_blocked_getjobs_and_waiting_long_polls(tmp_path: Path) -> None:
    """SIGTERM: a blocked GETJOB gets a null reply (as at its timeout) and a parked long poll its
    empty answer, before their connections close, so clients ask again instead of failing."""
    import socket

    disque_port = free_port()
    with running_server(tmp_path, keys=False, workers=1, threads=4,
                        extra_args=("--disque-port", str(disque_port))) as server:
        assert server.proc is not None
        blocked = socket.create_connection(("127.0.0.1", disque_port), timeout=30)
        blocked.sendall(b"*4\r\n$6\r\nGETJOB\r\n$4\r\nFROM\r\n$2\r\nq1\r\n$2\r\nq2\r\n")
        poll = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        poll.sendall(b"GET /queue/1/stop-q/poll?wait=20 HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(1.5)  # both are waiting now
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        disque_reply = b""
        while not disque_reply.endswith(b"\r\n"):
            chunk = blocked.recv(100)
            if not chunk:
                break
            disque_reply += chunk
        http_reply = b""
        while b"\r\n\r\n" not in http_reply or not http_reply.rstrip().endswith(b"]"):
            chunk = poll.recv(4096)
            if not chunk:
                break
            http_reply += chunk
        took = time.monotonic() - started
        server.proc.wait(timeout=60)
        server.proc = None
    assert disque_reply == b"*-1\r\n", disque_reply
    assert http_reply.startswith(b"HTTP/1.1 200") and http_reply.rstrip().endswith(b"[]"), http_reply
    assert took < 10, took
