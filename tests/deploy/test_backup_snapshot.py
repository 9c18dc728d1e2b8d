"""The backup's snapshot walk, with a state change timed into it (the real store, no server).

``tests/deploy/test_backup.py`` runs a backup under live load; here the one interleaving that
load only sometimes gives is made to happen every time: a claim released back to ``ready/``
after the walk linked it under ``claimed/`` and before the walk reached ``ready/``.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from spoolq.cli import backup as backup_module
from spoolq.store import FileStore, filesystems
from spoolq.store.model import OutgoingMessage


def _copies(root: Path) -> Counter[str]:
    ids: Counter[str] = Counter()
    for dirpath, _dirs, files in os.walk(root / "queues"):
        parts = Path(dirpath).relative_to(root / "queues").parts
        if len(parts) >= 2 and parts[1] in ("ready", "claimed", "delayed"):
            ids.update(name[:40] for name in files)
    return ids


def test_a_claim_released_during_the_walk_is_copied_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    store = FileStore(root)
    store.create_queue("q")
    store.send_batch("q", [OutgoingMessage(body=f"m{i}".encode()) for i in range(5)])
    claimed = store.poll("q", limit=2, claim_ttl=300)
    assert len(claimed) == 2
    released: list[bool] = []
    real_link = backup_module._link

    def link_then_release(root_: Path, snap: Path, rel: str, *args: object) -> bool:
        linked = real_link(root_, snap, rel, *args)  # type: ignore[arg-type]
        if linked and "/claimed/" in rel and not released:  # the walk is between claimed/ and ready/
            released.extend(store.release("q", [d.receipt for d in claimed]))
        return linked

    monkeypatch.setattr(backup_module, "_link", link_then_release)
    report = backup_module.backup(root, tmp_path / "backup")
    store.close()
    assert released == [True, True]
    copies = _copies(tmp_path / "backup")
    assert sorted(copies.values()) == [1] * 5, copies  # every message once, none in two states
    assert report.messages == 5


def _fsyncs_during_backup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, messages: int) -> tuple[int, Path]:
    root = tmp_path / "root"
    store = FileStore(root)
    store.create_queue("q")
    store.send_batch("q", [OutgoingMessage(body=f"m{i}".encode()) for i in range(messages)])
    store.close()
    fsyncs = 0
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        nonlocal fsyncs
        fsyncs += 1
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    report = backup_module.backup(root, tmp_path / "backup")
    assert report.messages == messages
    assert sorted(_copies(tmp_path / "backup").values()) == [1] * messages
    return fsyncs, tmp_path / "backup"


def test_a_backup_on_a_local_disk_is_flushed_once_not_file_by_file(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An fsync per copied file is a journal commit each: a backup of 5 million messages took hours."""
    synced: list[int] = []

    def recording_syncfs(fd: int) -> int:  # the real one would flush every dirty file of this shared disk
        synced.append(os.fstat(fd).st_ino)
        return 0

    monkeypatch.setattr(filesystems, "_SYNCFS", recording_syncfs)
    fsyncs, dest = _fsyncs_during_backup(tmp_path, monkeypatch, 300)
    assert synced == [os.stat(dest).st_ino]
    assert fsyncs == 0


def test_a_backup_onto_a_network_file_system_fsyncs_every_file(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """There syncfs may return before anything reached the servers (spoolq.store.filesystems)."""
    monkeypatch.setattr(filesystems, "file_system_of", lambda path: ("fuse.glusterfs", True))
    fsyncs, dest = _fsyncs_during_backup(tmp_path, monkeypatch, 30)
    files = sum(len(f) for _d, _ds, f in os.walk(dest))
    directories = sum(1 for _ in os.walk(dest))
    assert files >= 30
    assert fsyncs == files + directories
