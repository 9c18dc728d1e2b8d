"""End to end through the SQS door: the AWS CLI, SigV4 verification, and kill -9 during
SendMessageBatch storms (every entry reported Successful is there after the restart)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import BotoCoreError, ClientError

from tests.sqs.harness import SpoolqProcess, client


def _aws() -> str:
    local = Path(sys.executable).with_name("aws")
    found = str(local) if local.exists() else shutil.which("aws")
    if not found:
        pytest.skip("the AWS CLI is not installed (pip install awscli)")
    return found


@pytest.mark.timeout(180)
def test_aws_cli_create_send_receive_delete(spoolq_url: str, tmp_path: Path,
                                            qname: Callable[[str], str]) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
           "AWS_MAX_ATTEMPTS": "1", "AWS_EC2_METADATA_DISABLED": "true"}

    def aws(*args: str) -> Any:
        out = subprocess.run([_aws(), "--endpoint-url", spoolq_url, "--output", "json", "sqs", *args],
                             env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout) if out.stdout.strip() else {}

    url = aws("create-queue", "--queue-name", qname("cli"), "--attributes", "VisibilityTimeout=20")["QueueUrl"]
    assert url == f"{spoolq_url}/123456789012/{qname('cli')}"
    sent = aws("send-message", "--queue-url", url, "--message-body", "hello world",
               "--message-attributes", '{"k": {"DataType": "String", "StringValue": "x"}}')
    assert sent["MD5OfMessageBody"] == "5eb63bbbe01eeed093cb22bb8f5acdc3"
    assert sent["MD5OfMessageAttributes"] == "a45daa70926828a2f0a1db3418e6feb4"  # spec section 1.4
    got = aws("receive-message", "--queue-url", url, "--message-attribute-names", "All",
              "--attribute-names", "All", "--wait-time-seconds", "2")["Messages"]
    assert [m["Body"] for m in got] == ["hello world"]
    assert got[0]["Attributes"]["ApproximateReceiveCount"] == "1"
    aws("delete-message", "--queue-url", url, "--receipt-handle", got[0]["ReceiptHandle"])
    attrs = aws("get-queue-attributes", "--queue-url", url, "--attribute-names", "All")["Attributes"]
    assert attrs["ApproximateNumberOfMessages"] == "0" and attrs["ApproximateNumberOfMessagesNotVisible"] == "0"
    assert url in aws("list-queues", "--queue-name-prefix", qname("cli"))["QueueUrls"]
    aws("delete-queue", "--queue-url", url)


@pytest.mark.timeout(120)
def test_sigv4_verification(tmp_path: Path) -> None:
    config = tmp_path / "spoolq.yaml"
    config.write_text("sqs_credentials:\n  AKIDSPOOLQ: s3cr3t/key+value\n", encoding="utf-8")
    root = tmp_path / "root"
    root.mkdir()
    server = SpoolqProcess(root, workers=1, threads=4, fsync=False, config=config)
    server.start()
    try:
        good = client(server.url, access_key="AKIDSPOOLQ", secret_key="s3cr3t/key+value")
        url = good.create_queue(QueueName="signed")["QueueUrl"]
        good.send_message(QueueUrl=url, MessageBody="x")
        assert good.list_queues()["QueueUrls"] == [url]
        for key, secret, code in (("AKIDSPOOLQ", "wrong", "SignatureDoesNotMatch"),
                                  ("AKIDUNKNOWN", "s3cr3t/key+value", "InvalidClientTokenId")):
            with pytest.raises(ClientError) as info:
                client(server.url, access_key=key, secret_key=secret).list_queues()
            assert info.value.response["Error"]["Code"] == code
            assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_kill_9_during_send_message_batch_storms(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    server = SpoolqProcess(root, workers=2, threads=16, fsync=True)
    server.start()
    try:
        url = client(server.url).create_queue(QueueName="storm")["QueueUrl"]
        fifo = client(server.url).create_queue(QueueName="storm.fifo", Attributes={
            "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
        acknowledged: set[str] = set()
        lock = threading.Lock()
        stop = threading.Event()

        def storm(worker: int) -> None:
            sqs = client(server.url, read_timeout=10)
            n = 0
            while not stop.is_set():
                target = fifo if n % 4 == 0 else url
                entries = [{"Id": f"e{i}", "MessageBody": f"w{worker}-{n}-{i}"} for i in range(10)]
                if target == fifo:
                    for e in entries:
                        e["MessageGroupId"] = f"g{worker}"
                n += 1
                try:
                    reply = sqs.send_message_batch(QueueUrl=target, Entries=entries)
                except (ClientError, BotoCoreError):
                    continue  # the server died mid-request: this batch was never acknowledged
                body_of = {e["Id"]: e["MessageBody"] for e in entries}
                with lock:
                    acknowledged.update(body_of[e["Id"]] for e in reply.get("Successful", []))

        for round_ in range(3):
            stop.clear()
            threads = [threading.Thread(target=storm, args=(w + 10 * round_,)) for w in range(4)]
            for th in threads:
                th.start()
            time.sleep(1.5)
            server.kill()
            stop.set()
            for th in threads:
                th.join(30)
            server.start()
        assert len(acknowledged) > 100, "the storm acknowledged too little to mean anything"
        found: set[str] = set()
        sqs = client(server.url)
        for queue in (url, fifo):
            empty = 0
            while empty < 3:
                got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
                if not got:
                    empty += 1
                    continue
                empty = 0
                found.update(m["Body"] for m in got)
                sqs.delete_message_batch(QueueUrl=queue, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
        print(f"acknowledged {len(acknowledged)}, found {len(found)}")
        missing = acknowledged - found
        assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"
    finally:
        server.stop()
