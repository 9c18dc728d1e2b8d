"""Restarts and upgrades under load refuse nothing and lose nothing (:mod:`tests.deploy.restart_load`).

Each test runs the mixed load (curl without retries, boto3 and redis-py with their defaults,
EmoDB/SQS/Disque senders, long pollers and blocked GETJOBs acking) across two generations
changes, then drains the queues. The figures are printed (``-s``). Nothing is lost and nothing is
late: every message sent was received by the load's own long polls within the drain, none only by
the short polls that sweep the queues afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.deploy.restart_load import run

pytestmark = pytest.mark.slow


def _check(how: str, figures: dict[str, int]) -> None:
    print(json.dumps({"how": how, **figures}))
    assert figures["sent"] > 100, figures
    assert figures["errors"] == 0 and figures["refused"] == 0, figures
    assert figures["lost"] == 0 and figures["late"] == 0, figures
    assert figures["duplicates_within_an_answer"] == 0, figures


def test_restart_on_sockets_kept_by_the_service_manager(tmp_path: Path) -> None:
    """``systemctl restart`` with the socket units: SIGTERM, then a new process on the same sockets."""
    _check("restart", run("restart", tmp_path, rounds=2))


def test_upgrade_new_code_on_disk_then_restart(tmp_path: Path) -> None:
    _check("upgrade", run("upgrade", tmp_path, rounds=2))


def test_upgrade_in_place_with_usr2(tmp_path: Path) -> None:
    """``kill -USR2`` (a new generation runs the new code on the same sockets), then SIGTERM the old."""
    _check("usr2", run("usr2", tmp_path, rounds=2))
