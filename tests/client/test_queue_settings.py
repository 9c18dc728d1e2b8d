"""Queue settings through a real ``spoolq serve``: the settings API (``/queue/1/{q}/_settings``), the
``spoolq settings`` command, the SQS ``spoolq:`` attributes, the config file's ``queue_defaults``; and
queues another door named with capitals, reached through ``/queue/1`` and the CLI by their store name.

Every refused change is checked to leave the queue's ``meta.json`` byte for byte as it was."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from botocore.exceptions import ClientError

from tests.cli.run import ok, spoolq
from tests.e2e.spoolq_server import Server, running_server

ACCOUNT = "123456789012"
CONFIG = """
api_keys:
  - name: all
    key: k-all
    sqs_credentials: [{access_key_id: AKIAALL, secret_access_key: s-all}]
    permissions: ["queue|*|*"]
  - name: reader
    key: k-read
    permissions: ["queue|get_status|*"]
  - name: worker
    key: k-work
    sqs_credentials: [{access_key_id: AKIAWORK, secret_access_key: s-work}]
    permissions: ["queue|post,poll,get_status|*"]
  - name: no-post
    key: k-nopost
    permissions: ["queue|poll,get_status|*"]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("settings"), config_text=CONFIG, workers=2, threads=8) as s:
        yield s


@pytest.fixture
def q() -> str:
    return f"s-{uuid.uuid4().hex[:10]}"


def _sqs(server: Server, key: str = "AKIAALL", secret: str = "s-all") -> Any:
    return boto3.client("sqs", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id=key,
                        aws_secret_access_key=secret)


def _meta(server: Server, store_name: str) -> bytes:
    return (server.root / "queues" / store_name / "meta.json").read_bytes()


def _settings_url(server: Server, queue: str) -> str:
    return f"{server.url}/queue/1/{queue}/_settings"


def _get(server: Server, queue: str, key: str = "k-all") -> requests.Response:
    return requests.get(_settings_url(server, queue), headers={"X-BV-API-Key": key}, timeout=10)


def _post(server: Server, queue: str, body: object, key: str = "k-all", raw: bytes | None = None,
          content_type: str = "application/json") -> requests.Response:
    data = raw if raw is not None else json.dumps(body).encode()
    return requests.post(_settings_url(server, queue), data=data, timeout=10,
                         headers={"X-BV-API-Key": key, "Content-Type": content_type})


def _cli(server: Server, *args: str, key: str = "k-all") -> subprocess.CompletedProcess[str]:
    return spoolq(*args, url=server.url, key=key)


# --- queues named with capitals by other doors ------------------------------------------------------


def test_a_queue_another_door_named_with_capitals_is_reachable_by_its_store_name(server: Server) -> None:
    sqs = _sqs(server)
    name = f"Orders{uuid.uuid4().hex[:6]}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody='{"order": 1}')
    store = f"sqs:{ACCOUNT}:us-east-1:{name}"
    listed = json.loads(ok(_cli(server, "queues", "--prefix", store, "--json")))
    assert [r["name"] for r in listed] == [store]
    peeked = json.loads(ok(_cli(server, "peek", store, "--json")))
    assert [m["payload"] for m in peeked] == [{"order": 1}]
    assert ok(_cli(server, "size", store)).strip() == "1"
    ok(_cli(server, "send", store, '{"order": 2}'))
    polled = json.loads(ok(_cli(server, "poll", store, "--limit", "5", "--json")))
    assert sorted(m["payload"]["order"] for m in polled) == [1, 2]
    ok(_cli(server, "ack", store, *[m["id"] for m in polled]))
    assert ok(_cli(server, "size", store)).strip() == "0"
    # permissions are the SQS queue's: a key without rights on it is refused
    assert _cli(server, "peek", store, key="k-nopost").returncode == 0  # its poll on * covers the SQS queue
    assert _cli(server, "peek", store, key="k-read").returncode == 1  # get_status only
    # a capitalised name that no door made is still EmoDB's 400, and nothing is created
    before = sorted(p.name for p in (server.root / "queues").iterdir())
    done = _cli(server, "send", f"Nope{uuid.uuid4().hex[:6]}", "1")
    assert done.returncode == 2 and "lowercase" in done.stderr
    done = _cli(server, "peek", f"Nope{uuid.uuid4().hex[:6]}")
    assert done.returncode == 1 and "lowercase" in done.stderr
    assert sorted(p.name for p in (server.root / "queues").iterdir()) == before


# --- the settings API and the CLI -------------------------------------------------------------------


def test_settings_print_and_change_from_the_cli(server: Server, q: str) -> None:
    ok(_cli(server, "send", q, "1"))
    text = ok(_cli(server, "settings", q))
    rows = {line[:18].strip(): line[18:].strip() for line in text.splitlines()}
    assert rows["archive"] == "off" and rows["visibility timeout"] == "30s" and rows["retention"] == "2w", rows
    shown = json.loads(ok(_cli(server, "settings", q, "--json")))
    assert shown == {"queue": q, "kind": "emodb", "visibility_timeout": 30, "delay": 0, "retention": 1209600,
                     "receive_wait": 0, "max_message_bytes": 1048576, "dead_letter": None, "archive": False,
                     "archive_retention": 2592000}
    changed = json.loads(ok(_cli(server, "settings", q, "--archive", "on", "--archive-retention", "7d",
                                 "--visibility-timeout", "2m", "--delay", "5", "--retention", "4d", "--json")))
    assert changed == shown | {"archive": True, "archive_retention": 604800, "visibility_timeout": 120,
                                    "delay": 5, "retention": 345600}
    assert _get(server, q).json() == changed
    ok(_cli(server, "send", q + "-dlq", "x"))
    text = ok(_cli(server, "settings", q, "--dead-letter-queue", q + "-dlq", "--max-receives", "3"))
    assert f"{q}-dlq (after 3 receives)" in text
    assert json.loads(ok(_cli(server, "settings", q, "--max-receives", "4", "--json")))[
        "dead_letter"] == {"queue": q + "-dlq", "max_receives": 4}
    assert json.loads(ok(_cli(server, "settings", q, "--no-dead-letter", "--json")))["dead_letter"] is None
    # the archive setting is what the store acts on: acked messages land in the archive
    polled = json.loads(ok(_cli(server, "poll", q, "--json", "--ack")))
    assert len(polled) == 1
    acked = list((server.root / "queues" / q / "acked").iterdir())
    archived = list((server.root / "archive").glob(f"{q}/*.jsonl"))
    assert acked or archived


def test_bad_settings_are_refused_and_change_nothing(server: Server, q: str) -> None:
    ok(_cli(server, "send", q, "1"))
    before = _meta(server, q)
    for args, words in [
        (("--archive-retention", "5x"), "archive retention must be a number"),
        (("--visibility-timeout", "13h"), "visibility_timeout must be between 0 and 43200"),
        (("--archive-retention", "10m"), "archive_retention must be between 3600"),
        (("--retention", "30s"), "retention must be between 60"),
        (("--dead-letter-queue", q + "-nosuch", "--max-receives", "3"), "does not exist"),
        (("--dead-letter-queue", q, "--max-receives", "3"), "its own dead-letter queue"),
        (("--dead-letter-queue", q + "-nosuch"), "give --max-receives too"),
        (("--max-receives", "0", "--dead-letter-queue", q + "-x"), "max_receives must be between 1"),
        (("--archive", "on", "--delay", "-1"), "must be"),
        (("--no-dead-letter", "--max-receives", "2"), "cannot be combined"),
    ]:
        done = _cli(server, "settings", q, *args)
        assert done.returncode in (1, 2) and words in done.stderr, (args, done)
        assert "Traceback" not in done.stderr
        assert _meta(server, q) == before, args
    for body, status, words in [
        ({"bogus": 1}, 400, "unknown setting 'bogus'"),
        ({}, 400, "name at least one setting"),
        ([1, 2], 400, "JSON object"),
        ({"archive": "yes"}, 400, "archive must be true or false"),
        ({"archive": True, "delay": 1.5}, 400, "delay must be a whole number"),
        ({"archive": True, "dead_letter": {"queue": q}}, 400, "dead_letter must be null or"),
        ({"visibility_timeout": True}, 400, "whole number"),
    ]:
        r = _post(server, q, body)
        assert (r.status_code, words in r.text) == (status, True), (body, r.status_code, r.text)
        assert _meta(server, q) == before, body
    assert _post(server, q, None, raw=b"null").status_code == 422
    assert _post(server, q, None, raw=b'{"archive": tru').status_code == 400
    assert _post(server, q, {"archive": True}, content_type="text/plain").status_code == 415
    assert _meta(server, q) == before
    # a queue that does not exist: 404, and it is not created
    missing = q + "-missing"
    assert _get(server, missing).status_code == 404
    r = _post(server, missing, {"archive": True})
    assert r.status_code == 404 and "does not exist" in r.json()["message"]
    done = _cli(server, "settings", missing, "--archive", "on")
    assert done.returncode == 1 and "404" in done.stderr
    assert not (server.root / "queues" / missing).exists()


def test_settings_permissions(server: Server, q: str) -> None:
    ok(_cli(server, "send", q, "1"))
    ok(_cli(server, "send", q + "-dlq", "1"))
    before = _meta(server, q)
    assert _get(server, q, key="k-read").status_code == 200
    assert _post(server, q, {"archive": True}, key="k-read").status_code == 403
    assert _get(server, q, key="k-unknown").status_code == 403
    # setting a dead-letter queue sends messages there: it needs post on it as a move does
    r = _post(server, q, {"dead_letter": {"queue": q + "-dlq", "max_receives": 2}}, key="k-nopost")
    assert r.status_code == 403
    assert _meta(server, q) == before
    # an EmoDB queue's settings are changed with what purging it needs (poll)
    assert _post(server, q, {"archive": True}, key="k-work").json()["archive"] is True
    # an SQS queue's need admin, as SetQueueAttributes does
    name = f"perm{uuid.uuid4().hex[:6]}"
    _sqs(server).create_queue(QueueName=name)
    store = f"sqs:{ACCOUNT}:us-east-1:{name}"
    before = _meta(server, store)
    assert _post(server, store, {"archive": True}, key="k-work").status_code == 403
    assert _meta(server, store) == before
    done = _cli(server, "settings", store, "--archive", "on", key="k-work")
    assert done.returncode == 1 and "403" in done.stderr
    with pytest.raises(ClientError) as e:
        _sqs(server, "AKIAWORK", "s-work").set_queue_attributes(
            QueueUrl=f"{server.url}/{ACCOUNT}/{name}", Attributes={"spoolq:Archive": "true"})
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    assert _meta(server, store) == before
    assert _post(server, store, {"archive": True}).json()["archive"] is True


def test_sqs_queues_keep_sqs_ranges_and_dead_letter_rules(server: Server) -> None:
    sqs = _sqs(server)
    name = f"rng{uuid.uuid4().hex[:6]}"
    sqs.create_queue(QueueName=name)
    sqs.create_queue(QueueName=name + "-f.fifo", Attributes={"FifoQueue": "true"})
    store = f"sqs:{ACCOUNT}:us-east-1:{name}"
    ok(_cli(server, "send", name.lower() + "-emo", "1"))
    before = _meta(server, store)
    for body, words in [
        ({"delay": 901}, "delay must be between 0 and 900"),
        ({"retention": 1_209_601}, "retention must be between 60 and 1209600"),
        ({"dead_letter": {"queue": f"{store}-f.fifo", "max_receives": 3}}, "FIFO"),
        ({"dead_letter": {"queue": name.lower() + "-emo", "max_receives": 3}}, "same account and region"),
        ({"dead_letter": {"queue": store + "-x", "max_receives": 1001}}, "max_receives must be between 1 and 1000"),
    ]:
        r = _post(server, store, body)
        assert r.status_code == 400 and words in r.text, (body, r.text)
        assert _meta(server, store) == before
    # what the settings API sets, SQS clients read back as their attributes
    sqs.create_queue(QueueName=name + "-dlq")
    r = _post(server, store, {"visibility_timeout": 45, "dead_letter": {"queue": store + "-dlq", "max_receives": 4}})
    assert r.status_code == 200, r.text
    attrs = sqs.get_queue_attributes(QueueUrl=f"{server.url}/{ACCOUNT}/{name}",
                                     AttributeNames=["All"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "45"
    assert json.loads(attrs["RedrivePolicy"]) == {
        "deadLetterTargetArn": f"arn:aws:sqs:us-east-1:{ACCOUNT}:{name}-dlq", "maxReceiveCount": 4}


def test_archive_as_an_sqs_attribute(server: Server) -> None:
    sqs = _sqs(server)
    name = f"arc{uuid.uuid4().hex[:6]}"
    url = sqs.create_queue(QueueName=name, Attributes={"spoolq:Archive": "true"})["QueueUrl"]
    store = f"sqs:{ACCOUNT}:us-east-1:{name}"
    assert _get(server, store).json()["archive"] is True
    all_attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert not any(k.startswith("spoolq:") for k in all_attrs)  # "All" is Amazon's attributes
    named = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
        "spoolq:Archive", "spoolq:ArchiveRetentionPeriod"])["Attributes"]
    assert named == {"spoolq:Archive": "true", "spoolq:ArchiveRetentionPeriod": "2592000"}
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"spoolq:ArchiveRetentionPeriod": "86400"})
    assert _get(server, store).json()["archive_retention"] == 86400
    before = _meta(server, store)
    for attrs in ({"spoolq:Archive": "maybe"}, {"spoolq:ArchiveRetentionPeriod": "60"},
                  {"spoolq:Archive": "false", "spoolq:Nope": "1"}):
        with pytest.raises(ClientError) as e:
            sqs.set_queue_attributes(QueueUrl=url, Attributes=attrs)
        assert e.value.response["Error"]["Code"] in ("InvalidAttributeValue", "InvalidAttributeName"), attrs
        assert _meta(server, store) == before
    # CreateQueue on the existing queue with the same value is idempotent, another value is refused
    sqs.create_queue(QueueName=name, Attributes={"spoolq:Archive": "true"})
    with pytest.raises(ClientError):
        sqs.create_queue(QueueName=name, Attributes={"spoolq:Archive": "false"})


def test_queue_defaults_in_the_config_file(tmp_path: Path) -> None:
    config = "queue_defaults:\n  archive: true\n  archive_retention: 7d\n"
    with running_server(tmp_path, keys=False, config_text=config, workers=1, threads=4) as server:
        requests.post(f"{server.url}/queue/1/emo/send", json=1, timeout=10).raise_for_status()
        requests.put(f"{server.url}/mq/mqq", timeout=10).raise_for_status()
        sqs = _sqs(server)
        sqs.create_queue(QueueName="plain")
        sqs.create_queue(QueueName="off", Attributes={"spoolq:Archive": "false"})
        for store, archive in [("emo", True), ("mq:mqq", True), (f"sqs:{ACCOUNT}:us-east-1:plain", True),
                               (f"sqs:{ACCOUNT}:us-east-1:off", False)]:
            got = _get(server, store).json()
            assert (got["archive"], got["archive_retention"]) == (archive, 604800), store
    done = spoolq("check-config", "--root", str(tmp_path / "root"), "--config", str(tmp_path / "spoolq.yaml"))
    assert done.returncode == 0 and "new queues keep an archive for 1w" in done.stdout, done
    for bad, words in [("queue_defaults: {archive: maybe}", "archive must be true or false"),
                       ("queue_defaults: {archive: true, archive_retention: 5m}", "archive_retention must be"),
                       ("queue_defaults: {archiv: true}", "unknown key 'archiv' (did you mean 'archive'?)"),
                       ("queue_defaults: [1]", "must be a mapping")]:
        (tmp_path / "bad.yaml").write_text(bad + "\n")
        for command in ("check-config", "serve"):
            done = spoolq(command, "--root", str(tmp_path / "root"), "--config", str(tmp_path / "bad.yaml"),
                          "--port", "1", timeout=60)
            said = done.stdout if command == "check-config" else done.stderr  # check-config: one line per check
            assert done.returncode == 2 and words in said, (command, bad, done)


def test_archive_parameter_on_emodb_sends(server: Server, q: str) -> None:
    h = {"X-BV-API-Key": "k-all"}

    def size(queue: str) -> int:
        return int(requests.get(f"{server.url}/queue/1/{queue}/size", headers=h, timeout=10).json())
    r = requests.post(f"{server.url}/queue/1/{q}/send", params={"archive": "true"}, json={"a": 1}, headers=h,
                      timeout=10)
    assert r.status_code == 200, r.text
    assert _get(server, q).json()["archive"] is True and size(q) == 1  # created with it
    assert requests.post(f"{server.url}/queue/1/{q}/sendbatch", params={"archive": "TRUE"}, json=[1, 2], headers=h,
                         timeout=10).status_code == 200
    before = _meta(server, q)
    for path, body in ((f"/queue/1/{q}/send", 1), (f"/queue/1/{q}/sendbatch", [1, 2]),
                       ("/queue/1/_sendbatch", {q: [1], q + "-new": [2]})):
        r = requests.post(server.url + path, params={"archive": "false"}, json=body, headers=h, timeout=10)
        assert r.status_code == 400 and f"Queue {q} exists with its archive on" in r.text, (path, r.text)
        assert r.headers["X-BV-Exception"] == "java.lang.IllegalArgumentException"
    r = requests.post(f"{server.url}/queue/1/{q}/send", params={"archive": "maybe"}, json=1, headers=h, timeout=10)
    assert (r.status_code, r.text) == (400, '"maybe" must be "true" or "false".')
    assert size(q) == 3 and _meta(server, q) == before
    assert not (server.root / "queues" / f"{q}-new").exists()  # the batch sent nothing anywhere
    r = requests.post(f"{server.url}/dedupq/1/{q}/send", params={"archive": "true"}, json=1, headers=h, timeout=10)
    assert r.status_code == 200
    assert requests.get(f"{server.url}/dedupq/1/{q}/_settings", headers=h, timeout=10).json()["archive"] is True
    ok(_cli(server, "send", q + "-off", "1"))
    r = requests.post(f"{server.url}/queue/1/{q}-off/send", params={"archive": "true"}, json=1, headers=h, timeout=10)
    assert r.status_code == 400 and f"change it with POST /queue/1/{q}-off/_settings" in r.text
