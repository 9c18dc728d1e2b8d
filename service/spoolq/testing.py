"""A real spoolq for other projects' tests: :func:`spoolq_server`, a context manager.

It starts ``spoolq serve`` (gunicorn, the real file store) in a child process on a temporary data
directory and a free 127.0.0.1 port, waits until ``/readyz`` answers, hands over a
:class:`RunningSpoolq` (its URL, ready-made boto3 and redis clients, the environment variables
AWS SDKs read), and on leaving stops it (SIGTERM, then SIGKILL of its process group) and removes
the directory it made::

    from spoolq.testing import spoolq_server

    with spoolq_server(queues=[{"name": "jobs", "door": "sqs"}]) as spoolq:
        sqs = spoolq.sqs_client()
        url = sqs.get_queue_url(QueueName="jobs")["QueueUrl"]

``queues`` are declared queues, as the config file's ``queues:`` section lists them
(:mod:`spoolq.config.declared_queues`): they exist when the block starts. The service runs open (no API
keys; loopback only) unless ``config`` adds ``api_keys``; sends are not flushed to disk (a test's
data directory needs no durability) unless ``fsync=True``. ``in_memory=True`` serves with ``spoolq
serve --in-memory`` instead: the data directory is in memory (``/dev/shm``), made and removed by
the server, for suites that want speed over durability. The pytest plugin
(:mod:`spoolq.pytest_plugin`) wraps this in the ``spoolq_server`` fixtures.

Importing this module costs nothing: boto3 and redis are imported by the calls that need them,
and their absence is named in the error.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the SQS account and credentials the clients and :attr:`RunningSpoolq.env` use (the service runs open)
ACCOUNT_ID = "123456789012"
REGION = "us-east-1"


class SpoolqDidNotStart(RuntimeError):
    """``spoolq serve`` exited or did not become ready in time; the message holds its log's end."""


@dataclass(frozen=True)
class RunningSpoolq:
    """A spoolq serving for a test."""

    url: str  # http://127.0.0.1:<port>
    root: Path  # its data directory
    config: Path  # the config file it was started with
    pid: int  # the ``spoolq serve`` process (gunicorn's master)
    disque_port: int | None = None  # the Disque (RESP) door's port, when started with disque=True
    region: str = REGION
    log: Path = field(default_factory=lambda: Path(os.devnull))

    @property
    def env(self) -> dict[str, str]:
        """What AWS SDKs and the spoolq CLI read to reach this server (``os.environ.update(...)``,
        ``monkeypatch.setenv``, or a subprocess's ``env``): endpoint, region, dummy credentials."""
        return {"AWS_ENDPOINT_URL_SQS": self.url, "AWS_ENDPOINT_URL_SNS": self.url, "AWS_ENDPOINT_URL": self.url, "AWS_REGION": self.region,
                "AWS_DEFAULT_REGION": self.region, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                "SPOOLQ_URL": self.url}

    def queue_url(self, name: str) -> str:
        """The SQS queue URL of ``name`` (in :attr:`region`)."""
        return f"{self.url}/{ACCOUNT_ID}/{name}"

    def sqs_client(self, **kwargs: Any) -> Any:
        """A boto3 SQS client for this server (``kwargs`` go to ``boto3.client``)."""
        try:
            import boto3
        except ImportError:
            raise ImportError("RunningSpoolq.sqs_client() needs boto3 (pip install boto3)") from None
        options: dict[str, Any] = {"endpoint_url": self.url, "region_name": self.region,
                                   "aws_access_key_id": "test", "aws_secret_access_key": "test"}
        return boto3.client("sqs", **{**options, **kwargs})

    def topic_arn(self, name: str) -> str:
        """The ARN of SNS topic ``name`` (in :attr:`region`)."""
        return f"arn:aws:sns:{self.region}:{ACCOUNT_ID}:{name}"

    def sns_client(self, **kwargs: Any) -> Any:
        """A boto3 SNS client for this server (``kwargs`` go to ``boto3.client``): topics that fan
        out to this server's SQS queues."""
        try:
            import boto3
        except ImportError:
            raise ImportError("RunningSpoolq.sns_client() needs boto3 (pip install boto3)") from None
        options: dict[str, Any] = {"endpoint_url": self.url, "region_name": self.region,
                                   "aws_access_key_id": "test", "aws_secret_access_key": "test"}
        return boto3.client("sns", **{**options, **kwargs})

    def redis_client(self, **kwargs: Any) -> Any:
        """A redis-py client of the Disque door (start with ``disque=True``)."""
        if self.disque_port is None:
            raise RuntimeError("this spoolq serves no Disque door: start it with disque=True")
        try:
            import redis
        except ImportError:
            raise ImportError("RunningSpoolq.redis_client() needs redis (pip install redis)") from None
        return redis.Redis(host="127.0.0.1", port=self.disque_port, **kwargs)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at this moment."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config_text(queues: Sequence[Mapping[str, Any]] = (), config: Mapping[str, Any] | None = None) -> str:
    """The config file for ``queues`` and ``config``'s other sections (JSON is YAML)."""
    body = dict(config or {})
    if queues:
        body["queues"] = [*body.get("queues", []), *queues]
    return json.dumps(body, indent=1) + "\n"


@contextlib.contextmanager
def spoolq_server(*, queues: Sequence[Mapping[str, Any]] = (), config: Mapping[str, Any] | None = None,
                  root: Path | str | None = None, disque: bool = False, workers: int = 1, threads: int = 8,
                  fsync: bool = False, timeout: float = 60.0, in_memory: bool = False,
                  extra_args: Sequence[str] = ()) -> Iterator[RunningSpoolq]:
    """Run ``spoolq serve`` for the duration of the block (see the module docstring). ``root``: a
    data directory to use (kept afterwards); default a temporary one, removed afterwards;
    ``in_memory``: the server's own in memory (not with ``root`` or ``fsync``)."""
    if in_memory and (root is not None or fsync):
        raise ValueError("in_memory=True makes its own data directory, never flushed: leave out root and fsync")
    scratch = Path(tempfile.mkdtemp(prefix="spoolq-test-"))
    data = scratch / "data" if root is None else Path(root)
    config_file = scratch / "spoolq.yaml"
    config_file.write_text(config_text(queues, config))
    log = scratch / "serve.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        for attempt in range(3):  # a free port may be taken before the server binds it
            port, disque_port = free_port(), free_port() if disque else None
            storage = ["--in-memory"] if in_memory else ["--root", str(data), "--fsync", "always" if fsync else "never"]
            cmd = [sys.executable, "-m", "spoolq.cli", "serve", *storage, "--port", str(port),
                   "--config", str(config_file), "--workers", str(workers), "--threads", str(threads), *extra_args]
            if disque_port is not None:
                cmd += ["--disque-port", str(disque_port)]
            env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")
                   and k != "PROMETHEUS_MULTIPROC_DIR"}
            with open(log, "ab") as out:
                proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            url = f"http://127.0.0.1:{port}"
            if _wait_ready(proc, url, timeout):
                break
            _stop(proc)
            proc = None
            text = log.read_text(errors="replace")
            if attempt == 2 or "in use" not in text:
                raise SpoolqDidNotStart(f"spoolq serve did not become ready on {url}; its log ends:\n"
                                        + "\n".join(text.splitlines()[-20:]))
        assert proc is not None
        if in_memory:
            data = _served_root(log)
        yield RunningSpoolq(url=url, root=data, config=config_file, pid=proc.pid, disque_port=disque_port, log=log)
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(scratch, ignore_errors=True)


def _served_root(log: Path) -> Path:
    """The data directory ``spoolq serve --in-memory`` made, as its start line in ``log`` names it."""
    found = re.search(r"--in-memory: data in (\S+) \(", log.read_text(errors="replace"))
    if found is None:
        raise SpoolqDidNotStart(f"spoolq serve --in-memory did not name its data directory in {log}")
    return Path(found.group(1))


def _wait_ready(proc: subprocess.Popen[bytes], url: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=max(1.0, deadline - time.monotonic())) as answer:
                if answer.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)
    return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (graceful: long polls are answered), then SIGKILL of the whole group."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # workers or a Disque child left behind
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
