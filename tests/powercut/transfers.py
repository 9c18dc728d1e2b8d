"""Processes of the journal replay tests: ``python -m tests.powercut.transfers ROLE ROOT N``.

* ``sender``: sends N messages to ``moved`` and N to ``dead`` with ``--flush journal`` (records in
  its commit journal, message files not flushed), prints ``sent <ids...>`` and waits to be killed
  by the power cut (alive: its journal file is neither retired nor checkpointed).
* ``transfers``: makes the queues, starts a ``sender`` (in its own mount namespace, so both write
  through one mount: one page cache), then dead-letters every message of ``dead`` into ``dlq``
  (two receives each; ``max_receives`` 1), moves ``moved`` into ``dst`` and waits for the move to
  complete (flushed), prints ``done <sender pid>`` and waits to be killed.
* ``check`` (after the reboot): opens the store (the replay runs), drains the four queues and
  prints ``{queue: [tags]}`` as one JSON line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from spoolq.store import FileStore, OutgoingMessage
from spoolq.store.model import DeadLetterPolicy, MoveState, QueueConfig
from tests.store.helpers import check_body, make_body

NODE = "jtnode"
QUEUES = ("moved", "dst", "dead", "dlq")


def _open(root: str) -> FileStore:
    return FileStore(root, node_id=NODE, flush="journal")


def _wait_forever() -> None:
    while True:
        time.sleep(3600)


def sender(root: str, n: int) -> None:
    store = _open(root)
    ids = [store.send(q, OutgoingMessage(make_body(f"{q}{i}", 100))).id for q in ("moved", "dead") for i in range(n)]
    print("sent", *ids, flush=True)
    _wait_forever()


def transfers(root: str, n: int) -> None:
    store = _open(root)
    store.create_queue("moved")
    store.create_queue("dst")
    store.create_queue("dlq")
    store.create_queue("dead", config=QueueConfig(dead_letter=DeadLetterPolicy("dlq", 1)))
    child = subprocess.Popen([sys.executable, "-m", "tests.powercut.transfers", "sender", root, str(n)],
                             stdout=subprocess.PIPE)
    assert child.stdout is not None
    line = child.stdout.readline().decode().split()
    assert line[:1] == ["sent"] and len(line) == 2 * n + 1, line
    for _ in range(200):  # receive each twice: the second receive dead-letters it
        store.poll("dead", limit=1000, claim_ttl=0.05)
        if store.counts("dead").total == 0:
            break
        time.sleep(0.06)
    assert store.counts("dead").total == 0, "the messages were not dead-lettered"
    ref = store.move("moved", "dst")
    deadline = time.monotonic() + 60
    while store.move_status(ref).state is MoveState.IN_PROGRESS and time.monotonic() < deadline:
        time.sleep(0.02)
    assert store.move_status(ref).state is MoveState.COMPLETE
    print("done", child.pid, flush=True)
    _wait_forever()


def check(root: str) -> None:
    store = _open(root)
    found: dict[str, list[str]] = {}
    for q in QUEUES:
        found[q] = []
        while got := store.poll(q, limit=1000, claim_ttl=3600):
            found[q] += [check_body(d.message.body) for d in got]
    store.close()
    print(json.dumps(found), flush=True)


def main() -> None:
    role, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if role == "sender":
        sender(root, n)
    elif role == "transfers":
        transfers(root, n)
    else:
        check(root)


if __name__ == "__main__":
    main()
