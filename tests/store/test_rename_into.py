"""``rename_into``: a rename into a directory that others keep removing never fails for it.

The unit-level proof of invariant 9 (the mixed-load proof is ``test_send_contention.py``): a
thread removes the bucket, ksec and state directories the moment they are empty, more eagerly
than maintenance and purge ever do, while the main thread renames files into the bucket. Then
when buckets are removed at all: only by maintenance, once settled and named by no claimed or
delayed message (on a GlusterFS distributed volume an ``rmdir`` that meets a rename into the same
directory can hang both).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from spoolq.store import FileStore, OutgoingMessage
from spoolq.store import layout as L
from spoolq.store.files import rename_into
from spoolq.store.handle import BUCKET_SETTLE_MS
from tests.conftest import FakeClock


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


def _bucket_of(store: FileStore, mid: str) -> Path:
    return store.root / "queues/q" / L.ready_path(L.std_bucket(L.id_time_ms(mid)))


def test_pollers_never_remove_a_bucket(store: FileStore, clock: FakeClock) -> None:
    """Polls pass an empty bucket over, however old; the maintenance pass removes it once settled,
    and its ksec directory once that is settled and empty too."""
    store.create_queue("q")
    [sent] = store.send_batch("q", [OutgoingMessage(b"x")])
    bucket = _bucket_of(store, sent.id)
    assert store.ack("q", [d.receipt for d in store.poll("q", limit=1, claim_ttl=30)]) == [True]
    clock.advance(BUCKET_SETTLE_MS / 1000 - 1)
    store.maintain()
    assert bucket.is_dir(), "removed before it settled: a slow send may still rename into it"
    clock.advance(2000)
    for _ in range(3):
        assert store.poll("q", limit=1, claim_ttl=30) == []
    assert bucket.is_dir() and not any(bucket.iterdir()), "a poll removed a bucket"
    assert store.maintain()["buckets_removed"] == 1
    assert not bucket.exists() and not bucket.parent.exists()  # its ksec is 2,000 s old and empty


def test_a_bucket_stays_while_a_claimed_message_may_return_to_it(store: FileStore, clock: FakeClock) -> None:
    """A claimed message returns to its bucket when released or expired: the bucket is kept,
    however old and empty, while the claim exists."""
    store.create_queue("q")
    [sent] = store.send_batch("q", [OutgoingMessage(b"x")])
    bucket = _bucket_of(store, sent.id)
    [claim] = store.poll("q", limit=1, claim_ttl=3600)
    clock.advance(BUCKET_SETTLE_MS / 1000 + 2000)
    assert store.maintain()["buckets_removed"] == 0
    assert bucket.is_dir() and not any(bucket.iterdir())
    assert store.release("q", [claim.receipt]) == [True]
    assert [f.name[:40] for f in bucket.iterdir()] == [sent.id]
    assert store.ack("q", [d.receipt for d in store.poll("q", limit=1, claim_ttl=30)]) == [True]
    assert store.maintain()["buckets_removed"] == 1
    assert not bucket.exists()


def test_a_bucket_stays_while_a_delayed_message_goes_to_it(store: FileStore, clock: FakeClock) -> None:
    """A delayed message goes to the bucket of its send second when due: that bucket is kept,
    however old and empty, until then."""
    store.create_queue("q")
    [now, later] = store.send_batch("q", [OutgoingMessage(b"x"), OutgoingMessage(b"y", delay=600)])
    bucket = _bucket_of(store, now.id)
    assert bucket == _bucket_of(store, later.id)
    assert store.ack("q", [d.receipt for d in store.poll("q", limit=1, claim_ttl=30)]) == [True]
    clock.advance(BUCKET_SETTLE_MS / 1000 + 60)
    assert store.maintain()["buckets_removed"] == 0
    assert bucket.is_dir() and not any(bucket.iterdir())
    clock.advance(600)
    store.maintain()  # due: back to its bucket
    assert [f.name[:40] for f in bucket.iterdir()] == [later.id]
    assert store.ack("q", [d.receipt for d in store.poll("q", limit=1, claim_ttl=30)]) == [True]
    assert store.maintain()["buckets_removed"] == 1
    assert not bucket.exists()
