"""Child processes for the multi-process and crash tests: ``python workers.py <command> <args...>``.

Every child opens its own :class:`~spoolq.store.FileStore` on the shared root. Logs are
appended with one ``os.write`` per line (a line is either wholly there or absent after
SIGKILL) and always *after* the store call they report has returned.

Commands:

``consume ROOT NODE QUEUE OUT GO PEERS``
    wait for the file GO, then poll (limit 10, long claim ttl) and ack until nothing is
    ready or delayed; write ``id<TAB>tag<TAB>receive-count`` lines to OUT and ``ackfail`` lines for
    any ack that returned False, and to OUT.lost the number of claim renames this process lost
    to another poller (the queue's cursor counts them).
``send ROOT NODE QUEUE LOG THREADS SEED [FLUSH]``
    send self-checking bodies in a loop from THREADS threads (single sends and batches,
    fsync on, ``--flush`` FLUSH, syncfs by default); log ``<id> <tag>`` for every message whose send returned.
``move ROOT NODE SRC DST RATE``
    start a move, print its ref, and sleep while the move thread works.
``ack ROOT NODE QUEUE LOG SEED``
    poll (random limit, claim ttl 30 s) and ack (by receipt or by id) in a loop; log
    ``c <ids>`` after each poll and ``a <ids>`` / ``f <ids>`` after each ack.
``hold_lock PATH RELEASE``
    take a POSIX record lock on all of PATH (as a FIFO queue's lock is taken), print ``ready``,
    and hold it until the file RELEASE exists.
``try_lock PATH``
    print ``free`` if a POSIX record lock on all of PATH can be taken at once, else ``held``.
"""

from __future__ import annotations

import fcntl
import os
import random
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from helpers import check_body, make_body

from spoolq.store import FileStore, OutgoingMessage
from tests.inside import catalog_of


def _log_fd(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _ready() -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()


def consume(root: str, node: str, queue: str, out: str, go: str, peers: str) -> None:
    store = FileStore(root, node_id=node, peers=int(peers))
    _ready()
    deadline = time.monotonic() + 60
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            raise SystemExit("no go signal")
        time.sleep(0.002)
    lines: list[str] = []
    empty_checks = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        got = store.poll(queue, limit=10, claim_ttl=3600)
        if got:
            empty_checks = 0
            for d in got:
                lines.append(f"{d.message.id}\t{check_body(d.message.body)}\t{d.message.receive_count}\n")
            for d, ok in zip(got, store.ack(queue, [d.receipt for d in got]), strict=True):
                if not ok:
                    lines.append(f"ackfail\t{d.message.id}\n")
            continue
        counts = store.counts(queue)
        if counts.ready + counts.delayed == 0:  # what others hold, they ack; the parent checks the end state
            empty_checks += 1
            if empty_checks >= 3:
                break
        time.sleep(0.003)
    else:
        lines.append("timeout\n")
    with open(out, "w") as f:
        f.writelines(lines)
    with open(f"{out}.lost", "w") as f:
        f.write(f"{catalog_of(store).find(queue).cursor.lost}\n")  # type: ignore[union-attr]


def send(root: str, node: str, queue: str, log: str, threads: str, seed: str, flush: str = "syncfs") -> None:
    store = FileStore(root, node_id=node, flush=flush)
    fd = _log_fd(log)

    def loop(t: int) -> None:
        rnd = random.Random(f"{seed}-{t}")
        n = 0
        try:
            while True:
                count = 1 if rnd.random() < 0.6 else rnd.randint(2, 12)
                tags = [f"{node}.{seed}.{t}.{n + i}" for i in range(count)]
                n += count
                msgs = [OutgoingMessage(body=make_body(tag, pad=rnd.choice((0, 100, 4000, 70_000, 300_000)),
                                                       rnd=True)) for tag in tags]
                results = [store.send(queue, msgs[0])] if count == 1 else store.send_batch(queue, msgs)
                os.write(fd, "".join(f"{r.id} {tag}\n" for r, tag in zip(results, tags, strict=True)).encode())
        except BaseException:
            os.write(fd, ("E " + traceback.format_exc().replace("\n", " | ") + "\n").encode())
            raise

    for t in range(int(threads)):
        threading.Thread(target=loop, args=(t,), daemon=True).start()
    _ready()
    time.sleep(3600)


def move(root: str, node: str, src: str, dst: str, rate: str) -> None:
    store = FileStore(root, node_id=node)
    ref = store.move(src, dst, max_per_second=int(rate) or None)
    sys.stdout.write(ref + "\n")
    sys.stdout.flush()
    time.sleep(3600)


def ack(root: str, node: str, queue: str, log: str, seed: str) -> None:
    store = FileStore(root, node_id=node)
    fd = _log_fd(log)
    rnd = random.Random(seed)
    _ready()
    while True:
        got = store.poll(queue, limit=rnd.randint(1, 10), claim_ttl=30)
        if not got:
            time.sleep(0.01)
            continue
        for d in got:
            check_body(d.message.body)
        os.write(fd, ("c " + " ".join(d.message.id for d in got) + "\n").encode())
        pause_first = rnd.random() < 0.5  # widen the claimed-but-unacked window in half the iterations
        if pause_first:
            time.sleep(0.002)
        by_id = rnd.random() < 0.3
        refs = [d.message.id if by_id else d.receipt for d in got]
        results = store.ack(queue, refs)
        done = [d.message.id for d, ok in zip(got, results, strict=True) if ok]
        failed = [d.message.id for d, ok in zip(got, results, strict=True) if not ok]
        os.write(fd, (("a " + " ".join(done) + "\n") + (("f " + " ".join(failed) + "\n") if failed else ""))
                 .encode())
        if not pause_first:
            time.sleep(0.002)


def hold_lock(path: str, release: str) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    _ready()
    while not os.path.exists(release):
        time.sleep(0.01)


def try_lock(path: str) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        print("free", flush=True)
    except OSError:
        print("held", flush=True)


COMMANDS = {"consume": consume, "send": send, "move": move, "ack": ack, "hold_lock": hold_lock, "try_lock": try_lock}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
