"""The limits of one worker's connections, through a real ``spoolq serve`` (1 worker x 4 threads):
``--header-timeout`` and ``--max-connections``, and what a client sees at each.

* a head must arrive within the timeout: a partial one gets ``408`` (JSON) and is closed, a
  connection that sends nothing is closed silently, a head sent in parts within it is served;
* kept-alive connections that start their next request and stall, and requests whose body
  (of declared length) stalls, hold no thread: 8 of them (twice the threads) leave a normal
  request fast (gthread handed each a thread that waited for the rest for good);
* over ``--max-connections`` a new connection gets ``503`` at once and is closed; once the idle
  ones have timed out, requests are served again;
* each is counted: ``spoolq_http_connections_timed_out_total{stage}``,
  ``spoolq_http_connections_refused_total{reason}``, ``spoolq_http_connections{state}``.
"""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest
import requests

from tests.e2e.spoolq_server import metric, running_server

pytestmark = [pytest.mark.hostile, pytest.mark.timeout(120)]

TIMEOUT = 1.0
LIMIT = 40


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.settimeout(10)
    return s


def _read_all(s: socket.socket) -> bytes:
    out = b""
    while True:
        try:
            data = s.recv(65536)
        except ConnectionResetError:
            break
        if not data:
            break
        out += data
    return out


def _request(s: socket.socket, path: str, keep_alive: bool = True) -> bytes:
    """One GET on ``s``; its whole answer (a JSON body with Content-Length)."""
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{'' if keep_alive else 'Connection: close' + chr(13) + chr(10)}"
              "\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += s.recv(65536)
    return head


def test_head_deadline_keepalive_stalls_and_connection_limit(tmp_path: Path) -> None:
    args = ("--header-timeout", str(TIMEOUT), "--max-connections", str(LIMIT))
    with running_server(tmp_path, keys=False, workers=1, threads=4, extra_args=args) as server:
        url, port = server.url, server.port
        assert requests.post(f"{url}/queue/1/q/send", json="m", timeout=10).status_code == 200

        # a partial head: 408 in JSON, then closed; nothing at all: closed without a word
        partial, idle = _connect(port), _connect(port)
        partial.sendall(b"POST /queue/1/q/send HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        t0 = time.monotonic()
        answer = _read_all(partial)
        waited = time.monotonic() - t0
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b'"message": "HTTP 408 Request Timeout: the request head did not arrive within 1s' in answer
        assert TIMEOUT * 0.8 <= waited <= TIMEOUT + 2.0, waited
        assert _read_all(idle) == b""

        # a head sent in parts, within the deadline: served
        parts = _connect(port)
        for piece in (b"GET /queue/1/q/size HTTP/1.1\r\n", b"Host: x\r\n", b"Connection: close\r\n\r\n"):
            parts.sendall(piece)
            time.sleep(0.25)
        assert _read_all(parts).startswith(b"HTTP/1.1 200 ")

        # kept-alive connections that start their next request and stall, and requests whose body
        # stalls, hold no thread: twice the threads of them leave a normal request fast
        stalled = [_connect(port) for _ in range(8)]
        for s in stalled[:4]:
            assert _request(s, "/queue/1/q/size").startswith(b"HTTP/1.1 200 ")
            s.sendall(b"GET /queue/1/q/size HTTP/1.1\r\nHo")
        for s in stalled[4:]:
            s.sendall(b"POST /queue/1/q/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n\"only the start of it")
        time.sleep(0.2)
        t0 = time.monotonic()
        assert requests.get(f"{url}/queue/1/q/size", timeout=10).status_code == 200
        assert time.monotonic() - t0 < 0.5
        for s in stalled:
            answer = _read_all(s)
            assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"the request body did not arrive within 1s" in answer

        # over the limit: 503 at once and closed; served again once the idle ones timed out
        held = [_connect(port) for _ in range(LIMIT + 10)]
        refused = 0
        for s in held:  # each is either refused at once (503) or closed silently at the deadline
            data = _read_all(s)
            if data:
                assert data.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in data, data
                refused += 1
        assert refused >= 1
        assert requests.get(f"{url}/queue/1/q/size", timeout=10).status_code == 200
        for s in [partial, idle, parts, *stalled, *held]:
            s.close()

        assert metric(url, "spoolq_http_connections_timed_out_total", stage="head") >= 5
        assert metric(url, "spoolq_http_connections_timed_out_total", stage="body") == 4
        # each held connection was either refused or timed out idle (and so was the first idle one)
        assert metric(url, "spoolq_http_connections_refused_total", reason="limit") == refused
        assert metric(url, "spoolq_http_connections_timed_out_total", stage="idle") == 1 + LIMIT + 10 - refused
        assert metric(url, "spoolq_http_connections", state="busy") >= 0
        assert "Traceback" not in server.log.read_text()
