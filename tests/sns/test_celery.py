"""Celery with kombu's SNS fan-out against a real spoolq: a broadcast task reaches every worker.

Two ``celery worker`` processes each declare their own broadcast queue; kombu creates the topic of
the fanout exchange and subscribes both queues to it (raw delivery); a task sent to the exchange is
one Publish, which spoolq delivers into both queues, and each worker runs it."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.sqs.harness import SpoolqProcess

WORKERS = 2
TEXTS = sorted(["first", "second", "third"])


@pytest.fixture
def celery_env(sns_server: SpoolqProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"SPOOLQ_PORT": str(urlsplit(sns_server.url).port), "PREFIX": f"c{secrets.token_hex(3)}-",
           "OUT": str(tmp_path)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def workers(celery_env: dict[str, str], tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = []
    for i in range(WORKERS):
        log = open(tmp_path / f"worker{i}.log", "wb")  # noqa: SIM115 - closed with the process below
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tests.sns.celery_fanout_app", "worker", "-P", "solo",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"w{i}@%h", "-l", "info"],
            env={**os.environ, **celery_env, "PYTHONPATH": os.getcwd()}, stdout=log, stderr=subprocess.STDOUT))
        log.close()
    try:
        yield procs
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait(what: str, ready: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def test_broadcast_task_reaches_both_workers(sns: Any, celery_env: dict[str, str], tmp_path: Path,
                                             workers: list[subprocess.Popen[bytes]]) -> None:
    topic = f"arn:aws:sns:us-east-1:123456789012:{celery_env['PREFIX']}broadcast_tasks"

    def subscribed() -> bool:
        assert all(p.poll() is None for p in workers), (tmp_path / "worker0.log").read_text()
        topics = {t["TopicArn"] for t in sns.list_topics()["Topics"]}
        return topic in topics and len(sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]) == WORKERS

    _wait("both workers' queues subscribed to the exchange's topic", subscribed)
    from tests.sns.celery_fanout_app import broadcast
    for text in TEXTS:
        broadcast(text)

    def ran() -> list[list[str]]:  # in any order: the queues are standard queues
        return [sorted(f.read_text().split()) for f in sorted(tmp_path.glob("worker-*"))]

    _wait("each worker ran every broadcast task", lambda: ran() == [TEXTS] * WORKERS, timeout=30)
    time.sleep(1)  # nothing more arrives: each worker ran each task once
    assert ran() == [TEXTS] * WORKERS
