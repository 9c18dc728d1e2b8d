"""Child process of the dedup race test: ``python dedup_race_worker.py ROOT NODE QUEUE START SEED``.

Opens its own FileStore on ROOT, waits until the file START exists (so every child starts at the
same moment), then sends each of the test's payloads twice, in a shuffled order, from four
threads at once; prints ``done`` when finished, or the traceback of the first failed send."""

from __future__ import annotations

import os
import random
import sys
import threading
import time
import traceback

from spoolq.store import FileStore, OutgoingMessage

PAYLOADS = 40


def main() -> None:
    root, node, queue, start, seed = sys.argv[1:6]
    store = FileStore(root, node_id=node, fsync=False)
    rng = random.Random(int(seed))
    bodies = [f"payload-{i}".encode() for i in range(PAYLOADS)] * 2
    errors: list[str] = []

    def sender(k: int) -> None:
        mine = list(bodies)
        random.Random(rng.random() + k).shuffle(mine)
        try:
            for body in mine:
                store.send_batch(queue, [OutgoingMessage(body=body)])
        except Exception:
            errors.append(traceback.format_exc())

    while not os.path.exists(start):
        time.sleep(0.001)
    threads = [threading.Thread(target=sender, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(repr(errors[0]) if errors else "done", flush=True)
    store.close()


if __name__ == "__main__":
    main()
