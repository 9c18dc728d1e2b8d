"""Producer against a real spoolq, with 503s and lost answers injected by a local proxy."""

from __future__ import annotations

import time

import pytest

from spoolq_client import AmbiguousSend, BadRequest, Producer, SpoolqClient
from tests.client.faults import FaultProxy
from tests.e2e.spoolq_server import KEY_ALL, Server


def _all_payloads(sq: SpoolqClient, queue: str, *, dedup: bool = False) -> list[object]:
    return [m.payload for m in sq.peek(queue, limit=5000, dedup=dedup)]


def test_batches_by_size_and_time(sq: SpoolqClient, qname: str) -> None:
    with Producer(sq, qname, max_batch=50, linger=0.05) as p:
        futures = [p.send({"n": i}) for i in range(230)]
    assert all(f.done() and f.exception() is None for f in futures)
    assert p.stats.sent == 230 and 5 <= p.stats.batches <= 20
    assert sorted(x["n"] for x in _all_payloads(sq, qname)) == list(range(230))  # type: ignore[index]


def test_flush_sends_a_partial_batch_at_once(sq: SpoolqClient, qname: str) -> None:
    p = Producer(sq, qname, max_batch=1000, linger=30)
    f = p.send("one")
    started = time.monotonic()
    p.flush(timeout=10)
    assert f.result(0) is None and time.monotonic() - started < 5
    assert sq.size(qname) == 1
    p.close()


def test_503_is_retried_after_retry_after_and_never_duplicates(server: Server, qname: str) -> None:
    def plan(n: int, method: str, path: str) -> str:
        return "503" if n <= 2 else "pass"
    with FaultProxy(server.url, plan, retry_after="1") as proxy, SpoolqClient(proxy.url, KEY_ALL) as c:
        started = time.monotonic()
        with Producer(c, qname, max_batch=100, linger=0.01, backoff_cap=0.05) as p:
            futures = [p.send(i) for i in range(100)]
        elapsed = time.monotonic() - started
    assert all(f.exception() is None for f in futures)
    assert elapsed >= 2.0, "each 503 must wait at least its Retry-After (1 s)"
    assert p.stats.retries == 2 and p.stats.possibly_duplicated == 0
    with SpoolqClient(server.url, KEY_ALL) as sq:
        assert sorted(_all_payloads(sq, qname)) == list(range(100))  # type: ignore[type-var]


def test_503_sometimes_under_load_keeps_every_message_once(server: Server, qname: str) -> None:
    def plan(n: int, method: str, path: str) -> str:
        return "503" if n % 3 == 0 else "pass"
    with FaultProxy(server.url, plan, retry_after="0") as proxy, SpoolqClient(proxy.url, KEY_ALL) as c, \
            Producer(c, qname, max_batch=25, linger=0.001, backoff_cap=0.05) as p:
        for i in range(500):
            p.send(i)
    assert p.stats.sent == 500 and p.stats.retries > 0 and p.stats.failed == 0
    with SpoolqClient(server.url, KEY_ALL) as sq:
        assert sorted(_all_payloads(sq, qname)) == list(range(500))  # type: ignore[type-var]


def test_lost_answer_is_retried_and_counted_as_possible_duplicate(server: Server, qname: str) -> None:
    def plan(n: int, method: str, path: str) -> str:
        return "drop" if n == 1 else "pass"
    with FaultProxy(server.url, plan) as proxy, SpoolqClient(proxy.url, KEY_ALL) as c:
        with Producer(c, qname, max_batch=10, linger=0.05, backoff_cap=0.05) as p:
            futures = [p.send(i) for i in range(10)]
        assert all(f.exception() is None for f in futures)
    assert p.stats.ambiguous_retries == 1 and p.stats.possibly_duplicated == 10
    with SpoolqClient(server.url, KEY_ALL) as sq:
        assert sorted(_all_payloads(sq, qname)) == sorted(list(range(10)) * 2)  # at least once: duplicated


def test_lost_answer_fails_when_asked(server: Server, qname: str) -> None:
    def plan(n: int, method: str, path: str) -> str:
        return "drop" if n == 1 else "pass"
    with FaultProxy(server.url, plan) as proxy, SpoolqClient(proxy.url, KEY_ALL) as c:
        with Producer(c, qname, max_batch=10, linger=0.05, on_ambiguous="fail") as p:
            futures = [p.send(i) for i in range(10)]
        for f in futures:
            assert isinstance(f.exception(), AmbiguousSend)
        assert p.stats.ambiguous_retries == 0 and p.stats.failed == 10


def test_4xx_fails_the_batch_without_retry(sq: SpoolqClient) -> None:
    with Producer(sq, "Not A Valid Name", linger=0.01) as p:
        f = p.send(1)
    assert isinstance(f.exception(), BadRequest) and p.stats.retries == 0


def test_dedup_queue(sq: SpoolqClient, qname: str) -> None:
    with Producer(sq, qname, dedup=True, linger=0.01) as p:
        for _ in range(20):
            p.send("same")
        p.send("other")
    assert sq.size(qname, dedup=True) == 2


def test_rejects_what_is_not_json(sq: SpoolqClient, qname: str) -> None:
    with Producer(sq, qname) as p, pytest.raises(TypeError):
        p.send(object())
