"""The contract suite runs over every store: the file store, and the in-memory store of the door tests.

Every test that takes ``store`` runs once on each (``[file]``, ``[fake]``), as huey runs its storage
tests over every back end. A test about the file store's own files (what lies on disk, a crash, a
torn write, the flush) is marked ``file_store_only`` with its reason and runs on the file store alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from spoolq.store import FileStore, QueueStore
from tests.conftest import FakeClock
from tests.http.fakes import FakeStore

STORES = ("file", "fake")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_kind" in metafunc.fixturenames:
        only_files = metafunc.definition.get_closest_marker("file_store_only") is not None
        metafunc.parametrize("store_kind", ["file"] if only_files else list(STORES))


@pytest.fixture
def store(store_kind: str, tmp_path: Path, clock: FakeClock) -> Iterator[QueueStore]:
    s: QueueStore = (FileStore(tmp_path / "root", node_id="test-node", fsync=False, clock=clock)
                     if store_kind == "file" else FakeStore(clock=clock))
    yield s
    s.close()
