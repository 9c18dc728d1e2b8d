"""Test helpers for the SQS door: servers on 127.0.0.1, boto3 clients, and response normalising.

* :class:`SpoolqProcess` runs ``spoolq serve`` (real gunicorn, real FileStore) on a free
  loopback port in its own process group, so a test can ``kill -9`` the whole tree.
* :func:`moto_server` runs moto's in-process server (``ThreadedMotoServer``) on loopback.
* :func:`client` builds a boto3 SQS client that always has an ``endpoint_url`` on
  127.0.0.1, dummy credentials and a region, and never retries; ``protocol="query"`` gives
  one that speaks the Query protocol (:mod:`tests.sqs.query_model`).
* :func:`normalise` turns a boto3 reply or error into the fields that must agree
  between moto and spoolq: ids, receipt handles, sequence numbers and timestamps are
  replaced by placeholders, queue URLs lose their host.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import botocore
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

REGION = "us-east-1"
ACCOUNT = "123456789012"
PLACEHOLDER_KEYS = {"MessageId", "ReceiptHandle", "SequenceNumber", "TaskHandle", "RequestId",
                    "SentTimestamp", "ApproximateFirstReceiveTimestamp", "CreatedTimestamp",
                    "LastModifiedTimestamp", "SenderId", "StartedTimestamp", "NextToken"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=1)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


class SpoolqProcess:
    """``spoolq serve`` on a loopback port over ``root``; restartable, killable with SIGKILL."""

    def __init__(self, root: Path, workers: int = 2, threads: int = 16, fsync: bool = True,
                 config: Path | None = None) -> None:
        self.root = root
        self.workers = workers
        self.threads = threads
        self.fsync = fsync
        self.config = config
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [sys.executable, "-c", "import sys; from spoolq.cli import main; sys.exit(main())", "serve",
               "--root", str(self.root), "--port", str(self.port), "--workers", str(self.workers),
               "--threads", str(self.threads), "--fsync", "always" if self.fsync else "never"]
        if self.config is not None:
            cmd += ["--config", str(self.config)]
        log = open(self.root.parent / f"spoolq-{self.port}.log", "ab")  # noqa: SIM115
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True, env=env)
        log.close()
        wait_http(f"{self.url}/healthz")

    def kill(self) -> None:
        """SIGKILL the master and every worker at once (the whole process group)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()
            self.proc = None


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's in-process server on a loopback port; yields its URL."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def client(endpoint_url: str, region: str = REGION, access_key: str = "testing",
           secret_key: str = "testing", read_timeout: float = 40.0, protocol: str = "json") -> Any:
    assert endpoint_url.startswith("http://127.0.0.1:"), "tests talk to loopback only"
    config = Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=read_timeout, connect_timeout=5)
    if protocol == "query":
        from tests.sqs.query_model import query_client

        cache = Path(tempfile.gettempdir()) / f"spoolq-botocore-{botocore.__version__}"
        return query_client(endpoint_url, cache, region, access_key, secret_key, config)
    assert protocol == "json", protocol
    return boto3.client("sqs", endpoint_url=endpoint_url, region_name=region, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key, config=config)


def _scrub(value: Any, base_url: str) -> Any:
    if isinstance(value, dict):
        return {k: (f"<{k}>" if k in PLACEHOLDER_KEYS else _scrub(v, base_url)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, base_url) for v in value]
    if isinstance(value, str):
        return value.replace(base_url, "<URL>")
    return value


def normalise(reply: Any, base_url: str) -> Any:
    """The comparable part of a boto3 reply (dict) or ClientError."""
    if isinstance(reply, ClientError):
        err = reply.response.get("Error", {})
        return {"error": {"Code": err.get("Code"), "Message": err.get("Message"),
                          "QueryErrorCode": err.get("QueryErrorCode"), "Type": err.get("Type"),
                          "class": type(reply).__name__,
                          "status": reply.response.get("ResponseMetadata", {}).get("HTTPStatusCode")}}
    body = {k: v for k, v in reply.items() if k != "ResponseMetadata"}
    return _scrub(body, base_url)
