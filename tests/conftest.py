"""Fixtures shared by every test tier."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from spoolq.store import FileStore

#: the HTTP doors' Flask test-client fixtures (app, client, file_store, root)
pytest_plugins = ["tests.http_fixtures"]

#: Markers of the tiers that are not the fast one; a test with none of them is marked ``fast``.
TIER_MARKERS = frozenset(
    {"slow", "spark", "multinode", "browser", "powercut", "packaging", "container", "hostile", "clients"}
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not TIER_MARKERS & {m.name for m in item.iter_markers()}:
            item.add_marker(pytest.mark.fast)


class FakeClock:
    """A settable clock: ``clock()`` returns ``now``; ``advance(s)`` moves it on."""

    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[FileStore]:
    s = FileStore(tmp_path / "root", node_id="test-node", fsync=False, clock=clock)
    yield s
    s.close()


def tree(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (directories as -1): for 'nothing changed' checks."""
    out: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = -1
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = os.path.getsize(p)
    return out
