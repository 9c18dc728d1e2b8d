"""A real ``spoolq serve`` (gunicorn, keys on) per test module for the command tests. 127.0.0.1 only."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.spoolq_server import Server, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp: Path = tmp_path_factory.mktemp("cli-e2e")
    with running_server(tmp, keys=True, workers=2, threads=16) as s:
        yield s


@pytest.fixture
def qname() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"
