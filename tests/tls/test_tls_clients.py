"""Real clients over TLS against a real ``spoolq serve --certfile ... --disque-tls-port ...``:
boto3 (``verify=`` the test CA), the AWS CLI (``--ca-bundle``), curl (``--cacert``), redis-cli
(``--tls --cacert``); clear-text clients sent to the TLS ports are turned away at once; with
``--client-ca`` a client without a certificate is refused."""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import botocore.config
import botocore.exceptions
import pytest
import requests

from tests.e2e.spoolq_server import Server, free_port, running_server
from tests.tls.conftest import Pki

API_KEY = "k-tls-all"
ACCESS_KEY, SECRET = "AKIDTLS0001", "tls-secret"
CONFIG = f"""
api_keys:
  - name: all
    key: {API_KEY}
    sqs_credentials: [{{access_key_id: {ACCESS_KEY}, secret_access_key: {SECRET}}}]
    permissions: ["queue|*|*"]
"""
REDIS_CLI = shutil.which("redis-cli")
CURL = shutil.which("curl")
AWS = Path(sys.executable).parent / "aws"
needs_redis_cli = pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli missing: scripts/system-deps redis")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl missing")


def _serve(tmp: Path, pki: Pki, *more: str, client: Path | None = None) -> Iterator[tuple[Server, int]]:
    disque_tls = free_port()
    with running_server(tmp, keys=False, workers=1, threads=8, config_text=CONFIG, tls_ca=pki.ca, tls_client=client,
                        extra_args=("--certfile", str(pki.cert), "--keyfile", str(pki.key),
                                    "--disque-tls-port", str(disque_tls), *more)) as server:
        yield server, disque_tls


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[tuple[Server, int]]:
    yield from _serve(tmp_path_factory.mktemp("tls"), pki)


@pytest.fixture(scope="module")
def served_mutual(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[tuple[Server, int]]:
    yield from _serve(tmp_path_factory.mktemp("mtls"), pki, "--client-ca", str(pki.ca), client=pki.client)


def _sqs(server: Server, verify: str | bool, **config: object) -> object:
    return boto3.client("sqs", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET, verify=verify,
                        config=botocore.config.Config(retries={"max_attempts": 1}, **config))  # type: ignore[arg-type]


def test_boto3_trusting_the_test_ca(served: tuple[Server, int], pki: Pki) -> None:
    server, _ = served
    sqs = _sqs(server, str(pki.ca))
    url = sqs.create_queue(QueueName="tls-boto3")["QueueUrl"]  # type: ignore[attr-defined]
    assert url.startswith(f"https://127.0.0.1:{server.port}/"), url
    sqs.send_message(QueueUrl=url, MessageBody="over tls")  # type: ignore[attr-defined]
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"]  # type: ignore[attr-defined]
    assert [m["Body"] for m in got] == ["over tls"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])  # type: ignore[attr-defined]
    with pytest.raises(botocore.exceptions.SSLError):  # the system's CAs do not know the test CA
        _sqs(server, True).list_queues()  # type: ignore[attr-defined]


def test_aws_cli_with_ca_bundle(served: tuple[Server, int], pki: Pki, tmp_path: Path) -> None:
    server, _ = served
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")}

    def aws(*args: str) -> dict[str, object]:
        done = subprocess.run([str(AWS), "--endpoint-url", server.url, "--ca-bundle", str(pki.ca),
                               "--output", "json", "sqs", *args], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else {}

    url = str(aws("create-queue", "--queue-name", "tls-cli")["QueueUrl"])
    aws("send-message", "--queue-url", url, "--message-body", "from the aws cli")
    got = aws("receive-message", "--queue-url", url, "--wait-time-seconds", "5")
    assert [m["Body"] for m in got["Messages"]] == ["from the aws cli"]  # type: ignore[union-attr,index]


def _curl(*args: str) -> subprocess.CompletedProcess[str]:
    assert CURL is not None
    return subprocess.run([CURL, "-sS", "--max-time", "20", *args], capture_output=True, text=True, timeout=60)


@needs_curl
def test_curl_with_cacert_sends_polls_and_acks(served: tuple[Server, int], pki: Pki) -> None:
    server, _ = served
    key = ["--cacert", str(pki.ca), "-H", f"X-BV-API-Key: {API_KEY}", "-H", "Content-Type: application/json"]
    sent = _curl(*key, "-X", "POST", "-d", '"hello over tls"', f"{server.url}/queue/1/tls-curl/send")
    assert sent.returncode == 0, sent.stderr
    polled = _curl(*key, f"{server.url}/queue/1/tls-curl/poll?ttl=30&limit=5")
    messages = json.loads(polled.stdout)
    assert [m["payload"] for m in messages] == ["hello over tls"]
    acked = _curl(*key, "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-d", json.dumps([messages[0]["id"]]),
                  f"{server.url}/queue/1/tls-curl/ack")
    assert acked.stdout == "200", acked
    assert _curl(f"{server.url}/healthz").returncode == 60  # without --cacert: the certificate is unknown


@needs_redis_cli
def test_redis_cli_over_tls_auths_adds_and_gets(served: tuple[Server, int], pki: Pki) -> None:
    _, port = served
    assert REDIS_CLI is not None
    base = [REDIS_CLI, "--tls", "--cacert", str(pki.ca), "-p", str(port), "--no-auth-warning"]
    body = f"job-{uuid.uuid4().hex}"
    added = subprocess.run([*base, "-a", API_KEY, "ADDJOB", "tls-dq", body, "0"], capture_output=True, text=True,
                           timeout=30)
    assert added.returncode == 0 and added.stdout.strip().startswith("D-"), added
    got = subprocess.run([*base, "-a", API_KEY, "GETJOB", "NOHANG", "FROM", "tls-dq"], capture_output=True, text=True,
                         timeout=30)
    assert body in got.stdout, got
    no_auth = subprocess.run([*base, "QLEN", "tls-dq"], capture_output=True, text=True, timeout=30)
    assert "NOAUTH" in no_auth.stdout + no_auth.stderr


def test_clear_text_http_to_the_tls_port_gets_400_at_once(served: tuple[Server, int]) -> None:
    server, _ = served
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b'POST /queue/1/tls-plain/send HTTP/1.1\r\nHost: x\r\nX-BV-API-Key: ' + API_KEY.encode()
                  + b'\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n"clear"')
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    took = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), answer
    assert b"this port speaks HTTPS" in answer
    assert took < 5, took
    r = requests.get(server.url.replace("https://", "http://") + "/readyz", timeout=10)
    assert r.status_code == 400 and "https://" in r.json()["message"]
    # the clear-text send was never served
    size = requests.get(f"{server.url}/queue/1/tls-plain/size", headers={"X-BV-API-Key": API_KEY},
                        verify=str(server.tls_ca), timeout=10)
    assert size.json() == 0


def test_clear_text_resp_to_the_disque_tls_port_is_closed(served: tuple[Server, int]) -> None:
    _, port = served
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(b"*2\r\n$4\r\nAUTH\r\n$9\r\nk-tls-all\r\n")
        try:
            answer = s.recv(4096)
        except ConnectionResetError:
            answer = b""
    assert answer == b"" or not answer.startswith((b"+", b"-", b":", b"$", b"*")), answer  # no RESP reply
    assert time.monotonic() - started < 12
    if REDIS_CLI is not None:
        plain = subprocess.run([REDIS_CLI, "-p", str(port), "PING"], capture_output=True, text=True, timeout=30)
        assert "PONG" not in plain.stdout


def test_there_is_no_clear_text_port(served: tuple[Server, int]) -> None:
    """With TLS configured the HTTP port is the HTTPS port and no clear-text Disque port is open."""
    server, port = served
    log = server.log.read_text()
    assert f"serving https://127.0.0.1:{server.port}" in log
    assert f"serving Disque over TLS on 127.0.0.1:{port}" in log
    assert "spoolq: serving Disque on" not in log


@needs_curl
def test_mutual_tls_refuses_a_client_without_a_certificate(served_mutual: tuple[Server, int], pki: Pki) -> None:
    server, port = served_mutual
    refused = _curl("--cacert", str(pki.ca), f"{server.url}/readyz")
    # TLS 1.3 reports the refusal after the handshake: curl fails at its first read or write
    assert refused.returncode != 0 and refused.stdout == "", refused
    ok = _curl("--cacert", str(pki.ca), "--cert", str(pki.client_cert), "--key", str(pki.client_key),
               f"{server.url}/readyz")
    assert ok.returncode == 0 and json.loads(ok.stdout)["status"] == "ok", ok
    sqs = _sqs(server, str(pki.ca), client_cert=(str(pki.client_cert), str(pki.client_key)))
    assert "QueueUrl" in sqs.create_queue(QueueName="tls-mutual")  # type: ignore[attr-defined]
    if REDIS_CLI is not None:
        base = [REDIS_CLI, "--tls", "--cacert", str(pki.ca), "-p", str(port), "--no-auth-warning", "-a", API_KEY]
        without = subprocess.run([*base, "PING"], capture_output=True, text=True, timeout=30)
        assert "PONG" not in without.stdout, without
        with_cert = subprocess.run([*base, "--cert", str(pki.client_cert), "--key", str(pki.client_key), "PING"],
                                   capture_output=True, text=True, timeout=30)
        assert with_cert.stdout.strip() == "PONG", with_cert


def test_a_client_certificate_from_another_ca_is_refused(served_mutual: tuple[Server, int], pki: Pki) -> None:
    server, _ = served_mutual
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    ctx.load_cert_chain(str(pki.other_client))
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s, pytest.raises((ssl.SSLError, OSError)):
        s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        if not s.recv(4096):
            raise ConnectionResetError("closed without an answer")


def test_the_spoolq_client_commands_trust_the_ca_named_by_ssl_cert_file(served: tuple[Server, int],
                                                                          pki: Pki) -> None:
    server, _ = served
    env = {**os.environ, "SSL_CERT_FILE": str(pki.ca), "SPOOLQ_URL": server.url, "SPOOLQ_API_KEY": API_KEY}

    def spoolq(*args: str, environ: dict[str, str] = env) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "spoolq.cli", *args], capture_output=True, text=True,
                              env=environ, timeout=60)

    # a queue of its own: the AWS CLI test made an SQS queue called tls-cli, which that name would reach
    sent = spoolq("send", "tls-spoolq-cli", '"via the spoolq command"')
    assert sent.returncode == 0, sent.stderr
    peeked = spoolq("peek", "tls-spoolq-cli", "--json")
    assert [m["payload"] for m in json.loads(peeked.stdout)] == ["via the spoolq command"], peeked
    bare = {k: v for k, v in env.items() if k != "SSL_CERT_FILE"}
    untrusted = spoolq("size", "tls-spoolq-cli", environ=bare)  # the cause named in one line, and how to trust the CA
    assert untrusted.returncode == 1 and untrusted.stderr.count("\n") == 1, untrusted
    assert "certificate" in untrusted.stderr and "failed verification" in untrusted.stderr, untrusted.stderr
    assert "--cacert" in untrusted.stderr and "refused" not in untrusted.stderr, untrusted.stderr
    assert spoolq("size", "tls-spoolq-cli", "--cacert", str(pki.ca), environ=bare).stdout.strip() == "1"
    assert spoolq("size", "tls-spoolq-cli", environ={**bare, "SPOOLQ_CA_BUNDLE": str(pki.ca)}).stdout.strip() == "1"
    assert spoolq("size", "tls-spoolq-cli", "--insecure", environ=bare).stdout.strip() == "1"
    other = spoolq("size", "tls-spoolq-cli", "--cacert", str(pki.other_ca), environ=bare)
    assert other.returncode == 1 and "failed verification" in other.stderr, other
    plain = spoolq("size", "tls-spoolq-cli", environ={**bare, "SPOOLQ_URL": server.url.replace("https:", "http:")})
    assert plain.returncode == 1 and plain.stderr.count("\n") == 1 and "Traceback" not in plain.stderr, plain


@needs_redis_cli
def test_an_upgrade_in_place_keeps_both_tls_doors(tmp_path: Path, pki: Pki) -> None:
    """SIGUSR2 re-executes ``serve`` on the inherited sockets, the Disque TLS one included; once the
    old generation is stopped the new one serves HTTPS and Disque over TLS on the same ports."""
    import signal

    from tests.deploy.restart_load import _Adopted, _children

    assert REDIS_CLI is not None
    for server, port in _serve(tmp_path, pki):
        assert server.proc is not None
        old = server.proc
        before = set(_children(old.pid))
        old.send_signal(signal.SIGUSR2)
        new_pid, deadline = 0, time.monotonic() + 60
        while not new_pid and time.monotonic() < deadline:
            for pid in set(_children(old.pid)) - before:
                if b"spoolq.cli" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    new_pid = pid
            time.sleep(0.1)
        assert new_pid, "no new generation after SIGUSR2"
        time.sleep(4)  # it boots its workers and its Disque listener
        old.send_signal(signal.SIGTERM)
        old.wait(timeout=60)
        server.proc = _Adopted(new_pid)  # type: ignore[assignment]
        assert requests.get(f"{server.url}/readyz", verify=str(pki.ca), timeout=10).json()["status"] == "ok"
        pong = subprocess.run([REDIS_CLI, "--tls", "--cacert", str(pki.ca), "-p", str(port), "--no-auth-warning",
                               "-a", API_KEY, "PING"], capture_output=True, text=True, timeout=30)
        assert pong.stdout.strip() == "PONG", pong


def test_long_polls_over_tls_wait_and_may_be_abandoned(served: tuple[Server, int], pki: Pki) -> None:
    """A long poll over TLS waits without a thread and gets its empty answer at its deadline; one
    whose client leaves while it waits is answered at once, and the worker serves on."""
    server, _ = served
    workers = set(server.worker_pids())
    headers = {"X-BV-API-Key": API_KEY}
    started = time.monotonic()
    r = requests.get(f"{server.url}/queue/1/tls-wait/poll?wait=1", headers=headers, verify=str(pki.ca), timeout=20)
    assert r.json() == [] and 0.9 < time.monotonic() - started < 10
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    for _ in range(3):  # the client goes away while its poll waits
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(f"GET /queue/1/tls-wait/poll?wait=10 HTTP/1.1\r\nHost: x\r\nX-BV-API-Key: {API_KEY}\r\n\r\n"
                      .encode())
            time.sleep(0.5)
    time.sleep(1.0)
    sent = requests.post(f"{server.url}/queue/1/tls-wait/send", json="after", headers=headers, verify=str(pki.ca),
                         timeout=20)
    assert sent.status_code == 200
    got = requests.get(f"{server.url}/queue/1/tls-wait/poll?wait=5", headers=headers, verify=str(pki.ca), timeout=20)
    assert [m["payload"] for m in got.json()] == ["after"]  # not claimed for a client that had left
    assert set(server.worker_pids()) == workers, "a worker died"
    assert "Traceback" not in server.log.read_text()


@needs_redis_cli
def test_sockets_from_systemd_with_a_disque_tls_socket(tmp_path: Path, pki: Pki) -> None:
    """Socket activation as ``spoolq-http.socket`` and ``spoolq-disque-tls.socket`` give it: the
    socket named ``disque-tls`` serves Disque over TLS, the HTTP one HTTPS."""
    import signal

    assert REDIS_CLI is not None
    listeners = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        listeners.append(s)
    http_port, tls_port = (int(s.getsockname()[1]) for s in listeners)
    config = tmp_path / "spoolq.yaml"
    config.write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPOOLQ_", "LISTEN_"))} | {
        "LISTEN_FDS": "2", "LISTEN_FDNAMES": "http:disque-tls", "SPOOLQ_CERTFILE": str(pki.cert),
        "SPOOLQ_KEYFILE": str(pki.key), "SPOOLQ_CONFIG": str(config)}
    fds = [s.fileno() for s in listeners]

    def onto_3_and_4() -> None:
        for target, fd in zip((3, 4), [os.dup(fd) for fd in fds], strict=True):
            os.dup2(fd, target)

    with open(tmp_path / "server.log", "wb") as log:
        proc = subprocess.Popen(["sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh", sys.executable, "-m", "spoolq.cli",
                                 "serve", "--root", str(tmp_path / "root"), "--workers", "1", "--threads", "4"],
                                pass_fds=(3, 4), preexec_fn=onto_3_and_4, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"https://127.0.0.1:{http_port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{url}/readyz", verify=str(pki.ca), timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.2)
        pong = subprocess.run([REDIS_CLI, "--tls", "--cacert", str(pki.ca), "-p", str(tls_port), "--no-auth-warning",
                               "-a", API_KEY, "PING"], capture_output=True, text=True, timeout=30)
        assert pong.stdout.strip() == "PONG", (pong, (tmp_path / "server.log").read_text()[-2000:])
        assert "(sockets from systemd)" in (tmp_path / "server.log").read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        for s in listeners:
            s.close()
