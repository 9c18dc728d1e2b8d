"""Fixtures for the SQS tests: one spoolq gunicorn and one moto server per session, and the
differential runner that plays a scenario against both and compares every observable field."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.sqs.harness import REGION, SpoolqProcess, client, moto_server, normalise


@pytest.fixture(scope="session")
def spoolq_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("sqs-spoolq") / "root"
    root.mkdir()
    server = SpoolqProcess(root, workers=2, threads=32, fsync=True)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    with moto_server() as url:
        yield url


class Transcript:
    """Runs boto3 calls against one side and records each normalised reply."""

    def __init__(self, side: str, url: str, prefix: str) -> None:
        self.side = side
        self.url = url
        self.prefix = prefix
        self.sqs = client(url)
        self.log: list[tuple[str, Any]] = []

    def name(self, suffix: str) -> str:
        return f"{self.prefix}-{suffix}"

    def call(self, op: str, *, label: str | None = None, compare: bool = True,
             message: bool = True, **kwargs: Any) -> Any:
        """Call ``op``; record the reply unless ``compare`` is False. Returns the reply or the ClientError.

        ``message=False`` compares an error's code, class and status but not its wording
        (where moto's wording is not AWS's).
        """
        try:
            reply: Any = getattr(self.sqs, op)(**kwargs)
        except ClientError as exc:
            reply = exc
        if compare:
            norm = normalise(reply, self.url)
            if not message and "error" in norm:
                norm["error"].pop("Message", None)
            self.log.append((label or op, norm))
        return reply

    def record(self, label: str, value: Any) -> None:
        """Record a derived value (e.g. bodies in received order) for comparison."""
        self.log.append((label, value))


Scenario = Callable[[Transcript], None]


@pytest.fixture
def differential(spoolq_url: str, moto_url: str, request: pytest.FixtureRequest) -> Callable[[Scenario], None]:
    """Play a scenario against moto and spoolq and assert the transcripts agree step by step."""

    def run(scenario: Scenario) -> None:
        prefix = f"{request.node.name[:30].replace('[', '-').replace(']', '')}-{secrets.token_hex(3)}"
        prefix = "".join(c if c.isalnum() or c in "-_" else "-" for c in prefix)
        moto = Transcript("moto", moto_url, prefix)
        scenario(moto)
        spoolq = Transcript("spoolq", spoolq_url, prefix)
        scenario(spoolq)
        assert len(moto.log) == len(spoolq.log), [s for s, _ in spoolq.log]
        for (label, want), (_, got) in zip(moto.log, spoolq.log, strict=True):
            assert got == want, f"step {label!r}: spoolq {got!r} != moto {want!r}"

    return run


@pytest.fixture
def sqs(spoolq_url: str) -> Any:
    """A boto3 client for the session's spoolq server."""
    return client(spoolq_url)


@pytest.fixture
def qname(request: pytest.FixtureRequest) -> Callable[[str], str]:
    token = secrets.token_hex(3)

    def make(suffix: str = "q") -> str:
        base = "".join(c if c.isalnum() else "-" for c in request.node.name[:40])
        return f"{base}-{token}-{suffix}"

    return make


__all__ = ["REGION", "Path", "Transcript"]
