"""The default flush on real GlusterFS and CephFS mounts: ``fsync`` without any flag, ``--flush syncfs``
refused with the reason unless forced (invariant 11); and on CephFS, what that ``fsync`` guarantees."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests

from spoolq.store import FileStore
from spoolq.store.filesystems import UnsafeFlush
from tests.inside import commit_of, flush_mode_of
from tests.multinode.cluster import CEPHFS, VOLUMES, Cluster, ceph, mount_path

pytestmark = pytest.mark.multinode


def _check_config(root: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spoolq.cli", "check-config", "--root", str(root), *flags],
                          capture_output=True, text=True, timeout=120)


def test_a_gluster_mount_gets_fsync_by_default(gluster: Path, tmp_path: Path) -> None:
    root = mount_path(VOLUMES[0], 1) / f"default-flush-{tmp_path.name}"
    store = FileStore(root, node_id="flushcheck")
    try:
        assert flush_mode_of(store) == "fsync"
        assert commit_of(store).per_file
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


def test_a_cephfs_mount_gets_fsync_by_default(cephfs: Path, tmp_path: Path) -> None:
    root = mount_path(CEPHFS, 1) / f"default-flush-{tmp_path.name}"
    store = FileStore(root, node_id="flushcheck")
    try:
        assert flush_mode_of(store) == "fsync"
        assert commit_of(store).per_file
    finally:
        store.close()
    with pytest.raises(UnsafeFlush, match=r"fuse\.ceph-fuse"):
        FileStore(root, node_id="flushcheck", flush="syncfs")
    done = _check_config(root)
    assert done.returncode == 0, done.stderr
    assert "ok: flush=fsync (chosen for fuse.ceph-fuse, a network/FUSE file system)" in done.stdout


@pytest.mark.timeout(600)
def test_cephfs_fsync_outlives_the_client_and_the_active_mds(cephfs: Path,
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    """What ``fsync`` through ``ceph-fuse`` promises, shown: the MDS answers a create or a rename
    early (done in its memory, not yet in its journal on the OSDs), and the client's ``fsync`` of a
    file or a directory waits until the MDS's journal holds every such request on that inode (and the
    file's data is on the OSDs). So a send acknowledged in ``fsync`` mode survives the death of its
    node's client *and* of the active MDS at once: no one is left to replay an unjournaled request,
    and the standby MDS rebuilds the file system from the journal alone."""
    cluster = Cluster.start(CEPHFS, tmp_path_factory.mktemp("fsync-mds"), count=2)
    victim, reader = cluster.nodes
    queue, acked, lock = f"fsync-{uuid.uuid4().hex[:8]}", set(), threading.Lock()
    running = threading.Event()
    running.set()
    requests.post(f"{reader.url}/queue/1/{queue}/send", json={"k": "first"}, timeout=60).raise_for_status()

    def storm(tag: str) -> None:
        http, n = requests.Session(), 0
        while running.is_set():
            n += 1
            keys = [f"{tag}-{n}-{i}" for i in range(10)]
            try:
                r = http.post(f"{victim.url}/queue/1/_sendbatch", json={queue: [{"k": k} for k in keys]}, timeout=60)
            except requests.RequestException:
                return
            if r.status_code == 200:
                with lock:
                    acked.update(keys)

    threads = [threading.Thread(target=storm, args=(f"t{t}",)) for t in range(4)]
    active = ""
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60  # a storm under way however busy the machine (a fixed 5 s once saw none)
        while time.monotonic() < deadline and len(acked) < 100:
            time.sleep(0.1)
        time.sleep(1)
        active = ceph("active-mds").strip()
        victim.crash()  # gunicorn and ceph-fuse, kill -9
        ceph("fail-mds", active)
        running.clear()
        for t in threads:
            t.join()
        assert acked, "nothing was acknowledged before the crash"
        ceph("wait-healthy", "120")
        found: set[str] = set()
        http = requests.Session()
        while True:
            r = http.get(f"{reader.url}/queue/1/{queue}/poll", params={"limit": 1000, "ttl": 600}, timeout=120)
            assert r.status_code == 200, r.text
            if not r.json():
                break
            found.update(m["payload"]["k"] for m in r.json())
        missing = acked - found
        print(f"acknowledged {len(acked)} through the victim, found {len(found & acked)} after its client "
              f"and mds.{active} died")
        assert (len(missing), sorted(missing)[:10]) == (0, [])
    finally:
        running.clear()
        cluster.stop()
        if active:
            ceph("start-mds", active)
        victim.revive()
        victim.stop()
