"""The AWS CLI's ``aws sns`` against a real spoolq (the CLI spoolq's dev extra installs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.sns.conftest import receive_all
from tests.sqs.harness import SpoolqProcess

AWS = shutil.which("aws", path=str(Path(sys.executable).parent)) or shutil.which("aws")


def aws(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "any", "AWS_SECRET_ACCESS_KEY": "any", "AWS_DEFAULT_REGION": "us-east-1"}
    assert AWS is not None
    return subprocess.run([AWS, "--endpoint-url", url, "--output", "json", *args], capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.skipif(AWS is None, reason="the AWS CLI is not installed")
def test_aws_sns(sns_server: SpoolqProcess, sqs: Any, name: Callable[[str], str]) -> None:
    topic = json.loads(aws(sns_server.url, "sns", "create-topic", "--name", name("cli")).stdout)["TopicArn"]
    url = sqs.create_queue(QueueName=name("cli-q"))["QueueUrl"]
    queue_arn = f"arn:aws:sqs:us-east-1:123456789012:{name('cli-q')}"
    made = aws(sns_server.url, "sns", "subscribe", "--topic-arn", topic, "--protocol", "sqs",
               "--notification-endpoint", queue_arn, "--attributes", "RawMessageDelivery=true")
    assert made.returncode == 0, made.stderr
    sent = aws(sns_server.url, "sns", "publish", "--topic-arn", topic, "--message", "from the cli",
               "--message-attributes", '{"kind": {"DataType": "String", "StringValue": "book"}}')
    assert sent.returncode == 0 and json.loads(sent.stdout)["MessageId"], sent.stderr
    (message,) = receive_all(sqs, url, 1)
    assert message["Body"] == "from the cli" and message["MessageAttributes"]["kind"]["StringValue"] == "book"
    missing = aws(sns_server.url, "sns", "get-topic-attributes", "--topic-arn", topic + "-none")
    assert missing.returncode != 0 and "(NotFound)" in missing.stderr and "Topic does not exist" in missing.stderr
