"""``delete_queue(name, if_empty=True)``: deletes an empty queue, refuses a queue with messages
leaving it exactly as it was, and loses no message sent at the same moment (threads sending,
polling and acking while another thread keeps deleting; a queue made again by a send in the
middle of a deletion; a deletion cut off half-way)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spoolq.errors import QueueNotEmpty, QueueNotFound
from spoolq.store import FileStore, bucket_guard, deleting
from spoolq.store.catalog import QueueCatalog
from spoolq.store.model import OutgoingMessage, QueueCounts, QueueKind
from tests.conftest import tree
from tests.inside import catalog_of, reading_of, root_of


def M(body: bytes) -> OutgoingMessage:
    return OutgoingMessage(body=body)


@pytest.fixture
def real(tmp_path: Path) -> Iterator[FileStore]:  # the real clock: claims and buckets as in service
    s = FileStore(tmp_path / "root", node_id="del", fsync=False)
    yield s
    s.close()


def test_an_empty_queue_is_deleted_a_queue_with_messages_is_refused_unchanged(store: FileStore) -> None:
    store.create_queue("gone")
    store.send("kept", M(b"x"), create=QueueKind.STANDARD)
    store.send("claimed", M(b"y"), create=QueueKind.STANDARD)
    store.poll("claimed", limit=1, claim_ttl=60)
    store.send("later", M(b"z"), create=QueueKind.STANDARD)
    store.update_queue("later", config=store.get_queue("later").config)
    store.delete_queue("gone", if_empty=True)
    assert "gone" not in store.list_queues()
    before = tree(root_of(store))
    for name in ("kept", "claimed"):
        with pytest.raises(QueueNotEmpty):
            store.delete_queue(name, if_empty=True)
    with pytest.raises(QueueNotFound):
        store.delete_queue("gone", if_empty=True)
    assert tree(root_of(store)) == before
    store.maintain()
    assert os.listdir(root_of(store) / "trash") == []


def test_a_message_that_lands_after_the_check_puts_the_queue_back(real: FileStore,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The check said empty, a send landed before the queue was moved aside: it is put back whole."""
    real.create_queue("q")
    real_counts = reading_of(real).counts

    def racing_counts(name: str, limit: int | None = None):  # type: ignore[no-untyped-def]
        got = real_counts(name, limit)
        real.send("q", M(b"landed"))
        return got

    monkeypatch.setattr(reading_of(real), "counts", racing_counts)
    with pytest.raises(QueueNotEmpty):
        real.delete_queue("q", if_empty=True)
    monkeypatch.undo()
    assert real.list_queues() == ["q"]
    assert [d.message.body for d in real.poll("q", limit=5)] == [b"landed"]
    assert not [n for n in os.listdir(catalog_of(real).queues_dir) if n.startswith(".")]


def test_a_queue_made_again_meanwhile_gets_the_messages_and_receipts_still_work(
        real: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    real.send("q", M(b"old"), create=QueueKind.STANDARD)
    (claim,) = real.poll("q", limit=1, claim_ttl=60)
    real.send("q", M(b"ready"))
    monkeypatch.setattr(reading_of(real), "counts", lambda *a, **k: QueueCounts(0, 0, 0, True))
    settle = deleting.settle

    def send_first(core: QueueCatalog, aside: str) -> bool:
        real.send("q", M(b"new"), create=QueueKind.STANDARD)  # an EmoDB send makes the queue again
        return settle(core, aside)

    monkeypatch.setattr(deleting, "settle", send_first)
    with pytest.raises(QueueNotEmpty):
        real.delete_queue("q", if_empty=True)
    monkeypatch.undo()
    assert real.ack("q", [claim.receipt]) == [True]
    assert sorted(d.message.body for d in real.poll("q", limit=5)) == [b"new", b"ready"]
    real.maintain()
    assert os.listdir(root_of(real) / "trash") == []


def test_a_deletion_cut_off_half_way_is_finished_by_maintenance(real: FileStore) -> None:
    real.send("full", M(b"m"), create=QueueKind.STANDARD)
    real.create_queue("empty")
    for name in ("full", "empty"):
        os.rename(f"{catalog_of(real).queues_dir}/{name}", f"{catalog_of(real).queues_dir}/{deleting.PREFIX}0123456789abcdef~{name}")
    assert real.list_queues() == []
    assert deleting.sweep_deleting(catalog_of(real), time.time()) == 0  # young: maybe still in progress
    later = time.time() + deleting.ORPHAN_AGE + 1
    assert deleting.sweep_deleting(catalog_of(real), later) == 2
    assert real.list_queues() == ["full"]
    assert [d.message.body for d in real.poll("full")] == [b"m"]
    assert [n for n in os.listdir(catalog_of(real).queues_dir) if n.startswith(deleting.GONE_PREFIX)]  # the empty one
    assert deleting.sweep_deleting(catalog_of(real), later + deleting.ORPHAN_AGE + 1) == 1
    assert [n for n in os.listdir(catalog_of(real).queues_dir) if n.startswith(".")] == []


def test_a_straggler_that_names_its_file_in_a_deleted_queue_brings_it_back(real: FileStore) -> None:
    """A send resolves its file's path, then names it: a deletion that moved the queue aside in
    between has already looked. The deleted queue waits a minute and is looked into again."""
    real.create_queue("q")
    real.delete_queue("q", if_empty=True)
    assert real.list_queues() == []
    (gone,) = [n for n in os.listdir(catalog_of(real).queues_dir) if n.startswith(deleting.GONE_PREFIX)]
    real.send("elsewhere", M(b"late"), create=QueueKind.STANDARD)  # a whole message file to move in
    (path,) = [p for p in Path(catalog_of(real).queues_dir, "elsewhere", "ready").rglob("*") if p.is_file()]
    bucket = Path(catalog_of(real).queues_dir, gone, os.path.relpath(path.parent, Path(catalog_of(real).queues_dir, "elsewhere")))
    bucket.mkdir(parents=True)
    os.rename(path, bucket / path.name)  # what the straggler's link did
    assert deleting.sweep_deleting(catalog_of(real), time.time()) == 0  # its minute is not up
    assert deleting.sweep_deleting(catalog_of(real), time.time() + deleting.ORPHAN_AGE + 1) == 1
    assert real.list_queues() == ["elsewhere", "q"]
    assert [m.body for m in real.peek("q")] == [b"late"]


def test_a_send_that_may_create_outlasts_a_run_of_deletions(real: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deletion wins each of a send's first 15 attempts to make its queue (more than
    SEND_ATTEMPTS, within SEND_RETRY_FOR): the send goes on trying and is stored, once."""
    core = catalog_of(real)
    made = core.create_queue
    wins = [15]

    def made_then_deleted(name: str, kind: QueueKind) -> None:
        made(name, kind)
        if wins[0]:
            wins[0] -= 1
            real.delete_queue(name, if_empty=True)

    monkeypatch.setattr(core, "create_queue", made_then_deleted)
    sent = real.send("q", M(b"late"), create=QueueKind.STANDARD)
    assert wins == [0]
    assert [m.id for m in real.peek("q")] == [sent.id]


@pytest.mark.parametrize("create", [QueueKind.STANDARD, None], ids=["implicit-queue", "explicit-queue"])
def test_no_send_is_lost_or_refused_while_deletions_run(real: FileStore, create: QueueKind | None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Senders, a consumer and a deleter at once. An EmoDB-like send (``create``) may find the
    queue deleted and make it again; a send that may not create (SQS) to a queue that is never
    really empty (one message nobody polls) must never be refused. Every acknowledged send is
    either consumed or still in the queue at the end."""
    real.create_queue("q")
    if create is None:
        real.send("q", OutgoingMessage(b"anchor", delay=3600))
        # the check before moving the queue aside sees it empty: every deletion goes all the way
        empty = QueueCounts(0, 0, 0, True)
        monkeypatch.setattr(reading_of(real), "counts", lambda *a, **k: empty)
    sent: list[str] = []
    got: list[str] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    deletions = [0, 0]

    def sender(n: int) -> None:
        try:
            for i in range(150):
                sent.append(real.send("q", M(b"%d-%d" % (n, i)), create=create).id)
        except BaseException as e:
            errors.append(e)

    def consumer() -> None:
        while not stop.is_set():
            ds = real.poll("q", limit=10, claim_ttl=60)
            done = real.ack("q", [d.receipt for d in ds])
            got.extend(d.message.id for d, ok in zip(ds, done, strict=True) if ok)

    def deleter() -> None:
        while not stop.is_set():
            try:
                real.delete_queue("q", if_empty=True)
                deletions[0] += 1
            except QueueNotEmpty:
                deletions[1] += 1
            except QueueNotFound:
                pass
            time.sleep(0.002)  # a few hundred deletions a second: far more than anyone clicks

    senders = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
    others = [threading.Thread(target=consumer), threading.Thread(target=deleter)]
    for t in senders + others:
        t.start()
    for t in senders:
        t.join()
    stop.set()
    for t in others:
        t.join()
    assert errors == []
    # a send whose file was named in the queue after a deletion had looked into it (see
    # deleting.py) is put back when the deleted queue's minute is up
    deleting.sweep_deleting(catalog_of(real), time.time() + deleting.ORPHAN_AGE + 1)
    left = [m.id for m in real.peek("q", limit=5000)] if "q" in real.list_queues() else []
    assert set(sent) <= set(got) | set(left)
    assert len(sent) == 600
    if create is None:
        assert deletions[1] > 0 and deletions[0] == 0  # put back every time: the anchor is in it
    else:
        assert sum(deletions) > 0


@pytest.mark.parametrize("mode", ["guarded", "immediate"])
def test_a_merge_into_a_queue_made_again_holds_its_bucket_lock_where_removal_is_guarded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """The merged messages go into the deleted queue's (old) buckets in the remade queue: where
    empty buckets are removed under the bucket lock (GlusterFS), no removal may run meanwhile."""
    store = FileStore(tmp_path / "root", node_id="del", fsync=False, empty_buckets=mode)
    try:
        store.send("q", M(b"old"), create=QueueKind.STANDARD)
        monkeypatch.setattr(reading_of(store), "counts", lambda *a, **k: QueueCounts(0, 0, 0, True))
        settle, rename_into = deleting.settle, deleting.rename_into
        removal_possible: list[bool] = []

        def send_first(core: QueueCatalog, aside: str) -> bool:
            store.send("q", M(b"new"), create=QueueKind.STANDARD)
            return settle(core, aside)

        def watched(source: str, directory: str, name: str, base: str) -> None:
            with bucket_guard.removing(os.path.realpath(base)) as held:  # what maintenance would try now
                removal_possible.append(held)
            rename_into(source, directory, name, base=base)

        monkeypatch.setattr(deleting, "settle", send_first)
        monkeypatch.setattr(deleting, "rename_into", watched)
        with pytest.raises(QueueNotEmpty):
            store.delete_queue("q", if_empty=True)
        monkeypatch.undo()
        assert removal_possible == [mode == "immediate"]
        assert sorted(d.message.body for d in store.poll("q", limit=5)) == [b"new", b"old"]
    finally:
        store.close()
