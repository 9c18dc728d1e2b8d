"""A rolling upgrade on a shared file system: two nodes, each through its own mount of one volume
(GlusterFS ``spq-rep``, CephFS), on the previous version, then one upgraded, then both, under sends,
polls and acks through both (the scenario of ``tests/compat/rolling.py``). 0 lost, 0 delivered twice
within a claim. Heavy (a checkout of the previous version and six server starts on FUSE mounts):
run in the multinode tier, not in a loop."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from spoolq.store import root_format
from tests.compat import rolling
from tests.multinode import cluster as gl

pytestmark = pytest.mark.multinode


@pytest.fixture(scope="module")
def previous() -> Iterator[Path]:
    reason = rolling.git_available()
    if reason is not None:
        pytest.skip(reason)
    with rolling.previous_version() as tree:
        yield tree


@pytest.mark.timeout(900)
@pytest.mark.parametrize("volume", ["spq-rep", gl.CEPHFS])
def test_a_rolling_upgrade_on_a_shared_file_system_loses_nothing(
        volume: str, previous: Path, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    request.getfixturevalue("cephfs" if gl.file_system(volume) == "cephfs" else "gluster")
    data = f"rolling-{uuid.uuid4().hex[:8]}"
    roots = (gl.mount_path(volume, 1) / data, gl.mount_path(volume, 2) / data)
    outcome = rolling.rolling_upgrade(previous, roots, tmp_path, extra_args=("--flush", "fsync", "--peers", "3"),
                                      phase_seconds=10.0)
    print(outcome)
    assert outcome.acked > 20 and outcome.answers.get("poll 200", 0) > 5
    assert not outcome.twice, outcome.twice[:10]
    assert not outcome.lost, outcome.lost[:10]
    assert root_format.check_format(roots[0]).format == root_format.FORMAT
