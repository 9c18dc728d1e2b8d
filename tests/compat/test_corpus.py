"""Today's store opens every data directory of the compatibility corpus (``tests/compat/corpus/``,
made by ``tests/compat/make_corpus.py`` with earlier versions' own code, under load, then killed
mid-move) and keeps every promise those versions made:

* the root is recorded in today's on-disk format, and the commit journals of its dead processes
  replayed or retired (the node restarts on the upgraded code: same node id, journal flush);
* a claim still running holds its message until it expires, then the message comes back; a delayed
  message waits for its time;
* a duplicate within the FIFO deduplication window is refused as before (answered with the first
  copy's id, not stored again), and a dedup queue's pending copy still collapses an identical send;
* the move that was in progress finishes (taken over from its dead owner);
* every message whose send was acknowledged is delivered, none twice within one claim;
* acknowledged messages of an archived queue reach its archive; Disque jobs and declared queues
  are there.

The store runs on a clock that starts just after the corpus was made, so claims, delays and the
deduplication window are as the old version left them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tarfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from spoolq.store import root_format
from spoolq.store.codec import decode_message
from spoolq.store.filestore import FileStore
from spoolq.store.model import MoveState, OutgoingMessage
from spoolq.store.moves import STALE_AFTER
from tests.inside import root_of

CORPUS = Path(__file__).resolve().parent / "corpus"
TAG = re.compile(rb"((?:orders|backlog|fifo|later|audit|build|digest)-\d+(?:-\d+)?)")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _tag(body: bytes) -> str:
    m = TAG.search(body)
    assert m is not None, body[:200]
    return m.group(1).decode()


def _drain(store: FileStore, queue: str) -> list[tuple[str, str]]:
    """(id, tag) of everything deliverable now, claimed for an hour and acknowledged."""
    out: list[tuple[str, str]] = []
    while True:
        got = store.poll(queue, limit=100, claim_ttl=3600)
        if not got:
            return out
        out.extend((d.message.id, _tag(d.message.body)) for d in got)
        store.ack(queue, [d.receipt for d in got])


@pytest.fixture(params=sorted(p.name.removesuffix(".tar.xz") for p in CORPUS.glob("*.tar.xz")))
def corpus(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    with tarfile.open(CORPUS / f"{request.param}.tar.xz") as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / "root"
    manifest: dict[str, Any] = json.loads((root / "corpus.json").read_text())
    return root, manifest


def test_todays_store_keeps_every_promise_of_an_older_root(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, manifest = corpus
    assert root_format.check_format(root).format == 1  # written before the format file existed
    made_at = float(manifest["made_at"])
    clock = Clock(made_at + 1)
    # the node restarts on today's code with its commit journal (forced: this disk may be one the
    # journal mode is not chosen for), so the dead processes' journals are replayed or retired
    store = FileStore(root, node_id="corpus", clock=clock, flush="journal", force_flush=True)
    try:
        left = [n for n in os.listdir(root / "journal") if n.endswith(".jnl")
                and not os.path.exists(f"/proc/{n.split('~')[-2]}")]
        assert not left, f"journals of dead processes neither replayed nor retired: {left}"
        _check(store, clock, manifest)
    finally:
        store.close()
    assert root_format.check_format(root).format == root_format.FORMAT


def _check(store: FileStore, clock: Clock, manifest: dict[str, Any]) -> None:
    made_at = float(manifest["made_at"])
    pending: dict[str, list[str]] = manifest["pending"]
    claimed: dict[str, dict[str, float]] = manifest["claimed"]
    delivered: dict[str, list[tuple[str, str]]] = {q: [] for q in pending}

    # duplicates within the window are refused as before: answered with the first copy, not stored
    fifo = manifest["fifo_queue"]
    groups: dict[str, str] = manifest["fifo_groups"]
    for dedup_id in manifest["fifo_dedup_ids"][:10]:
        tag = f"fifo-{dedup_id[2:]}"
        again = store.send(fifo, OutgoingMessage(body=tag.encode(), group_id=groups[tag], dedup_id=dedup_id))
        assert again.duplicate, f"{dedup_id} was stored again within the deduplication window"
    digest = "__dedupq:digest"
    if pending.get(digest):
        sent = store.send(digest, OutgoingMessage(body=_pending_body(store, digest)))
        assert sent.duplicate, "an identical payload did not collapse into the pending copy"

    # the move in progress is taken over from its dead owner once its heartbeat is stale, and finishes
    clock.now = made_at + STALE_AFTER + 1
    store.maintain()
    deadline = time.monotonic() + 60
    ref = manifest["move"]["ref"]
    while store.move_status(ref).state is MoveState.IN_PROGRESS and time.monotonic() < deadline:
        time.sleep(0.05)
        store.maintain()
    status = store.move_status(ref)
    assert status.state is MoveState.COMPLETE, status
    assert store.size("backlog") == 0

    # claims still running hold their messages; the rest is delivered now
    for queue in pending:
        delivered[queue] += _drain(store, queue)
    delivered.setdefault("backlog-moved", []).extend(_drain(store, "backlog-moved"))
    for queue, held in claimed.items():
        early = {tag for _id, tag in delivered[queue]}
        still = [tag for tag, until in held.items() if until > clock.now and tag in early]
        assert not still, f"{queue}: claimed until later, delivered at once: {still[:5]}"

    # then time passes: claims expire, delays end
    clock.now = made_at + 3700
    store.maintain()
    for queue in pending:
        delivered[queue] += _drain(store, queue)
    delivered["backlog-moved"] += _drain(store, "backlog-moved")

    for queue, tags in pending.items():
        where = "backlog-moved" if queue == "backlog" else queue
        got = Counter(tag for _id, tag in delivered[where])
        lost = sorted(set(tags) - set(got))
        assert not lost, f"{queue}: {len(lost)} acknowledged messages never delivered: {lost[:10]}"
        ids = Counter(i for i, _tag in delivered[where])
        assert not [i for i, n in ids.items() if n > 1], f"{where}: a message delivered twice within a claim"
    order: dict[str, list[int]] = {}
    for _id, tag in delivered[fifo]:
        order.setdefault(groups[tag], []).append(int(tag.split("-")[1]))
    assert all(seq == sorted(seq) for seq in order.values()), order

    if manifest["disque"]:
        assert len(delivered["disque:builds"]) >= 20
    if manifest["declared"]:
        assert store.get_queue("declared-orders").config.claim_ttl == 45
    _check_archive(store, clock, made_at)


def _pending_body(store: FileStore, queue: str) -> bytes:
    """The body of a pending message of dedup queue ``queue`` as the old door stored it, read from
    its file (a peek would surface it: a surfaced message absorbs no identical send)."""
    qdir = root_of(store) / "queues" / queue
    markers = set(os.listdir(qdir / "dedup"))
    for path in sorted((qdir / "ready").rglob("*~0~0")):
        _meta, body = decode_message(path.read_bytes())
        if hashlib.sha256(body).hexdigest() in markers:
            return body
    raise AssertionError(f"no pending message of {queue} has a dedup marker")


def _check_archive(store: FileStore, clock: Clock, made_at: float) -> None:
    """Acknowledged messages of ``audit`` (archive on) reach its archive segments."""
    clock.now = made_at + 7200
    for _ in range(3):
        store.maintain()
    root = root_of(store)
    records = [json.loads(line) for path in (root / "archive").glob("*/*.jsonl")
               for line in path.read_text().splitlines() if line.strip()]
    tags = {_tag(json.dumps(r).encode()) for r in records}
    assert len([t for t in tags if t.startswith("audit-")]) >= 20, sorted(tags)[:30]
