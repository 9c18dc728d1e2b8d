"""Invariants 1, 2, 4 and 6 under SIGKILL: durable before success, no torn message, no blocking debris.

Children (``workers.py``) send, move or ack in a loop and are killed with SIGKILL at a
random moment, many rounds. The child logs what the store told it succeeded only after
the call returned, so every logged send must be found afterwards, whole (bodies carry
a sha256 of themselves), and every logged ack must stay acked.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest

import spoolq.store.moves
from spoolq.store import FileStore, MoveState, OutgoingMessage

from .helpers import Child, check_body, files_under, make_body

NODE = "crashnode"


def _rng() -> random.Random:
    """Random kill moments; the seed is printed (shown on failure) and can be fixed with SPOOLQ_CRASH_SEED."""
    seed = int(os.environ.get("SPOOLQ_CRASH_SEED") or time.time_ns())
    print(f"SPOOLQ_CRASH_SEED={seed}")
    return random.Random(seed)


def _drain(store: FileStore, queue: str) -> dict[str, str]:
    """Claim every message of ``queue`` (long ttl), checking each body: id -> tag."""
    found: dict[str, str] = {}
    while True:
        got = store.poll(queue, limit=1000, claim_ttl=3600)
        if not got:
            return found
        for d in got:
            assert d.message.id not in found, f"{d.message.id} delivered twice while draining"
            found[d.message.id] = check_body(d.message.body)


def _log_lines(path: Path) -> list[str]:
    """Complete lines of a child's log (a line cut by the kill has no newline and is ignored)."""
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.split("\n")
    return lines[:-1]  # the last element is '' or an incomplete line


# ----------------------------------------------------------------------------- sender


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("flush", ["syncfs", "journal"])
def test_killed_sender_loses_no_acknowledged_send(root: Path, tmp_path: Path, children: list[Child],
                                                  flush: str) -> None:
    rounds = 30 if flush == "syncfs" else 15
    rnd = _rng()
    setup = FileStore(root, node_id="setup")
    total_acked = total_found = debris_seen = 0
    for r in range(rounds):
        queue = f"crash-send-{r}"
        setup.create_queue(queue)
        log = tmp_path / f"send-{r}.log"
        child = Child("send", str(root), NODE, queue, str(log), str(rnd.choice((1, 4))), f"{r}", flush)
        children.append(child)
        assert child.readline() == "ready"
        time.sleep(rnd.uniform(0.0, 0.35))
        child.kill()

        acked: dict[str, str] = {}
        for line in _log_lines(log):
            assert not line.startswith("E "), f"round {r}: the sender failed: {line}"
            mid, tag = line.split(" ")
            acked[mid] = tag
        # a restarted process on the same node (with the journal: it retires the dead one's journals)
        store = FileStore(root, node_id=NODE, flush=flush)
        debris_seen += len(files_under(root / "tmp"))
        size = store.size(queue)
        for m in store.peek(queue, limit=5000):
            check_body(m.body)
        found = _drain(store, queue)
        assert size == len(found), f"round {r}: size said {size}, {len(found)} messages were there"
        lost = set(acked) - set(found)
        assert not lost, f"round {r}: {len(lost)} acknowledged sends are missing, e.g. {sorted(lost)[:3]}"
        for mid, tag in acked.items():
            assert found[mid] == tag, f"round {r}: {mid} holds {found[mid]!r}, was sent as {tag!r}"
        assert files_under(root / "corrupt") == [], f"round {r}: a torn file was renamed into a queue"
        store.maintain()
        leftovers = files_under(root / "tmp")
        assert leftovers == [], f"round {r}: temp files of the dead writer survive maintain(): {leftovers}"
        journals = [n for n in os.listdir(root / "journal") if f"~{child.pid}~" in n]
        assert journals == [], f"round {r}: the dead writer's commit journals were not retired: {journals}"
        store.close()
        total_acked += len(acked)
        total_found += len(found)
    assert total_acked > rounds, f"the children acknowledged only {total_acked} sends: the test proves little"
    print(f"{rounds} rounds: {total_acked} acknowledged, {total_found} found, "
          f"{debris_seen} temp files of dead writers swept")


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("flush", ["journal", "syncfs"])
def test_killed_process_among_concurrent_senders_loses_no_acknowledged_send(
        root: Path, tmp_path: Path, children: list[Child], flush: str) -> None:
    """Three sender processes on one node flush concurrently (``--flush journal``: commit journals
    and syncfs checkpoints; ``syncfs``: one syncfs at a time for the node, led by any of them,
    :mod:`spoolq.store.node_flush`); one is SIGKILLed at a random moment (often in the middle of a
    flush the others wait for), the others keep sending for a while, then all die. Every send any
    of them logged is there, whole, and a restarted process retires the dead ones' journals."""
    rounds = 10
    rnd = _rng()
    setup = FileStore(root, node_id="setup")
    total_acked = after_first_kill = 0
    for r in range(rounds):
        queue = f"crash-shared-{r}"
        setup.create_queue(queue)
        logs = [tmp_path / f"shared-{r}-{i}.log" for i in range(3)]
        senders = [Child("send", str(root), NODE, queue, str(log), str(rnd.choice((1, 3))), f"{r}{i}", flush)
                   for i, log in enumerate(logs)]
        children.extend(senders)
        for child in senders:
            assert child.readline() == "ready"
        time.sleep(rnd.uniform(0.05, 0.3))
        victim = rnd.randrange(3)
        senders[victim].kill()
        before = sum(len(_log_lines(log)) for i, log in enumerate(logs) if i != victim)
        time.sleep(rnd.uniform(0.1, 0.3))
        for child in senders:
            child.kill()
        after_first_kill += sum(len(_log_lines(log)) for i, log in enumerate(logs) if i != victim) - before

        acked: dict[str, str] = {}
        for log in logs:
            for line in _log_lines(log):
                assert not line.startswith("E "), f"round {r}: a sender failed: {line}"
                mid, tag = line.split(" ")
                acked[mid] = tag
        store = FileStore(root, node_id=NODE, flush=flush)
        found = _drain(store, queue)
        lost = set(acked) - set(found)
        assert not lost, f"round {r}: {len(lost)} acknowledged sends are missing, e.g. {sorted(lost)[:3]}"
        for mid, tag in acked.items():
            assert found[mid] == tag, f"round {r}: {mid} holds {found[mid]!r}, was sent as {tag!r}"
        assert files_under(root / "corrupt") == []
        journals = os.listdir(root / "journal") if (root / "journal").exists() else []
        left = [n for n in journals if any(f"~{c.pid}~" in n for c in senders)]
        assert left == [], f"round {r}: journals of dead senders were not retired: {left}"
        store.close()
        total_acked += len(acked)
    assert total_acked > rounds, f"the children acknowledged only {total_acked} sends: the test proves little"
    assert after_first_kill > 0, "no survivor acknowledged a send after a peer died: the node stayed blocked"
    print(f"{rounds} rounds: {total_acked} acknowledged sends found, {after_first_kill} by survivors "
          f"after a peer was killed")


# ----------------------------------------------------------------------------- mover


def _tags(store: FileStore, queue: str) -> Counter[str]:
    msgs = store.peek(queue, limit=5000)
    assert len(msgs) < 5000
    return Counter(check_body(m.body) for m in msgs)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_killed_mover_leaves_each_message_in_one_queue_and_move_resumes(
        root: Path, tmp_path: Path, children: list[Child], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spoolq.store.moves, "STALE_AFTER", 0.2)
    rnd = _rng()
    n = 2000
    rounds = 6
    setup = FileStore(root, node_id="setup")
    kill_states: Counter[str] = Counter()
    moved_reported: list[int] = []
    for r in range(rounds):
        src, dst = f"move-src-{r}", f"move-dst-{r}"
        setup.create_queue(src)
        if r % 2:
            setup.create_queue(dst)  # otherwise the move creates it
        expected = Counter(str(i) for i in range(n))
        for start in range(0, n, 500):
            setup.send_batch(src, [OutgoingMessage(body=make_body(str(i))) for i in range(start, start + 500)])
        # a few claimed ones too: claims do not follow a move, the messages do
        setup.poll(src, limit=5, claim_ttl=3600)

        child = Child("move", str(root), NODE, src, dst, "5000")
        children.append(child)
        ref = child.readline()
        time.sleep(rnd.uniform(0.0, 0.45))
        child.kill()

        store = FileStore(root, node_id="rescuer")
        kill_states[store.move_status(ref).state.value] += 1
        both = _tags(store, src) + _tags(store, dst)
        assert both == expected, (f"round {r}: after the kill, messages missing: {sorted(expected - both)[:5]}, "
                                  f"duplicated: {sorted(both - expected)[:5]}")
        time.sleep(0.25)  # the dead owner's heartbeat is now stale
        store.maintain()
        deadline = time.monotonic() + 30
        while store.move_status(ref).state is MoveState.IN_PROGRESS:
            assert time.monotonic() < deadline, f"round {r}: the resumed move did not finish"
            time.sleep(0.02)
        status = store.move_status(ref)
        assert status.state is MoveState.COMPLETE, f"round {r}: move ended {status.state}: {status.error}"
        assert store.size(src) == 0, f"round {r}: {store.size(src)} messages left in the source"
        moved_reported.append(status.moved)
        assert _tags(store, dst) == expected, f"round {r}: the destination does not hold each message once"
        store.close()
        # temp files of the dead mover (its status writes) are swept by a restart of its node: only
        # there can a pid say the writer is dead; another node waits for maintenance.TMP_MAX_AGE
        restarted = FileStore(root, node_id=NODE)
        restarted.maintain()
        assert files_under(root / "tmp") == [], f"round {r}: temp files of the dead mover survive maintain()"
        assert files_under(root / "corrupt") == []
        restarted.close()
    print(f"move state seen right after the kill: {dict(kill_states)}; moved reported: {moved_reported} of {n}")


# ----------------------------------------------------------------------------- consumer


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_killed_consumer_loses_nothing_and_its_claims_come_back(
        root: Path, tmp_path: Path, children: list[Child]) -> None:
    rnd = _rng()
    queue = "crash-ack"
    n = 10_000
    setup = FileStore(root, node_id="setup", fsync=False)
    setup.create_queue(queue)
    sent: dict[str, str] = {}
    for start in range(0, n, 1000):
        tags = [str(i) for i in range(start, start + 1000)]
        for res, tag in zip(setup.send_batch(queue, [OutgoingMessage(body=make_body(t)) for t in tags]), tags,
                            strict=True):
            sent[res.id] = tag
    rounds = 12
    received: set[str] = set()
    acked: set[str] = set()
    in_flight: set[str] = set()  # the last batch of each round whose ack was never logged
    for r in range(rounds):
        log = tmp_path / f"ack-{r}.log"
        child = Child("ack", str(root), NODE, queue, str(log), f"{r}")
        children.append(child)
        assert child.readline() == "ready"
        time.sleep(rnd.uniform(0.02, 0.3))
        child.kill()
        pending: list[str] = []
        for line in _log_lines(log):
            kind, _, rest = line.partition(" ")
            ids = rest.split()
            if kind == "c":
                received.update(ids)
                pending = ids
            elif kind == "a":
                acked.update(ids)
                pending = []
            else:
                raise AssertionError(f"round {r}: an ack of a live claim failed: {line}")
        in_flight.update(pending)

    store = FileStore(root, node_id="checker")
    claimed = store.claim_count(queue)
    # a kill inside poll (after its renames, before the log line) leaves up to 10 unlogged claims a round
    assert len(received - acked - in_flight) <= claimed <= len(received - acked) + 10 * rounds, \
        f"{claimed} live claims, but the consumers hold {len(received - acked)} unacked messages"
    done = store.maintain(now=time.time() + 3600)  # every claim of the dead consumers has expired
    assert store.claim_count(queue) == 0
    size = store.size(queue)
    remaining = _drain(store, queue)
    assert size == len(remaining), f"size said {size}, {len(remaining)} messages were there"
    assert set(remaining) <= set(sent)
    for mid, tag in remaining.items():
        assert sent[mid] == tag
    assert not acked & set(remaining), "an acknowledged message came back"
    lost = set(sent) - set(remaining) - acked
    assert lost <= in_flight, (f"{len(lost - in_flight)} messages vanished without an ack, "
                               f"e.g. {sorted(lost - in_flight)[:5]}")
    came_back = (received - acked - in_flight) & set(remaining)
    assert came_back == received - acked - in_flight, "a received, unacked message did not come back"
    assert acked, "the consumer never acked anything: the test proves little"
    assert len(remaining) > 0, "the consumers drained the queue: later rounds proved nothing"
    assert files_under(root / "tmp") == []
    print(f"{rounds} rounds: {len(received)} received, {len(acked)} acked, {done.get('claims_expired')} "
          f"claims expired and came back, {len(in_flight)} in flight at a kill")

