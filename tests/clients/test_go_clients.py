"""The AWS SDK for Go v2 against a real ``spoolq serve`` (marker ``clients``): the scenarios of the
Java SDK program, with goroutines for the concurrent ones. See programs.py and go/sqs-sdk/."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from spoolq.testing import spoolq_server
from tests.clients.conftest import IDENTITIES, SQS_ENV
from tests.clients.programs import build_go, run

#: the first run on a machine fetches the dependencies (about 45 s for Maven, 1 min for Go, busy machine)
pytestmark = [pytest.mark.clients, pytest.mark.timeout(900)]


def test_aws_sdk_go_v2(go_bin: Path) -> None:
    program = build_go("sqs-sdk", go_bin)
    with spoolq_server(config=IDENTITIES, threads=16) as server:
        run([str(program)], {"SPOOLQ_URL": server.url, "RUN_ID": f"g{uuid.uuid4().hex[:8]}", **SQS_ENV}, timeout=240)
