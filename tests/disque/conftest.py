from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.disque.disque_server import DisqueServer


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DisqueServer]:
    tmp = tmp_path_factory.mktemp("disque")
    s = DisqueServer(root=tmp / "root", log=tmp / "server.log")
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def r(server: DisqueServer) -> Iterator[redis.Redis]:
    c = server.client()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def q(request: pytest.FixtureRequest) -> str:
    """A queue name unique to the test."""
    return "t-" + request.node.name.replace("[", "-").replace("]", "")[:60]


def root_of(server: DisqueServer) -> Path:
    return server.root
