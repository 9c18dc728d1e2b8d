"""The commit journal's prepared files (spoolq.store.journal): written full of zeros ahead of time,
then written over; replayed after a power failure with zeros past the last record, a torn record
before them, and beside a file of the older appended kind and record format.

A power failure is simulated as in ``test_journal.py``: the journal files are renamed to an earlier
boot id and message files are deleted or torn; a new store on the node gives every acknowledged
message back, whole.
"""

from __future__ import annotations

import errno
import multiprocessing as mp
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

import spoolq.store.journal as journal_mod
from spoolq.store import FileStore, OutgoingMessage, QueueKind
from spoolq.store.journal import SEND, Record, decode_records, encode_record
from tests.inside import commit_of, root_of

from .helpers import as_earlier_boot, check_body, files_under, journal_files, make_body

NODE = "pjnode"
SMALL = 64 << 10  # prepared files of a few dozen records: they rotate under the test's load


def _power_fails(store: FileStore) -> None:
    """The process is gone without a close: its journal thread stops (after the checkpoint it may
    be running), nothing else of it runs."""
    j = commit_of(store).journal
    assert j is not None
    commit_of(store).journal = None
    j._thread.stop()
    if j._thread.thread is not None:
        j._thread.thread.join(10)


def _tail(blob: bytes) -> int:
    """Where the whole records of a journal file end."""
    return sum(len(encode_record(r.kind, r.appended_ns or 0, r.path, r.data)) for r in decode_records(blob))


def test_records_over_zeros_then_a_torn_record_replay_every_acknowledged_send(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mixed load from threads of one process (single sends, batches, FIFO sends whose full flushes
    come between them, a poller acking): the journal's files are prepared ones, their size never
    changes, records are followed by zeros. Then the power fails with a record torn past the last
    acknowledged one (its first sector written, the rest not) and another whose header never
    reached the disk, many message files lost or torn, and an appended file of the older record
    format left by an earlier process: every acknowledged send comes back whole."""
    monkeypatch.setattr(journal_mod, "PREPARED_BYTES", SMALL, raising=False)
    monkeypatch.setattr(journal_mod, "CHECKPOINT_SECONDS", 3600.0)  # marks come from the full flushes only
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    store.create_queue("f.fifo", QueueKind.FIFO)
    sent: dict[str, str] = {}
    acked: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def singles(t: int) -> None:
        for i in range(60):
            r = store.send("q", OutgoingMessage(body=make_body(f"s{t}.{i}", pad=300)))
            with lock:
                sent[r.id] = f"s{t}.{i}"

    def batches() -> None:
        for i in range(15):
            rs = store.send_batch("q", [OutgoingMessage(body=make_body(f"b{i}.{k}", pad=900)) for k in range(10)])
            with lock:
                sent.update({r.id: f"b{i}.{k}" for k, r in enumerate(rs)})

    def fifo() -> None:
        for i in range(40):
            store.send("f.fifo", OutgoingMessage(body=make_body(f"f{i}"), group_id="g", dedup_id=str(i)))

    def poller() -> None:  # takes part of the load, and leaves most messages for the power failure
        while not stop.is_set() and len(acked) < 100:
            got = store.poll("q", limit=5, claim_ttl=600)
            if got and store.ack("q", [d.receipt for d in got]) == [True] * len(got):
                with lock:
                    acked.update(d.message.id for d in got)

    workers = [threading.Thread(target=singles, args=(t,)) for t in range(4)]
    workers += [threading.Thread(target=batches), threading.Thread(target=fifo)]
    polling = threading.Thread(target=poller)
    for w in [*workers, polling]:
        w.start()
    for w in workers:
        w.join(120)
    stop.set()
    polling.join(30)
    for i in range(40):  # sends after the last full flush: no mark covers their records
        r = store.send("q", OutgoingMessage(body=make_body(f"z{i}", pad=300)))
        sent[r.id] = f"z{i}"
    j = commit_of(store).journal
    assert j is not None and getattr(j, "prepared_files", 0) >= 2, "fewer than two prepared files were used"

    jdir = root / "journal"
    sizes = {n: (jdir / n).stat().st_size for n in journal_files(root)}
    prepared = [n for n, size in sizes.items() if size == SMALL]
    assert prepared, f"no journal file is a prepared one: {sizes}"
    active = Path(j._path).name
    assert active in prepared, f"the active file {active} is not a prepared one: {sizes}"
    blob = (jdir / active).read_bytes()
    end = _tail(blob)
    assert decode_records(blob), "the active prepared file holds no record"
    assert blob[end:] == bytes(SMALL - end), "past the last record of a prepared file: not zeros"

    _power_fails(store)
    # a send whose record was written and never fdatasync'd: its first 512-byte sector reached the
    # disk, the rest did not; after it, a record whose header sector was lost and the rest written
    torn = encode_record(SEND, 1, "q/ready/never", make_body("torn", pad=2000))
    lost_head = encode_record(SEND, 2, "q/ready/never2", make_body("headless", pad=2000))
    assert end + len(torn) + len(lost_head) <= SMALL
    with open(jdir / active, "r+b") as f:
        f.seek(end)
        f.write(torn[:512])
        f.seek(end + len(torn) + 512)
        f.write(lost_head[512:])
    # an appended file of the older record format (SPJ1, no time) from a process before this one
    old_id, old_rel, old_bytes = _an_unjournaled_message(store, "old")
    payload = struct.pack(">H", len(old_rel)) + old_rel.encode() + old_bytes
    (jdir / f"{NODE}~{'1' * 16}~p1~1~1.jnl").write_bytes(
        struct.pack(">4sII", b"SPJ1", len(payload), zlib.crc32(payload)) + payload)
    sent[old_id] = "old"
    # the message files that never reached the disk, or reached it torn: only those a journal record
    # still covers. A full flush (the FIFO sends') is a syncfs, after which the journal's thread
    # deletes the full files it made redundant: their messages' files are on the disk, and a
    # power failure cannot take them
    journaled = {r.path.rsplit("/", 1)[-1] for n in journal_files(root) for r in decode_records((jdir / n).read_bytes())
                 if r.kind == SEND}
    ready = root / "queues" / "q" / "ready"
    files = sorted(str(ready / f) for f in files_under(ready) if os.path.basename(f) in journaled)
    assert len(files) >= 20, f"only {len(files)} message files are still covered by the journal"
    for path in files[::3]:
        os.unlink(path)
    for path in files[1::3]:
        with open(path, "r+b") as f:
            f.truncate(40)
    as_earlier_boot(root)

    fresh = FileStore(root, node_id=NODE, flush="journal")
    assert journal_files(root) == [], "replayed journals were not retired"
    found: dict[str, str] = {}
    while got := fresh.poll("q", limit=1000, claim_ttl=600):
        for d in got:
            assert d.message.id not in found, f"{d.message.id} delivered twice"
            found[d.message.id] = check_body(d.message.body)
    missing = {i: t for i, t in sent.items() if i not in found and i not in acked}
    assert not missing, f"acknowledged sends lost: {sorted(missing.values())[:5]}"
    assert all(sent.get(i) == t for i, t in found.items()), "a message came back that was never acknowledged"
    assert files_under(root / "corrupt") == []
    fresh.close()


def _an_unjournaled_message(store: FileStore, tag: str) -> tuple[str, str, bytes]:
    """A message sent with the full flush (no record), its file then lost: (id, path under queues/, bytes)."""
    sid = store.send("q", OutgoingMessage(body=make_body(tag), at_most_once=True)).id
    queues = root_of(store) / "queues"
    [path] = [p for p in (queues / "q" / "ready").rglob(f"{sid}*")]
    data = path.read_bytes()
    path.unlink()
    return sid, str(path.relative_to(queues)), data


def test_zeros_past_the_tail_a_torn_record_and_a_lost_header_end_a_file() -> None:
    """The reading rule the replay stands on, for a prepared file: records, then the first header
    that is not a whole record's ends the file, whatever lies past it."""
    one, two = encode_record(SEND, 1, "q/ready/a", b"one"), encode_record(SEND, 2, "q/ready/b", b"two" * 300)
    zeros = bytes(4096)
    assert decode_records(one + two + zeros) == [Record(SEND, 1, "q/ready/a", b"one"),
                                                 Record(SEND, 2, "q/ready/b", b"two" * 300)]
    assert decode_records(one + two[:512] + zeros) == [Record(SEND, 1, "q/ready/a", b"one")]  # torn
    headless = bytes(512) + two[512:]
    assert decode_records(one + headless + one + zeros) == [Record(SEND, 1, "q/ready/a", b"one")]
    assert decode_records(zeros) == []  # a prepared file that never took a record


def test_full_flushes_between_sends_do_not_end_the_prepared_file(root: Path) -> None:
    """FIFO, dedup and at-most-once sends take the full flush (a syncfs); it no longer ends the
    active file, which would throw a prepared file away for every such send."""
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    store.create_queue("f.fifo", QueueKind.FIFO)
    j = commit_of(store).journal
    assert j is not None
    store.send("q", OutgoingMessage(body=make_body("first")))
    for _ in range(500):  # the first records go to an appended file until a prepared one is ready
        if getattr(j, "prepared_files", 0):
            break
        time.sleep(0.01)
    store.send("q", OutgoingMessage(body=make_body("second")))
    active = j._path
    assert os.path.getsize(active) == journal_mod.PREPARED_BYTES
    for i in range(20):
        store.send("f.fifo", OutgoingMessage(body=make_body(f"f{i}"), group_id="g", dedup_id=str(i)))
        store.send("q", OutgoingMessage(body=make_body(f"s{i}")))
    assert j._path == active, "a full flush ended the prepared file"
    records = decode_records(Path(active).read_bytes())
    assert len(records) == 21 and b"second:" in records[0].data and b"s19:" in records[-1].data
    store.close()
    assert journal_files(root) == [], "a clean close leaves a journal file (the prepared next one?)"


def test_a_failed_preparation_leaves_sends_on_an_appended_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk while the next file is prepared: no partial file is left, sends go on in an
    appended file (never refused for it), and preparation is tried again later."""
    monkeypatch.setattr(journal_mod, "CHECKPOINT_SECONDS", 0.2)
    real = journal_mod.write_zeros
    failures: list[str] = []

    def full_disk(path: str, size: int) -> None:
        failures.append(path)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(journal_mod, "write_zeros", full_disk)
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    j = commit_of(store).journal
    assert j is not None
    ids = [store.send("q", OutgoingMessage(body=make_body(f"a{i}"))).id for i in range(20)]
    _wait(lambda: bool(failures))
    assert j.prepared_files == 0 and j._capacity == 0
    monkeypatch.setattr(journal_mod, "write_zeros", real)
    for i in range(200):
        ids.append(store.send("q", OutgoingMessage(body=make_body(f"b{i}"))).id)
        if j._capacity:
            break
        time.sleep(0.01)
    assert j._capacity == journal_mod.PREPARED_BYTES, "preparation was never tried again"
    assert len(failures) == 1, "a failed preparation was retried for every send"
    assert sorted(m.id for m in store.peek("q", limit=1000)) == sorted(ids)
    store.close()
    assert journal_files(root) == []


def _wait(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _child_sends(root: str, out: str) -> None:
    store = FileStore(root, node_id=NODE, flush="journal")
    j = commit_of(store).journal
    assert j is not None
    ids = [store.send("q", OutgoingMessage(body=make_body(f"c{i}"))).id for i in range(5)]
    Path(out).write_text(f"{j._path} {' '.join(ids)}")
    os._exit(0)


def test_a_forked_child_never_writes_into_its_parents_prepared_file(root: Path, tmp_path: Path) -> None:
    store = FileStore(root, node_id=NODE, flush="journal")
    store.create_queue("q")
    j = commit_of(store).journal
    assert j is not None
    store.send("q", OutgoingMessage(body=make_body("parent")))
    _wait(lambda: bool(j._prepared))
    parents = j._prepared
    out = tmp_path / "child"
    p = mp.get_context("fork").Process(target=_child_sends, args=(str(root), str(out)))
    p.start()
    p.join(30)
    assert p.exitcode == 0
    child_path, *child_ids = out.read_text().split()
    assert f"~{p.pid}~" in Path(child_path).name
    assert Path(parents).read_bytes() == bytes(journal_mod.PREPARED_BYTES), "the child wrote into the parent's file"
    assert {m.id for m in store.peek("q", limit=100)} >= set(child_ids)
    store.send("q", OutgoingMessage(body=make_body("parent again")))
    store.close()
    assert journal_files(root) == [f for f in journal_files(root) if f"~{p.pid}~" in f], "the parent left a file"
