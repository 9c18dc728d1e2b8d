"""A newcomer's first day with the ``spoolq`` commands, against a real ``spoolq serve`` with the Disque
door on: each stumble a new user met, as they met it (a FIFO send, a queue by the name it was
created with, a declared visibility timeout that Disque ignored, defaults that depended on the path,
errors that named no cause, a setting before the first message), and the commands that reach every
console action."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.cli.run import ok, spoolq
from tests.e2e.spoolq_server import Server, free_port, running_server

FIFO_QUEUE_URL = "{url}/123456789012/{name}"


@pytest.fixture(scope="module")
def disque_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, disque_port: int) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("first-day"), keys=False, workers=2, threads=8,
                        extra_args=("--disque-port", str(disque_port))) as s:
        yield s


@pytest.fixture
def q() -> str:
    return f"fd-{uuid.uuid4().hex[:10]}"


def _disque(port: int) -> object:
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30)
    deadline = time.monotonic() + 15
    while True:  # the listener starts beside the workers
        try:
            client.ping()
            return client
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _show(r: object, jid: bytes) -> dict[bytes, object]:
    show = r.execute_command("SHOW", jid)  # type: ignore[attr-defined]
    return dict(zip(show[::2], show[1::2], strict=True))


def one_line(done: object) -> str:
    """The one error line of a failed command (exit 1 or 2), no traceback."""
    stderr = done.stderr  # type: ignore[attr-defined]
    assert done.returncode in (1, 2) and stderr.count("\n") == 1 and "Traceback" not in stderr, done  # type: ignore[attr-defined]
    return str(stderr)


def test_a_fifo_queue_is_found_by_its_name_and_takes_group_and_dedup_ids(server: Server, q: str) -> None:
    name = f"{q}.fifo"
    created = json.loads(ok(spoolq("create", name, "--kind", "sqs-fifo", "--json", url=server.url)))
    assert created["kind"] == "sqs-fifo" and created["store_name"] == f"sqs:123456789012:us-east-1:{name}"
    settings = json.loads(ok(spoolq("settings", name, "--json", url=server.url)))
    assert settings["queue"] == created["store_name"] and settings["kind"] == "sqs-fifo"
    refused = one_line(spoolq("send", name, '{"id": 1}', url=server.url))
    assert "--group-id" in refused
    for i in (1, 1, 2):  # the second is a duplicate by its deduplication id
        ok(spoolq("send", name, f'{{"id": {i}}}', "--group-id", "g", "--dedup-id", f"order-{i}",
                  "--attribute", "source=cli", url=server.url))
    assert ok(spoolq("size", name, url=server.url)).strip() == "2"
    url = FIFO_QUEUE_URL.format(url=server.url, name=name)  # the queue URL names it too
    assert [m["payload"] for m in json.loads(ok(spoolq("peek", url, "--json", url=server.url)))] == [
        {"id": 1}, {"id": 2}]
    import boto3

    sqs = boto3.client("sqs", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id="x",
                       aws_secret_access_key="x")
    got = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"][0]
    assert json.loads(got["Body"]) == {"id": 1} and got["MessageAttributes"]["source"]["StringValue"] == "cli"


def test_a_name_two_doors_have_is_refused_with_the_full_names(server: Server, q: str) -> None:
    ok(spoolq("create", q, "--kind", "mq", url=server.url))
    ok(spoolq("create", q, "--kind", "disque", url=server.url))
    refused = one_line(spoolq("size", q, url=server.url))
    assert f"mq:{q}" in refused and f"disque:{q}" in refused
    assert ok(spoolq("size", f"mq:{q}", url=server.url)).strip() == "0"
    r = requests.get(f"{server.url}/console/api/queues/{q}", timeout=10)  # the console's API says the same
    assert r.status_code == 400 and f"mq:{q}" in r.json()["message"]
    assert requests.get(f"{server.url}/console/api/queues/{q}.x", timeout=10).status_code == 404
    ok(spoolq("create", f"{q}-sqs", "--kind", "sqs", url=server.url))
    detail = requests.get(f"{server.url}/console/api/queues/{q}-sqs", timeout=10).json()
    assert detail["store_name"] == f"sqs:123456789012:us-east-1:{q}-sqs" and detail["kind"] == "sqs"


def test_a_declared_visibility_timeout_is_the_disque_retry(tmp_path: Path) -> None:
    disque = free_port()
    config = ("queues:\n  - {name: builds, door: disque, visibility_timeout: 2m}\n"
              "  - {name: plain, door: emodb, visibility_timeout: 45s}\n"
              "  - {name: nightly, door: disque}\n  - {name: pay.fifo, door: sqs-fifo}\n")
    with running_server(tmp_path, keys=False, workers=1, threads=4, config_text=config,
                        extra_args=("--disque-port", str(disque))) as s:
        r = _disque(disque)
        jid = r.execute_command("ADDJOB", "builds", "job", 0)  # type: ignore[attr-defined]
        assert _show(r, jid)[b"retry"] == 120
        jid = r.execute_command("ADDJOB", "nightly", "job", 0)  # type: ignore[attr-defined]
        assert _show(r, jid)[b"retry"] == 300  # declared without one: a Disque queue's default
        fifo = json.loads(ok(spoolq("settings", "pay.fifo", "--json", url=s.url)))
        assert (fifo["kind"], fifo["retention"]) == ("sqs-fifo", 4 * 86_400)
        jid = r.execute_command("ADDJOB", "fresh", "job", 0)  # type: ignore[attr-defined]
        assert _show(r, jid)[b"retry"] == 300  # a Disque queue made by ADDJOB: Disque's longest default
        assert json.loads(ok(spoolq("settings", "disque:fresh", "--json", url=s.url)))["visibility_timeout"] == 300
        # the EmoDB door's poll without ttl claims for the queue's visibility timeout
        requests.post(f"{s.url}/queue/1/plain/send", json=1, timeout=10)
        t0 = time.time()
        assert len(requests.get(f"{s.url}/queue/1/plain/poll", timeout=10).json()) == 1
        [m] = requests.get(f"{s.url}/console/api/queues/plain/messages", timeout=10).json()["messages"]
        assert 44 <= m["claimed_until"] - t0 <= 47, m


def test_one_set_of_defaults_and_one_vocabulary_of_kinds(server: Server, q: str) -> None:
    ok(spoolq("create", q, "--kind", "sqs", url=server.url))
    import boto3

    sqs = boto3.client("sqs", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id="x",
                       aws_secret_access_key="x")
    made = sqs.create_queue(QueueName=f"{q}-boto")["QueueUrl"]
    by_cli = json.loads(ok(spoolq("settings", q, "--json", url=server.url)))
    by_boto = json.loads(ok(spoolq("settings", made, "--json", url=server.url)))
    assert by_cli["retention"] == by_boto["retention"] == 4 * 86_400
    requests.post(f"{server.url}/queue/1/{q}-emo/send", json=1, timeout=10)
    listed = {row["name"]: row["kind"] for row in json.loads(ok(spoolq("queues", "--json", url=server.url)))}
    assert listed[f"{q}-emo"] == "emodb" and listed[f"sqs:123456789012:us-east-1:{q}"] == "sqs"
    assert set(listed.values()) <= {"emodb", "dedup", "sqs", "sqs-fifo", "mq", "disque"}
    rows = requests.get(f"{server.url}/console/api/queues", timeout=10).json()["queues"]
    assert {r["kind"] for r in rows} <= {"emodb", "dedup", "sqs", "sqs-fifo", "mq", "disque"}
    made = requests.post(f"{server.url}/console/api/queues", json={"kind": "dedup", "name": f"{q}-d"}, timeout=10)
    assert made.json() == {"store_name": f"__dedupq:{q}-d", "door": "dedupq", "name": f"{q}-d", "kind": "dedup"}


def test_the_console_server_page_names_the_flush(server: Server) -> None:
    flush = requests.get(f"{server.url}/console/api/server", timeout=10).json()["flush"]
    assert flush in ("journal", "syncfs", "fsync"), flush
    assert f"flush={flush}" in server.log.read_text()


def test_errors_name_their_cause(server: Server, q: str) -> None:
    bad = one_line(spoolq("send", "Bad/Name", "x", url=server.url))
    assert "'Bad/Name' is not a queue name" in bad
    upper = one_line(spoolq("send", "Bad", "x", url=server.url))
    assert "EmoDB queue" in upper and "polloi" not in upper and "spoolq create Bad --kind" in upper
    ok(spoolq("create", q, url=server.url))
    again = one_line(spoolq("create", q, url=server.url))
    assert again.startswith("spoolq: 409 conflict: ") and "already exists" in again and "bad request" not in again
    refused = one_line(spoolq("size", q, url=f"http://127.0.0.1:{free_port()}"))
    assert "connection refused by 127.0.0.1:" in refused


def test_a_setting_before_the_first_message_names_create(server: Server, q: str) -> None:
    missing = one_line(spoolq("settings", q, "--archive", "on", url=server.url))
    assert "does not exist" in missing and f"spoolq settings {q} --create" in missing
    made = json.loads(ok(spoolq("settings", q, "--archive", "on", "--create", "--json", url=server.url)))
    assert made["archive"] is True


def test_claims_from_the_command_line(server: Server, q: str) -> None:
    ok(spoolq("send", q, "1", "2", "3", "4", url=server.url))
    polled = json.loads(ok(spoolq("poll", q, "--limit", "4", "--json", url=server.url)))
    ids = [m["id"] for m in polled]
    assert ok(spoolq("release", q, ids[0], url=server.url)).strip() == f"released 1 message of {q}"
    assert json.loads(ok(spoolq("nack", q, ids[1], "--json", url=server.url))) == {
        "queue": q, "nacked": 1, "not_held": 0}
    ok(spoolq("visibility", q, "10m", ids[2], url=server.url))
    detail = json.loads(ok(spoolq("show", q, "--json", url=server.url)))
    assert (detail["ready"], detail["claimed"]) == (2, 2)
    ok(spoolq("delete-message", q, ids[3], url=server.url))
    ok(spoolq("release", q, "--all", url=server.url))
    assert json.loads(ok(spoolq("size", q, "--json", url=server.url)))["size"] == 3
    kept = spoolq("delete", q, "--if-empty", url=server.url)
    assert kept.returncode == 1 and kept.stdout.strip() == f"kept {q}: it holds messages", kept
    assert "--yes" in one_line(spoolq("delete", q, url=server.url))
    ok(spoolq("delete", q, "--yes", url=server.url))
    assert q not in [row["name"] for row in json.loads(ok(spoolq("queues", "--json", url=server.url)))]


def test_moves_redrive_node_whoami_rates(server: Server, q: str) -> None:
    ok(spoolq("create", f"{q}-dlq", url=server.url))
    ok(spoolq("create", q, "--dead-letter-queue", f"{q}-dlq", "--max-receives", "1", url=server.url))
    ok(spoolq("send", f"{q}-dlq", "1", "2", url=server.url))
    moved = json.loads(ok(spoolq("redrive", f"{q}-dlq", "--json", url=server.url)))
    assert moved["destination"] == q
    deadline = time.monotonic() + 30
    while ok(spoolq("size", q, url=server.url)).strip() != "2":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert moved["ref"] in ok(spoolq("moves", url=server.url))
    node = json.loads(ok(spoolq("node", "--json", url=server.url)))
    assert node["flush"] in ("journal", "syncfs", "fsync") and "durability" in ok(spoolq("node", url=server.url))
    assert json.loads(ok(spoolq("whoami", "--json", url=server.url)))["open"] is True
    rates = ok(spoolq("rates", url=server.url))
    assert "sent/s" in rates or "(no queue moved" in rates


def test_shell_completion_for_bash_and_zsh() -> None:
    bash = ok(spoolq("completion", "bash"))
    assert "complete" in bash and "visibility" in bash and "--group-id" in bash and "serve" in bash
    zsh = ok(spoolq("completion", "zsh"))
    assert zsh.startswith("#compdef spoolq") and "delete-message" in zsh


def test_hash_key_without_stdin_flag_says_so_when_piped() -> None:
    done = spoolq("hash-key", stdin="secret\n")
    assert "GetPassWarning" not in done.stderr and "--stdin" in one_line(done)


def test_spoolq_client_errors_carry_its_own_name(capsys: pytest.CaptureFixture[str]) -> None:
    from spoolq_client.cli import main

    assert main(["size", "Bad/Name"], prog="spoolq-client") == 2
    assert capsys.readouterr().err.startswith("spoolq-client: 'Bad/Name' is not a queue name")
    assert main(["size", "Bad/Name"], prog="python -m spoolq_client") == 2
    assert capsys.readouterr().err.startswith("python -m spoolq_client: ")


def test_names_as_users_type_them() -> None:
    from spoolq.queues.names import resolve, user_kind

    sqs = "sqs:123456789012:"
    have = {"orders", "mq:jobs", "disque:jobs", f"{sqs}us-east-1:pay.fifo", f"{sqs}eu-west-1:pay.fifo", "mq:orders"}

    def names(typed: str) -> list[str]:
        return resolve(typed, have.__contains__, account="123456789012", region="us-east-1")

    assert names("orders") == ["orders"]  # a queue's own full name wins
    assert names("pay.fifo") == [f"{sqs}us-east-1:pay.fifo"]  # the default account and region
    assert names("http://127.0.0.1:8480/123456789012/pay.fifo") == [f"{sqs}us-east-1:pay.fifo"]
    assert names("http://127.0.0.1:8480/eu-west-1/123456789012/pay.fifo") == [f"{sqs}eu-west-1:pay.fifo"]
    assert names("jobs") == ["mq:jobs", "disque:jobs"]  # ambiguous: both full names
    assert names("mq:jobs") == ["mq:jobs"] and names("nope") == [] and names("Bad/Name") == []
    assert [user_kind(n, k) for n, k in (("orders", "standard"), ("__dedupq:e", "dedup"), (f"{sqs}r:q", "standard"),
                                         (f"{sqs}r:q.fifo", "fifo"), ("mq:j", "standard"), ("disque:b", "standard"))] \
        == ["emodb", "dedup", "sqs", "sqs-fifo", "mq", "disque"]


def test_a_paced_move(server: Server, q: str) -> None:
    ok(spoolq("send", q, "1", "2", "3", url=server.url))
    ok(spoolq("create", f"{q}-to", url=server.url))
    done = spoolq("move", q, f"{q}-to", "--max-per-second", "100", "--progress", "never", url=server.url)
    assert done.returncode == 0 and done.stdout.strip().endswith("COMPLETE"), done
    assert ok(spoolq("size", f"{q}-to", url=server.url)).strip() == "3"
