"""Java client libraries against a real ``spoolq serve`` (marker ``clients``): the AWS SDK for Java
v2 (sync and async), Spring Cloud AWS's ``@SqsListener``, jedisque on the Disque door, and EmoDB's own
queue clients (``QueueClient`` and ``DedupQueueClient`` 6.4.9 on EmoDB's Jersey 1 client), with API keys
and on an open server. Each program prints numbered assertions; see programs.py and the programs' own
sources under java/."""

from __future__ import annotations

import uuid

import pytest

from spoolq.testing import spoolq_server
from tests.clients.conftest import IDENTITIES, SQS_ENV
from tests.clients.programs import JavaProgram, run

#: the first run on a machine fetches the dependencies (about 45 s for Maven, 1 min for Go, busy machine)
pytestmark = [pytest.mark.clients, pytest.mark.timeout(900)]


def test_aws_sdk_java_v2_sync_and_async(java_programs: dict[str, JavaProgram]) -> None:
    program = java_programs["aws-sdk-sqs"]
    with spoolq_server(config=IDENTITIES, threads=16) as server:
        run(program.command("io.spoolq.clients.sqs.Main"),
            {"SPOOLQ_URL": server.url, "RUN_ID": f"j{uuid.uuid4().hex[:8]}", **SQS_ENV}, timeout=240)


def test_spring_cloud_aws_sqs_listener(java_programs: dict[str, JavaProgram]) -> None:
    program = java_programs["spring-sqs"]
    with spoolq_server(config=IDENTITIES, threads=16) as server:
        run(program.command("io.spoolq.clients.spring.Main"),
            {"SPOOLQ_URL": server.url, "RUN_ID": f"s{uuid.uuid4().hex[:8]}", **SQS_ENV}, timeout=240)


def test_jedisque_disque_door(java_programs: dict[str, JavaProgram]) -> None:
    program = java_programs["jedisque"]
    with spoolq_server(config=IDENTITIES, disque=True) as server:
        assert server.disque_port is not None
        run(program.command("io.spoolq.clients.disque.Main"),
            {"DISQUE_PORT": str(server.disque_port), "RUN_ID": f"d{uuid.uuid4().hex[:8]}",
             "DISQUE_KEY": "k-client", "DISQUE_READER_KEY": "k-reader"}, timeout=180)


@pytest.mark.parametrize("keys", [True, False], ids=["api-keys", "open"])
def test_emodb_queue_clients(java_programs: dict[str, JavaProgram], keys: bool) -> None:
    program = java_programs["emodb-queue"]
    with spoolq_server(config=IDENTITIES if keys else None) as server:
        run(program.command("io.spoolq.clients.emodb.Main"),
            {"SPOOLQ_URL": server.url, "RUN_ID": f"e{uuid.uuid4().hex[:8]}", "API_KEY": "k-client" if keys else "",
             "READER_KEY": "k-reader", "NOBODY_KEY": "k-nobody"}, timeout=180)
