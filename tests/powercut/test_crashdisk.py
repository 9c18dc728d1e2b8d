"""The crash disk itself: what was flushed survives a cut, what was not is gone, ext4 stays clean."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.powercut.crashdisk import CrashDisk

pytestmark = pytest.mark.powercut


def _write(path: str, data: bytes, durable: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    if durable:
        dfd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def test_a_cut_keeps_flushed_writes_and_loses_the_rest(crash_disk: CrashDisk) -> None:
    mnt = crash_disk.mountpoint
    _write(f"{mnt}/flushed", b"kept", durable=True)
    _write(f"{mnt}/cached", b"lost" * 5000, durable=False)
    os.rename(f"{mnt}/flushed", f"{mnt}/renamed-not-flushed")
    assert crash_disk.stats()["fsyncs"] >= 2  # ext4's flushes reach the daemon as FUSE fsyncs

    crash_disk.cut()
    assert crash_disk.reboot_checked() == ""

    assert sorted(os.listdir(mnt)) == ["flushed", "lost+found"]
    with open(f"{mnt}/flushed", "rb") as f:
        assert f.read() == b"kept"


WRITER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
mnt, log = sys.argv[1], os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
i = 0
while True:
    i += 1
    # unflushed writeback (sync_file_range starts it, no cache flush follows): pending blocks at the cut
    side = os.open(f"{mnt}/side{i % 8}", os.O_WRONLY | os.O_CREAT, 0o644)
    os.pwrite(side, os.urandom(65536), 0)
    libc.sync_file_range(side, ctypes.c_int64(0), ctypes.c_int64(0), 2)
    os.close(side)
    name = f"w{i}"
    data = os.urandom(100 + (i * 7919) % 20000)
    fd = os.open(f"{mnt}/{name}.tmp", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    os.rename(f"{mnt}/{name}.tmp", f"{mnt}/{name}")
    if i % 2:
        dfd = os.open(mnt, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
        os.write(log, f"{name} {len(data)}\\n".encode())
"""


def _wait_for_a_durable_file(writer: subprocess.Popen[bytes], log: Path, seconds: float = 60.0) -> None:
    """Until the writer has logged its first durable file (a loaded machine may take seconds to
    start a Python process and get its first fsyncs through the disk)."""
    deadline = time.monotonic() + seconds
    while not (log.exists() and log.stat().st_size > 0):
        assert writer.poll() is None, f"the writer exited ({writer.returncode}) before making a file durable"
        assert time.monotonic() < deadline, f"the writer made no file durable in {seconds:g}s"
        time.sleep(0.02)


def test_torn_and_reordered_pending_blocks_leave_ext4_consistent(crash_disk: CrashDisk, tmp_path: Path) -> None:
    """Cut while a writer fsyncs in a loop, at a moment when a write-back is pending (at least one
    side file's 16 blocks), persisting a random share of the pending blocks, half of them torn:
    ext4's journal replay copes every time, and every file whose directory fsync returned is there
    with its size."""
    rng = random.Random(7)
    mnt = crash_disk.mountpoint
    torn = 0
    for cut in range(5):
        log = tmp_path / f"writer-{cut}.log"
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(mnt), str(log)])
        _wait_for_a_durable_file(writer, log)
        time.sleep(rng.uniform(0.3, 0.8))
        report = crash_disk.cut(seed=cut, persist=rng.random(), torn=0.5, kill=[writer.pid], when_pending=16)
        writer.wait(timeout=30)
        torn += report.torn
        assert crash_disk.reboot_checked() == ""
        lines = log.read_text().splitlines() if log.exists() else []
        assert lines, "the writer made nothing durable before the cut"
        for line in lines:
            name, size = line.split()
            assert os.path.getsize(f"{mnt}/{name}") == int(size)
        for name in os.listdir(mnt):
            if name.startswith(("w", "side")):
                os.unlink(f"{mnt}/{name}")
    assert torn > 0, "no cut found a pending block to tear"
    print(f"torn blocks written at the cuts: {torn}")


def test_destroy_takes_everything_down(crash_disk: CrashDisk) -> None:
    crash_disk.cut()
    crash_disk.destroy()
    with open("/proc/self/mounts") as f:
        assert str(crash_disk.workdir) not in f.read()
    assert not crash_disk.workdir.exists()
