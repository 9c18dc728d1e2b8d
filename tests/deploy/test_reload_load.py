"""Reloads and graceful stops of a real ``spoolq serve`` under load while every core is kept busy
(:mod:`tests.deploy.reload_load`): every request answered within 5 s, nothing acknowledged lost;
and reloads with mistakes (:mod:`tests.deploy.broken_reloads`): nothing refused, each mistake
reported, the workers kept, then a good reload applied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.deploy.broken_reloads import KINDS, run_broken_reloads
from tests.deploy.reload_load import SLOW_SECONDS, run_reloads, run_stop

pytestmark = [pytest.mark.slow, pytest.mark.alone]
RELOADS = int(os.environ.get("SPOOLQ_RELOADS", "10"))


def test_reloads_under_load_on_busy_cores(tmp_path: Path) -> None:
    """``SPOOLQ_RELOADS`` reloads (default 10; 20 is the round docs/operations.md reports)."""
    figures = run_reloads(tmp_path, rounds=RELOADS)
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


def test_twenty_reloads_with_mistakes_under_load_then_a_good_one(tmp_path: Path) -> None:
    """A malformed permission, broken YAML, an unknown key, a value of the wrong type, a certificate
    that is not one, and new code whose workers fail to boot, in turn: the workers that served keep
    serving (no request refused or failed), every mistake is logged at ERROR and shown by /readyz;
    the good reload after them applies."""
    figures = run_broken_reloads(tmp_path, rounds=20)
    assert figures["sent"] > 100, figures
    # the first errors lead the message: pytest shortens a long one
    assert figures["refused"] == 0 and figures["errors"] == 0 and figures["slow"] == 0, \
        f"first errors {figures['first_errors']}; {figures}"
    assert figures["lost"] == 0, figures
    assert figures["reported"] == 20 and set(figures["reported_by_kind"]) == set(KINDS), figures  # type: ignore[arg-type]
    assert figures["workers_kept"] and figures["applied"], figures
