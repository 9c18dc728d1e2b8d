"""Fixtures for the store tests: a fresh root, and child processes that are always reaped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import Child


@pytest.fixture
def children() -> Iterator[list[Child]]:
    """Start children with ``children.append(Child(...))``; all are SIGKILLed and reaped at teardown."""
    started: list[Child] = []
    yield started
    for child in started:
        child.close()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"
