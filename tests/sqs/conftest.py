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


def as_aws_answers(norm: Any) -> Any:
    """moto's reply with the departures from AWS that AWS-recorded answers show undone, so the
    differential compares spoolq with AWS wherever moto is known to differ:

    * JSON ``__type`` of InvalidParameterValue is ``InvalidParameterValueException`` (moto: the
      legacy code); recorded in LocalStack's AWS snapshots (e.g. test_send_batch_missing_message_group_id_for_fifo_queue);
    * an empty ``Failed`` list is omitted from batch replies (e.g. test_send_message_batch);
    * RemovePermission of an unknown label: "Reason: can't find label." (test_sqs_permission_lifecycle);
    * a policy AddPermission builds has ``"Version": "2008-10-17"`` (test_sqs_permission_lifecycle);
    * QueueAlreadyExists names the attribute that differs (test_create_queue_with_different_attributes_raises_exception):
      moto's generic wording is not compared.
    """
    if not isinstance(norm, dict):
        return norm
    error = norm.get("error")
    if isinstance(error, dict):
        error = dict(error)
        if error.get("QueryErrorCode") == "InvalidParameterValue":
            error["QueryErrorCode"] = "InvalidParameterValueException"
        if isinstance(error.get("Message"), str):
            error["Message"] = error["Message"].replace("can't find label on existing policy.", "can't find label.")
        if error.get("Code") == "QueueAlreadyExists":
            error["Message"] = "<a different value for an attribute>"
        return {**norm, "error": error}
    policy = norm.get("Attributes", {}).get("Policy") if isinstance(norm.get("Attributes"), dict) else None
    if isinstance(policy, str) and policy.startswith('{"Version": "2012-10-17"'):
        attributes = {**norm["Attributes"], "Policy": policy.replace("2012-10-17", "2008-10-17", 1)}
        return {**norm, "Attributes": attributes}
    if norm.get("Failed") == [] and "Successful" in norm:
        return {k: v for k, v in norm.items() if k != "Failed"}
    return norm


def _comparable(norm: Any) -> Any:
    if isinstance(norm, dict) and isinstance(norm.get("error"), dict) and norm["error"].get("Code") == "QueueAlreadyExists":
        return {**norm, "error": {**norm["error"], "Message": "<a different value for an attribute>"}}
    return norm


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
            want, got = as_aws_answers(want), _comparable(got)
            assert got == want, f"step {label!r}: spoolq {got!r} != moto (as AWS answers) {want!r}"

    return run


@pytest.fixture
def sqs(spoolq_url: str) -> Any:
    """A boto3 client for the session's spoolq server."""
    return client(spoolq_url)


@pytest.fixture(params=["json", "query"])
def aws_sqs(spoolq_url: str, request: pytest.FixtureRequest) -> Any:
    """A boto3 client of the session's spoolq server in each protocol, as the AWS-recorded suites
    run every test with a JSON client and a Query client."""
    return client(spoolq_url, protocol=request.param)


@pytest.fixture
def qname(request: pytest.FixtureRequest) -> Callable[[str], str]:
    token = secrets.token_hex(3)

    def make(suffix: str = "q") -> str:
        base = "".join(c if c.isalnum() else "-" for c in request.node.name[:40])
        return f"{base}-{token}-{suffix}"

    return make


__all__ = ["REGION", "Path", "Transcript"]
