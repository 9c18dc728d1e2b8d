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


#: Markers of the tests that scripts/test runs in its second pass, one at a time with nothing else
#: of the suite beside them: their own clusters, disks or floods, or bounds in seconds.
ALONE_MARKERS = frozenset({"multinode", "powercut", "hostile", "container", "alone"})

PASSES = ("shared", "alone")

#: ``--spoolq-multinode``: which of the multinode tier's tests to run. scripts/test runs the tier's
#: GlusterFS and CephFS tests side by side (their clusters share nothing but the cores), then its
#: tests also marked ``alone`` (bounds in seconds) with nothing beside them.
MULTINODE_PARTS = ("all", "none", "glusterfs", "cephfs", "alone")

#: How long a file of each tier tends to take, roughly: the shared pass hands the heaviest files to
#: its processes first, so that the small ones fill the end instead of one process finishing a
#: long file while the others wait.
TIER_WEIGHTS = {"packaging": 3, "spark": 3, "clients": 3, "slow": 2, "browser": 2}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--spoolq-pass", choices=PASSES, default=None,
        help="run only the tests of one of scripts/test's two passes: 'shared' (every test that "
             "tolerates others running beside it; scripts/test runs them in parallel processes) or "
             "'alone' (the tiers marked multinode, powercut, hostile, container or alone)")
    parser.addoption(
        "--spoolq-multinode", choices=MULTINODE_PARTS, default="all",
        help="which multinode tests to run: all (the default), none, the ones on glusterfs or on cephfs "
             "(but those marked alone), or only those marked alone")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen = config.getoption("--spoolq-pass")
    part = config.getoption("--spoolq-multinode")
    kept, dropped = [], []
    for item in items:
        names = {m.name for m in item.iter_markers()}
        if not TIER_MARKERS & names:
            item.add_marker(pytest.mark.fast)
        alone = bool(ALONE_MARKERS & names)
        wanted = (chosen is None or alone == (chosen == "alone")) and _in_multinode_part(item, names, part)
        (kept if wanted else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    if chosen == "shared":
        _heaviest_files_first(items)


def _in_multinode_part(item: pytest.Item, markers: set[str], part: str) -> bool:
    """Whether ``item`` is in the part of the multinode tier ``--spoolq-multinode`` chose (a test of
    another tier is in "all" and "none" only)."""
    if part == "all":
        return True
    if "multinode" not in markers:
        return part == "none"
    if part in ("none", "alone"):
        return part == "alone" and "alone" in markers
    return "alone" not in markers and _file_system_of(item) == part


def _file_system_of(item: pytest.Item) -> str:
    """``cephfs`` or ``glusterfs``: the file system a multinode test runs on (its volume parameter,
    else the session fixture it asks for)."""
    from tests.multinode.cluster import CEPHFS, file_system  # the tier's own rule, loaded only when asked

    callspec = getattr(item, "callspec", None)
    volumes = [v for v in (callspec.params.values() if callspec else ()) if isinstance(v, str)]
    if CEPHFS in volumes or "cephfs" in getattr(item, "fixturenames", ()):  # "cephfs": the session fixture
        return file_system(CEPHFS)
    return file_system(volumes[0] if volumes else "")


def _heaviest_files_first(items: list[pytest.Item]) -> None:
    """Reorder ``items`` file by file, heaviest tier first (:data:`TIER_WEIGHTS`); a file's tests
    keep their order and stay together (the same order in every process, as pytest-xdist needs)."""
    def file_of(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    weight: dict[str, int] = {}
    for item in items:
        w = max((TIER_WEIGHTS.get(m.name, 0) for m in item.iter_markers()), default=0)
        weight[file_of(item)] = max(w, weight.get(file_of(item), 0))
    position = {id(item): n for n, item in enumerate(items)}
    items.sort(key=lambda item: (-weight[file_of(item)], position[id(item)]))


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
