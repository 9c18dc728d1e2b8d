"""With per-file fsync (``--flush fsync``) a new directory's name is flushed in its parent.

An fsync of a directory makes the names in it durable, not its own name in its parent. ext4
happens to commit a ``mkdir`` with its parent, but a file system need not (POSIX promises nothing
of the kind): an acknowledged send in a bucket whose own name never reached the disk is lost with
it. So every directory between the root and a flushed name must have had its own name flushed:
these tests record every ``fsync`` and check that, for sends into new buckets (made by the sender,
or a moment earlier by another process), for the root's own directories, and for a new archive
directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spoolq.store import FileStore, OutgoingMessage
from spoolq.store import layout as L
from spoolq.store.model import QueueConfig
from tests.inside import archive_of, catalog_of, flush_mode_of, now_ms_of

NOW = 1_700_000_000.5


class FsyncLog:
    """Every path fsync'd (by any descriptor) since the last :meth:`clear`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = os.fsync

        def recording(fd: int) -> None:
            real(fd)
            self.paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        monkeypatch.setattr(os, "fsync", recording)

    def clear(self) -> None:
        self.paths.clear()


def _dirs(root: Path) -> set[str]:
    return {str(Path(d)) for d, _subdirs, _files in os.walk(root)}


def _unflushed_names(made: set[str], synced: list[str]) -> list[str]:
    """Directories made whose name was not flushed in their parent."""
    return sorted(d for d in made if os.path.dirname(d) not in synced)


def test_a_send_into_new_directories_flushes_their_names(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [NOW]
    log = FsyncLog(monkeypatch)
    store = FileStore(root, node_id="dirs", flush="fsync", clock=lambda: now[0])
    assert flush_mode_of(store) == "fsync"
    store.create_queue("q")
    before = _dirs(root)
    log.clear()
    sent = store.send("q", OutgoingMessage(b"one"))
    made = _dirs(root) - before
    bucket = str(root / "queues" / "q" / L.ready_path(L.std_bucket(int(NOW * 1000))))
    assert bucket in made, "the test sends into a new bucket"
    assert bucket in log.paths, "the bucket holding the message was not flushed"
    assert _unflushed_names(made, log.paths) == []

    # the next second's bucket made by another process (a release, say) an instant before the send
    now[0] += 1
    other = root / "queues" / "q" / L.ready_path(L.std_bucket(int(now[0] * 1000)))
    other.mkdir()
    log.clear()
    store.send("q", OutgoingMessage(b"two"))
    assert str(other) in log.paths
    assert str(other.parent) in log.paths, "a bucket another process made: its name was not flushed"

    # a purge replaces ready/ whole: the sends after it flush the new chain again
    store.purge("q")
    before = _dirs(root)
    log.clear()
    store.send("q", OutgoingMessage(b"three"))
    made = _dirs(root) - before
    assert _unflushed_names(made, log.paths) == []
    assert str(root / "queues" / "q" / "ready") in log.paths, "the new ready/ directory's name was not flushed"
    assert sent.id
    store.close()


def test_the_roots_own_directories_are_flushed_when_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = FsyncLog(monkeypatch)
    root = tmp_path / "new" / "root"
    root.parent.mkdir()
    store = FileStore(root, node_id="dirs", flush="fsync")
    assert str(root) in log.paths, "the names of queues/, moves/, journal/... were not flushed"
    assert str(root.parent) in log.paths, "the root's own name was not flushed"
    store.close()
    log.clear()
    FileStore(root, node_id="dirs", flush="fsync").close()
    assert str(root.parent) not in log.paths, "an existing root is flushed again at every start"


def test_a_new_archive_directory_is_flushed_with_its_first_segment(root: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    log = FsyncLog(monkeypatch)
    store = FileStore(root, node_id="dirs", flush="fsync")
    store.create_queue("audited", config=QueueConfig(archive=True))
    store.send("audited", OutgoingMessage(b"kept"))
    got = store.poll("audited", limit=1, claim_ttl=60)
    assert store.ack("audited", [got[0].receipt]) == [True]
    log.clear()
    q = catalog_of(store).require("audited")
    assert archive_of(store).compact(q, now_ms_of(store), force=True) == 1
    segment_dir = root / "archive" / L.archive_dir_name("audited")
    assert str(segment_dir) in log.paths
    assert str(root / "archive") in log.paths, "the new archive directory's name was not flushed"
    store.close()


def test_a_bucket_removed_before_its_flush_flushes_the_directory_above(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A poller (on any node) may empty and remove a bucket between a send's rename into it and
    the flush: the rename must still be flushed, through the directory the removal changed."""
    from spoolq.store.group_commit import GroupCommit
    log = FsyncLog(monkeypatch)
    commit = GroupCommit(root, enabled=True, use_syncfs=False)
    bucket = root / "ready" / "1700000" / "0001"
    bucket.mkdir(parents=True)
    commit.note_paths(str(bucket))
    bucket.rmdir()
    log.clear()
    commit.flush()
    assert str(bucket.parent) in log.paths
    commit.close()
