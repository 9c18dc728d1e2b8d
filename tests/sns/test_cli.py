"""``spoolq topics``, ``spoolq publish`` and ``spoolq subscribe`` against a real spoolq, open and signed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.sns.conftest import receive_all, sns_client, sqs_client
from tests.sqs.harness import SpoolqProcess


def spoolq(url: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spoolq_client", *args, "--url", url], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **(env or {})})


def test_topics_publish_subscribe(sns: Any, sqs: Any, sns_server: SpoolqProcess,
                                  name: Callable[[str], str]) -> None:
    topic_name, queue_name = name("cli"), name("cli-q")
    sns.create_topic(Name=topic_name)
    url = sqs.create_queue(QueueName=queue_name)["QueueUrl"]
    made = spoolq(sns_server.url, "subscribe", topic_name, queue_name, "--raw", "--filter-policy",
                  '{"kind": ["book"]}')
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip().startswith(f"arn:aws:sns:us-east-1:123456789012:{topic_name}:")
    for kind in ("book", "pen"):
        sent = spoolq(sns_server.url, "publish", topic_name, f"a {kind}", "--attribute", f"kind={kind}",
                      "--attribute", "price:Number=12", "--json")
        assert sent.returncode == 0, sent.stderr
        assert json.loads(sent.stdout)["message_id"]
    got = receive_all(sqs, url, 1)
    assert [m["Body"] for m in got] == ["a book"]
    assert got[0]["MessageAttributes"]["price"] == {"DataType": "Number", "StringValue": "12"}
    listed = spoolq(sns_server.url, "topics", "--json")
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in json.loads(listed.stdout) if r["topic"] == topic_name)
    assert row["subscriptions"] == 1 and row["fifo"] is False
    missing = spoolq(sns_server.url, "publish", name("nope"), "m")
    assert missing.returncode == 1 and "no topic" in missing.stderr


def test_signed_requests(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    config = tmp_path / "config.yaml"
    config.write_text("api_keys:\n  - name: all\n    sqs_credentials: [{access_key_id: AKIDCLI, "
                      "secret_access_key: cli/secret+1}]\n    permissions: ['*']\n")
    server = SpoolqProcess(tmp_path / "root", workers=1, threads=4, config=config)
    server.start()
    try:
        sns_client(server.url, "AKIDCLI", "cli/secret+1").create_topic(Name="signed")
        sqs_client(server.url, "AKIDCLI", "cli/secret+1").create_queue(QueueName="q")
        keys = {"AWS_ACCESS_KEY_ID": "AKIDCLI", "AWS_SECRET_ACCESS_KEY": "cli/secret+1"}
        assert spoolq(server.url, "subscribe", "signed", "q", env=keys).returncode == 0
        assert spoolq(server.url, "publish", "signed", "m", env=keys).returncode == 0
        refused = spoolq(server.url, "topics", env={**keys, "AWS_SECRET_ACCESS_KEY": "wrong"})
        assert refused.returncode == 1 and "SignatureDoesNotMatch" in refused.stderr
    finally:
        server.stop()


@pytest.mark.parametrize("bad", [["--attribute", "novalue"], ["--filter-policy", "{not json"]])
def test_usage_mistakes(sns_server: SpoolqProcess, bad: list[str]) -> None:
    command = "publish" if bad[0] == "--attribute" else "subscribe"
    result = spoolq(sns_server.url, command, "t", *(["m"] if command == "publish" else ["q"]), *bad)
    assert result.returncode == 2 and result.stderr
