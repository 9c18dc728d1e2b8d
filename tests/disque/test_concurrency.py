"""Mixed concurrent load through the Disque door: producers, blocked consumers on several queues, nacks."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import redis

from tests.disque.disque_server import DisqueServer


def test_producers_and_blocked_consumers_lose_and_duplicate_nothing(server: DisqueServer) -> None:
    queues = ["mix-a", "mix-b", "mix-c"]
    per_producer = 30
    sent: list[bytes] = []
    delivered: Counter[bytes] = Counter()
    acked: set[bytes] = set()
    lock = threading.Lock()
    done = threading.Event()
    errors: list[BaseException] = []

    def producer(n: int) -> None:
        try:
            r = server.client()
            rng = random.Random(n)
            for i in range(per_producer):
                pipe = r.pipeline(transaction=False)
                for _ in range(rng.choice((1, 3))):
                    pipe.execute_command("ADDJOB", rng.choice(queues), f"{n}-{i}", 0, "RETRY", 120)
                ids = pipe.execute()
                with lock:
                    sent.extend(ids)
        except BaseException as e:  # surfaced by the main thread
            errors.append(e)

    def consumer(n: int) -> None:
        try:
            r = server.client()
            rng = random.Random(100 + n)
            order = queues[n % 3:] + queues[:n % 3]
            while True:
                rows = r.execute_command("GETJOB", "TIMEOUT", 1000, "COUNT", rng.choice((1, 4)), "FROM", *order)
                if rows is None:
                    if done.is_set():
                        return
                    continue
                ids = [row[1] for row in rows]
                with lock:
                    delivered.update(ids)
                if rng.random() < 0.2:
                    assert r.execute_command("NACK", *ids) == len(ids)  # back to the queue now
                    continue
                assert r.execute_command("ACKJOB", *ids) == len(ids)
                with lock:
                    acked.update(ids)
        except BaseException as e:
            errors.append(e)

    consumers = [threading.Thread(target=consumer, args=(n,)) for n in range(6)]
    producers = [threading.Thread(target=producer, args=(n,)) for n in range(4)]
    for t in consumers + producers:
        t.start()
    for t in producers:
        t.join(120)
    r = server.client()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not errors:
        with lock:
            if acked >= set(sent):
                break
        time.sleep(0.2)
    done.set()
    for t in consumers:
        t.join(60)
    assert not errors, [repr(e) + str(getattr(e, "args", "")) for e in errors]
    assert len(set(sent)) == len(sent) > 4 * per_producer
    missing = set(sent) - acked
    assert not missing, [(delivered[j], r.execute_command("SHOW", j)[4:22]) for j in list(missing)[:3]]
    nacked_extra = sum(delivered.values()) - len(sent)
    assert all(delivered[j] >= 1 for j in sent)
    assert nacked_extra >= 0
    for q in queues:
        assert r.execute_command("QLEN", q) == 0
    assert isinstance(r, redis.Redis)
