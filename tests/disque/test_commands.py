"""Every Disque command through redis-py's ``execute_command`` against a real ``spoolq serve --disque-port``."""

from __future__ import annotations

import re
import threading
import time

import pytest
import redis
import requests

from tests.disque.disque_server import DisqueServer, stored

ID = re.compile(rb"^D-[0-9a-f]{8}-[0-9a-f]{32}-[0-9a-f]{4}$")


def add(r: redis.Redis, q: str, body: bytes | str = b"job", *opts: object) -> bytes:
    jid = r.execute_command("ADDJOB", q, body, 0, *opts)
    assert ID.match(jid), jid
    return bytes(jid)


def err(r: redis.Redis, *cmd: object) -> str:
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*cmd)
    return str(e.value)


def test_server_commands(r: redis.Redis, server: DisqueServer) -> None:
    assert r.execute_command("PING") is True
    hello = r.execute_command("HELLO")
    assert hello[0] == 1 and len(hello[1]) == 40 and hello[2][:3] == [hello[1], b"127.0.0.1", str(server.port).encode()]
    info = r.info()  # redis-py parses the "# Section" / "key:value" text
    for key in ("disque_version", "connected_clients", "registered_jobs", "registered_queues", "aof_enabled"):
        assert key in info
    assert set(r.info("jobs")) == {"registered_jobs"}
    assert r.execute_command("CONFIG", "GET", "port") == [b"port", str(server.port).encode()]
    assert r.execute_command("CONFIG", "GET", "appendfsync") == [b"appendfsync", b"always"]
    assert "not supported" in err(r, "CONFIG", "SET", "port", "1")
    assert r.command_count() > 20
    assert r.command()["addjob"]["arity"] == -4
    assert len(r.execute_command("TIME")) == 2
    with pytest.raises(redis.AuthenticationError, match="Client sent AUTH, but no password is set"):
        r.execute_command("AUTH", "x")
    assert err(r, "HELLO", "4").startswith("NOPROTO unsupported protocol version")


def test_errors_keep_the_connection(r: redis.Redis) -> None:
    assert err(r, "NOSUCHCMD", "a") == "unknown command 'NOSUCHCMD'"
    assert err(r, "QLEN") == "wrong number of arguments for 'qlen' command"
    assert err(r, "WORKING", "a", "b") == "wrong number of arguments for 'working' command"
    assert r.execute_command("PING") is True


def test_addjob_getjob_ackjob(r: redis.Redis, server: DisqueServer, q: str) -> None:
    jid = add(r, q, b"\x00binary\xff")
    assert len(jid) == 48 and jid.startswith(b"D-")
    assert int(jid[-4:], 16) % 2 == 1  # at-least-once: odd TTL field
    assert r.execute_command("QLEN", q) == 1
    got = r.execute_command("GETJOB", "FROM", q)
    assert got == [[q.encode(), jid, b"\x00binary\xff"]]
    assert r.execute_command("QLEN", q) == 0
    assert r.execute_command("ACKJOB", jid) == 1
    assert r.execute_command("ACKJOB", jid) == 0  # already gone
    assert r.execute_command("GETJOB", "NOHANG", "FROM", q) is None
    assert requests.get(f"{server.url}/queue/1/disque:{q}/size").json() == 0


def test_getjobs_count_and_left_to_right(r: redis.Redis, q: str) -> None:
    a, b = q + "-a", q + "-b"
    ids_b = [add(r, b, f"b{i}") for i in range(3)]
    ids_a = [add(r, a, f"a{i}") for i in range(2)]
    got = r.execute_command("GETJOBS", "COUNT", 4, "FROM", a, b)
    assert [row[1] for row in got] == [*ids_a, *ids_b[:2]]
    assert r.execute_command("FASTACK", *[row[1] for row in got]) == 4


def test_addjob_argument_errors_store_nothing(r: redis.Redis, server: DisqueServer, q: str) -> None:
    before = stored(server.root)
    cases = {
        ("REPLICATE", 0): "REPLICATE must be between 1 and 65535",
        ("REPLICATE", "x"): "REPLICATE must be between 1 and 65535",
        ("TTL", 0): "TTL must be a number > 0",
        ("RETRY", -1): "RETRY time must be a non negative number",
        ("DELAY", "1.5"): "DELAY time must be a non negative number",
        ("MAXLEN", 0): "MAXLEN must be a positive number",
        ("BOGUS",): "syntax error",
        ("TTL",): "syntax error",
        ("RETRY", 0, "REPLICATE", 3): "With RETRY set to 0 please explicitly set  REPLICATE to 1 (at-most-once delivery)",
        ("DELAY", 10, "TTL", 5): "The specified DELAY is greater than TTL. Job refused since would never be delivered",
    }
    for opts, message in cases.items():
        assert err(r, "ADDJOB", q, "body", 0, *opts) == message, opts
    assert err(r, "ADDJOB", q, "body", "soon") == "timeout is not an integer or out of range"
    assert err(r, "ADDJOB", q, "body", -1) == "timeout is negative"
    assert err(r, "ADDJOB", "bad name!", "body", 0).startswith("invalid queue name")
    assert err(r, "ADDJOB", q, b"x" * 1_100_000, 0).startswith("message of 1100000 bytes is over the limit")
    assert stored(server.root) == before


def test_getjob_argument_errors(r: redis.Redis, q: str) -> None:
    assert err(r, "GETJOB", q) == "syntax error"
    assert err(r, "GETJOB", "FROM") == "syntax error"
    assert err(r, "GETJOB", "COUNT", 0, "FROM", q) == "COUNT must be a number greater than zero"
    assert err(r, "GETJOB", "TIMEOUT", "x", "FROM", q) == "timeout is not an integer or out of range"
    assert err(r, "ACKJOB", "nope") == "BADID Invalid Job ID format."
    assert err(r, "SHOW", "D-1234") == "BADID Invalid Job ID format."


def test_ack_of_unknown_id(r: redis.Redis, q: str) -> None:
    add(r, q)
    unknown = b"D-00000000-" + b"0" * 32 + b"-0001"
    assert r.execute_command("ACKJOB", unknown) == 0
    assert r.execute_command("SHOW", unknown) is None
    assert err(r, "WORKING", unknown) == "NOJOB Job not known in the context of this node."
    assert r.execute_command("QLEN", q) == 1


def test_blocking_getjob_wakes_on_the_middle_queue(server: DisqueServer, q: str) -> None:
    queues = [f"{q}-1", f"{q}-2", f"{q}-3"]
    consumer, producer = server.client(), server.client()
    result: dict[str, object] = {}

    def wait() -> None:
        result["got"] = consumer.execute_command("GETJOB", "TIMEOUT", 10_000, "FROM", *queues)
        result["at"] = time.monotonic()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.5)  # the consumer is blocked by now
    assert producer.execute_command("QSTAT", queues[1]) is None or True
    sent = time.monotonic()
    jid = add(producer, queues[1], b"middle")
    replied = time.monotonic()
    t.join(15)
    latency = float(result["at"]) - sent  # type: ignore[arg-type]
    assert result["got"] == [[queues[1].encode(), jid, b"middle"]]
    assert latency < 0.5, f"wake-up took {latency * 1000:.0f} ms"
    print(f"blocked GETJOB answered {latency * 1000:.1f} ms after ADDJOB was sent, "
          f"{(float(result['at']) - replied) * 1000:.1f} ms after its reply (the ADDJOB flush took "  # type: ignore[arg-type]
          f"{(replied - sent) * 1000:.1f} ms)")


def test_blocking_getjob_times_out(r: redis.Redis, q: str) -> None:
    t0 = time.monotonic()
    assert r.execute_command("GETJOB", "TIMEOUT", 300, "FROM", q) is None
    assert 0.25 < time.monotonic() - t0 < 2


def test_retry_redelivery_and_counters(r: redis.Redis, q: str) -> None:
    jid = add(r, q, b"x", "RETRY", 1)
    first = r.execute_command("GETJOB", "WITHCOUNTERS", "FROM", q)
    assert first == [[q.encode(), jid, b"x", b"nacks", 0, b"additional-deliveries", 0]]
    assert r.execute_command("GETJOB", "NOHANG", "FROM", q) is None
    again = r.execute_command("GETJOB", "TIMEOUT", 5000, "WITHCOUNTERS", "FROM", q)
    assert again == [[q.encode(), jid, b"x", b"nacks", 0, b"additional-deliveries", 1]]
    assert r.execute_command("NACK", jid) == 1
    third = r.execute_command("GETJOB", "NOHANG", "WITHCOUNTERS", "FROM", q)
    assert third == [[q.encode(), jid, b"x", b"nacks", 1, b"additional-deliveries", 1]]
    show = dict(zip(*[iter(r.execute_command("SHOW", jid))] * 2, strict=True))
    assert show[b"state"] == b"active" and show[b"retry"] == 1 and show[b"nacks"] == 1
    assert r.execute_command("ACKJOB", jid) == 1


def test_retry_zero_is_at_most_once(r: redis.Redis, q: str) -> None:
    jid = add(r, q, b"once", "RETRY", 0)
    assert int(jid[-4:], 16) % 2 == 0  # at-most-once: even TTL field
    assert r.execute_command("GETJOB", "FROM", q)[0][1] == jid
    assert r.execute_command("GETJOB", "TIMEOUT", 1500, "FROM", q) is None


def test_delay(r: redis.Redis, q: str) -> None:
    jid = add(r, q, b"later", "DELAY", 1)
    assert r.execute_command("GETJOB", "NOHANG", "FROM", q) is None
    show = dict(zip(*[iter(r.execute_command("SHOW", jid))] * 2, strict=True))
    assert show[b"state"] == b"active" and show[b"next-awake-within"] is not None
    t0 = time.monotonic()
    got = r.execute_command("GETJOB", "TIMEOUT", 5000, "FROM", q)
    assert got[0][1] == jid and time.monotonic() - t0 > 0.3


def test_ttl_expiry(r: redis.Redis, q: str) -> None:
    add(r, q, b"short", "TTL", 1)
    time.sleep(1.3)
    assert r.execute_command("GETJOB", "NOHANG", "FROM", q) is None


def test_maxlen(r: redis.Redis, q: str) -> None:
    add(r, q, b"1", "MAXLEN", 2)
    add(r, q, b"2", "MAXLEN", 2)
    assert err(r, "ADDJOB", q, "3", 0, "MAXLEN", 2) == "MAXLEN Queue is already longer than the specified MAXLEN count"
    assert r.execute_command("QLEN", q) == 2


def test_replicate_and_async_accepted(r: redis.Redis, q: str) -> None:
    add(r, q, b"r", "REPLICATE", 3, "ASYNC", "TIMEOUT" if False else "TTL", 60)
    assert r.execute_command("QLEN", q) == 1


def test_working_enqueue_dequeue_deljob(r: redis.Redis, q: str) -> None:
    jid = add(r, q, b"w", "RETRY", 7)
    assert r.execute_command("DEQUEUE", jid) == 1
    assert r.execute_command("QLEN", q) == 0
    assert r.execute_command("DEQUEUE", jid) == 0  # not queued any more
    assert r.execute_command("ENQUEUE", jid) == 1
    assert r.execute_command("QLEN", q) == 1
    assert r.execute_command("WORKING", jid) == 7
    assert r.execute_command("QLEN", q) == 0
    assert r.execute_command("QUEUE", jid) == 1  # the seed's name for ENQUEUE
    assert r.execute_command("DELJOB", jid) == 1
    assert r.execute_command("SHOW", jid) is None


def test_qpeek_qstat(r: redis.Redis, q: str) -> None:
    ids = [add(r, q, f"p{i}") for i in range(4)]
    assert [row[1] for row in r.execute_command("QPEEK", q, 2)] == ids[:2]
    assert [row[1] for row in r.execute_command("QPEEK", q, -2)] == [ids[3], ids[2]]
    assert r.execute_command("QPEEK", q, 0) == []
    assert err(r, "QPEEK", q, "many") == "value is not an integer or out of range"
    r.execute_command("GETJOB", "FROM", q)
    stat = dict(zip(*[iter(r.execute_command("QSTAT", q))] * 2, strict=True))
    assert stat[b"name"] == q.encode() and stat[b"len"] == 3 and stat[b"jobs-in"] == 4 and stat[b"jobs-out"] == 1
    assert stat[b"pause"] == b"none" and stat[b"import-from"] == [] and stat[b"blocked"] == 0
    assert r.execute_command("QSTAT", q + "-never") is None


def test_scans(r: redis.Redis, q: str) -> None:
    ids = [add(r, q, f"s{i}") for i in range(5)]
    r.execute_command("GETJOB", "FROM", q)
    names: list[bytes] = []
    cursor = b"0"
    while True:
        cursor, page = r.execute_command("QSCAN", cursor, "COUNT", 2)
        names += page
        if cursor == b"0":
            break
    assert q.encode() in names
    assert q.encode() in r.execute_command("SCANQUEUES", "0", "BUSYLOOP", "MINLEN", 4)[1]
    assert q.encode() not in r.execute_command("QSCAN", "0", "BUSYLOOP", "MINLEN", 5)[1]
    seen: list[bytes] = []
    cursor = b"0"
    while True:
        cursor, page = r.execute_command("JSCAN", cursor, "COUNT", 2, "QUEUE", q)
        seen += page
        if cursor == b"0":
            break
    assert sorted(seen) == sorted(ids)
    queued = r.execute_command("SCANJOBS", "0", "BUSYLOOP", "QUEUE", q, "STATE", "queued")[1]
    assert len(queued) == 4
    full = r.execute_command("JSCAN", "BUSYLOOP", "QUEUE", q, "STATE", "active", "REPLY", "all")[1]
    assert len(full) == 1 and full[0][0] == b"id"
    assert err(r, "JSCAN", "STATE", "sleeping") == "Invalid job state name"
    assert err(r, "JSCAN", "REPLY", "some") == "Invalid REPLY type, try ID or ALL"


def test_pause(r: redis.Redis, server: DisqueServer, q: str) -> None:
    add(r, q, b"before")
    assert r.execute_command("PAUSE", q, "in") == b"in"
    assert err(r, "ADDJOB", q, "x", 0) == "PAUSED Queue paused in input, try later"
    assert r.execute_command("PAUSE", q, "state") == b"in"
    assert r.execute_command("PAUSE", q, "out") == b"out"
    add(r, q, b"during")
    assert r.execute_command("GETJOB", "NOHANG", "FROM", q) is None
    assert r.execute_command("PAUSE", q, "in", "out") == b"all"
    assert err(r, "PAUSE", q, "sideways") == "syntax error"
    other = server.client()
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(other.execute_command("GETJOB", "TIMEOUT", 10_000, "FROM", q)))
    t.start()
    time.sleep(0.3)
    assert r.execute_command("PAUSE", q, "none") == b"none"
    t.join(15)
    assert got and got[0][0][2] == b"before"  # type: ignore[index]


def test_other_doors_see_the_same_jobs(r: redis.Redis, server: DisqueServer, q: str) -> None:
    import json
    import subprocess
    import sys

    for i in range(3):
        add(r, q, json.dumps({"n": i}))
    assert requests.get(f"{server.url}/queue/1/disque:{q}/size").json() == 3
    done = subprocess.run([sys.executable, "-m", "spoolq.cli", "peek", f"disque:{q}", "--json"],
                          capture_output=True, text=True, env={"SPOOLQ_URL": server.url, "PATH": "/usr/bin:/bin",
                                                                "PYTHONPATH": ":".join(sys.path)}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert '"n": 0' in done.stdout.replace('"n":0', '"n": 0')
    requests.post(f"{server.url}/queue/1/disque:{q}/send", json={"from": "http"}, timeout=10)
    assert r.execute_command("QLEN", q) == 4


def test_pydisque_client(server: DisqueServer, q: str) -> None:
    from pydisque.client import Client

    c = Client([f"127.0.0.1:{server.port}"])
    c.connect()
    jid = c.add_job(q, "hello", retry=5)
    assert c.qlen(q) == 1
    [(queue, got_id, body)] = c.get_job([q])
    assert (queue, got_id, body) == (q.encode(), jid, b"hello")
    assert c.show(got_id)[b"state"] == b"active" if isinstance(c.show(got_id), dict) else True
    c.ack_job(got_id)
    assert c.qlen(q) == 0
    assert c.get_job([q], nohang=True) == []


def test_pipelined_addjobs_one_reply_each_in_order(r: redis.Redis, server: DisqueServer, q: str) -> None:
    pipe = r.pipeline(transaction=False)
    pipe.execute_command("ADDJOB", q, "a", 0)
    pipe.execute_command("ADDJOB", q, "b", 0, "TTL", 0)
    pipe.execute_command("ADDJOB", q, b"x" * 1_100_000, 0)
    pipe.execute_command("ADDJOB", q + "-other", "c", 0)
    pipe.execute_command("ADDJOB", q, "d", 0)
    a, bad, big, c, d = pipe.execute(raise_on_error=False)
    assert ID.match(a) and ID.match(c) and ID.match(d)
    assert str(bad) == "TTL must be a number > 0" and "over the limit" in str(big)
    assert [row[2] for row in r.execute_command("QPEEK", q, 10)] == [b"a", b"d"]
    assert r.execute_command("QLEN", q + "-other") == 1


def test_many_blocked_getjobs_hold_no_threads(server: DisqueServer, q: str) -> None:
    import os
    import socket
    from pathlib import Path

    from tests.disque.disque_server import children

    [disque_pid] = [p for p in children(server.pids()[0])
                    if "spoolq.disque.server" in Path(f"/proc/{p}/cmdline").read_text().replace("\0", " ")]
    n = 300
    cmd = f"*5\r\n$6\r\nGETJOB\r\n$7\r\nTIMEOUT\r\n$5\r\n20000\r\n$4\r\nFROM\r\n${len(q)}\r\n{q}\r\n".encode()
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        s.sendall(cmd)
        socks.append(s)
    r = server.client()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and int(r.info("clients")["blocked_clients"]) < n:
        time.sleep(0.1)
    assert int(r.info("clients")["blocked_clients"]) == n
    threads = len(os.listdir(f"/proc/{disque_pid}/task"))
    assert threads < 60, f"{threads} threads for {n} blocked clients"
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.execute_command("ADDJOB", q, f"j{i}", 0)
    ids = set(pipe.execute())
    got = set()
    for s in socks:
        data = b""
        while data.count(b"\r\n") < 8:
            data += s.recv(4096)
        got.add(data.split(b"\r\n")[5])
        s.close()
    assert got == ids  # every blocked client got exactly one job, no job twice
