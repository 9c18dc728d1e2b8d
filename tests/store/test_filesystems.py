"""The flush that fits the root's file system (invariant 11), from the mount table and statfs.

Real file systems: ext4 and FUSE on the crash disk (``tests/powercut/test_default_flush.py``),
GlusterFS in the multinode tier. Here the mount table is one the test writes, with the lines of
NFS, CIFS, CephFS, 9p and GlusterFS mounts as the kernel prints them.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from pathlib import Path

import pytest

from spoolq import errors as errors_module
from spoolq.cli import main
from spoolq.store import FileStore
from spoolq.store import filesystems as fs
from tests.inside import commit_of, flush_mode_of

MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
30 22 0:40 / /srv/nfs rw,relatime shared:9 - nfs4 10.0.0.1:/export rw,vers=4.2
31 22 0:41 / /srv/smb rw,relatime shared:10 - cifs //fs/share rw,vers=3.1.1
32 22 0:42 / /srv/ceph rw,relatime shared:11 - ceph 10.0.0.2:6789:/ rw,name=admin
33 22 0:43 / /srv/9p rw,relatime shared:12 - 9p shared rw,trans=virtio
34 22 0:44 / /srv/gluster rw,relatime shared:13 - fuse.glusterfs host:/vol rw,user_id=0
35 34 0:45 / /srv/gluster/local rw,relatime shared:14 - xfs /dev/vdb rw
36 22 0:46 / /srv/with\\040space rw,relatime shared:15 - nfs host:/x rw
"""


@pytest.fixture
def mounts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(MOUNTINFO)
    real = fs._mount_type
    monkeypatch.setattr(fs, "_mount_type", lambda path: real(path, str(table)))
    monkeypatch.setattr(fs, "_existing", lambda path: path)  # the paths above need not exist here


@pytest.mark.parametrize(("root", "fs_type", "mode"), [
    ("/var/lib/spoolq", "ext4", "syncfs"),
    ("/srv/nfs/spoolq", "nfs4", "fsync"),
    ("/srv/smb/q", "cifs", "fsync"),
    ("/srv/ceph/q", "ceph", "fsync"),
    ("/srv/9p", "9p", "fsync"),
    ("/srv/gluster/data", "fuse.glusterfs", "fsync"),
    ("/srv/gluster/local/q", "xfs", "syncfs"),  # the deepest mount wins
    ("/srv/with space/q", "nfs", "fsync"),  # mount points with escaped spaces
    ("/srv/nfsnot/q", "ext4", "syncfs"),  # a prefix of a mount point is not inside it
])
def test_the_default_fits_the_file_system(mounts: None, root: str, fs_type: str, mode: str) -> None:
    choice = fs.choose_flush(root)
    assert (choice.fs_type, choice.mode, choice.chosen) == (fs_type, mode, True)


@pytest.mark.parametrize("asked", ["syncfs", "journal"])
def test_syncfs_on_a_network_file_system_is_refused_unless_forced(mounts: None, asked: str) -> None:
    with pytest.raises(fs.UnsafeFlush, match=r"nfs4, a network or FUSE file system.*--flush fsync.*--force-flush"):
        fs.choose_flush("/srv/nfs/q", asked)
    forced = fs.choose_flush("/srv/nfs/q", asked, force=True)
    assert (forced.mode, forced.chosen) == (asked, False)
    assert fs.choose_flush("/srv/nfs/q", "fsync").mode == "fsync"
    assert fs.choose_flush("/var/lib/q", asked).mode == asked


def test_statfs_is_the_fallback_without_a_mount_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs, "_mount_type", lambda path: None)
    assert fs.file_system_of(tmp_path) == (f"0x{fs._statfs_magic(tmp_path):x}", False)  # a local disk here
    monkeypatch.setattr(fs, "_statfs_magic", lambda path: 0x6969)
    assert fs.file_system_of(tmp_path) == ("nfs", True)
    assert fs.choose_flush(tmp_path).mode == "fsync"


def test_the_store_uses_the_fitting_flush(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileStore(tmp_path / "local")
    assert (flush_mode_of(store), commit_of(store).per_file) == ("syncfs", False)
    store.close()
    monkeypatch.setattr(fs, "file_system_of", lambda root: ("nfs4", True))
    store = FileStore(tmp_path / "nfs")
    assert (flush_mode_of(store), commit_of(store).per_file) == ("fsync", True)
    store.close()
    with pytest.raises(fs.UnsafeFlush):
        FileStore(tmp_path / "nfs", flush="syncfs")
    FileStore(tmp_path / "nfs", flush="syncfs", force_flush=True).close()


def test_check_config_reports_and_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = str(tmp_path / "root")
    assert main(["check-config", "--root", root, "--flush", "journal"]) == 0
    assert "ok: flush=journal (as asked, on " in capsys.readouterr().out
    monkeypatch.setattr(fs, "file_system_of", lambda root: ("fuse.glusterfs", True))
    assert main(["check-config", "--root", root]) == 0
    assert "ok: flush=fsync (chosen for fuse.glusterfs, a network/FUSE file system)" in capsys.readouterr().out
    assert main(["check-config", "--root", root, "--flush", "syncfs"]) == 2
    assert "FAILED: --flush syncfs refused: the root" in capsys.readouterr().out
    assert main(["check-config", "--root", root, "--flush", "syncfs", "--force-flush"]) == 0


def test_serve_refuses_an_unsafe_flush_before_starting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(fs, "file_system_of", lambda root: ("nfs4", True))
    assert main(["serve", "--root", str(tmp_path / "root"), "--flush", "journal", "--port", "1"]) == 2
    assert "--flush journal refused" in capsys.readouterr().err


def _ext4_tree(tmp_path: Path, options: dict[str, str]) -> dict[str, str]:
    """A mount table, ``/sys/dev/block`` links and ``/proc/fs/ext4/<dev>/options`` as the kernel
    shows them, for devices named in ``options`` (254:0 vda holds /, 7:0 loop0 holds /srv/j)."""
    table = tmp_path / "mountinfo"
    table.write_text("22 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n"
                     "40 22 7:0 / /srv/j rw,relatime - ext4 /dev/loop0 rw\n"
                     "41 22 0:46 / /srv/x rw,relatime - xfs /dev/vdb rw\n")
    block = tmp_path / "block"
    block.mkdir()
    (block / "254:0").symlink_to("../devices/pci0000:00/virtio1/block/vda")
    (block / "7:0").symlink_to("../devices/virtual/block/loop0")
    for dev, text in options.items():
        (tmp_path / "ext4" / dev).mkdir(parents=True)
        (tmp_path / "ext4" / dev / "options").write_text(text.replace(" ", "\n") + "\n")
    return {"mountinfo": str(table), "proc_ext4": str(tmp_path / "ext4"), "sys_block": str(block)}


def test_ext4_without_a_journal_is_told_from_one_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs, "_existing", lambda path: path)
    paths = _ext4_tree(tmp_path, {"vda": "rw bsddf discard delalloc nojournal_checksum barrier commit=5",
                                  "loop0": "rw bsddf nodiscard delalloc journal_checksum data=ordered commit=5"})
    assert fs.ext4_without_journal("/var/lib/spoolq", **paths) == "/dev/vda"
    assert fs.ext4_without_journal("/srv/j/spoolq", **paths) is None  # data=ordered: it has a journal
    assert fs.ext4_without_journal("/srv/x/spoolq", **paths) is None  # not ext4
    (tmp_path / "none").mkdir()
    unknown = _ext4_tree(tmp_path / "none", {})
    assert fs.ext4_without_journal("/var/lib/spoolq", **unknown) is None  # nothing to tell from: no warning


def _journaled_ext4_and_xfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The root's file system as :func:`_ext4_tree` has it: ext4 without a journal at /, ext4 with one
    at /srv/j, XFS at /srv/x."""
    paths = _ext4_tree(tmp_path, {"vda": "rw bsddf discard delalloc nojournal_checksum barrier commit=5",
                                  "loop0": "rw bsddf nodiscard delalloc journal_checksum data=ordered commit=5"})
    real_type, real_journal = fs._mount_type, fs.ext4_without_journal
    monkeypatch.setattr(fs, "_existing", lambda path: path)
    monkeypatch.setattr(fs, "_mount_type", lambda path: real_type(path, paths["mountinfo"]))
    monkeypatch.setattr(fs, "ext4_without_journal", lambda root: real_journal(root, **paths))


@pytest.mark.parametrize(("root", "mode", "why"), [
    ("/srv/j/spoolq", "journal", "measured fastest on ext4 for single and HTTP sends"),
    ("/srv/x/spoolq", "syncfs", "measured fastest on XFS for single and HTTP sends"),
    ("/var/lib/spoolq", "syncfs", "ext4 made without a journal, where the modes were not measured"),
])
def test_each_local_file_system_gets_the_flush_measured_fastest_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root: str, mode: str, why: str) -> None:
    _journaled_ext4_and_xfs(tmp_path, monkeypatch)
    choice = fs.choose_flush(root)
    assert (choice.mode, choice.chosen) == (mode, True)
    assert why in choice.why and choice.describe().endswith("; --flush overrides)")
    for asked in fs.FLUSH_MODES:  # an explicit --flush wins over the measured default
        assert fs.choose_flush(root, asked) == fs.FlushChoice(asked, choice.fs_type, False, chosen=False)


def test_the_store_and_check_config_use_the_measured_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(fs, "file_system_of", lambda root: ("ext4", False))
    monkeypatch.setattr(fs, "ext4_without_journal", lambda root: None)  # ext4 with its journal
    store = FileStore(tmp_path / "root")
    assert flush_mode_of(store) == "journal" and commit_of(store).journal is not None
    store.close()
    store = FileStore(tmp_path / "root", flush="syncfs")
    assert flush_mode_of(store) == "syncfs" and commit_of(store).journal is None
    store.close()
    assert main(["check-config", "--root", str(tmp_path / "root")]) == 0
    assert ("ok: flush=journal (chosen for ext4: measured fastest on ext4 for single and HTTP sends"
            in capsys.readouterr().out)
    assert main(["check-config", "--root", str(tmp_path / "root"), "--flush", "syncfs"]) == 0
    assert "ok: flush=syncfs (as asked, on ext4)\n" in capsys.readouterr().out


def _statvfs(files: int, favail: int) -> os.statvfs_result:
    # f_bsize, f_frsize, f_blocks, f_bfree, f_bavail, f_files, f_ffree, f_favail, f_flag, f_namemax
    return os.statvfs_result((4096, 4096, 1000, 900, 800, files, favail, favail, 0, 255))


def test_headroom_reports_inodes_where_the_file_system_counts_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs.os, "statvfs", lambda path: _statvfs(1000, 40))
    room = fs.headroom("/srv/spoolq")
    assert (room.free_bytes, room.free_inodes, room.inodes, room.inodes_short) == (800 * 4096, 40, 1000, True)
    assert room.describe() == "3.1 MiB free, 40 free inodes of 1000 (one per message)"
    monkeypatch.setattr(fs.os, "statvfs", lambda path: _statvfs(0, 0))  # btrfs: no fixed count
    room = fs.headroom("/srv/spoolq")
    assert (room.free_inodes, room.inodes, room.inodes_short) == (None, None, False)
    assert room.describe().endswith("no fixed inode limit")


@pytest.mark.parametrize(("files", "favail", "says_inodes"), [(1000, 0, True), (1000, 5, False), (0, 0, False)])
def test_enospc_says_when_it_is_the_inodes(monkeypatch: pytest.MonkeyPatch, files: int, favail: int,
                                          says_inodes: bool) -> None:
    monkeypatch.setattr(errors_module.os, "statvfs", lambda path: _statvfs(files, favail))
    err = errors_module.storage_error(OSError(errno.ENOSPC, "No space left on device", "/srv/spoolq/queues/q/x"),
                                      "writing a message")
    assert err.retry_after == 30
    assert ("no free inodes" in err.message) is says_inodes
    assert ("No space left on device" in err.message) is not says_inodes


def test_inode_counts_where_the_file_system_has_a_fixed_count_and_where_it_has_none() -> None:
    assert fs.inode_counts(_statvfs(1000, 40)) == (40, 1000)  # ext4: fixed at mkfs
    assert fs.inode_counts(_statvfs(0, 0)) == (None, None)  # btrfs: made as it goes
    assert fs.inode_counts(_statvfs(1038, -1)) == (None, None)  # ceph-fuse: the files it holds, -1 free
    assert fs.inode_counts(_statvfs(1038, 2**64 - 1)) == (None, None)  # the same, read as unsigned


def test_sync_local_file_system_flushes_local_disks_only_and_reports_a_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``spoolq backup`` relies on to call its copy durable."""
    calls: list[int] = []

    def fake_syncfs(fd: int) -> int:  # the real one would flush every dirty file of this shared disk
        calls.append(fd)
        return 0

    monkeypatch.setattr(fs, "_SYNCFS", fake_syncfs)
    monkeypatch.setattr(fs, "file_system_of", lambda path: ("xfs", False))
    assert fs.sync_local_file_system(tmp_path) is True and len(calls) == 1
    monkeypatch.setattr(fs, "file_system_of", lambda path: ("fuse.glusterfs", True))
    assert fs.sync_local_file_system(tmp_path) is False and len(calls) == 1
    monkeypatch.setattr(fs, "file_system_of", lambda path: ("ext4", False))
    monkeypatch.setattr(fs, "_SYNCFS", lambda fd: -1)
    monkeypatch.setattr(fs.ctypes, "get_errno", lambda: errno.EIO)
    with pytest.raises(OSError) as failed:
        fs.sync_local_file_system(tmp_path)
    assert failed.value.errno == errno.EIO


def test_a_refusal_is_logged_once_with_the_file_it_names(caplog: pytest.LogCaptureFixture) -> None:
    """The answer says what failed; the server's log also says which file, once per 10 s per kind."""
    refused = OSError(errno.ENOTCONN, "Transport endpoint is not connected", "/srv/spoolq/pollers.lock")
    doing = f"polling 'q-{os.getpid()}-{time.monotonic_ns()}'"  # a message no earlier test logged
    with caplog.at_level(logging.WARNING, logger="spoolq.storage"):
        for _ in range(5):
            err = errors_module.storage_error(refused, doing)
    assert "/srv/spoolq" not in err.message
    lines = [r.getMessage() for r in caplog.records if r.name == "spoolq.storage"]
    assert lines == [f"storage unavailable while {doing}: ENOTCONN (Transport endpoint is not connected) "
                     "on /srv/spoolq/pollers.lock"]
