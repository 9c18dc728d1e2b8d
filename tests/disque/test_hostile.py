"""Hostile input on the raw socket: an error reply or a closed connection, never a crash, nothing stored."""

from __future__ import annotations

import os
import socket
import time

import pytest
import redis

from tests.disque.disque_server import DisqueServer, stored


def exchange(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send ``data``, then read until the server closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except TimeoutError:
            pass
        except ConnectionResetError:
            pass
        return out


CLOSING = {
    "binary garbage": b"\x00\xff" + os.urandom(62),  # not a RESP type byte first
    "inline text": b"ADDJOB q x 0\r\n",
    "negative array": b"*-5\r\n",
    "bad bulk length": b"*1\r\n$abc\r\nPING\r\n",
    "huge bulk length": b"*3\r\n$6\r\nADDJOB\r\n$1\r\nq\r\n$99999999999\r\n" + b"x" * 4_000_000,
    "deep arrays": b"*1\r\n" * 100_000 + b"$1\r\na\r\n",
    "nested array": b"*2\r\n$4\r\nQLEN\r\n*1\r\n$1\r\nq\r\n",
    "integer for a command": b":12\r\n",
}


@pytest.mark.parametrize("name", list(CLOSING))
def test_malformed_resp_gets_an_error_and_a_close(server: DisqueServer, name: str) -> None:
    before = stored(server.root)
    reply = exchange(server.port, CLOSING[name], timeout=10)
    assert reply.startswith(b"-ERR Protocol error"), reply[:200]
    assert reply.count(b"\r\n") == 1  # one error, then the server closed the connection
    assert stored(server.root) == before
    assert server.client().execute_command("PING") is True  # the server is fine


def test_pipelined_good_and_bad_requests_keep_the_connection(server: DisqueServer) -> None:
    before = stored(server.root)
    data = (b"*1\r\n$4\r\nPING\r\n"
            b"*2\r\n$7\r\nNOTACMD\r\n$1\r\nx\r\n"
            b"*1\r\n$6\r\nADDJOB\r\n"
            b"*4\r\n$6\r\nADDJOB\r\n$4\r\nh-q1\r\n$1\r\nx\r\n$3\r\nabc\r\n"
            b"*3\r\n$6\r\nACKJOB\r\n$3\r\nbad\r\n$3\r\nbad\r\n"
            b"*0\r\n"
            b"*2\r\n$4\r\nQLEN\r\n$4\r\nh-q1\r\n"
            b"*1\r\n$4\r\nQUIT\r\n")
    reply = exchange(server.port, data)
    assert reply.split(b"\r\n")[:-1] == [
        b"+PONG",
        b"-ERR unknown command 'NOTACMD'",
        b"-ERR wrong number of arguments for 'addjob' command",
        b"-ERR timeout is not an integer or out of range",
        b"-BADID Invalid Job ID format.",
        b":0",
        b"+OK",
    ]
    assert stored(server.root) == before


def test_oversize_job_is_refused_and_nothing_stored(server: DisqueServer) -> None:
    before = stored(server.root)
    r = server.client()
    with pytest.raises(redis.ResponseError, match="over the limit"):
        r.execute_command("ADDJOB", "h-big", b"x" * (1_048_576 + 1), 0)
    assert stored(server.root) == before
    assert r.execute_command("PING") is True


def test_many_bad_clients_at_once(server: DisqueServer) -> None:
    before = stored(server.root)
    socks = []
    for i in range(50):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        s.sendall(b"*3\r\n$6\r\nADDJOB\r\n$1\r\nq\r\n$1000000\r\n" + b"y" * (i * 100))  # never completed
        socks.append(s)
    r = server.client()
    assert r.execute_command("PING") is True
    for s in socks:
        s.close()
    assert r.execute_command("QLEN", "q") == 0
    assert stored(server.root) == before


def test_a_client_that_never_reads_its_replies_is_not_served_more(server: DisqueServer) -> None:
    from pathlib import Path

    from tests.disque.disque_server import children

    r = server.client()
    pipe = r.pipeline(transaction=False)
    for _ in range(50):
        pipe.execute_command("ADDJOB", "h-slowreader", b"z" * 20_000, 0)
    pipe.execute()
    [pid] = [p for p in children(server.pids()[0])
             if "spoolq.disque.server" in Path(f"/proc/{p}/cmdline").read_text().replace("\0", " ")]

    def rss_mb() -> float:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    before = rss_mb()
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    request = b"*3\r\n$5\r\nQPEEK\r\n$12\r\nh-slowreader\r\n$2\r\n50\r\n"  # 1 MB per reply
    s.setblocking(False)
    sent = 0
    for _ in range(3000):  # up to 3 GB of replies if the server buffered them all
        try:
            sent += s.send(request)
        except BlockingIOError:
            break
    time.sleep(4)  # time to answer a few hundred of them, were they written regardless
    assert r.execute_command("PING") is True  # others are still served
    assert rss_mb() - before < 100, f"{rss_mb() - before:.0f} MB more for one client that does not read"
    s.close()
    assert r.execute_command("QLEN", "h-slowreader") == 50
