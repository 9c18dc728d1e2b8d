"""A rolling upgrade on one data directory (two nodes, one local root): the previous version on both,
then on one, then on none, under sends, polls and acks through both (``rolling.py``). The
multinode tier runs the same on GlusterFS and CephFS (``tests/multinode/test_rolling_upgrade.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from spoolq.store import root_format
from tests.compat import rolling

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def previous() -> Iterator[Path]:
    reason = rolling.git_available()
    if reason is not None:
        pytest.skip(reason)
    with rolling.previous_version() as tree:
        yield tree


@pytest.mark.timeout(600)
def test_a_rolling_upgrade_on_one_root_loses_nothing_and_delivers_nothing_twice(
        previous: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    outcome = rolling.rolling_upgrade(previous, (root, root), tmp_path)
    print(outcome)
    assert outcome.versions["node1"][0] != outcome.versions["node1"][-1]  # node 1 ran both versions
    assert outcome.acked > 100 and outcome.answers.get("poll 200", 0) > 10
    assert not outcome.twice, outcome.twice[:10]
    assert not outcome.lost, outcome.lost[:10]
    assert root_format.check_format(root).format == root_format.FORMAT
    assert (root / "queues" / "rolling" / "buckets.lock").exists()  # made by the upgrade, not at first use
