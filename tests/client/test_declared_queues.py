"""Queues declared in the config file (``queues:``): checked by ``check-config`` one line per mistake,
made by ``spoolq serve`` before it serves, brought to changed settings on ``SIGHUP``, never emptied.

The store is the real file store; the server is a real ``spoolq serve`` (gunicorn); SQS queues are
read back with boto3."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import boto3
import pytest
import requests
from botocore.config import Config

from spoolq.config.declared_queues import (
    DeclarationsRefused,
    apply_declarations,
    parse_declarations,
)
from spoolq.settings.server import load_settings
from spoolq.store import FileStore, OutgoingMessage, QueueKind
from tests.e2e.spoolq_server import running_server

CHECKOUT = Path(__file__).resolve().parents[2]

#: the compose example's declarations (docs/operations.md): an SQS FIFO queue, its dead-letter
#: queue, and an EmoDB queue with its archive on
DECLARED = """\
queues:
  - name: orders-dlq.fifo
    door: sqs
    region: eu-west-1
    retention: 14d
  - name: orders.fifo
    door: sqs
    region: eu-west-1
    content_based_dedup: true
    visibility_timeout: 45s
    dead_letter: {queue: orders-dlq.fifo, max_receives: 5}
    tags: {team: shop}
  - name: audit
    door: emodb
    archive: true
    archive_retention: 30d
"""

#: ten broken declarations, each with the line check-config must print for it
BROKEN = [
    ("- {door: sqs}", "queues[0]: a queue needs a name"),
    ("- {name: Orders, door: emodb}", "queues[0] (Orders): 'Orders' is not a valid name: EmoDB queue names"),
    ("- {name: jobs, door: rabbit}", "queues[0] (jobs): door must be one of dedup, dedupq, disque, emodb, mq"),
    ("- {name: jobs, door: sqs, visibility_timeout: 13h}",
     "queues[0] (jobs): visibility_timeout must be between 0 and 43200, got 46800"),
    ("- {name: slow, door: sqs, delay: 20m}", "queues[0] (slow): delay must be between 0 and 900, got 1200"),
    ("- {name: big, door: mq, max_message_bytes: lots}",
     'queues[0] (big): max_message_bytes must be a whole number, got "lots"'),
    ("- {name: orders.fifo, door: sqs, dead_letter: {queue: nowhere.fifo, max_receives: 5}}",
     "queues[0] (orders.fifo): the dead-letter queue 'nowhere.fifo' is not declared in this file"),
    ("- {name: keep, door: emodb, archive: maybe}", 'queues[0] (keep): archive must be true or false, got "maybe"'),
    ("- {name: tagged, door: disque, region: eu-west-1}", "queues[0] (tagged): region is for SQS queues"),
    ("- {name: typo, door: dedup, retension: 4d}", "queues[0] (typo): unknown key 'retension' (did you mean 'retention'?)"),
]


def _check_config(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "spoolq.yaml"
    config.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    env["PYTHONPATH"] = str(CHECKOUT / "service")
    return subprocess.run([sys.executable, "-m", "spoolq.cli", "check-config", "--root", str(tmp_path / "root"),
                           "--config", str(config)], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize(("entry", "line"), BROKEN, ids=[line.split(":")[0] + str(i) for i, (_e, line)
                                                          in enumerate(BROKEN)])
def test_each_broken_declaration_is_refused_with_its_own_line(tmp_path: Path, entry: str, line: str) -> None:
    import yaml

    with pytest.raises(DeclarationsRefused) as refused:
        parse_declarations(yaml.safe_load(f"queues:\n  {entry}\n"), load_settings({}, environ={}))
    assert len(refused.value.problems) == 1, refused.value.problems
    assert refused.value.problems[0].startswith(f"config: {line}"), refused.value.problems


def test_check_config_prints_every_mistake_on_a_line_of_its_own(tmp_path: Path) -> None:
    entries = "\n".join(f"  {entry}" for entry, _line in BROKEN)
    done = _check_config(tmp_path, f"queues:\n{entries}\n")
    assert done.returncode == 2, done.stdout + done.stderr
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED: ")]
    assert len(failed) == len(BROKEN), done.stdout
    for i, (got, (_entry, want)) in enumerate(zip(failed, BROKEN, strict=True)):
        assert got.startswith(f"FAILED: config: {want.replace('queues[0]', f'queues[{i}]')}"), (got, want)
    assert "ok: config" not in done.stdout and "declared queues" not in done.stdout  # no ok line for that file


def test_check_config_accepts_the_compose_example(tmp_path: Path) -> None:
    done = _check_config(tmp_path, DECLARED)
    assert done.returncode == 0, done.stdout
    assert "ok: 3 declared queues: sqs:123456789012:eu-west-1:orders-dlq.fifo, " in done.stdout


def test_applying_makes_missing_queues_and_changes_only_what_differs(tmp_path: Path) -> None:
    import yaml

    settings = load_settings({"root": tmp_path / "root"}, environ={})
    declared = parse_declarations(yaml.safe_load(DECLARED), settings)
    store = FileStore(tmp_path / "root", fsync=False)
    try:
        store.create_queue("audit", QueueKind.STANDARD)
        store.send("audit", OutgoingMessage(b"kept"))
        first = [(a.queue, a.outcome) for a in apply_declarations(store, declared)]
        assert first == [("sqs:123456789012:eu-west-1:orders-dlq.fifo", "created"),
                         ("sqs:123456789012:eu-west-1:orders.fifo", "created"), ("audit", "changed")]
        assert [a.outcome for a in apply_declarations(store, declared)] == ["unchanged"] * 3
        orders = store.get_queue("sqs:123456789012:eu-west-1:orders.fifo")
        assert orders.kind is QueueKind.FIFO and orders.config.content_based_dedup
        assert orders.config.claim_ttl == 45 and orders.config.retention == 345_600  # SQS's default
        assert orders.config.dead_letter is not None and orders.config.dead_letter.max_receives == 5
        assert dict(orders.tags) == {"team": "shop"}
        audit = store.get_queue("audit")
        assert audit.config.archive and audit.config.archive_retention == 30 * 86_400
        assert store.size("audit") == 1, "applying never touches messages"
        # a setting set elsewhere that the declaration does not name keeps its value
        store.change_queue("audit", lambda info: replace(info, config=replace(info.config, delay=7.0)))
        assert [a.outcome for a in apply_declarations(store, declared)] == ["unchanged"] * 3
        assert store.get_queue("audit").config.delay == 7.0
    finally:
        store.close()


def test_a_queue_of_another_kind_is_left_as_it_is_and_reported(tmp_path: Path) -> None:
    import yaml

    store = FileStore(tmp_path / "root", fsync=False)
    try:
        store.create_queue("sqs:123456789012:eu-west-1:orders-dlq.fifo", QueueKind.STANDARD)
        store.send("sqs:123456789012:eu-west-1:orders-dlq.fifo", OutgoingMessage(b"x"))
        declared = parse_declarations(yaml.safe_load(DECLARED), load_settings({}, environ={}))
        applied = {a.queue: a for a in apply_declarations(store, declared)}
        dlq = applied["sqs:123456789012:eu-west-1:orders-dlq.fifo"]
        assert dlq.outcome == "refused" and "exists as a standard queue, declared fifo" in dlq.reason
        assert applied["sqs:123456789012:eu-west-1:orders.fifo"].outcome == "refused"  # its DLQ is no FIFO queue
        assert applied["audit"].outcome == "created"
        assert store.size("sqs:123456789012:eu-west-1:orders-dlq.fifo") == 1
    finally:
        store.close()


def test_nodes_applying_at_the_same_moment_all_succeed(tmp_path: Path) -> None:
    """Several nodes sharing a root start (or reload) together: each applies the same declarations."""
    import yaml

    declared = parse_declarations(yaml.safe_load(DECLARED), load_settings({}, environ={}))
    stores = [FileStore(tmp_path / "root", fsync=False, node_id=f"n{i}") for i in range(4)]
    outcomes: list[list[str]] = []
    errors: list[BaseException] = []

    def apply(store: FileStore) -> None:
        try:
            outcomes.append([a.outcome for a in apply_declarations(store, declared)])
        except BaseException as e:  # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=apply, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        assert all("refused" not in o for o in outcomes), outcomes
        assert stores[0].list_queues() == ["audit", "sqs:123456789012:eu-west-1:orders-dlq.fifo",
                                           "sqs:123456789012:eu-west-1:orders.fifo"]
    finally:
        for s in stores:
            s.close()


def _sqs(url: str) -> object:
    return boto3.client("sqs", endpoint_url=url, region_name="eu-west-1", aws_access_key_id="x",
                        aws_secret_access_key="x", config=Config(retries={"max_attempts": 1}))


def test_serve_makes_the_declared_queues_and_a_reload_applies_changed_settings(tmp_path: Path) -> None:
    with running_server(tmp_path, keys=False, workers=1, threads=4, config_text=DECLARED) as server:
        sqs = _sqs(server.url)
        url = sqs.get_queue_url(QueueName="orders.fifo")["QueueUrl"]  # type: ignore[attr-defined]
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]  # type: ignore[attr-defined]
        assert attrs["FifoQueue"] == "true" and attrs["ContentBasedDeduplication"] == "true"
        assert attrs["VisibilityTimeout"] == "45" and '"maxReceiveCount":5' in attrs["RedrivePolicy"].replace(" ", "")
        assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "shop"}  # type: ignore[attr-defined]
        sqs.send_message(QueueUrl=url, MessageBody="kept", MessageGroupId="g")  # type: ignore[attr-defined]
        audit = requests.get(f"{server.url}/queue/1/audit/_settings", timeout=10).json()
        assert audit["archive"] is True and audit["archive_retention"] == 30 * 86_400

        assert server.config is not None and server.proc is not None
        server.config.write_text(DECLARED.replace("visibility_timeout: 45s", "visibility_timeout: 2m")
                                 .replace("archive_retention: 30d", "archive_retention: 8w")
                                 .replace("{team: shop}", "{team: shop, tier: gold}"))
        os.kill(server.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]  # type: ignore[attr-defined]
            if attrs["VisibilityTimeout"] == "120":
                break
            time.sleep(0.2)
        assert attrs["VisibilityTimeout"] == "120"
        assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "shop", "tier": "gold"}  # type: ignore[attr-defined]
        audit = requests.get(f"{server.url}/queue/1/audit/_settings", timeout=10).json()
        assert audit["archive_retention"] == 8 * 7 * 86_400
        assert attrs["ApproximateNumberOfMessages"] == "1", "a reload never touches messages"
        log = (tmp_path / "server.log").read_text()
        assert "queue sqs:123456789012:eu-west-1:orders.fifo: created" in log
        # what the reload changed, named: the entries, then each queue's settings with their values
        assert "reload: declared queues changed: orders.fifo, audit" in log
        assert "queue sqs:123456789012:eu-west-1:orders.fifo: changed (visibility_timeout 45 -> 120, tags)" in log
        assert "queue audit: changed (archive_retention 2592000 -> 4838400)" in log
