"""The default flush on a real GlusterFS mount: ``fsync`` without any flag, ``--flush syncfs``
refused with the reason unless forced (invariant 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spoolq.store import FileStore
from spoolq.store.filesystems import UnsafeFlush
from tests.inside import core_of
from tests.multinode.cluster import VOLUMES, mount_path

pytestmark = pytest.mark.multinode


def _check_config(root: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spoolq.cli", "check-config", "--root", str(root), *flags],
                          capture_output=True, text=True, timeout=120)


def test_a_gluster_mount_gets_fsync_by_default(gluster: Path, tmp_path: Path) -> None:
    root = mount_path(VOLUMES[0], 1) / f"default-flush-{tmp_path.name}"
    store = FileStore(root, node_id="flushcheck")
    try:
        assert core_of(store).flush_mode == "fsync"
        assert core_of(store).commit.per_file
    finally:
        store.close()
    with pytest.raises(UnsafeFlush, match=r"fuse\.glusterfs"):
        FileStore(root, node_id="flushcheck", flush="syncfs")

    done = _check_config(root)
    assert done.returncode == 0, done.stderr
    assert "ok: flush=fsync (chosen for fuse.glusterfs, a network/FUSE file system)" in done.stdout
    refused = _check_config(root, "--flush", "syncfs")
    assert refused.returncode == 2
    assert "FAILED: --flush syncfs refused" in refused.stdout and "--force-flush" in refused.stdout
    forced = _check_config(root, "--flush", "journal", "--force-flush")
    assert forced.returncode == 0, forced.stderr
    assert "ok: flush=journal (as asked, on fuse.glusterfs" in forced.stdout
