"""Invariant 8: storage trouble is honest. A full or read-only file system gives StorageUnavailable
with a retry-after hint, never a half-stored message, and what was stored before stays intact.

The root is a 2 MiB tmpfs mounted by the test itself (we run as root; without the right
to mount the tests are skipped, saying so).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from spoolq.errors import StorageUnavailable
from spoolq.store import FileStore, OutgoingMessage
from spoolq.store.trash import Trash

from .helpers import check_body, files_under, make_body

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
MS_RDONLY, MS_REMOUNT, MNT_DETACH = 1, 32, 2
SIZE = "size=2m"


def _mount(target: Path, flags: int = 0) -> int:
    """mount(2) a tmpfs on ``target`` (or remount it with ``flags``); 0 or the errno."""
    rc = _libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", flags, SIZE.encode())
    return 0 if rc == 0 else ctypes.get_errno()


class Tmpfs:
    def __init__(self, mnt: Path) -> None:
        self.mnt = mnt
        self.stores: list[FileStore] = []

    def store(self, **kw: object) -> FileStore:
        s = FileStore(self.mnt / "root", node_id="diskfull", **kw)  # type: ignore[arg-type]
        self.stores.append(s)
        return s

    def remount(self, read_only: bool) -> None:
        err = _mount(self.mnt, MS_REMOUNT | (MS_RDONLY if read_only else 0))
        assert err == 0, f"remount {'ro' if read_only else 'rw'} failed: {os.strerror(err)}"


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Tmpfs]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    err = _mount(mnt)
    if err == errno.EPERM:
        pytest.skip("cannot mount a tmpfs here (EPERM: needs root / CAP_SYS_ADMIN); disk-full tests not run")
    assert err == 0, f"mount -t tmpfs -o {SIZE} failed: {os.strerror(err)}"
    fs = Tmpfs(mnt)
    try:
        yield fs
    finally:
        for s in fs.stores:
            s.close()
        if _libc.umount2(str(mnt).encode(), 0) != 0:
            _libc.umount2(str(mnt).encode(), MNT_DETACH)  # something still open: detach it lazily


def _assert_intact(store: FileStore, queue: str, sent: dict[str, bytes]) -> None:
    assert store.size(queue) == len(sent), f"size {store.size(queue)}, {len(sent)} messages were acknowledged"
    peeked = {m.id: m.body for m in store.peek(queue, limit=5000)}
    assert peeked.keys() == sent.keys()
    for mid, body in peeked.items():
        check_body(body)
        assert body == sent[mid], f"message {mid} changed"


def _fill(store: FileStore, queue: str, sent: dict[str, bytes], rnd: random.Random, lo: int, hi: int,
          tag: str) -> StorageUnavailable:
    """Send bodies of ``lo``..``hi`` bytes until the store refuses; the refusal."""
    for i in range(5000):
        body = make_body(f"{tag}{i}", pad=rnd.randint(lo, hi), rnd=True)
        try:
            r = store.send(queue, OutgoingMessage(body=body))
        except StorageUnavailable as e:
            return e
        sent[r.id] = body
    raise AssertionError("a 2 MiB file system took 5000 sends without filling up")


def _assert_refusal(e: StorageUnavailable, code: str) -> None:
    assert e.retry_after > 0
    assert code in str(e), f"the error does not name {code}: {e}"
    assert isinstance(e.__cause__, OSError)


def test_full_disk_refuses_sends_cleanly_and_keeps_earlier_messages(tmpfs: Tmpfs) -> None:
    rnd = random.Random(7)
    store = tmpfs.store()
    store.create_queue("q")
    sent: dict[str, bytes] = {}

    e = _fill(store, "q", sent, rnd, 8_000, 40_000, "big")
    _assert_refusal(e, "ENOSPC")
    assert len(sent) > 10, "the file system filled up before it held anything: test proves little"
    _assert_intact(store, "q", sent)

    # a batch that cannot fit (some of its entries might) is refused whole
    batch = [OutgoingMessage(body=make_body(f"batch{i}", pad=30_000, rnd=True)) for i in range(20)]
    with pytest.raises(StorageUnavailable) as batch_error:
        store.send_batch("q", batch)
    _assert_refusal(batch_error.value, "ENOSPC")
    _assert_intact(store, "q", sent)

    # fill to the brim with small messages: the last page goes too
    e = _fill(store, "q", sent, rnd, 0, 200, "small")
    _assert_refusal(e, "ENOSPC")
    _assert_intact(store, "q", sent)

    store.maintain()
    assert files_under(tmpfs.mnt / "root" / "tmp") == [], "a refused send left temp files behind"
    assert files_under(tmpfs.mnt / "root" / "corrupt") == []

    # a fresh process on the full root reads everything
    _assert_intact(tmpfs.store(), "q", sent)

    # consumers can drain a full disk, and then sends work again
    got = store.poll("q", limit=20, claim_ttl=60)
    assert len(got) == 20
    for d in got:
        assert d.message.body == sent[d.message.id]
    assert store.ack("q", [d.receipt for d in got]) == [True] * 20
    for d in got:
        del sent[d.message.id]
    r = store.send("q", OutgoingMessage(body=make_body("after", pad=1000)))
    sent[r.id] = make_body("after", pad=1000)
    _assert_intact(store, "q", sent)


def test_a_send_on_a_full_disk_first_unlinks_the_acked_files_this_process_holds(
        tmpfs: Tmpfs, monkeypatch: pytest.MonkeyPatch) -> None:
    """Acked files hold their space in trash/ until the trash thread unlinks them (every second): a
    send that finds the disk full unlinks them at once and is stored. The trash thread is held
    still here, so only the send's own drain can free the space."""
    monkeypatch.setattr(Trash, "_run", lambda self: None)
    rnd = random.Random(13)
    store = tmpfs.store()
    store.create_queue("q")
    sent: dict[str, bytes] = {}
    _assert_refusal(_fill(store, "q", sent, rnd, 20_000, 40_000, "big"), "ENOSPC")
    got = store.poll("q", limit=10, claim_ttl=60)
    assert len(got) == 10 and store.ack("q", [d.receipt for d in got]) == [True] * 10
    for d in got:
        del sent[d.message.id]
    assert len(os.listdir(tmpfs.mnt / "root" / "trash")) == 10  # acked, not unlinked yet
    body = make_body("after", pad=60_000, rnd=True)  # more than any refused send: no room without the trash
    sent[store.send("q", OutgoingMessage(body=body)).id] = body
    assert os.listdir(tmpfs.mnt / "root" / "trash") == []
    _assert_intact(store, "q", sent)


def test_read_only_root_refuses_writes_and_still_serves_reads(tmpfs: Tmpfs) -> None:
    store = tmpfs.store()
    store.create_queue("q")
    sent = {}
    for i in range(30):
        body = make_body(f"ro{i}", pad=500)
        sent[store.send("q", OutgoingMessage(body=body)).id] = body
    tmpfs.remount(read_only=True)
    try:
        with pytest.raises(StorageUnavailable) as e:
            store.send("q", OutgoingMessage(body=b"x"))
        _assert_refusal(e.value, "EROFS")
        with pytest.raises(StorageUnavailable) as e:
            store.send_batch("q", [OutgoingMessage(body=b"x")] * 3)
        _assert_refusal(e.value, "EROFS")
        with pytest.raises(StorageUnavailable) as e:
            store.create_queue("other")
        _assert_refusal(e.value, "EROFS")
        with pytest.raises(StorageUnavailable) as e:
            store.poll("q", limit=5)  # a claim is a rename: it cannot be made
        _assert_refusal(e.value, "EROFS")
        _assert_intact(store, "q", sent)

        fresh = tmpfs.store()  # a process started while the root is read-only
        _assert_intact(fresh, "q", sent)
        with pytest.raises(StorageUnavailable) as e:
            fresh.send("q", OutgoingMessage(body=b"x"))
        _assert_refusal(e.value, "EROFS")
    finally:
        tmpfs.remount(read_only=False)
    _assert_intact(store, "q", sent)
    body = make_body("back", pad=10)
    sent[store.send("q", OutgoingMessage(body=body)).id] = body
    _assert_intact(store, "q", sent)
    store.maintain()
    assert files_under(tmpfs.mnt / "root" / "tmp") == []


def test_fsync_mode_batches_written_in_parallel_are_whole_or_refused_whole(tmpfs: Tmpfs) -> None:
    """``flush="fsync"`` writes a batch's temp files from a thread pool: all of it lands, or on
    ENOSPC none of it does and no temp file is left behind."""
    rnd = random.Random(11)
    store = tmpfs.store(flush="fsync")
    store.create_queue("q")
    sent: dict[str, bytes] = {}
    bodies = [make_body(f"pool{i}", pad=500) for i in range(20)]
    for r, body in zip(store.send_batch("q", [OutgoingMessage(body=b) for b in bodies]), bodies, strict=True):
        sent[r.id] = body
    _assert_intact(store, "q", sent)
    _fill(store, "q", sent, rnd, 8_000, 40_000, "big")
    batch = [OutgoingMessage(body=make_body(f"batch{i}", pad=30_000, rnd=True)) for i in range(20)]
    with pytest.raises(StorageUnavailable) as e:
        store.send_batch("q", batch)
    _assert_refusal(e.value, "ENOSPC")
    _assert_intact(store, "q", sent)
    store.maintain()
    assert files_under(tmpfs.mnt / "root" / "tmp") == [], "a refused parallel batch left temp files behind"
