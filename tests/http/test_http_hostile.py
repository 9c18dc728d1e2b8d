"""Hostile input on every endpoint: each is rejected with a clear 4xx (never HTML, never a 5xx)
and leaves the data directory exactly as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.conftest import tree

J = {"Content-Type": "application/json"}
HOSTILE_NAMES = ["..", ".", "a%2Fb", "a%00b", "x" * 10_000, "caf%C3%A9", "Bad", "_x", "a%20b", "%2E%2E",
                 "__dedupq:x"]
EMO_QUEUE_ENDPOINTS: list[tuple[str, str, Any]] = [
    ("POST", "/{base}/{q}/send", b'{"a":1}'),
    ("POST", "/{base}/{q}/sendbatch", b"[1]"),
    ("GET", "/{base}/{q}/poll", None),
    ("GET", "/{base}/{q}/peek", None),
    ("POST", "/{base}/{q}/ack", b"[]"),
    ("POST", "/{base}/{q}/renew", b"[]"),
    ("GET", "/{base}/{q}/size", None),
    ("GET", "/{base}/{q}/claimcount", None),
    ("POST", "/{base}/{q}/unclaimall", None),
    ("DELETE", "/{base}/{q}", None),
]


def _assert_clean_rejection(resp: Any, expect: tuple[int, ...] = (400, 403, 404, 405, 413, 415, 422)) -> None:
    assert resp.status_code in expect, (resp.status_code, resp.data[:200])
    assert b"<html" not in resp.data.lower() and b"Traceback" not in resp.data


@pytest.fixture
def snapshot(client: FlaskClient, root: Path) -> dict[str, int]:
    client.get("/healthz")
    return tree(root)


@pytest.mark.parametrize("base", ["queue/1", "dedupq/1"])
@pytest.mark.parametrize(("method", "path", "body"), EMO_QUEUE_ENDPOINTS)
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names(client: FlaskClient, root: Path, snapshot: dict[str, int], base: str, method: str,
                       path: str, body: Any, name: str) -> None:
    if name == "__dedupq:x" and base == "dedupq/1":
        pytest.skip("a legal dedup queue name")
    resp = client.open(path.format(base=base, q=name), method=method, data=body, headers=J)
    _assert_clean_rejection(resp)
    assert tree(root) == snapshot


BAD_BODIES: list[tuple[str, bytes, int]] = [
    ("/queue/1/t/send", b"", 422), ("/queue/1/t/send", b"null", 422), ("/queue/1/t/send", b'{"a":', 400),
    ("/queue/1/t/send", b"\xff\xfe", 400), ("/queue/1/t/send", b"NaN", 400), ("/queue/1/t/send", b"1e400", 400),
    ("/queue/1/t/send", b"1 2", 400), ("/queue/1/t/send", b"[" * 5000 + b"]" * 5000, 400),
    ("/queue/1/t/send", b'"' + b"a" * 30719 + b'"', 400), ("/queue/1/t/send", b"9" * 400, 400),
    ("/queue/1/t/sendbatch", b"{}", 400), ("/queue/1/t/sendbatch", b'"x"', 400),
    ("/queue/1/t/sendbatch", b'[1, "' + b"a" * 30720 + b'"]', 400),
    ("/queue/1/_sendbatch", b"[]", 400), ("/queue/1/_sendbatch", b'{"t": 1}', 400),
    ("/queue/1/_sendbatch", b'{"t": null}', 400), ("/queue/1/_sendbatch", b'{"ok": [1], "Bad": [1]}', 400),
    ("/queue/1/_sendbatch", b'{"ok": [1], "t": ["' + b"a" * 30720 + b'"]}', 400),
    ("/queue/1/t/ack", b"{}", 400), ("/queue/1/t/ack", b'[{"a":1}]', 400), ("/queue/1/t/ack", b'["abcd"]', 400),
    ("/queue/1/t/ack", b"[null]", 400), ("/queue/1/t/ack", b'["' + b"f" * 40 + b'"]', 400),
    ("/queue/1/t/renew", b'["zz"]', 400), ("/queue/1/t/renew", b"", 422),
    ("/queue/1/t/send?delay=-1", b"1", 400), ("/queue/1/t/send?delay=abc", b"1", 400),
    ("/queue/1/t/send?ttl=0", b"1", 400), ("/queue/1/t/send?atMostOnce=maybe", b"1", 400),
    ("/queue/1/t/renew?ttl=3601", b"[]", 400), ("/queue/1/t/renew?ttl=x", b"[]", 400),
    ("/queue/1/t/send", b"x" * 300_000, 413),
]


@pytest.mark.parametrize(("path", "body", "status"), BAD_BODIES)
def test_bad_bodies(client: FlaskClient, root: Path, snapshot: dict[str, int], path: str, body: bytes,
                    status: int) -> None:
    resp = client.post(path, data=body, headers=J)
    assert resp.status_code == status, resp.data[:300]
    _assert_clean_rejection(resp)
    assert tree(root) == snapshot


BAD_PARAMS = [
    "/queue/1/t/poll?ttl=", "/queue/1/t/poll?ttl=1e3", "/queue/1/t/poll?ttl=99999999999",
    "/queue/1/t/poll?limit=%EF%BC%91", "/queue/1/t/poll?limit=+", "/queue/1/t/poll?wait=21",
    "/queue/1/t/poll?wait=-1", "/queue/1/t/poll?wait=nan", "/queue/1/t/poll?partitioned=",
    "/queue/1/t/peek?limit=0", "/queue/1/t/peek?limit=-5", "/queue/1/t/size?limit=-1",
    "/queue/1/t/size?limit=99999999999999999999", "/queue/1/_move/%00", "/queue/1/_move/" + "A" * 41,
    "/queue/1/t/claimcount?partitioned=1",
]


@pytest.mark.parametrize("path", BAD_PARAMS)
def test_bad_params(client: FlaskClient, root: Path, snapshot: dict[str, int], path: str) -> None:
    _assert_clean_rejection(client.get(path))
    assert tree(root) == snapshot


@pytest.mark.parametrize("move", ["?to=b", "?from=a", "?from=a&to=a", "?from=Bad&to=b", "?from=a&to=_b",
                                  "?from=&to=b"])
def test_bad_moves(client: FlaskClient, root: Path, snapshot: dict[str, int], move: str) -> None:
    _assert_clean_rejection(client.post("/queue/1/_move" + move), (400,))
    assert tree(root) == snapshot


@pytest.mark.parametrize("key", [None, "", "wrong", "k-none", "k-all\x00", "k" * 10_000])
def test_missing_or_bad_auth(app: Any, root: Path, key: str | None) -> None:
    client = app.test_client()
    client.get("/healthz")
    before = tree(root)
    headers = dict(J)
    if key is not None:
        headers["X-BV-API-Key"] = key
    for method, path, body in EMO_QUEUE_ENDPOINTS:
        resp = client.open(path.format(base="queue/1", q="t"), method=method, data=body, headers=headers)
        assert resp.status_code == 403 and resp.json == {"reason": "not authorized"}
    resp = client.post("/mq/t/messages", data=b"x", headers=headers)
    assert resp.status_code == 403
    assert tree(root) == before


def test_wrong_content_type(client: FlaskClient, root: Path, snapshot: dict[str, int]) -> None:
    for ctype in (None, "text/plain", "application/x-www-form-urlencoded"):
        headers = {"Content-Type": ctype} if ctype else {}
        resp = client.post("/queue/1/t/send", data=b"1", headers=headers)
        assert resp.status_code == 415 and resp.is_json
    assert tree(root) == snapshot


@pytest.mark.parametrize("name", ["..", "a%2Fb", "a%00b", "x" * 300, "caf%C3%A9", "a b"])
def test_mq_hostile_names(client: FlaskClient, root: Path, snapshot: dict[str, int], name: str) -> None:
    for method, path in (("PUT", "/mq/{q}"), ("GET", "/mq/{q}"), ("DELETE", "/mq/{q}"),
                         ("GET", "/mq/{q}/messages"), ("POST", "/mq/{q}/messages"),
                         ("DELETE", "/mq/{q}/messages/abc")):
        resp = client.open(path.format(q=name), method=method, data=b"x")
        _assert_clean_rejection(resp)
        assert not resp.is_json or resp.status_code in (404, 405)
    assert tree(root) == snapshot
