"""The default flush on real file systems of this machine: ext4 with its journal (the crash disk) gets
``journal``, measured fastest there; the FUSE mount under it gets ``fsync``. (GlusterFS:
``tests/multinode``.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from spoolq.store import FileStore
from spoolq.store.filesystems import choose_flush
from tests.inside import flush_mode_of
from tests.powercut.crashdisk import CrashDisk

pytestmark = pytest.mark.powercut


def test_ext4_gets_journal_and_fuse_gets_fsync(crash_disk: CrashDisk) -> None:
    root = crash_disk.mountpoint / "root"
    store = FileStore(root)
    assert flush_mode_of(store) == "journal"
    store.close()
    assert choose_flush(crash_disk.fuse_dir).describe() == "flush=fsync (chosen for fuse, a network/FUSE file system)"
    out = subprocess.run([sys.executable, "-m", "spoolq.cli", "check-config", "--root", str(root)],
                         capture_output=True, text=True, check=True).stdout
    assert "ok: flush=journal (chosen for ext4: measured fastest on ext4" in out
