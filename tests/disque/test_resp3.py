"""RESP3: the Disque door with today's redis-py (8.x opens every connection with ``HELLO 3``), pydisque
unmodified on top of it, both of redis-py's RESP3 parsers, raw RESP3 bytes, and RESP2 clients
(redis-cli, redis-py with ``protocol=2``) on the same listener, all against ``spoolq serve --disque-port``."""

from __future__ import annotations

import contextlib
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis._parsers import _RESP3Parser

from tests.disque.disque_server import DisqueServer

CONFIG = """
api_keys:
  - name: all
    key: key-all
    permissions: ["queue|*|*"]
"""


def resp3(server: DisqueServer, **kw: object) -> redis.Redis:
    """redis-py as a Disque client library builds it: no protocol named (redis-py 8 picks RESP3)."""
    return redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=30, **kw)  # type: ignore[arg-type]


def test_redis_py_is_a_release_that_speaks_resp3_by_default() -> None:
    assert int(redis.__version__.split(".")[0]) >= 8, redis.__version__


@pytest.mark.parametrize("parser", ["default", "python"])
def test_every_job_command_over_resp3(server: DisqueServer, q: str, parser: str) -> None:
    kw: dict[str, object] = {"client_name": "worker-1"}
    if parser == "python":  # redis-py's own parser (used where hiredis is not installed)
        kw = {"connection_pool": redis.ConnectionPool(host="127.0.0.1", port=server.port, parser_class=_RESP3Parser,
                                                      socket_timeout=30, client_name="worker-1")}
    q = f"{q}-{parser}"
    with resp3(server, **kw) as r:
        assert r.connection_pool.get_connection().get_protocol() in (3, "3")  # type: ignore[no-untyped-call]
        assert r.ping() is True
        assert r.execute_command("CLIENT", "GETNAME") in (b"worker-1", "worker-1")
        jid = r.execute_command("ADDJOB", q, b"\x00body\xff", 0, "RETRY", 30)
        assert jid.startswith(b"D-") and len(jid) == 48
        assert r.execute_command("QLEN", q) == 1
        assert r.execute_command("QPEEK", q, 1) == [[q.encode(), jid, b"\x00body\xff"]]
        stat = r.execute_command("QSTAT", q)
        assert isinstance(stat, list) and stat[:4] == [b"name", q.encode(), b"len", 1]
        show = r.execute_command("SHOW", jid)
        assert isinstance(show, list) and show[:2] == [b"id", jid]
        assert r.execute_command("GETJOB", "WITHCOUNTERS", "FROM", q) == [
            [q.encode(), jid, b"\x00body\xff", b"nacks", 0, b"additional-deliveries", 0]]
        assert r.execute_command("WORKING", jid) == 30
        assert r.execute_command("NACK", jid) == 1
        assert r.execute_command("GETJOB", "FROM", q)[0][1] == jid
        assert r.execute_command("ACKJOB", jid) == 1
        assert r.execute_command("GETJOB", "NOHANG", "FROM", q) is None  # RESP3 null
        assert r.execute_command("GETJOB", "TIMEOUT", 100, "FROM", q) is None
        assert r.execute_command("QSTAT", q + "-none") is None
        assert r.execute_command("SHOW", jid) is None
        hello = r.execute_command("HELLO")  # Disque's own HELLO is unchanged
        assert hello[0] == 1 and len(hello[2]) == 4
        assert r.config_get("port") == {"port": str(server.port)} or r.config_get("port") == {
            b"port": str(server.port).encode()}
        info = r.info()
        assert "registered_jobs" in info and "disque_version" in info
        with pytest.raises(redis.ResponseError, match="unknown command"):
            r.execute_command("NOSUCH")
        assert r.ping() is True  # the connection stays after an error


def test_pydisque_unmodified_over_current_redis_py(server: DisqueServer, q: str) -> None:
    from pydisque.client import Client

    c = Client([f"127.0.0.1:{server.port}"])
    c.connect()
    conn = c.get_connection().connection_pool.get_connection()  # type: ignore[no-untyped-call]
    assert conn.get_protocol() in (3, "3")  # pydisque did not ask for anything: redis-py chose RESP3
    info = c.info()
    assert "registered_queues" in info
    jid = c.add_job(q, "hello", retry=5, ttl=600)
    assert c.qlen(q) == 1
    assert c.qpeek(q, 1) == [[q.encode(), jid, b"hello"]]
    stat = c.qstat(q, return_dict=True)
    assert stat[b"len"] == 1 and stat[b"name"] == q.encode()
    [(queue, got_id, body, nacks, more)] = c.get_job([q], withcounters=True)
    assert (queue, got_id, body, nacks, more) == (q.encode(), jid, b"hello", 0, 0)
    shown = c.show(got_id, return_dict=True)
    assert shown[b"state"] == b"active" and shown[b"queue"] == q.encode()
    assert c.working(got_id) == 5
    c.nack_job(got_id)
    assert c.get_job([q], timeout=1000)[0][1] == jid
    c.ack_job(got_id)
    assert c.qlen(q) == 0
    assert c.get_job([q], nohang=True) == []
    assert c.get_job([q], timeout=200) == []
    jid2 = c.add_job(q, "two")
    assert c.dequeue(jid2) == 1 and c.enqueue(jid2) == 1
    assert c.del_job(jid2) == 1
    assert c.pause(q, kw_in=True) == b"in"
    assert c.pause(q, kw_none=True) == b"none"
    _cursor, queues = c.qscan(count=1000)
    assert q.encode() in queues
    hello = c.hello()
    assert hello[0] == 1


def test_raw_resp3_bytes_and_back_to_resp2(server: DisqueServer, q: str) -> None:
    def call(s: socket.socket, *args: bytes) -> bytes:
        """One request's raw reply: what arrives until the server has been quiet for 0.2 s."""
        s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
        s.settimeout(10)
        data = s.recv(65536)
        s.settimeout(0.2)
        with contextlib.suppress(TimeoutError):
            while chunk := s.recv(65536):
                data += chunk
        return data

    with socket.create_connection(("127.0.0.1", server.port)) as s:
        assert call(s, b"GETJOB", b"NOHANG", b"FROM", q.encode()) == b"*-1\r\n"  # RESP2 to begin with
        hello = call(s, b"HELLO", b"3", b"SETNAME", b"raw")
        assert hello.startswith(b"%7\r\n$6\r\nserver\r\n$6\r\nspoolq\r\n"), hello
        assert b"$5\r\nproto\r\n:3\r\n" in hello
        assert call(s, b"GETJOB", b"NOHANG", b"FROM", q.encode()) == b"_\r\n"
        assert call(s, b"QSTAT", q.encode() + b"-none") == b"_\r\n"
        assert call(s, b"CONFIG", b"GET", b"appendonly") == b"%1\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n"
        assert call(s, b"INFO", b"queues").startswith(b"=")
        assert call(s, b"CLIENT", b"GETNAME") == b"$3\r\nraw\r\n"
        assert call(s, b"HELLO", b"4").startswith(b"-NOPROTO")
        assert call(s, b"HELLO", b"three").startswith(b"-ERR Protocol version is not an integer")
        assert call(s, b"HELLO", b"3", b"BOGUS").startswith(b"-ERR Syntax error in HELLO option")
        assert call(s, b"GETJOB", b"NOHANG", b"FROM", q.encode()) == b"_\r\n"  # refused HELLOs change nothing
        assert call(s, b"HELLO", b"2").startswith(b"*14\r\n$6\r\nserver\r\n")
        assert call(s, b"GETJOB", b"NOHANG", b"FROM", q.encode()) == b"*-1\r\n"
        assert call(s, b"CONFIG", b"GET", b"appendonly") == b"*2\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n"
        assert call(s, b"CLIENT", b"SETNAME", b"two words").startswith(b"-ERR Client names cannot")


def test_resp2_clients_are_unchanged(server: DisqueServer, q: str) -> None:
    with server.client() as r:  # redis-py told protocol=2
        assert r.execute_command("GETJOB", "NOHANG", "FROM", q) is None
        assert r.execute_command("CONFIG", "GET", "port") == [b"port", str(server.port).encode()]
    done = subprocess.run(["redis-cli", "-p", str(server.port), "GETJOB", "NOHANG", "FROM", q], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.strip() == "", done
    done = subprocess.run(["redis-cli", "-3", "-p", str(server.port), "ADDJOB", q, "via redis-cli -3", "0"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.startswith("D-"), done
    done = subprocess.run(["redis-cli", "-3", "-p", str(server.port), "GETJOB", "FROM", q], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0 and "via redis-cli -3" in done.stdout, done


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DisqueServer]:
    tmp: Path = tmp_path_factory.mktemp("disque-resp3-auth")
    (tmp / "spoolq.yaml").write_text(CONFIG)
    s = DisqueServer(root=tmp / "root", log=tmp / "server.log", config=tmp / "spoolq.yaml")
    s.start()
    try:
        yield s
    finally:
        s.stop()


def test_hello_3_authenticates_as_auth_does(keyed: DisqueServer, q: str) -> None:
    with resp3(keyed, password="key-all") as r:  # redis-py sends HELLO 3 AUTH default key-all
        jid = r.execute_command("ADDJOB", q, "x", 0)
        assert r.execute_command("ACKJOB", jid) == 1
    with resp3(keyed, password="wrong") as r, pytest.raises(redis.AuthenticationError):
        r.ping()
    with resp3(keyed) as r:  # no key: the handshake works, the jobs need AUTH
        assert r.ping() is True
        with pytest.raises(redis.AuthenticationError):
            r.execute_command("QLEN", q)
