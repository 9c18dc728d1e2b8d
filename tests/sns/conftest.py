"""Fixtures for the SNS tests: one real spoolq (gunicorn, file store) per session, boto3 clients."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from tests.sqs.harness import REGION, SpoolqProcess


def sns_client(url: str, access_key: str = "testing", secret_key: str = "testing", region: str = REGION) -> Any:
    return boto3.client("sns", endpoint_url=url, region_name=region, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key,
                        config=Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=30))


def sqs_client(url: str, access_key: str = "testing", secret_key: str = "testing", region: str = REGION) -> Any:
    return boto3.client("sqs", endpoint_url=url, region_name=region, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key,
                        config=Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=30))


@pytest.fixture(scope="session")
def sns_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpoolqProcess]:
    root = tmp_path_factory.mktemp("sns-spoolq") / "root"
    root.mkdir()
    server = SpoolqProcess(root, workers=2, threads=16, fsync=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def sns(sns_server: SpoolqProcess) -> Any:
    return sns_client(sns_server.url)


@pytest.fixture(scope="session")
def sqs(sns_server: SpoolqProcess) -> Any:
    return sqs_client(sns_server.url)


@pytest.fixture
def name() -> Callable[[str], str]:
    prefix = secrets.token_hex(4)
    return lambda suffix: f"t{prefix}-{suffix}"


@pytest.fixture
def queue(sqs: Any, name: Callable[[str], str]) -> Callable[..., tuple[str, str]]:
    """Make an SQS queue: (its URL, its ARN)."""

    def make(suffix: str, **attributes: str) -> tuple[str, str]:
        queue_name = name(suffix) + (".fifo" if attributes.get("FifoQueue") == "true" else "")
        url = sqs.create_queue(QueueName=queue_name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return url, arn

    return make


def receive_all(sqs: Any, url: str, expect: int, wait: int = 2) -> list[dict[str, Any]]:
    """Every message of a queue (deleted as received) once ``expect`` arrived or a poll finds none."""
    out: list[dict[str, Any]] = []
    while len(out) < expect:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=wait,
                                  MessageAttributeNames=["All"], AttributeNames=["All"]).get("Messages", [])
        if not got:
            break
        out.extend(got)
        sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                        for i, m in enumerate(got)])
    return out


def root_of(server: SpoolqProcess) -> Path:
    return server.root


def drain(store: Any, queue: str, empty_polls: int = 50) -> Iterator[list[Any]]:
    """Batches of a queue's messages, each acknowledged once the caller had it, until the store
    counts nothing left (a poll may come back empty before the queue is: its cursor met an
    emptied bucket), or ``empty_polls`` polls in a row found nothing."""
    empty = 0
    while empty < empty_polls:
        batch = store.poll(queue, limit=1000, claim_ttl=3600)
        if batch:
            empty = 0
            yield batch
            store.ack(queue, [d.receipt for d in batch])
        elif store.counts(queue).total == 0:
            return
        else:
            empty += 1
