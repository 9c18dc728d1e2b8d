"""Reloads and graceful stops of a real ``spoolq serve`` under load while every core is kept busy
(:mod:`tests.deploy.reload_load`): every request answered within 5 s, nothing acknowledged lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.reload_load import SLOW_SECONDS, run_reloads, run_stop

pytestmark = pytest.mark.slow


def test_twenty_reloads_under_load_on_busy_cores(tmp_path: Path) -> None:
    figures = run_reloads(tmp_path, rounds=20)
    assert figures["sent"] > 100, figures
    assert figures["slow"] == 0 and figures["lost"] == 0 and figures["errors"] == 0, figures


def test_a_reload_keeps_serving_while_the_new_workers_boot_slowly(tmp_path: Path) -> None:
    """New workers that take longer than a client waits to build the app: the old ones serve
    until the new ones report ready, so no request waits for the boot."""
    figures = run_reloads(tmp_path, rounds=2, slow_boot=SLOW_SECONDS + 1)
    assert figures["slow"] == 0 and figures["lost"] == 0 and figures["errors"] == 0, figures


def test_a_graceful_stop_under_load_on_busy_cores(tmp_path: Path) -> None:
    """SIGTERM under load, then a new server on the same root: the requests the old one had are
    answered, the ones made while no server listens are refused at once (never left waiting),
    and every acknowledged send is delivered by the new one."""
    figures = run_stop(tmp_path)
    assert figures["sent"] > 20, figures
    assert figures["slow"] == 0 and figures["lost"] == 0 and figures["errors"] == 0, figures
