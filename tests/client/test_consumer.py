"""Consumer against a real gunicorn spoolq: crashes, slow handlers, SIGTERM, max receives, dedup."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from spoolq_client import Consumer, Message, NotAuthorized, SpoolqClient
from tests.e2e.spoolq_server import KEY_ALL, KEY_NONE, Server

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]


def _run_until(consumer: Consumer, done: threading.Event, timeout: float = 30.0) -> None:
    consumer.start()
    try:
        assert done.wait(timeout), "consumer did not finish the work in time"
    finally:
        consumer.stop()
        assert consumer.join(30)


def test_handles_and_acks_everything(sq: SpoolqClient, qname: str) -> None:
    sq.send_batch(qname, list(range(100)))
    seen: list[int] = []
    lock = threading.Lock()
    done = threading.Event()

    def handle(m: Message) -> None:
        with lock:
            seen.append(m.payload)
            if len(seen) == 100:
                done.set()
    c = Consumer(sq, qname, handle, concurrency=8, batch_size=5, wait=1)
    _run_until(c, done)
    assert sorted(seen) == list(range(100))
    assert c.stats.acked == 100 and sq.size(qname) == 0 and sq.claim_count(qname) == 0


def test_crashing_handler_releases_and_message_is_redelivered(sq: SpoolqClient, qname: str) -> None:
    sq.send_batch(qname, [{"n": i, "crash": i % 4 == 0} for i in range(20)])
    attempts: collections.Counter[int] = collections.Counter()
    ok: set[int] = set()
    done = threading.Event()

    def handle(m: Message) -> None:
        n = m.payload["n"]
        attempts[n] += 1
        if m.payload["crash"] and attempts[n] < 3:
            raise RuntimeError("boom")
        ok.add(n)
        if len(ok) == 20:
            done.set()
    c = Consumer(sq, qname, handle, concurrency=2, batch_size=4, claim_ttl=60, wait=1)
    started = time.monotonic()
    _run_until(c, done)
    assert time.monotonic() - started < 20, "released messages must come back at once, not after claim_ttl"
    assert c.stats.failed == 10 and c.stats.released == 10 and c.stats.acked == 20
    assert sq.size(qname) == 0


def test_expire_policy_leaves_claim_to_run_out(sq: SpoolqClient, qname: str) -> None:
    sq.send(qname, "fail-once")
    times: list[float] = []
    done = threading.Event()

    def handle(m: Message) -> None:
        times.append(time.monotonic())
        if len(times) == 1:
            raise RuntimeError("first try fails")
        done.set()
    c = Consumer(sq, qname, handle, concurrency=1, claim_ttl=2, wait=1, on_failure="expire")
    _run_until(c, done, timeout=30)
    assert c.stats.released == 0 and times[1] - times[0] >= 1.9
    assert sq.size(qname) == 0


def test_slow_handler_keeps_its_claim_by_heartbeat(sq: SpoolqClient, qname: str) -> None:
    sq.send(qname, "slow")
    handled: list[str] = []
    done = threading.Event()
    checks: list[tuple[int, int]] = []

    def handle(m: Message) -> None:
        handled.append(m.id)
        for _ in range(5):  # 5 s, with a 2 s claim: only renewals keep it claimed
            time.sleep(1.0)
            with SpoolqClient(sq.base_url, KEY_ALL) as other:
                checks.append((other.claim_count(qname), len(other.poll(qname, limit=10, ttl=30))))
        done.set()
    c = Consumer(sq, qname, handle, concurrency=1, claim_ttl=2, heartbeat=0.5, wait=1)
    _run_until(c, done, timeout=30)
    assert handled and len(set(handled)) == 1 and len(handled) == 1
    assert checks == [(1, 0)] * 5, "no other poller may get the message while its handler runs"
    assert c.stats.renewals >= 5 and c.stats.acked == 1
    assert sq.size(qname) == 0


def test_max_receives_moves_poison_to_dead_letter_queue(sq: SpoolqClient, qname: str) -> None:
    sq.send_batch(qname, ["poison", "fine"])
    dlq = qname + "-dlq"
    calls: collections.Counter[str] = collections.Counter()

    def handle(m: Message) -> None:
        calls[m.payload] += 1
        if m.payload == "poison":
            raise ValueError("never works")
    c = Consumer(sq, qname, handle, concurrency=1, batch_size=1, wait=1, max_receives=3, dead_letter_queue=dlq)
    c.start()
    deadline = time.monotonic() + 30
    while c.stats.dead_lettered < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    c.stop()
    assert c.join(30)
    assert calls["poison"] == 3 and calls["fine"] == 1
    assert [m.payload for m in sq.peek(dlq)] == ["poison"]
    assert sq.size(qname) == 0


def test_max_receives_counts_deliveries_to_other_consumers(sq: SpoolqClient, qname: str) -> None:
    """The count is the server's: deliveries to another poller count, so a message another
    consumer already received ``max_receives`` times never reaches this one's handler."""
    sq.send(qname, "seen-twice")
    dlq = qname + "-dlq"
    for _ in range(2):  # another consumer takes it and gives it back, twice
        got = sq.poll(qname, limit=1, ttl=60)
        assert [m.payload for m in got] == ["seen-twice"]
        sq.release(qname, [got[0].id])
    sq.send(qname, "fresh")
    calls: list[str] = []
    done = threading.Event()

    def handle(m: Message) -> None:
        calls.append(m.payload)
        done.set()
    c = Consumer(sq, qname, handle, concurrency=1, batch_size=10, wait=1, max_receives=2, dead_letter_queue=dlq)
    _run_until(c, done)
    assert calls == ["fresh"] and c.stats.dead_lettered == 1
    assert [m.payload for m in sq.peek(dlq)] == ["seen-twice"]
    assert sq.size(qname) == 0


def test_dedup_queue(sq: SpoolqClient, qname: str) -> None:
    sq.send_batch(qname, ["a", "a", "b"], dedup=True)
    seen: list[str] = []
    done = threading.Event()

    def handle(m: Message) -> None:
        seen.append(m.payload)
        if len(seen) == 2:
            done.set()
    c = Consumer(sq, qname, handle, dedup=True, concurrency=2, wait=1)
    _run_until(c, done)
    assert sorted(seen) == ["a", "b"] and sq.size(qname, dedup=True) == 0


def test_403_on_poll_is_fatal(server: Server, qname: str) -> None:
    with SpoolqClient(server.url, KEY_NONE) as c:
        consumer = Consumer(c, qname, lambda m: None, concurrency=2, wait=1)
        with pytest.raises(NotAuthorized):
            consumer.run(install_signal_handlers=False)


def test_503_on_poll_is_retried(server: Server, qname: str) -> None:
    from tests.client.faults import FaultProxy

    with SpoolqClient(server.url, KEY_ALL) as sq:
        sq.send(qname, "after-503")

    def plan(n: int, method: str, path: str) -> str:
        return "503" if n <= 3 and "/poll" in path else "pass"
    done = threading.Event()
    with FaultProxy(server.url, plan, retry_after="0") as proxy, SpoolqClient(proxy.url, KEY_ALL) as c:
        consumer = Consumer(c, qname, lambda m: done.set(), concurrency=1, wait=0.5, backoff_cap=0.1)
        _run_until(consumer, done)
    assert consumer.stats.retries >= 3 and consumer.stats.acked == 1


@pytest.mark.slow
def test_sigterm_mid_batch_loses_nothing_and_acks_once(server: Server, qname: str, tmp_path: Path) -> None:
    with SpoolqClient(server.url, KEY_ALL) as sq:
        sq.send_batch(qname, [{"n": i} for i in range(400)])
        log = tmp_path / "handled.jsonl"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CHECKOUT), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen([sys.executable, str(HERE / "consumer_proc.py"), server.url, KEY_ALL, qname, str(log)],
                                stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            deadline = time.monotonic() + 30
            while (not log.exists() or len(log.read_text().splitlines()) < 40) and time.monotonic() < deadline:
                time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0
        stats = json.loads(out.strip().splitlines()[-1])
        handled = [json.loads(line) for line in log.read_text().splitlines()]
        handled_ids = [h["id"] for h in handled]
        assert len(handled_ids) == len(set(handled_ids)), "a message was handled twice"
        assert 40 <= len(handled) < 400, "SIGTERM should have stopped the consumer mid-queue"
        assert stats["acked"] == stats["handled"] == len(handled)
        assert stats["released"] == stats["polled"] - stats["handled"], "unstarted messages must be released"
        # Nothing is left claimed (released, not left to expire) and nothing is lost.
        assert sq.claim_count(qname) == 0
        assert sq.size(qname) == 400 - len(handled)
        rest = sq.peek(qname, limit=5000)
        assert not {m.id for m in rest} & set(handled_ids)
        assert sorted([h["payload"]["n"] for h in handled] + [m.payload["n"] for m in rest]) == list(range(400))


def test_the_old_receive_memory_argument_is_taken_with_a_warning() -> None:
    """Code written for the consumer that counted receives itself still constructs one."""
    client = SpoolqClient("http://127.0.0.1:9")  # never called
    with pytest.warns(DeprecationWarning, match="receive_memory"):
        Consumer(client, "q", lambda m: None, receive_memory=1000)
