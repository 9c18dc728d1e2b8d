"""The commit journal (spoolq.store.journal): replay after a power failure, retirement after a crash.

A power failure is simulated the only way a test can: the journal files are renamed to an
earlier boot id and message files are deleted or torn, as if their pages never reached the
disk; a new store on the node must give every journaled message back, whole.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import struct
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

import spoolq.store.journal as journal_mod
from spoolq.errors import StorageUnavailable
from spoolq.store import FileStore, OutgoingMessage, QueueKind
from spoolq.store.journal import MOVED, SEND, Record, decode_records, encode_record
from spoolq.store.model import DeadLetterPolicy, QueueConfig
from tests.inside import commit_of

from .helpers import as_earlier_boot, check_body, files_under, journal_files, make_body

NODE = "jnode"


def test_power_failure_replay_restores_every_journaled_message_whole(root: Path) -> None:
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    tags = {}
    for i in range(30):
        r = store.send("q", OutgoingMessage(body=make_body(f"m{i}", pad=200)))
        tags[r.id] = f"m{i}"
    batch = store.send_batch("q", [OutgoingMessage(body=make_body(f"b{i}", pad=5000)) for i in range(10)])
    tags.update({r.id: f"b{i}" for i, r in enumerate(batch)})
    assert commit_of(store).journal is not None and commit_of(store).journal.flushes > 0
    assert journal_files(root), "standard sends wrote no journal"
    # the power fails: the process is gone without closing, some files never reached the disk
    # and some were torn; the journal (fdatasync'd before each send returned) survived
    commit_of(store).journal = None
    ready = root / "queues" / "q" / "ready"
    files = sorted(str(ready / f) for f in files_under(ready))
    for path in files[::3]:
        os.unlink(path)
    for path in files[1::3]:
        with open(path, "r+b") as f:
            f.truncate(40)
    as_earlier_boot(root)

    fresh = FileStore(root, node_id=NODE, flush="journal")
    assert journal_files(root) == [], "replayed journals were not retired"
    found = {m.id: check_body(m.body) for m in fresh.peek("q", limit=1000)}
    assert found == tags
    assert files_under(root / "corrupt") == []
    fresh.close()


def test_replay_skips_messages_that_are_whole_elsewhere_and_deleted_queues(root: Path) -> None:
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    store.create_queue("gone")
    ids = [store.send("q", OutgoingMessage(body=make_body(f"m{i}"))).id for i in range(5)]
    store.send("gone", OutgoingMessage(body=make_body("g")))
    got = store.poll("q", limit=2, claim_ttl=600)  # claimed (whole, elsewhere): not restored twice
    store.delete_queue("gone")
    commit_of(store).journal = None
    as_earlier_boot(root)
    fresh = FileStore(root, node_id=NODE, flush="journal")
    assert fresh.claim_count("q") == 2
    assert len(got) == 2
    assert sorted(m.id for m in fresh.peek("q", limit=100)) == sorted(ids), "a claimed message was restored"
    assert fresh.size("q") == 5
    assert fresh.list_queues() == ["q"]
    fresh.close()


def _send_ack_and_die(root: str, out: str) -> None:
    store = FileStore(root, node_id=NODE, flush="journal")
    ids = [store.send("q", OutgoingMessage(body=make_body(f"c{i}"))).id for i in range(3)]
    got = store.poll("q", limit=1, claim_ttl=600)
    assert store.ack("q", [got[0].receipt]) == [True]
    Path(out).write_text(" ".join([got[0].message.id, *ids]))
    os._exit(0)  # like kill -9: no close, the journal stays


def _a_process_sends_acks_and_dies(root: Path, tmp_path: Path) -> tuple[int, str, list[str]]:
    """Queue ``q`` made, then a forked process sends 3 messages, acks one and dies without a
    close: (its pid, the acked id, the sent ids)."""
    FileStore(root, node_id=NODE, flush="journal").create_queue("q")
    out = tmp_path / "ids"
    p = mp.get_context("fork").Process(target=_send_ack_and_die, args=(str(root), str(out)))
    p.start()
    p.join(30)
    assert p.exitcode == 0 and p.pid is not None
    acked, *ids = out.read_text().split()
    return p.pid, acked, ids


def test_a_crashed_process_journal_is_retired_without_replay(root: Path, tmp_path: Path) -> None:
    pid, acked, ids = _a_process_sends_acks_and_dies(root, tmp_path)
    assert any(f"~{pid}~" in n for n in journal_files(root)), "the dead process left no journal: test proves little"
    store = FileStore(root, node_id=NODE, flush="journal")
    assert not any(f"~{pid}~" in n for n in journal_files(root)), "a dead process's journal was not retired"
    left = {m.id for m in store.peek("q", limit=100)}
    assert left == set(ids) - {acked}, "same boot: an acked message came back (nothing may be replayed)"
    store.close()


def _small_files_checkpoint_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Prepared files of a few records each, and a checkpoint as soon as a record is written."""
    monkeypatch.setattr(journal_mod, "PREPARED_BYTES", 4096)
    monkeypatch.setattr(journal_mod, "CHECKPOINT_SECONDS", 0.0)


def test_rotation_checkpoints_and_deletes_old_journals(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_files_checkpoint_at_once(monkeypatch)
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    for i in range(60):
        store.send("q", OutgoingMessage(body=make_body(f"r{i}")))
    assert commit_of(store).journal is not None
    _wait_for(lambda: len(journal_files(root)) <= 2, f"retired journals pile up: {journal_files(root)}")
    assert commit_of(store).journal.checkpoints >= 1
    assert commit_of(store).journal.prepared_files >= 2, "the files never rotated: test proves little"
    store.close()
    assert journal_files(root) == [], "a clean close leaves a journal to replay"


def _wait_for(condition: Callable[[], bool], message: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, message
        time.sleep(0.02)


def test_senders_never_wait_for_a_checkpoint(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rotation hands retired files to the checkpoint thread: a slow syncfs delays their deletion,
    never a send; every record of a retired file was fdatasync'd before its send returned."""
    _small_files_checkpoint_at_once(monkeypatch)
    synced: list[str] = []
    real_fdatasync_path = journal_mod.fdatasync_path
    monkeypatch.setattr(journal_mod, "fdatasync_path", lambda p: (synced.append(p), real_fdatasync_path(p))[1])
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    j = commit_of(store).journal
    assert j is not None
    real_syncfs = j._syncfs
    syncfs_calls = []

    def slow_syncfs() -> None:
        syncfs_calls.append(time.monotonic())
        time.sleep(1.0)
        real_syncfs()
    j._syncfs = slow_syncfs
    slowest = 0.0
    for i in range(8):
        t0 = time.monotonic()
        store.send("q", OutgoingMessage(body=make_body(f"c{i}")))
        slowest = max(slowest, time.monotonic() - t0)
        written = {n for n in journal_files(root) if _journal_holds(root / "journal" / n, f"c{i}")}
        assert written and all(any(s.endswith(n) for s in synced) for n in written), \
            f"send c{i} returned before its journal file was fdatasync'd"
    assert slowest < 0.5, f"a send waited {slowest:.2f} s: it waited for a checkpoint's syncfs"
    _wait_for(lambda: len(syncfs_calls) >= 1 and len(journal_files(root)) <= 2, "no checkpoint retired the files")
    store.close()
    assert journal_files(root) == [], "a clean close leaves a journal to replay"
    thread = j._thread.thread
    assert thread is not None
    thread.join(5)
    assert not thread.is_alive(), "the checkpoint thread outlived the store"


def test_a_failed_checkpoint_keeps_its_files_until_one_succeeds(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_files_checkpoint_at_once(monkeypatch)
    monkeypatch.setattr(journal_mod.Checkpointer, "RETRY_SECONDS", 0.05)
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    j = commit_of(store).journal
    assert j is not None
    real_syncfs, failures = j._syncfs, [3]

    def failing_syncfs() -> None:
        if failures[0] > 0:
            failures[0] -= 1
            raise OSError(5, "Input/output error")
        real_syncfs()
    j._syncfs = failing_syncfs
    for i in range(1000):  # until the files rotated (the first records go to an appended file)
        store.send("q", OutgoingMessage(body=make_body(f"f{i}")))
        if j.prepared_files >= 2:
            break
        time.sleep(0.005)
    assert j.prepared_files >= 2, "the files never rotated: test proves little"
    _wait_for(lambda: failures[0] == 0 and j.checkpoints >= 1 and len(journal_files(root)) <= 2,
              "retired files were never checkpointed")
    store.close()
    assert journal_files(root) == []


def test_a_flush_with_no_active_file_is_a_syncfs(root: Path) -> None:
    """A full flush may retire the active file between a send's append and its flush; that send's
    flush cannot know which file holds its record, so it runs a syncfs rather than nothing."""
    store = FileStore(root, node_id=NODE, flush="journal")
    j = commit_of(store).journal
    assert j is not None
    calls: list[float] = []
    real_syncfs = j._syncfs
    j._syncfs = lambda: (calls.append(time.monotonic()), real_syncfs())[1]
    j.append([("q/ready/x", b"one")])
    taken = j.retire_active()  # as close does, before its own syncfs
    j.flush()
    assert calls, "the send was acknowledged with no flush covering its record"
    for path, _retired_at in taken:
        os.unlink(path)
    store.close()


def test_after_a_failed_fdatasync_the_next_flush_is_a_syncfs(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    j = commit_of(store).journal
    assert j is not None
    store.send("q", OutgoingMessage(body=make_body("ok")))
    monkeypatch.setattr(journal_mod, "fdatasync_path", lambda p: (_ for _ in ()).throw(OSError(5, "EIO")))
    with pytest.raises(StorageUnavailable):
        store.send("q", OutgoingMessage(body=make_body("failed")))
    monkeypatch.undo()
    calls: list[float] = []
    real_syncfs = j._syncfs
    j._syncfs = lambda: (calls.append(time.monotonic()), real_syncfs())[1]
    store.send("q", OutgoingMessage(body=make_body("after")))
    assert calls, "a file whose fdatasync failed was trusted to a later fdatasync"
    store.close()
    assert journal_files(root) == []


def _journal_holds(path: Path, tag: str) -> bool:
    try:
        return any(tag.encode() in rec.data for rec in decode_records(path.read_bytes()))
    except FileNotFoundError:
        return False


def test_fifo_dedup_and_at_most_once_sends_take_the_full_flush(root: Path) -> None:
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("f.fifo", QueueKind.FIFO)
    store.create_queue("d", QueueKind.DEDUP)
    store.create_queue("s")
    store.send("f.fifo", OutgoingMessage(body=b"x", group_id="g", dedup_id="1"))
    store.send("d", OutgoingMessage(body=b"y"))
    store.send("s", OutgoingMessage(body=b"z", at_most_once=True))
    assert journal_files(root) == [] or all(
        decode_records((root / "journal" / n).read_bytes()) == [] for n in journal_files(root))
    store.close()


def test_a_torn_tail_ends_a_journal_file() -> None:
    blob = encode_record(SEND, 1, "q/ready/a", b"one") + encode_record(MOVED, 2, "q/ready/b", b"r/0123")
    assert decode_records(blob) == [Record(SEND, 1, "q/ready/a", b"one"), Record(MOVED, 2, "q/ready/b", b"r/0123")]
    assert decode_records(blob[:-1]) == [Record(SEND, 1, "q/ready/a", b"one")]
    bad = bytearray(blob)
    bad[-1] ^= 1
    assert decode_records(bytes(bad)) == [Record(SEND, 1, "q/ready/a", b"one")]


def test_files_of_the_older_format_are_read() -> None:
    payload = struct.pack(">H", 9) + b"q/ready/a" + b"one"
    blob = struct.pack(">4sII", b"SPJ1", len(payload), zlib.crc32(payload)) + payload
    assert decode_records(blob) == [Record(SEND, None, "q/ready/a", b"one")]


def _as_earlier_boot_with_marks(root: Path) -> None:
    """As :func:`_as_earlier_boot`, marks included."""
    as_earlier_boot(root)
    for n in os.listdir(root / "journal"):
        if n.endswith(".synced"):
            _boot, instance, ns = n[:-7].split("~")
            os.rename(root / "journal" / n, root / "journal" / f"{'0' * 16}~{instance}~{ns}.synced")


def test_a_record_older_than_a_mark_is_not_replayed(root: Path) -> None:
    """A mark says a syncfs put every message journaled before it on the disk: what happened to
    those messages since (here an ack) stands; a message sent after the mark comes back if it was
    acked (acks are not flushed: one more delivery)."""
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    early = store.send("q", OutgoingMessage(body=make_body("early"))).id
    j = commit_of(store).journal
    assert j is not None
    j.full_flush()
    j.idle_checkpoint()  # the mark the checkpoint thread would make
    late = store.send("q", OutgoingMessage(body=make_body("late"))).id
    got = store.poll("q", limit=10, claim_ttl=600)
    assert store.ack("q", [d.receipt for d in got]) == [True, True]
    assert [n for n in os.listdir(root / "journal") if n.endswith(".synced")], "no mark was made"
    commit_of(store).journal = None
    _as_earlier_boot_with_marks(root)
    fresh = FileStore(root, node_id=NODE, flush="journal")
    assert [m.id for m in fresh.peek("q", limit=10)] == [late], f"early={early} came back, or late did not"
    fresh.close()


def test_a_dead_letter_is_not_written_back(root: Path) -> None:
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("dlq")
    store.create_queue("q", config=QueueConfig(dead_letter=DeadLetterPolicy("dlq", 1)))
    sent = store.send("q", OutgoingMessage(body=make_body("poison"))).id
    for _ in range(50):
        store.poll("q", limit=1, claim_ttl=0.02)
        if store.counts("q").total == 0:
            break
        time.sleep(0.03)
    assert store.counts("q").total == 0 and store.size("dlq") == 1
    commit_of(store).journal = None
    as_earlier_boot(root)  # no mark covers the send: only the transfer's record keeps it from coming back
    fresh = FileStore(root, node_id=NODE, flush="journal")
    assert fresh.size("q") == 0, f"the dead letter {sent} was written back into its queue"
    assert [check_body(m.body) for m in fresh.peek("dlq", limit=10)] == ["poison"]
    fresh.close()


def test_a_dead_process_of_another_mount_is_replayed(root: Path, tmp_path: Path) -> None:
    """The same boot but another mount of the file system (unmounted and mounted again since: the
    page cache that held the dead process's files is gone): replayed, unlike a crash in this mount."""
    _pid, acked, ids = _a_process_sends_acks_and_dies(root, tmp_path)
    for n in journal_files(root):
        node, boot, _instance, pid, k = n[:-4].split("~")
        os.rename(root / "journal" / n, root / "journal" / f"{node}~{boot}~m1~{pid}~{k}.jnl")
    store = FileStore(root, node_id=NODE, flush="journal")
    assert journal_files(root) == []
    assert {m.id for m in store.peek("q", limit=100)} == set(ids), "replayed: the acked message is back"
    assert acked in ids
    store.close()


def test_without_unique_mount_ids_a_dead_process_is_replayed(root: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the kernel has no unique mount id, no process can tell it shares a dead one's page
    cache: its journal is replayed (a duplicate of a message acked in its last seconds, never a loss)."""
    monkeypatch.setattr(journal_mod, "mount_id", lambda path: None)
    pid, _acked, ids = _a_process_sends_acks_and_dies(root, tmp_path)
    assert all(f"~p{pid}~{pid}~" in n for n in journal_files(root))
    store = FileStore(root, node_id=NODE, flush="journal")
    assert journal_files(root) == []
    assert {m.id for m in store.peek("q", limit=100)} == set(ids)
    store.close()


def test_an_idle_process_covers_its_last_records(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_mod, "CHECKPOINT_SECONDS", 0.2)
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    store.send("q", OutgoingMessage(body=make_body("last")))
    j = commit_of(store).journal
    assert j is not None
    sent_at = j._last_append_ns
    checkpoints_before = j.checkpoints

    def marked_after_send() -> bool:
        """A mark covering the send, made by a checkpoint that has run to its end: the mark's file
        appears before its directory's fsync returns and before the older marks go (a slow fsync
        under load made a test that looked only at the file see a checkpoint half done)."""
        return j.checkpoints > checkpoints_before and any(
            int(n[:-7].split("~")[2]) > sent_at for n in os.listdir(root / "journal") if n.endswith(".synced"))
    _wait_for(marked_after_send, "no mark covered the last send of an idle process")
    assert j._checkpoint_due() is None
    marks = [n for n in os.listdir(root / "journal") if n.endswith(".synced")]
    assert len(marks) == 1, f"older marks of the instance were kept: {marks}"
    store.close()


def test_records_a_full_flush_took_away_are_flushed_by_a_syncfs(root: Path) -> None:
    """A full flush (a FIFO send, a move) may retire the file holding a send's record between the
    send's append and its flush, and a later append may have started a new file by then: that
    send's flush cannot fdatasync the file its record is in (it is not the active one), and the
    full flush's syncfs may still be running. It runs a syncfs of its own."""
    store = FileStore(root, node_id=NODE, flush="journal")
    j = commit_of(store).journal
    assert j is not None
    calls: list[float] = []
    real_syncfs = j._syncfs
    j._syncfs = lambda: (calls.append(time.monotonic()), real_syncfs())[1]
    j.append([("q/ready/x", b"one")])  # a send's record, its flush not started yet
    taken = j.retire_active()  # a full flush takes the file (its syncfs still running)
    j.append([("q/ready/y", b"two")])  # another send starts a new active file
    j.flush()  # the first send's flush
    assert calls, "a send was acknowledged with no flush covering its record"
    for path, _retired_at in taken:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    store.close()


def test_a_send_that_fails_after_announcing_itself_withdraws(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A send announces itself to the journal's flush before it writes its files; one that fails
    withdraws, or every later flush would wait for it."""
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    j = commit_of(store).journal
    assert j is not None
    store.send("q", OutgoingMessage(body=make_body("ok")))
    assert j.tickets._announced == 0
    monkeypatch.setattr(j, "append", lambda sends: (_ for _ in ()).throw(OSError(5, "EIO")))
    with pytest.raises(StorageUnavailable):
        store.send("q", OutgoingMessage(body=make_body("failed")))
    assert j.tickets._announced == 0
    monkeypatch.undo()
    started = time.monotonic()
    store.send_batch("q", [OutgoingMessage(body=make_body(f"after{i}")) for i in range(3)])
    assert j.tickets._announced == 0 and time.monotonic() - started < 5
    store.close()
