"""Every benchmark script answers ``--help`` (its usage), without running anything: the first thing a
reader of docs/performance.md types."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*_bench.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_help_prints_the_usage(script: Path) -> None:
    run = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60,
                         cwd=BENCH.parent)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "usage:" in run.stdout
