"""Child processes for the mixed-load send test: ``python contention_workers.py <command> <args...>``.

Each child opens its own :class:`~spoolq.store.FileStore` on the shared root and logs one line per
finished store call with a single ``os.write``. Every store call that raises is logged as a
``fail`` line (with the exception) and the child carries on, so the parent counts failures
instead of stopping at the first.

Commands:

``send ROOT NODE LOG COUNT SEED FSYNC``
    send COUNT self-checking messages spread over the standard, dedup and FIFO queues and the
    purged queue (single sends and batches of 2 to 8, some delayed up to 1.5 s); log
    ``ok <queue> <tag>`` per message whose send returned.
``drain ROOT NODE LOG STOP SEED``
    poll the standard queue, the move target, the dedup, the FIFO and the purged queue with
    random limits and claim ttls; ack most deliveries, release some, let some claims expire, run maintenance
    now and then; log ``ack <tag>`` per acknowledged message. Ends once STOP exists and every
    queue it drains is empty.
``purge ROOT NODE QUEUE STOP``
    purge QUEUE every few milliseconds until STOP exists.
``mover ROOT NODE SRC DST STOP``
    move SRC to DST, wait for the move to finish, repeat until STOP exists.
"""

from __future__ import annotations

import os
import random
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from helpers import check_body, make_body

from spoolq.store import FileStore, OutgoingMessage

STANDARD, MOVED, DEDUP, FIFO, PURGED = "main", "moved", "dedup", "jobs.fifo", "purged"
DRAINED = (STANDARD, MOVED, DEDUP, FIFO, PURGED)


def _log(fd: int, lines: list[str]) -> None:
    if lines:
        os.write(fd, "".join(line + "\n" for line in lines).encode())


def _fail(fd: int, what: str) -> None:
    _log(fd, [f"fail {what} " + traceback.format_exc().replace("\n", " | ")])


def send(root: str, node: str, log: str, count: str, seed: str, fsync: str) -> None:
    store = FileStore(root, node_id=node, fsync=fsync == "1")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    rnd = random.Random(seed)
    sent = 0
    while sent < int(count):
        queue = rnd.choices((STANDARD, DEDUP, FIFO, PURGED), weights=(6, 1, 1, 2))[0]
        n = min(1 if rnd.random() < 0.6 else rnd.randint(2, 8), int(count) - sent)
        tags = [f"{node}.{sent + i}" for i in range(n)]
        delay = rnd.choice((None, None, None, 0.2, 1.5)) if queue in (STANDARD, PURGED) else None
        msgs = [OutgoingMessage(body=make_body(t), delay=delay,
                                group_id=f"g{rnd.randint(0, 5)}" if queue == FIFO else None,
                                dedup_id=t if queue == FIFO else None) for t in tags]
        sent += n
        try:
            store.send_batch(queue, msgs)
        except Exception:
            _fail(fd, f"send {queue} {' '.join(tags)}")
            continue
        _log(fd, [f"ok {queue} {t}" for t in tags])
    store.close()


def drain(root: str, node: str, log: str, stop: str, seed: str) -> None:
    store = FileStore(root, node_id=node, fsync=False, maintenance_interval=0.05)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    rnd = random.Random(seed)
    empty_rounds = 0
    deadline = time.monotonic() + 300
    ttls = (0.3, 5.0, 30.0)
    while time.monotonic() < deadline:
        got_any = False
        if ttls[-1] > 1.0 and os.path.exists(stop):
            # the senders are done: claims short enough that what is abandoned from here on comes back
            # within a second (an abandoned FIFO head holds its whole group until its claim expires)
            ttls = (0.3, 1.0)
        for queue in DRAINED:
            try:
                got = store.poll(queue, limit=rnd.randint(1, 10), claim_ttl=rnd.choice(ttls))
            except Exception:
                _fail(fd, f"poll {queue}")
                continue
            got_any = got_any or bool(got)
            keep, release = [], []
            for d in got:
                r = rnd.random()
                if r < 0.08:
                    release.append(d)
                elif r < 0.1:
                    pass  # abandoned: the claim expires and maintenance requeues it
                else:
                    keep.append(d)
            try:
                if release:
                    store.release(queue, [d.receipt for d in release])
                oks = store.ack(queue, [d.receipt for d in keep]) if keep else []
            except Exception:
                _fail(fd, f"ack {queue}")
                continue
            _log(fd, [f"ack {check_body(d.message.body)}" for d, ok in zip(keep, oks, strict=True) if ok])
        if rnd.random() < 0.05:
            try:
                store.maintain()
            except Exception:
                _fail(fd, "maintain")
        if got_any:
            empty_rounds = 0
            continue
        if os.path.exists(stop):
            try:
                busy = sum(c.ready + c.claimed + c.delayed for c in map(store.counts, DRAINED))
            except Exception:
                _fail(fd, "counts")
                busy = 1
            empty_rounds = 0 if busy else empty_rounds + 1
            if empty_rounds >= 3:
                break
        time.sleep(0.01)
    else:
        _log(fd, ["timeout"])
    store.close()


def purge(root: str, node: str, queue: str, stop: str) -> None:
    store = FileStore(root, node_id=node, fsync=False)
    while not os.path.exists(stop):
        store.purge(queue)
        time.sleep(0.005)
    store.close()


def mover(root: str, node: str, src: str, dst: str, stop: str) -> None:
    store = FileStore(root, node_id=node, fsync=False)
    while not os.path.exists(stop):
        ref = store.move(src, dst)
        while store.move_status(ref).state.value == "IN_PROGRESS":
            time.sleep(0.02)
        time.sleep(0.1)
    store.close()


COMMANDS = {"send": send, "drain": drain, "purge": purge, "mover": mover}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
