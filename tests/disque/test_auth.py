"""AUTH and permissions with API keys configured; the open-mode listen rule; redis-cli."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.disque.disque_server import DisqueServer, delta, scrape_settled
from tests.e2e.spoolq_server import free_port

CONFIG = """
api_keys:
  - name: all
    key: key-all
    permissions: ["queue|*|*"]
  - name: producer
    key: key-producer
    permissions: ["queue|post|jobs-*"]
  - name: consumer
    key: key-consumer
    permissions: ["queue|poll,get_status|jobs-*"]
anonymous:
  permissions: ["queue|get_status|public"]
"""


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DisqueServer]:
    tmp = tmp_path_factory.mktemp("disque-auth")
    (tmp / "spoolq.yaml").write_text(CONFIG)
    s = DisqueServer(root=tmp / "root", log=tmp / "server.log", config=tmp / "spoolq.yaml")
    s.start()
    try:
        yield s
    finally:
        s.stop()


def test_auth_and_permissions(keyed: DisqueServer) -> None:
    anon = keyed.client()
    assert anon.execute_command("PING") is True
    assert anon.execute_command("QLEN", "public") == 0  # the anonymous principal may read "public"
    with pytest.raises(redis.exceptions.NoPermissionError, match="this API key may not post queue 'jobs-a'"):
        anon.execute_command("ADDJOB", "jobs-a", "x", 0)
    with pytest.raises(redis.AuthenticationError, match="invalid password"):
        anon.execute_command("AUTH", "wrong")

    producer = keyed.client(password="key-producer")
    jid = producer.execute_command("ADDJOB", "jobs-a", "x", 0)
    with pytest.raises(redis.ResponseError, match="this API key may not poll queue 'jobs-a'"):
        producer.execute_command("GETJOB", "NOHANG", "FROM", "jobs-a")
    with pytest.raises(redis.exceptions.NoPermissionError):
        producer.execute_command("ADDJOB", "other", "x", 0)

    consumer = keyed.client(password="key-consumer")
    assert consumer.execute_command("QLEN", "jobs-a") == 1
    got = consumer.execute_command("GETJOB", "FROM", "jobs-a")
    assert got[0][1] == jid
    assert consumer.execute_command("ACKJOB", jid) == 1
    with pytest.raises(redis.exceptions.NoPermissionError):
        consumer.execute_command("ADDJOB", "jobs-a", "x", 0)

    admin = keyed.client(password="key-all")
    assert admin.execute_command("PAUSE", "jobs-a", "state") == b"none"


def test_no_anonymous_means_noauth(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("api_keys:\n  - name: k\n    key: k1\n    permissions: ['queue']\n")
    s = DisqueServer(root=tmp_path / "root", log=tmp_path / "log", config=tmp_path / "c.yaml")
    s.start()
    try:
        r = s.client()
        assert r.execute_command("PING") is True
        with pytest.raises(redis.AuthenticationError, match=r"Authentication required\."):  # -NOAUTH
            r.execute_command("QLEN", "q")
        assert r.execute_command("AUTH", "k1") is True
        assert r.execute_command("QLEN", "q") == 0
    finally:
        s.stop()


def test_open_mode_refuses_a_network_address(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "spoolq.cli", "serve", "--root", str(tmp_path / "root"),
                           "--port", str(free_port()), "--disque-port", str(free_port()), "--disque-host", "0.0.0.0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0 without credentials" in done.stderr


def test_redis_cli_smoke(server: DisqueServer) -> None:
    if shutil.which("redis-cli") is None and subprocess.run(
            ["scripts/system-deps", "redis"], cwd=Path(__file__).resolve().parents[2]).returncode:
        pytest.skip("redis-cli is not installed and scripts/system-deps redis could not install it")

    def cli(*args: str) -> str:
        done = subprocess.run(["redis-cli", "-p", str(server.port), *args], capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert cli("PING") == "PONG"
    jid = cli("ADDJOB", "cli-q", "from redis-cli", "0")
    assert jid.startswith("D-") and len(jid) == 48
    assert cli("QLEN", "cli-q") == "1"
    assert cli("GETJOB", "FROM", "cli-q").split("\n") == ["cli-q", jid, "from redis-cli"]
    assert cli("ACKJOB", jid) == "1"
    assert "unknown command" in cli("NOPE")


def test_refused_commands_count_as_auth(keyed: DisqueServer) -> None:
    """The anonymous principal and a consumer key may not post to jobs-*: both refusals count as ``auth``."""
    before = scrape_settled(keyed)
    for kw in ({}, {"password": "key-consumer"}):
        with keyed.client(**kw) as c:
            try:
                c.execute_command("ADDJOB", "jobs-x", "body", 0)
            except redis.ResponseError as e:
                assert "may not post queue 'jobs-x'" in str(e)
            else:
                raise AssertionError(f"ADDJOB was accepted ({kw})")
    after = scrape_settled(keyed)
    assert delta(before, after, "spoolq_commands_total", door="disque", command="ADDJOB", result="auth") == 2
    assert delta(before, after, "spoolq_commands_total", door="disque", command="ADDJOB", result="ok") == 0
    assert delta(before, after, "spoolq_commands_total", door="disque", command="AUTH", result="ok") == 1
    assert delta(before, after, "spoolq_messages_total", door="disque", operation="send") == 0
