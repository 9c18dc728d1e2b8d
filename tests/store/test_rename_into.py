"""``rename_into``: a rename into a directory that others keep removing never fails for it.

The unit-level proof of invariant 9 (the mixed-load proof is ``test_send_contention.py``): a
thread removes the bucket, ksec and state directories the moment they are empty, as pollers,
maintenance and purge do, while the main thread renames files into the bucket.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from spoolq.store import FileStore, OutgoingMessage
from spoolq.store import layout as L
from spoolq.store.fileops import rename_into
from spoolq.store.handle import WRITE_WINDOW_MS
from tests.conftest import FakeClock
from tests.inside import root_of


def _file(path: Path) -> str:
    path.write_bytes(b"x")
    return str(path)


def test_creates_every_missing_level_below_base(tmp_path: Path) -> None:
    base = tmp_path / "q"
    base.mkdir()
    rename_into(_file(tmp_path / "a"), f"{base}/ready/00001790/00001790000", "m", base=str(base))
    assert (base / "ready/00001790/00001790000/m").read_bytes() == b"x"


def test_never_recreates_a_deleted_queue(tmp_path: Path) -> None:
    src = _file(tmp_path / "a")
    with pytest.raises(FileNotFoundError):
        rename_into(src, f"{tmp_path}/gone/ready/00001790/00001790000", "m", base=f"{tmp_path}/gone")
    assert not (tmp_path / "gone").exists()
    assert os.path.exists(src)


def test_source_taken_by_someone_else(tmp_path: Path) -> None:
    (tmp_path / "q").mkdir()
    with pytest.raises(FileNotFoundError):
        rename_into(f"{tmp_path}/missing", f"{tmp_path}/q/ready", "m", base=f"{tmp_path}/q")


def test_renames_survive_a_remover_that_never_stops(tmp_path: Path) -> None:
    base = tmp_path / "q"
    base.mkdir()
    levels = [f"{base}/ready", f"{base}/ready/00001790", f"{base}/ready/00001790/00001790000"]
    stop = threading.Event()
    removed = 0

    def remover() -> None:
        nonlocal removed
        while not stop.is_set():
            for d in reversed(levels):  # as pollers and maintenance do: list, and remove if empty
                try:
                    if not os.listdir(d):
                        os.rmdir(d)
                        removed += 1
                except OSError:
                    pass

    t = threading.Thread(target=remover)
    t.start()
    try:
        for i in range(3000):
            rename_into(_file(tmp_path / f"m{i}"), levels[-1], f"m{i}", base=str(base))
            os.unlink(f"{levels[-1]}/m{i}")  # empty again: the remover may take the directory
    finally:
        stop.set()
        t.join()
    assert removed > 0, "the remover never raced the renames: the test proves nothing"


def test_pollers_leave_the_bucket_senders_write_into(store: FileStore, clock: FakeClock) -> None:
    """An empty poll keeps the buckets of the write window; once they age out it removes them."""
    store.create_queue("q")
    [sent] = store.send_batch("q", [OutgoingMessage(b"x")])
    bucket = root_of(store) / "queues/q" / L.ready_path(L.std_bucket(L.id_time_ms(sent.id)))
    assert store.ack("q", [d.receipt for d in store.poll("q", limit=1, claim_ttl=30)]) == [True]
    assert store.poll("q", limit=1, claim_ttl=30) == []
    assert bucket.is_dir() and not any(bucket.iterdir())
    clock.advance(WRITE_WINDOW_MS / 1000 + 1)
    assert store.poll("q", limit=1, claim_ttl=30) == []
    assert not bucket.exists() and bucket.parent.is_dir()  # the ksec directory is still current
    clock.advance(1000)
    for _ in range(2):
        assert store.poll("q", limit=1, claim_ttl=30) == []
    assert not bucket.parent.exists()
