"""Hostile requests through real gunicorn: clear 4xx in JSON or text (never HTML), data dir unchanged."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import tree
from tests.e2e.spoolq_server import KEY_ALL, Server, running_server

pytestmark = pytest.mark.timeout(120)

NAMES = ["..", ".", "a%2Fb", "a%00b", "x" * 10_000, "caf%C3%A9", "Bad", "%2E%2E", "a%20b", "__dedupq:x"]
REQUESTS = [("POST", "/queue/1/{q}/send", b'{"a":1}'), ("GET", "/queue/1/{q}/poll", b""),
            ("POST", "/dedupq/1/{q}/ack", b"[]"), ("DELETE", "/queue/1/{q}", b""),
            ("POST", "/mq/{q}/messages", b"x"), ("PUT", "/mq/{q}", b"")]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("hostile")) as srv:
        # the root's layout (queues/, trash/, ...) is made when a worker first opens the store, on
        # its first request that reads or writes queues: do that here, so that the snapshots compare
        # what hostile requests leave in a data directory in use (a capitalised name is looked up
        # there: it may be another door's queue)
        assert _raw(srv, "GET", "/queue/1/warm-up/size", b"", {"X-BV-API-Key": KEY_ALL})[0] == 200
        yield srv


def _raw(server: Server, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in {**headers, "Content-Length": str(len(body))}.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("name", NAMES)
def test_hostile_names(server: Server, name: str) -> None:
    before = tree(server.root)
    for method, path, body in REQUESTS:
        if (name == "__dedupq:x" and path.startswith("/dedupq")) or (name in ("Bad", "__dedupq:x")
                                                                      and path.startswith("/mq")):
            continue  # legal names there
        status, ctype, data = _raw(server, method, path.format(q=name), body,
                                   {"X-BV-API-Key": KEY_ALL, "Content-Type": "application/json"})
        assert 400 <= status < 500, (method, path, status, data[:200])
        assert "html" not in ctype and b"<html" not in data.lower()
    assert tree(server.root) == before


def test_oversize_declared_body_is_413_before_reading(server: Server) -> None:
    before = tree(server.root)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.putrequest("POST", "/queue/1/big/send")
    conn.putheader("X-BV-API-Key", KEY_ALL)
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(50 * 1024 * 1024))
    conn.endheaders()
    conn.send(b'"' + b"a" * 1000)  # far less than declared: the answer must not wait for the rest
    resp = conn.getresponse()
    assert resp.status == 413 and resp.getheader("Content-Type") == "application/json"
    conn.close()
    assert tree(server.root) == before


def test_huge_header_is_json(server: Server) -> None:
    status, ctype, _ = _raw(server, "GET", "/queue/1/t/peek", b"", {"X-Big": "y" * 20_000})
    assert status == 431 and ctype == "application/json"


def test_no_key(server: Server) -> None:
    before = tree(server.root)
    status, _ctype, data = _raw(server, "POST", "/queue/1/t/send", b"1", {"Content-Type": "application/json"})
    assert (status, data) == (403, b'{"reason":"not authorized"}')
    assert tree(server.root) == before


def test_tree_helper(tmp_path: Path) -> None:
    assert tree(tmp_path) == {}
