"""The ``powercut`` tier: a crash disk (``crashdisk.py``) per test, skipped with the reason where it
cannot run (not root, no /dev/fuse, no loop devices, e2fsprogs/libfuse3/mfusepy missing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.powercut.crashdisk import CrashDisk, unavailable


@pytest.fixture
def crash_disk(tmp_path: Path) -> Iterator[CrashDisk]:
    """A booted crash disk (ext4 mounted at ``.mountpoint``), destroyed at teardown whatever happened."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    disk = CrashDisk(tmp_path / "crashdisk", size_mib=96)
    try:
        disk.create()
        yield disk
    finally:
        disk.destroy()
