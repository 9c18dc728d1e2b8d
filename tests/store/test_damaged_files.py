"""Lock files are made once, with their queue or root (format 2), and a file or directory the file
system refuses (EIO: on GlusterFS a name in split-brain answers so on every mount) never stops a
queue where the store can go round it; it is reported with what resolves it (store/damage.py).

The refusals are injected: only the named path answers EIO, every other call reaches the real file
system. A real split-brain on GlusterFS is made in the multinode tier (tests/multinode).
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from spoolq.errors import StorageUnavailable
from spoolq.store import FileStore, OutgoingMessage, QueueKind, bucket_guard, damage, root_format

QUEUE = "q"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _no_reports() -> Iterator[None]:
    damage._seen.clear()
    yield
    damage._seen.clear()


def refuse(monkeypatch: pytest.MonkeyPatch, target: Any, name: str, refused: Callable[[str], bool]) -> list[str]:
    """``target.name`` answers EIO for the paths ``refused`` picks, and so does a lookup of them
    (``os.lstat``, as for a name in split-brain); the paths refused, as they come."""
    if name != "lstat":
        refuse(monkeypatch, os, "lstat", refused)
    real = getattr(target, name)
    seen: list[str] = []

    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, str | os.PathLike) and refused(os.fspath(path)):
            seen.append(os.fspath(path))
            raise OSError(errno.EIO, "Input/output error", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(target, name, call)
    return seen


def reported() -> dict[str, damage.Damaged]:
    return {d.path: d for d in damage.recent()}


def test_every_lock_file_is_made_with_its_queue_and_the_root(root: Path) -> None:
    store = FileStore(root, fsync=False)
    for name, kind in (("std", QueueKind.STANDARD), ("ddp", QueueKind.DEDUP), ("ff.fifo", QueueKind.FIFO)):
        store.create_queue(name, kind)
        assert set(root_format.queue_lock_files(kind)) <= set(os.listdir(root / "queues" / name)), kind
    assert (root / "pollers.lock").exists()
    store.close()


def test_the_upgrade_makes_the_lock_files_older_queues_lack(root: Path) -> None:
    store = FileStore(root, fsync=False)
    store.create_queue("std")
    store.create_queue("ff.fifo", QueueKind.FIFO)
    store.close()
    for name in ("std", "ff.fifo"):  # as spoolq 0.1.0 left them: made at first use, if ever
        for lock in os.listdir(root / "queues" / name):
            if lock.endswith("lock"):
                os.unlink(root / "queues" / name / lock)
    os.unlink(root / "pollers.lock")
    os.unlink(root / root_format.FORMAT_FILE)
    FileStore(root, fsync=False).close()
    assert (root / "pollers.lock").exists()
    assert {"settings.lock", "buckets.lock"} <= set(os.listdir(root / "queues" / "std"))
    assert {"settings.lock", "lock"} <= set(os.listdir(root / "queues" / "ff.fifo"))


def test_a_refused_bucket_lock_stops_neither_renames_nor_polls(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    store = FileStore(root, fsync=False, clock=clock, empty_buckets="guarded")
    store.create_queue(QUEUE)
    store.send_batch(QUEUE, [OutgoingMessage(body=f"m{i}".encode()) for i in range(4)])
    lock = str(root / "queues" / QUEUE / bucket_guard.LOCK_FILE)
    refused = refuse(monkeypatch, os, "open", lambda p: p.endswith(bucket_guard.LOCK_FILE))
    got = store.poll(QUEUE, limit=4, claim_ttl=60)
    clock.now += 30  # the bucket is old: a release renames into it under the (refused) lock
    assert store.release(QUEUE, [d.receipt for d in got[:2]]) == [True, True]
    clock.now += 90  # the other two claims expire: maintenance puts them back
    store.maintain()
    again = store.poll(QUEUE, limit=10, claim_ttl=60)
    assert sorted(d.message.body for d in again) == [b"m0", b"m1", b"m2", b"m3"]
    store.ack(QUEUE, [d.receipt for d in again])
    clock.now += 60
    assert store.maintain()["buckets_removed"] == 0  # no removal without the lock
    assert refused and lock in reported()
    assert "gluster volume heal" not in reported()[lock].fix  # not on GlusterFS here
    health = store.health()
    assert health["ok"] and [d["path"] for d in health["damaged"]] == [lock]
    store.close()


def test_a_ready_bucket_that_cannot_be_listed_is_passed_over(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    store = FileStore(root, fsync=False, clock=clock)
    store.create_queue(QUEUE)
    store.send(QUEUE, OutgoingMessage(body=b"old"))
    [bucket] = [str(p) for p in (root / "queues" / QUEUE / "ready").glob("*/*")]
    clock.now += 5
    store.send(QUEUE, OutgoingMessage(body=b"new"))
    refuse(monkeypatch, damage, "listdir", lambda p: p == bucket)
    got = store.poll(QUEUE, limit=10, claim_ttl=60)
    assert [d.message.body for d in got] == [b"new"]
    assert bucket in reported()
    monkeypatch.undo()  # healed: no longer listed, and its messages are delivered
    assert bucket not in reported()
    assert [d.message.body for d in store.poll(QUEUE, limit=10, claim_ttl=60)] == [b"old"]
    store.close()


def test_a_refused_poll_lane_lock_leaves_polls_working(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refuse(monkeypatch, os, "open", lambda p: p.endswith(root_format.POLLERS_LOCK))
    store = FileStore(root, fsync=False, peers=3)
    store.create_queue(QUEUE)
    store.send(QUEUE, OutgoingMessage(body=b"x"))
    assert len(store.poll(QUEUE, claim_ttl=60)) == 1
    assert str(root / root_format.POLLERS_LOCK) in reported()
    store.close()


def test_a_refused_settings_lock_refuses_the_change_alone(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileStore(root, fsync=False)
    info = store.create_queue(QUEUE)
    refuse(monkeypatch, os, "open", lambda p: p.endswith("settings.lock"))
    with pytest.raises(StorageUnavailable):
        store.change_queue(QUEUE, lambda i: i)
    store.send(QUEUE, OutgoingMessage(body=b"x"))  # messages go on
    assert len(store.poll(QUEUE, claim_ttl=60)) == 1
    assert store.get_queue(QUEUE) == info
    assert any(p.endswith("settings.lock") for p in reported())
    store.close()


def test_a_dedup_lock_descriptor_refused_once_is_opened_afresh(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A GlusterFS client that reconnected to a brick refuses the descriptors that held locks there."""
    import fcntl

    from spoolq.store import markerlock

    store = FileStore(root, fsync=False)
    store.create_queue(QUEUE, QueueKind.DEDUP)
    store.send(QUEUE, OutgoingMessage(body=b"a"))  # the lock file's descriptor is open now
    real = fcntl.lockf
    failures = [1]

    def lockf(fd: int, *args: Any) -> Any:
        if failures[0] and args[0] == fcntl.LOCK_EX:
            failures[0] -= 1
            raise OSError(errno.EIO, "Input/output error")
        return real(fd, *args)

    monkeypatch.setattr(markerlock.fcntl, "lockf", lockf)
    assert store.send(QUEUE, OutgoingMessage(body=b"a")).duplicate
    assert failures == [0] and not reported()
    store.close()


def test_the_fix_names_the_gluster_volume_and_the_path_inside_it(tmp_path: Path) -> None:
    mounts = tmp_path / "mountinfo"
    mounts.write_text("36 35 98:0 / / rw - ext4 /dev/vda rw\n"
                      f"90 36 0:52 / {tmp_path}/mnt rw - fuse.glusterfs 10.0.0.2:/spq-rep rw\n")
    fix = damage.fix_for(f"{tmp_path}/mnt/data/queues/q/buckets.lock", str(mounts))
    assert "gluster volume heal spq-rep info split-brain" in fix
    assert "split-brain latest-mtime /data/queues/q/buckets.lock" in fix
    assert "gluster" not in damage.fix_for(f"{tmp_path}/elsewhere/x", str(mounts))
    assert json.dumps(damage.Damaged("p", "w", 1.0, 2.0, fix).as_json())


def test_a_format_file_the_file_system_refuses_stops_the_start_with_what_to_run(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FileStore(root, fsync=False).close()
    from spoolq.store import fileops

    refuse(monkeypatch, fileops, "_read_whole", lambda p: p.endswith(root_format.FORMAT_FILE))
    with pytest.raises(StorageUnavailable, match=r"EIO .*check the disk"):
        FileStore(root, fsync=False)
    assert str(root / root_format.FORMAT_FILE) in reported()


def test_enotconn_on_one_name_is_damage_and_on_a_lost_mount_is_not(tmp_path: Path) -> None:
    """GlusterFS answers ENOTCONN for a file whose only good copy no data brick serves (an arbiter's
    file): that name is gone round like a split one; a mount that lost every server refuses its
    directories too, and that is the storage being unavailable."""
    served = tmp_path / "queues"
    served.mkdir()
    assert damage.is_damage(OSError(errno.ENOTCONN, "Transport endpoint is not connected", str(served / "x.lock")))
    lost = tmp_path / "gone" / "queues"
    assert not damage.is_damage(OSError(errno.ENOTCONN, "Transport endpoint is not connected", str(lost / "x")))
    assert not damage.is_damage(OSError(errno.ENOTCONN, "Transport endpoint is not connected"))  # no name
    assert damage.is_damage(OSError(errno.EIO, "Input/output error"))
    assert not damage.is_damage(OSError(errno.ENOSPC, "No space left on device", str(served / "x")))
