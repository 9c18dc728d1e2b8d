"""spoolq's pytest plugin: a real ``spoolq serve`` per test (``spoolq_server``) or per session.

Installed with spoolq (the ``pytest11`` entry point ``spoolq``); nothing runs and nothing heavy is
imported until a test asks for a fixture:

``spoolq_server``
    a :class:`~spoolq.testing.RunningSpoolq` for one test: a fresh data directory and port,
    stopped when the test ends.
``spoolq_server_session``
    one for the whole session (faster when tests do not need an empty server).
``spoolq_queues`` / ``spoolq_session_queues``
    the queues those servers declare (default: none); override them in a ``conftest.py``, or mark
    a test ``@pytest.mark.spoolq_queues({"name": "jobs", "door": "sqs"}, ...)`` to give
    ``spoolq_server`` its own. Entries are the config file's ``queues:`` entries.

``pytest --spoolq-in-memory`` (or ``spoolq_in_memory = true`` in the ini file) runs every server
with ``spoolq serve --in-memory``: the data in memory, nothing flushed, for suites that want speed
over durability.

Each server runs open on 127.0.0.1 (see :func:`spoolq.testing.spoolq_server`). Its ``env`` holds
``AWS_ENDPOINT_URL_SQS`` (and ``_SNS``) and the rest of what AWS SDKs read; ``sqs_client()``,
``sns_client()`` (topics that fan out to the server's queues) and ``redis_client()`` give ready
clients. Outside pytest use :func:`spoolq.testing.spoolq_server`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from spoolq.testing import RunningSpoolq


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spoolq")
    group.addoption("--spoolq-in-memory", action="store_true", default=None, dest="spoolq_in_memory",
                    help="run the spoolq_server fixtures with `spoolq serve --in-memory` (no durability, faster)")
    parser.addini("spoolq_in_memory", type="bool", default=False,
                  help="run the spoolq_server fixtures with `spoolq serve --in-memory`")


def _in_memory(config: pytest.Config) -> bool:
    option = config.getoption("spoolq_in_memory")
    return bool(option) if option is not None else bool(config.getini("spoolq_in_memory"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spoolq_queues(*queues): queues the spoolq_server fixture declares "
                                       "(entries of the config file's queues: section)")


@pytest.fixture
def spoolq_queues() -> Sequence[Mapping[str, Any]]:
    """The queues ``spoolq_server`` declares (override in a conftest.py; a test's
    ``spoolq_queues`` mark adds its own)."""
    return []


@pytest.fixture(scope="session")
def spoolq_session_queues() -> Sequence[Mapping[str, Any]]:
    """The queues ``spoolq_server_session`` declares (override in a conftest.py)."""
    return []


@pytest.fixture
def spoolq_server(request: pytest.FixtureRequest,
                  spoolq_queues: Sequence[Mapping[str, Any]]) -> Iterator[RunningSpoolq]:
    """A real spoolq for this test (see the module docstring)."""
    from spoolq.testing import spoolq_server as start

    queues = list(spoolq_queues)
    for mark in request.node.iter_markers("spoolq_queues"):
        queues.extend(mark.args)
    with start(queues=queues, in_memory=_in_memory(request.config)) as server:
        yield server


@pytest.fixture(scope="session")
def spoolq_server_session(request: pytest.FixtureRequest,
                          spoolq_session_queues: Sequence[Mapping[str, Any]]) -> Iterator[RunningSpoolq]:
    """A real spoolq shared by every test of the session."""
    from spoolq.testing import spoolq_server as start

    with start(queues=list(spoolq_session_queues), in_memory=_in_memory(request.config)) as server:
        yield server
