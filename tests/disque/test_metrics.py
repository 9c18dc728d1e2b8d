"""The Disque door's commands, messages and blocked GETJOBs reach ``/metrics`` of the same
``spoolq serve`` (the listener is a process of its own; gunicorn's worker serves the scrape)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

import redis

from tests.disque.disque_server import DisqueServer, Samples, delta, scrape, scrape_settled, value


def commands(samples: Samples) -> set[str]:
    return {lab["command"] for lab, _ in samples.get("spoolq_commands_total", []) if lab.get("door") == "disque"}


def test_commands_and_messages_counted_exactly(server: DisqueServer, r: redis.Redis, q: str) -> None:
    r.ping()  # connected first: redis-py's CLIENT SETINFO on connect counts as unknown
    before = scrape_settled(server)
    for i in range(3):
        r.execute_command("ADDJOB", q, f"job-{i}", 0)
    with r.pipeline(transaction=False) as p:  # pipelined ADDJOBs: one store batch, each counted
        for i in range(3, 5):
            p.execute_command("ADDJOB", q, f"job-{i}", 0)
        p.execute_command("ADDJOB", q)  # wrong number of arguments, inside the batch
        replies = p.execute(raise_on_error=False)
    assert isinstance(replies[-1], redis.ResponseError) and not any(
        isinstance(x, Exception) for x in replies[:-1])
    jobs = r.execute_command("GETJOB", "NOHANG", "COUNT", 10, "FROM", q)
    assert len(jobs) == 5
    assert r.execute_command("ACKJOB", jobs[0][1], jobs[1][1]) == 2
    assert r.execute_command("QLEN", q) == 0
    for cmd in (("NOSUCHCOMMAND",), ("nosuchcommand", "x")):
        try:
            r.execute_command(*cmd)
        except redis.ResponseError as e:
            assert "unknown command" in str(e)
        else:
            raise AssertionError("an unknown command was answered")
    after = scrape_settled(server)

    def commands_delta(command: str, result: str) -> float:
        return delta(before, after, "spoolq_commands_total", door="disque", command=command, result=result)

    assert commands_delta("ADDJOB", "ok") == 5
    assert commands_delta("ADDJOB", "error") == 1
    assert commands_delta("GETJOB", "ok") == 1
    assert commands_delta("ACKJOB", "ok") == 1
    assert commands_delta("QLEN", "ok") == 1
    assert commands_delta("unknown", "error") == 2
    assert delta(before, after, "spoolq_command_seconds_count", door="disque", command="ADDJOB") == 6
    assert delta(before, after, "spoolq_command_seconds_sum", door="disque", command="GETJOB") > 0
    for op, n in (("send", 5), ("poll", 5), ("ack", 2)):
        assert delta(before, after, "spoolq_messages_total", door="disque", operation=op) == n, op
        assert delta(before, after, "spoolq_queue_messages_total", queue=f"disque:{q}", operation=op) == n, op
    assert "NOSUCHCOMMAND" not in commands(after) and "nosuchcommand" not in commands(after)
    r.execute_command("ACKJOB", *[j[1] for j in jobs[2:]])


def test_unknown_command_names_add_no_label_values(server: DisqueServer, r: redis.Redis) -> None:
    r.ping()
    before = scrape_settled(server)
    with r.pipeline(transaction=False) as p:
        for i in range(200):
            p.execute_command(f"NOPE{i}", "x")
        p.execute_command("ping")  # lower case: the same label as PING
        replies = p.execute(raise_on_error=False)
    assert all(isinstance(x, redis.ResponseError) for x in replies[:-1])
    after = scrape_settled(server)
    assert commands(after) - commands(before) <= {"PING"}
    assert commands(after) <= commands(before) | {"PING"}
    assert delta(before, after, "spoolq_commands_total", door="disque", command="unknown") == 200
    assert delta(before, after, "spoolq_commands_total", door="disque", command="PING", result="ok") == 1
    series = len(after["spoolq_command_seconds_count"])
    assert series == len({(lab["door"], lab["command"]) for lab, _ in after["spoolq_command_seconds_count"]})


def test_blocked_getjob_counts_as_a_long_poll_waiting(server: DisqueServer, q: str) -> None:
    def waiting() -> float:
        return value(scrape(server), "spoolq_long_polls_waiting", door="disque")

    assert waiting() == 0
    got: list[object] = []
    blocked = server.client()
    t = threading.Thread(target=lambda: got.append(blocked.execute_command("GETJOB", "TIMEOUT", 20_000, "FROM", q)))
    t.start()
    try:
        deadline = time.monotonic() + 10
        while waiting() != 1:
            assert time.monotonic() < deadline, "the blocked GETJOB never showed in /metrics"
            time.sleep(0.05)
        with server.client() as producer:
            producer.execute_command("ADDJOB", q, "wake", 0)
        t.join(timeout=15)
        assert not t.is_alive() and got and got[0]
        assert waiting() == 0
        scraped = scrape_settled(server)
        assert value(scraped, "spoolq_commands_total", door="disque", command="GETJOB", result="ok") >= 1
    finally:
        t.join(timeout=25)
        blocked.close()


def test_counts_exact_under_concurrent_mixed_load(server: DisqueServer, q: str) -> None:
    """Producers (pipelined and single ADDJOBs), consumers (GETJOB + ACKJOB) and junk commands on
    eight connections at once: every command and every job counted once."""
    producers, consumers, per_producer = 4, 3, 30
    total = producers * per_producer
    clients = [server.client() for _ in range(producers + consumers + 1)]
    for c in clients:
        c.ping()
    before = scrape_settled(server)
    acked = [0] * consumers
    polls = [0] * consumers
    errors: list[BaseException] = []

    def produce(c: redis.Redis, i: int) -> None:
        for n in range(0, per_producer, 10):
            with c.pipeline(transaction=False) as p:
                for k in range(5):
                    p.execute_command("ADDJOB", q, f"p{i}-{n + k}", 0)
                p.execute()
            for k in range(5, 10):
                c.execute_command("ADDJOB", q, f"p{i}-{n + k}", 0)

    def consume(c: redis.Redis, i: int) -> None:
        deadline = time.monotonic() + 60
        while sum(acked) < total and time.monotonic() < deadline:
            jobs = c.execute_command("GETJOB", "TIMEOUT", 200, "COUNT", 7, "FROM", q)
            polls[i] += 1
            if jobs:
                acked[i] += c.execute_command("ACKJOB", *[j[1] for j in jobs])

    def run(target: Callable[[redis.Redis, int], None], c: redis.Redis, i: int) -> None:
        try:
            target(c, i)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(produce, clients[i], i)) for i in range(producers)]
    threads += [threading.Thread(target=run, args=(consume, clients[producers + i], i)) for i in range(consumers)]
    for t in threads:
        t.start()
    junk = clients[-1]
    for n in range(25):
        with contextlib.suppress(redis.ResponseError):
            junk.execute_command(f"JUNK{n}")
    for t in threads:
        t.join(timeout=90)
    for c in clients:
        c.close()
    assert not errors, errors
    assert sum(acked) == total
    after = scrape_settled(server)
    assert delta(before, after, "spoolq_commands_total", door="disque", command="ADDJOB", result="ok") == total
    assert delta(before, after, "spoolq_commands_total", door="disque", command="GETJOB") == sum(polls)
    assert delta(before, after, "spoolq_commands_total", door="disque", command="unknown", result="error") == 25
    assert delta(before, after, "spoolq_command_seconds_count", door="disque", command="ADDJOB") == total
    for op in ("send", "poll", "ack"):
        assert delta(before, after, "spoolq_messages_total", door="disque", operation=op) == total, op
        assert delta(before, after, "spoolq_queue_messages_total", queue=f"disque:{q}", operation=op) == total, op
