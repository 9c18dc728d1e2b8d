"""The power-cut test's publisher: ``python -m tests.powercut.fanout_worker ROOT FLUSH CUT``.

Opens the store on the crash disk, makes 8 standard and 2 FIFO queues (once), and from 3 threads
fans one message out to all 10 queues after another; after each fan-out returns it prints
``acked <body>`` (the body names the cut, the thread and a counter). Runs until the power cut."""

from __future__ import annotations

import sys
import threading

from spoolq.errors import StorageUnavailable
from spoolq.store import FileStore, OutgoingMessage, QueueKind
from spoolq.store.model import SendResult

STANDARD = [f"q{i}" for i in range(8)]
FIFO = ["f0.fifo", "f1.fifo"]
THREADS = 3
_print = threading.Lock()


def main() -> None:
    root, flush, cut = sys.argv[1], sys.argv[2], sys.argv[3]
    if flush == "none":  # the root and its format record made durably first: the cut tests messages
        FileStore(root, node_id="fanout-setup", fsync=True).close()
    store = FileStore(root, node_id="fanout", flush=None if flush == "none" else flush, fsync=flush != "none")
    for name in STANDARD:
        store.create_queue(name)
    for name in FIFO:
        store.create_queue(name, QueueKind.FIFO)
    print("ready", flush=True)

    def publish(thread: int) -> None:
        n = 0
        while True:
            body = f"c{cut}-t{thread}-{n}"
            message = body.encode() * 8
            copies = [(q, OutgoingMessage(message)) for q in STANDARD] + \
                     [(q, OutgoingMessage(message, group_id=f"t{thread}", dedup_id=body)) for q in FIFO]
            try:
                outcomes = store.fan_out(copies)
            except StorageUnavailable:
                return  # the disk went away under the cut
            assert all(type(o) is SendResult for o in outcomes), outcomes
            with _print:
                print("acked", body, flush=True)
            n += 1

    threads = [threading.Thread(target=publish, args=(t,), daemon=True) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
