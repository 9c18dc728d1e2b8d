"""Invariant 1 against real power cuts, for every flush mode, under mixed concurrent load.

Each cut (``cycles.py``) loads the store from four processes (standard, at-most-once, dedup and
FIFO senders; pollers acking, releasing and letting claims expire; a running move; maintenance),
cuts the power of the crash disk at a random moment, reboots, starts the store and checks:
every acknowledged send is there exactly once or was acknowledged by a poller before the cut;
no torn or corrupt body is ever delivered; an at-most-once message delivered before the cut is
never delivered again; FIFO groups drain in order and their deduplication window survived; a
pending dedup copy still absorbs an identical send; a started move completes with the right
count; the commit journal is replayed and then empty (with ``journal``, files written full of
zeros ahead of time among those replayed); ``e2fsck`` finds nothing.

The store with its flushes switched off (``fsync=False``) runs under the same harness in the same
run and must lose acknowledged sends: the harness can tell a flush from no flush.

``SPOOLQ_POWER_CUTS`` sets the cuts per mode of the long round (default 20; each run draws its own
seed, printed by the harness, so the cuts of successive runs add up; 50 is the full round).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.powercut.crashdisk import CrashDisk
from tests.powercut.cycles import run_cuts

pytestmark = pytest.mark.powercut

MODES = ["syncfs", "journal", "fsync"]
#: cuts per mode in the long round
MANY = int(os.environ.get("SPOOLQ_POWER_CUTS", "20"))


@pytest.mark.timeout(600)
def test_without_flushes_acknowledged_sends_are_lost(crash_disk: CrashDisk, tmp_path: Path) -> None:
    tally = run_cuts(crash_disk, "none", 3, tmp_path / "logs")
    assert tally.lost > 0, f"the harness lost nothing without flushes: {tally}"
    assert not tally.failures("none"), tally


@pytest.mark.timeout(600)
@pytest.mark.parametrize("flush", MODES)
def test_a_few_power_cuts(crash_disk: CrashDisk, tmp_path: Path, flush: str) -> None:
    tally = run_cuts(crash_disk, flush, 2, tmp_path / "logs")
    assert not tally.failures(flush), tally
    if flush == "journal":
        assert tally.journal_files_prepared, f"no journal file written full of zeros was there at a cut: {tally}"


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("flush", MODES)
def test_many_power_cuts(crash_disk: CrashDisk, tmp_path: Path, flush: str) -> None:
    tally = run_cuts(crash_disk, flush, MANY, tmp_path / "logs")
    assert not tally.failures(flush), tally
    if flush == "journal":
        assert tally.journal_files_prepared, f"no journal file written full of zeros was there at a cut: {tally}"
