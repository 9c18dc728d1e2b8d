"""The processes of one power-cut cycle: ``python -m tests.powercut.workload ROLE ROOT LOG FLUSH CYCLE SEED``.

Each role opens its own :class:`~spoolq.store.FileStore` on the crash disk (node ``pcnode``, as the
workers of one gunicorn would) and runs until it is killed by the cut; ``check`` runs after the
reboot and prints its findings as one JSON line. FLUSH ``none`` is the store with every flush
skipped (``fsync=False``): the variant that must lose acknowledged sends.

Every line of a role's LOG is written with one ``os.write`` (whole or absent after SIGKILL), to the
host's disk (not the crash disk): what the store told the role, written *after* the call returned,
or what the role is *about to* do, written before the call (an ack or a poll cut short may have
taken effect without its result being logged)::

    S <queue> <id> <tag> <dup>   a send returned success (dup: 1 if collapsed into a pending copy)
    D <queue> <id> <tag>         a poll delivered this message
    P <queue> <id>               about to acknowledge this message
    Q <queue>                    about to poll (the at-most-once poller)
    E <queue>                    that poll returned nothing
    M <ref>                      a move was started
    X <queue> <id>               a delivered body failed its self-check

Queues are per cycle (``std-<c>``, ``amo-<c>``, ``dd-<c>``, ``ff-<c>.fifo``, ``mvsrc-<c>``,
``mvdst-<c>``); the checker deletes them once checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spoolq.errors import SpoolqError
from spoolq.store import FileStore, OutgoingMessage, QueueKind
from spoolq.store import layout as L
from spoolq.store.codec import CorruptMessage, decode_message
from spoolq.store.fileops import read_file
from spoolq.store.journal import PREPARED_BYTES, file_bytes, journal_limit
from spoolq.store.model import MoveState
from tests.store.helpers import BadBody, check_body, make_body

NODE = "pcnode"
FIFO_GROUPS = 3
MOVE_PREFILL = 300
MOVE_RATE = 250
CLAIM_TTL = 2.0


def queues(cycle: int) -> dict[str, str]:
    return {"std": f"std-{cycle}", "amo": f"amo-{cycle}", "dd": f"dd-{cycle}", "ff": f"ff-{cycle}.fifo",
            "mvsrc": f"mvsrc-{cycle}", "mvdst": f"mvdst-{cycle}"}


def open_store(root: str, flush: str, clock: Callable[[], float] = time.time) -> FileStore:
    if flush == "none":
        return FileStore(root, node_id=NODE, fsync=False, clock=clock)
    return FileStore(root, node_id=NODE, flush=flush, clock=clock)


class Log:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, *words: object) -> None:
        os.write(self.fd, (" ".join(str(w) for w in words) + "\n").encode())


def _ready() -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()


def _forever(*loops: Callable[[], None]) -> None:
    """Run each loop in a thread until the process is killed; a loop that raises (the disk died
    under it: 503s) stops only itself."""
    for loop in loops:
        threading.Thread(target=loop, daemon=True).start()
    _ready()
    while True:
        time.sleep(3600)


def send_std(store: FileStore, log: Log, q: dict[str, str], rng: random.Random) -> None:
    """Standard sends (singles and batches) and at-most-once sends."""
    store.create_queue(q["std"])
    store.create_queue(q["amo"])

    def standard() -> None:
        n = 0
        while True:
            batch = 1 if rng.random() < 0.6 else rng.randint(2, 8)
            tags = [f"s{n + i}" for i in range(batch)]
            n += batch
            results = store.send_batch(q["std"], [OutgoingMessage(make_body(t, rng.randint(0, 3000)))
                                                 for t in tags])
            for tag, r in zip(tags, results, strict=True):
                log("S", q["std"], r.id, tag, 0)

    def at_most_once() -> None:
        n = 0
        while True:
            tag = f"o{n}"
            n += 1
            r = store.send(q["amo"], OutgoingMessage(make_body(tag, 200), at_most_once=True))
            log("S", q["amo"], r.id, tag, 0)

    _forever(standard, at_most_once)


def send_dd_fifo(store: FileStore, log: Log, q: dict[str, str], rng: random.Random) -> None:
    """Dedup sends (each body twice, the second usually collapses) and FIFO sends in groups."""
    store.create_queue(q["dd"], QueueKind.DEDUP)
    store.create_queue(q["ff"], QueueKind.FIFO)

    def dedup() -> None:
        n = 0
        while True:
            tag = f"d{n}"
            n += 1
            body = make_body(tag, rng.randint(0, 1000))
            for _ in range(2):
                r = store.send(q["dd"], OutgoingMessage(body))
                log("S", q["dd"], r.id, tag, int(r.duplicate))

    def fifo() -> None:
        counters = [0] * FIFO_GROUPS
        while True:
            g = rng.randrange(FIFO_GROUPS)
            batch = rng.randint(1, 4)
            msgs = []
            for _ in range(batch):
                c = counters[g]
                counters[g] += 1
                msgs.append((f"f{g}.{c}", OutgoingMessage(make_body(f"f{g}.{c}", 100), group_id=f"g{g}",
                                                          dedup_id=f"g{g}-{c}")))
            results = store.send_batch(q["ff"], [m for _, m in msgs])
            for (tag, _), r in zip(msgs, results, strict=True):
                log("S", q["ff"], r.id, tag, int(r.duplicate))

    _forever(dedup, fifo)


def poll(store: FileStore, log: Log, q: dict[str, str], rng: random.Random) -> None:
    """Pollers that ack (most), release (some) or leave claims to expire (a few), and an
    at-most-once poller."""

    def consume(queue: str, limit: int) -> None:
        got = store.poll(queue, limit=rng.randint(1, limit), claim_ttl=CLAIM_TTL)
        to_ack, to_release = [], []
        for d in got:
            try:
                tag = check_body(d.message.body)
            except BadBody:
                log("X", queue, d.message.id)
                continue
            log("D", queue, d.message.id, tag)
            roll = rng.random()
            if roll < 0.75 or queue == q["ff"]:
                to_ack.append(d)
            elif roll < 0.92:
                to_release.append(d)
        if to_ack:
            log("P", queue, " ".join(d.message.id for d in to_ack))
            store.ack(queue, [d.receipt for d in to_ack])
        if to_release:
            store.release(queue, [d.receipt for d in to_release])
        if not got:
            time.sleep(0.01)

    def std_and_dedup() -> None:
        while True:
            consume(q["std"], 10)
            consume(q["dd"], 10)

    def fifo() -> None:
        while True:
            consume(q["ff"], 6)

    def at_most_once() -> None:
        while True:
            log("Q", q["amo"])
            got = store.poll(q["amo"], limit=1, claim_ttl=CLAIM_TTL)
            if not got:
                log("E", q["amo"])
                time.sleep(0.01)
            for d in got:
                try:
                    log("D", q["amo"], d.message.id, check_body(d.message.body))
                except BadBody:
                    log("X", q["amo"], d.message.id)

    _forever(std_and_dedup, fifo, at_most_once)


def move(store: FileStore, log: Log, q: dict[str, str], rng: random.Random) -> None:
    """A prefilled queue moved at a limited rate while this process also runs maintenance."""
    store.create_queue(q["mvsrc"])
    store.create_queue(q["mvdst"])
    _ready()
    for start in range(0, MOVE_PREFILL, 100):
        tags = [f"m{i}" for i in range(start, start + 100)]
        results = store.send_batch(q["mvsrc"], [OutgoingMessage(make_body(t, 50)) for t in tags])
        for tag, r in zip(tags, results, strict=True):
            log("S", q["mvsrc"], r.id, tag, 0)
    log("M", store.move(q["mvsrc"], q["mvdst"], max_per_second=MOVE_RATE))
    while True:
        with contextlib.suppress(SpoolqError, OSError):
            store.maintain()
        time.sleep(0.1)


# ----------------------------------------------------------------------------- after the reboot


def _drain(store: FileStore, queue: str, out: dict[str, Any]) -> list[tuple[str, str]]:
    """Claim everything in ``queue`` (acking as it goes on FIFO queues): (id, tag) in delivery order."""
    found: list[tuple[str, str]] = []
    fifo = queue.endswith(".fifo")
    empty = 0
    while empty < 2:
        got = store.poll(queue, limit=1000, claim_ttl=3600)
        empty = 0 if got else empty + 1
        for d in got:
            try:
                found.append((d.message.id, check_body(d.message.body)))
            except BadBody:
                out["corrupt_delivered"] += 1
        if fifo and got:
            store.ack(queue, [d.receipt for d in got])
    return found


def _pending(ready: Path) -> list[tuple[str, bytes]]:
    """(id, body) of the messages at their first ready name (never received) under ``ready``."""
    found = []
    for dirpath, _dirs, names in os.walk(ready):
        for name in names:
            parsed = L.parse_ready(name)
            if parsed is not None and parsed.rc == 0:
                with contextlib.suppress(OSError, CorruptMessage):
                    found.append((parsed.id, decode_message(read_file(f"{dirpath}/{name}"))[1]))
    return found


def check(root: str, flush: str, cycle: int, log_dir: str) -> dict[str, Any]:
    """Open the store after the reboot and report what is there (the test compares it with the logs)."""
    q = queues(cycle)
    jdir = Path(root) / "journal"
    out: dict[str, Any] = {"corrupt_delivered": 0, "dedup_not_collapsed": 0, "fifo_dedup_forgotten": 0}
    journals = [jdir / n for n in os.listdir(jdir) if n.endswith(".jnl")] if jdir.exists() else []
    out["journal_files_before"] = len(journals)
    prepared = file_bytes(PREPARED_BYTES, journal_limit(root))  # smaller on a small file system
    out["journal_files_prepared"] = sum(1 for p in journals if p.stat().st_size == prepared)
    offset = [0.0]
    store = open_store(root, flush, clock=lambda: time.time() + offset[0])
    out["journal_files_after"] = len([n for n in os.listdir(jdir) if n.endswith(".jnl")])

    # dedup state, with the real clock: a pending (never received) copy whose send was acknowledged
    # still absorbs an identical send (an unacknowledged one may have lost its marker with the cut).
    # Pending copies are found by listing ready/ (a peek would surface them: no longer pending).
    send_log = Path(log_dir) / "send_dd_fifo.log"
    sent_lines = [line.split() for line in send_log.read_text().split("\n")[:-1]] if send_log.exists() else []
    acked = {w[2] for w in sent_lines if w[:2] == ["S", q["dd"]]}
    for mid, body in _pending(Path(root) / "queues" / L.queue_dir_name(q["dd"]) / "ready"):
        if mid in acked and not store.send(q["dd"], OutgoingMessage(body)).duplicate:
            out["dedup_not_collapsed"] += 1
    # the FIFO window: the last acknowledged send of each group is still remembered
    last: dict[str, str] = {}
    for words in sent_lines:
        if words[:2] == ["S", q["ff"]]:
            last[words[3].split(".")[0]] = words[3]
    for tag in last.values():
        g, c = tag[1:].split(".")
        try:
            r = store.send(q["ff"], OutgoingMessage(make_body(tag, 100), group_id=f"g{g}", dedup_id=f"g{g}-{c}"))
            forgotten = not r.duplicate
        except SpoolqError:  # the queue itself is gone (only without flushes)
            forgotten = True
        out["fifo_dedup_forgotten"] += forgotten

    # then far in the future: every claim expired, any stale move taken over
    offset[0] = 7200.0
    store.maintain()
    moves = store.list_moves(q["mvsrc"])
    deadline = time.monotonic() + 60
    for mv in moves:
        status = mv
        while status.state is MoveState.IN_PROGRESS and time.monotonic() < deadline:
            store.maintain()
            time.sleep(0.05)
            status = store.move_status(mv.ref)
        out.setdefault("moves", []).append({"ref": status.ref, "state": status.state.value, "moved": status.moved})
    out["found"] = {name: _drain(store, queue, out) for name, queue in q.items()}
    corrupt = Path(root) / "corrupt"
    out["quarantined"] = sum(1 for _ in corrupt.iterdir()) if corrupt.exists() else 0
    for queue in q.values():
        with contextlib.suppress(SpoolqError):
            store.delete_queue(queue)
    for p in corrupt.iterdir() if corrupt.exists() else ():
        with contextlib.suppress(OSError):
            os.unlink(p)
    store.close()
    return out


ROLES: dict[str, Callable[[FileStore, Log, dict[str, str], random.Random], None]] = {
    "send_std": send_std, "send_dd_fifo": send_dd_fifo, "poll": poll, "move": move}


def main() -> None:
    role, root, log_dir, flush, cycle, seed = sys.argv[1:7]
    if role == "check":
        print(json.dumps(check(root, flush, int(cycle), log_dir)), flush=True)
        return
    store = open_store(root, flush)
    ROLES[role](store, Log(f"{log_dir}/{role}.log"), queues(int(cycle)), random.Random(int(seed)))


if __name__ == "__main__":
    main()
