"""``deploy/Containerfile`` built with podman on a Debian base made here, and run with a volume and
a config file (:mod:`tests.container.podman`). From outside: boto3 sends and receives, EmoDB
send/poll/ack, ``/readyz``, the console, ``podman exec ... spoolq queues``, the service runs as the
unprivileged ``spoolq`` user, and a graceful ``podman stop`` under load loses no acknowledged send
(a new container on the same volume delivers every one). The image, built as the docs say, keeps
its health check; a host directory uid 10001 cannot write is refused with the uid and the fixes."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
import requests

from tests.container import podman as P
from tests.deploy.reload_load import Figures, Load, busy_cores
from tests.e2e.spoolq_server import free_port

pytestmark = pytest.mark.container

API_KEY = "k-container"
ACCESS_KEY, SECRET = "AKIDCONTAINER01", "container-secret"
CONFIG = f"""
api_keys:
  - name: all
    key: {API_KEY}
    sqs_credentials: [{{access_key_id: {ACCESS_KEY}, secret_access_key: {SECRET}}}]
    permissions: ["queue|*|*"]
"""
HEADERS = {"X-BV-API-Key": API_KEY}


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    reason = P.unavailable()
    if reason is not None:
        pytest.skip(reason)
    base = P.base_image()
    error = P.cannot_run(base)
    if error is not None:
        pytest.skip(f"podman cannot run a container here: {error}")
    tag = f"localhost/spoolq-test:{uuid.uuid4().hex[:8]}"
    P.build_image(P.build_context(tmp_path_factory.mktemp("context")), base, tag)
    try:
        yield tag
    finally:
        P.podman("rmi", "-f", tag, check=False)


@dataclass
class Running:
    name: str
    url: str


@pytest.fixture
def volume() -> Iterator[str]:
    name = f"spoolq-test-{uuid.uuid4().hex[:8]}"
    P.podman("volume", "create", name)
    try:
        yield name
    finally:
        P.podman("volume", "rm", "-f", name, check=False)


@pytest.fixture
def start(image: str, volume: str, tmp_path: Path) -> Iterator[object]:
    """Start a container of the image on ``volume`` (and the same published port each time)."""
    config = tmp_path / "spoolq.yaml"
    config.write_text(CONFIG)
    config.chmod(0o644)
    port = free_port()
    names: list[str] = []

    def run(*args: str, mounts: tuple[str, ...] = (), ca: Path | None = None) -> Running:
        """A container; ``args`` replace the image's CMD, ``mounts`` are more ``-v`` values, ``ca``
        (when it serves HTTPS) is what the client trusts."""
        name = f"spoolq-test-{uuid.uuid4().hex[:8]}"
        names.append(name)
        volumes = [x for m in mounts for x in ("-v", m)]
        P.podman("run", "-d", "--name", name, *P.LIMITS, "-v", f"{volume}:/data", *volumes,
                 "-v", f"{config}:/etc/spoolq/spoolq.yaml:ro", "-p", f"127.0.0.1:{port}:8480", image, *args)
        running = Running(name, f"{'https' if ca else 'http'}://127.0.0.1:{port}")
        P.wait_ready(running.url, name, verify=str(ca) if ca else True)
        return running

    try:
        yield run
    finally:
        for name in names:
            P.podman("rm", "-f", "-t", "0", name, check=False)


def _sqs(url: str) -> object:
    return boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET)


def test_every_door_from_outside_and_the_client_inside(start: object) -> None:
    c = start()  # type: ignore[operator]
    assert requests.get(f"{c.url}/readyz", timeout=10).json()["status"] == "ok"
    console = requests.get(f"{c.url}/console/", timeout=10)
    assert console.status_code == 200 and "text/html" in console.headers["Content-Type"]
    sqs = _sqs(c.url)
    queue = sqs.create_queue(QueueName="in-a-container")["QueueUrl"]  # type: ignore[attr-defined]
    sqs.send_message(QueueUrl=queue, MessageBody="hello from boto3")  # type: ignore[attr-defined]
    got = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=5)["Messages"]  # type: ignore[attr-defined]
    assert [m["Body"] for m in got] == ["hello from boto3"]
    sqs.delete_message(QueueUrl=queue, ReceiptHandle=got[0]["ReceiptHandle"])  # type: ignore[attr-defined]
    sent = requests.post(f"{c.url}/queue/1/emo/send", json={"n": 1}, headers=HEADERS, timeout=10)
    assert sent.status_code == 200
    polled = requests.get(f"{c.url}/queue/1/emo/poll?ttl=30&limit=5", headers=HEADERS, timeout=10).json()
    assert [m["payload"] for m in polled] == [{"n": 1}]
    acked = requests.post(f"{c.url}/queue/1/emo/ack", json=[polled[0]["id"]], headers=HEADERS, timeout=10)
    assert acked.status_code == 200
    assert requests.get(f"{c.url}/queue/1/emo/size", headers=HEADERS, timeout=10).json() == 0
    # the client commands, inside the image
    queues = P.podman("exec", "-e", f"SPOOLQ_API_KEY={API_KEY}", c.name, "spoolq", "queues", "--json")
    names = {q["name"] for q in json.loads(queues.stdout)}
    assert "emo" in names and any(n.endswith("in-a-container") for n in names), queues.stdout
    # every process of the service runs as the unprivileged user
    users = P.podman("top", c.name, "user", "args").stdout.splitlines()[1:]
    assert users and all(line.split()[0] == "spoolq" for line in users), users
    assert P.podman("exec", c.name, "id", "-u").stdout.strip() == "10001"
    assert P.podman("healthcheck", "run", c.name, check=False).returncode == 0  # the image's HEALTHCHECK


def test_a_graceful_stop_under_load_loses_nothing(start: object) -> None:
    first = start()  # type: ignore[operator]
    acknowledged: list[str] = []
    server_errors: list[str] = []
    sending = threading.Event()
    sending.set()

    def send() -> None:
        with requests.Session() as s:
            while sending.is_set():
                body = uuid.uuid4().hex
                try:
                    r = s.post(f"{first.url}/queue/1/stop/send", json=body, headers=HEADERS, timeout=30)
                except requests.RequestException:
                    time.sleep(0.05)  # stopped: refused or reset, nothing acknowledged
                    continue
                if r.status_code == 200:
                    acknowledged.append(body)
                elif r.status_code >= 500:
                    server_errors.append(f"{r.status_code} {r.text[:200]}")

    threads = [threading.Thread(target=send) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(2.0)
        started = time.monotonic()
        P.podman("stop", "-t", "45", first.name, timeout=120)
        took = time.monotonic() - started
    finally:
        sending.clear()
        for t in threads:
            t.join(timeout=60)
    state = json.loads(P.podman("inspect", first.name).stdout)[0]["State"]
    assert state["ExitCode"] == 0, state  # it stopped by itself, not killed at the timeout
    assert took < 30, took
    assert not server_errors, server_errors[:3]
    assert len(acknowledged) > 20
    second = start()  # type: ignore[operator]
    delivered: set[str] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = requests.get(f"{second.url}/queue/1/stop/poll?ttl=300&limit=100", headers=HEADERS, timeout=30).json()
        if not got:
            break
        delivered.update(m["payload"] for m in got)
    lost = set(acknowledged) - delivered
    assert not lost, f"{len(lost)} of {len(acknowledged)} acknowledged sends lost"


def _workers(container: str) -> set[str]:
    """The pids (in the container) of the master's workers: every process but the master (1)."""
    lines = P.podman("top", container, "pid").stdout.split()[1:]
    return {pid for pid in lines if pid != "1"}


def test_reloads_in_the_container_under_load_on_busy_cores(start: object) -> None:
    """``podman kill --signal HUP`` under load, every core kept busy: every request answered
    within 5 s, every acknowledged send delivered."""
    c = start()  # type: ignore[operator]
    figures = Figures()
    with busy_cores():
        load = Load(c.url, figures, headers=HEADERS).start()
        try:
            time.sleep(1.0)
            for _ in range(3):
                old = _workers(c.name)
                P.podman("kill", "--signal", "HUP", c.name)
                deadline = time.monotonic() + 90
                while _workers(c.name) & old and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert not _workers(c.name) & old, "the old workers still run 90 s after SIGHUP"
                time.sleep(0.5)
        finally:
            load.stop_sending()
            load.drain()
    summary = figures.summary()
    assert summary["sent"] > 20, summary
    assert summary["slow"] == 0 and summary["lost"] == 0 and summary["errors"] == 0, (summary, figures.slow[:3],
                                                                                     figures.errors[:3])


def test_tls_in_the_container_and_its_health_check(start: object, tmp_path: Path) -> None:
    """``--certfile``/``--keyfile`` given to the image: boto3 trusting the test CA sends and
    receives, clear text gets the 400, and the image's health check still finds it alive."""
    from tests.tls.conftest import make_pki

    pki = make_pki(tmp_path / "pki")
    for path in (pki.cert, pki.key):
        os.chown(path, 10001, -1)  # the image's user reads its key; nobody else does
    c = start("--config", "/etc/spoolq/spoolq.yaml", "--certfile", "/etc/spoolq/tls/server.pem",  # type: ignore[operator]
              "--keyfile", "/etc/spoolq/tls/server.key", mounts=(f"{pki.cert.parent}:/etc/spoolq/tls:ro",), ca=pki.ca)
    sqs = boto3.client("sqs", endpoint_url=c.url, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
                       aws_secret_access_key=SECRET, verify=str(pki.ca))
    queue = sqs.create_queue(QueueName="tls-in-a-container")["QueueUrl"]
    assert queue.startswith("https://")
    sqs.send_message(QueueUrl=queue, MessageBody="sealed")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=5)["Messages"]] == ["sealed"]
    clear = requests.get(c.url.replace("https://", "http://") + "/readyz", timeout=10)
    assert clear.status_code == 400
    assert P.podman("healthcheck", "run", c.name, check=False).returncode == 0


def test_the_image_built_as_documented_keeps_its_health_check(image: str) -> None:
    """``podman build --format docker`` (the docs' and this tier's build): podman's default OCI
    format would drop the HEALTHCHECK with a warning, leaving the image without one."""
    inspected = json.loads(P.podman("image", "inspect", image).stdout)[0]
    check = inspected.get("Healthcheck") or {}  # podman shows it here; absent from an OCI-format image
    assert "spoolq.http.probe" in " ".join(check.get("Test") or []), inspected
    config = inspected["Config"]
    assert config["User"] == "spoolq" and "SPOOLQ_ROOT=/data" in config["Env"], config


def test_a_host_directory_it_cannot_write_is_named_with_the_uid_and_the_fixes(image: str, tmp_path: Path) -> None:
    """The first run on a host directory owned by another user stops at once, saying that it must
    belong to uid 10001 and how; with podman's :U volume option the same directory serves."""
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)  # root's, as a directory made on the host by an administrator
    name = f"spoolq-test-{uuid.uuid4().hex[:8]}"
    try:
        P.podman("run", "--name", name, *P.LIMITS, "-v", f"{data}:/data", image, "--allow-open", check=False,
                 timeout=120)
        state = json.loads(P.podman("inspect", name).stdout)[0]["State"]
        logs = P.podman("logs", name).stderr + P.podman("logs", name).stdout
    finally:
        P.podman("rm", "-f", "-t", "0", name, check=False)
    assert state["ExitCode"] == 3, (state, logs)
    line = next(x for x in logs.splitlines() if "not writable" in x)
    assert "spoolq: root /data exists but is not writable (Permission denied)" in line, logs
    assert "it belongs to uid 0 and spoolq runs as uid 10001" in line, line
    for fix in ("chown -R 10001", "-v <host directory>:/data:U", "--userns=keep-id:uid=10001"):
        assert fix in line, (fix, line)
    port = free_port()
    name = f"spoolq-test-{uuid.uuid4().hex[:8]}"
    try:
        P.podman("run", "-d", "--name", name, *P.LIMITS, "-v", f"{data}:/data:U", "-p", f"127.0.0.1:{port}:8480",
                 image, "--allow-open")
        P.wait_ready(f"http://127.0.0.1:{port}", name)
        assert requests.post(f"http://127.0.0.1:{port}/queue/1/mounted/send", json=1, timeout=10).status_code == 200
    finally:
        P.podman("rm", "-f", "-t", "0", name, check=False)
    assert data.stat().st_uid == 10001 and (data / "queues").is_dir()
