"""The console's JSON API (/console/api) on the Flask test client over a real store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from spoolq.http.app import create_app
from spoolq.settings.server import Settings
from spoolq.store import FileStore
from spoolq.store.model import DeadLetterPolicy, QueueConfig, QueueKind
from tests.conftest import tree

CONFIG = """
api_keys:
  - {name: admin, key: k-admin, permissions: ["queue|*|*"]}
  - {name: viewer, key: k-view, permissions: ["queue|get_status|*"]}
  - {name: team, key: k-team, permissions: ["queue|*|team-*"]}
"""


@pytest.fixture
def keyed(tmp_path: Path, file_store: FileStore) -> Flask:
    config = tmp_path / "console.yaml"
    config.write_text(CONFIG)
    return create_app(Settings(root=tmp_path / "root", config=config, node_id="console-test"), store=file_store)


def call(app: Flask, method: str, path: str, key: str | None = "k-admin", **kw: object):  # type: ignore[no-untyped-def]
    headers = {"X-BV-API-Key": key} if key else {}
    return app.test_client().open(f"/console/api{path}", method=method, headers=headers, **kw)


def test_doors_and_names(keyed: Flask, file_store: FileStore) -> None:
    file_store.send("plain", _msg(b"1"), create=QueueKind.STANDARD)
    file_store.send("__dedupq:events", _msg(b"2"), create=QueueKind.DEDUP)
    file_store.send("sqs:123456789012:us-east-1:jobs", _msg(b"3"), create=QueueKind.STANDARD)
    file_store.send("mq:thumbs", _msg(b"4"), create=QueueKind.STANDARD)
    file_store.send("disque:work", _msg(b"5"), create=QueueKind.STANDARD)
    rows = call(keyed, "GET", "/queues").get_json()["queues"]
    assert [(r["door"], r["name"]) for r in rows] == [
        ("dedupq", "events"), ("sqs", "jobs"), ("queue", "plain"), ("mq", "thumbs"), ("disque", "work")]
    assert all(r["ready"] == 1 and r["can"] == {"get_status": True, "post": True, "poll": True, "manage": True}
               for r in rows)


def test_keys_decide_what_is_seen_and_done(keyed: Flask, file_store: FileStore, root: Path) -> None:
    for q in ("team-a", "other"):
        file_store.send(q, _msg(b'{"x":1}'), create=QueueKind.STANDARD)
    assert call(keyed, "GET", "/queues", key=None).status_code == 401
    assert call(keyed, "GET", "/queues", key="wrong").status_code == 401
    assert [r["name"] for r in call(keyed, "GET", "/queues", key="k-team").get_json()["queues"]] == ["team-a"]
    viewer = call(keyed, "GET", "/queues", key="k-view").get_json()["queues"]
    assert {r["name"]: r["can"]["poll"] for r in viewer} == {"other": False, "team-a": False}
    before = tree(root)
    refused = [
        call(keyed, "GET", "/queues/other/messages", key="k-view"),
        call(keyed, "POST", "/queues/other/messages", key="k-view", json={"body": "x"}),
        call(keyed, "POST", "/queues/other/purge", key="k-view", json={"confirm": "other"}),
        call(keyed, "POST", "/queues/other/unclaim", key="k-view"),
        call(keyed, "POST", "/queues/team-a/move", key="k-team", json={"to": "other"}),
        call(keyed, "GET", "/queues/other", key="k-team"),
    ]
    assert [r.status_code for r in refused] == [403] * 6
    assert tree(root) == before
    assert call(keyed, "GET", "/queues/team-a/messages", key="k-team").status_code == 200


def test_send_peek_purge_with_confirmation(keyed: Flask, root: Path, file_store: FileStore) -> None:
    file_store.create_queue("work")
    r = call(keyed, "POST", "/queues/work/messages", json={"body": '{"hello": "world"}'})
    assert r.status_code == 200
    call(keyed, "POST", "/queues/work/messages", json={"body": "caf\u00e9", "format": "text"})
    file_store.send("work", _msg(b"\xff\x00"))
    peeked = call(keyed, "GET", "/queues/work/messages?limit=10").get_json()["messages"]
    assert [(m["body"], m["encoding"]) for m in peeked] == [
        ('{"hello":"world"}', "utf-8"), ("caf\u00e9", "utf-8"), ("/wA=", "base64")]
    assert call(keyed, "POST", "/queues/nope/messages", json={"body": "x"}).status_code == 404
    before = tree(root)
    for bad in ({"confirm": "wrok"}, {}, {"confirm": ""}):
        assert call(keyed, "POST", "/queues/work/purge", json=bad).status_code == 400
    assert call(keyed, "POST", "/queues/work/purge", data="nope").status_code == 400
    assert tree(root) == before
    assert call(keyed, "POST", "/queues/work/purge", json={"confirm": "work"}).status_code == 200
    assert file_store.counts("work").total == 0


def test_receipts_of_another_queue_are_not_done_and_change_nothing(keyed: Flask, root: Path,
                                                                   file_store: FileStore) -> None:
    """A receipt or id whose checksum names another queue is answered "not done" by every per-receipt
    action, as an unknown receipt is, beside this queue's own receipts (done)."""
    for q in ("work", "other"):
        file_store.create_queue(q)
        file_store.send(q, _msg(b"x"))
    theirs = file_store.poll("other", limit=1, claim_ttl=30)[0].receipt
    zeros = "0" * 40
    before = tree(root)
    for action, extra in (("ack", {}), ("release", {}), ("nack", {}), ("visibility", {"visibility_timeout": 5})):
        r = call(keyed, "POST", f"/queues/work/{action}", json={"receipts": [theirs, zeros], **extra})
        assert (action, r.status_code, r.get_json()) == (action, 200, {"done": [False, False]})
    assert tree(root) == before
    ours = file_store.poll("work", limit=1, claim_ttl=30)[0].receipt
    r = call(keyed, "POST", "/queues/work/nack", json={"receipts": [zeros, ours]})
    assert r.get_json() == {"done": [False, True]}


def test_sqs_purge_confirms_the_name_users_know(keyed: Flask, file_store: FileStore) -> None:
    name = "sqs:123456789012:us-east-1:jobs"
    file_store.send(name, _msg(b"x"), create=QueueKind.STANDARD)
    assert call(keyed, "POST", f"/queues/{name}/purge", json={"confirm": name}).status_code == 400
    assert call(keyed, "POST", f"/queues/{name}/purge", json={"confirm": "jobs"}).status_code == 200


def test_unclaim_move_cancel_and_redrive(keyed: Flask, file_store: FileStore) -> None:
    file_store.create_queue("dlq")
    file_store.create_queue("src", config=QueueConfig(dead_letter=DeadLetterPolicy("dlq", 2)))
    file_store.send_batch("dlq", [_msg(b"%d" % i) for i in range(5)])
    file_store.send_batch("src", [_msg(b"s")])
    file_store.poll("src", limit=1, claim_ttl=300)
    assert call(keyed, "POST", "/queues/src/unclaim").status_code == 200
    assert file_store.counts("src").claimed == 0
    detail = call(keyed, "GET", "/queues/dlq").get_json()
    assert detail["dead_letter_sources"] == ["src"]
    assert call(keyed, "GET", "/queues/src").get_json()["dead_letter"] == {
        "queue": "dlq", "max_receives": 2, "messages": 5}
    r = call(keyed, "POST", "/queues/dlq/redrive", json={})
    assert r.status_code == 200 and r.get_json()["destination"] == "src"
    _wait(lambda: file_store.counts("dlq").total == 0)
    assert file_store.counts("src").ready == 6
    assert call(keyed, "POST", "/queues/src/move", json={"to": "missing"}).status_code == 404
    assert call(keyed, "POST", "/queues/src/move", json={"to": "src"}).status_code == 400
    file_store.send_batch("src", [_msg(b"m")] * 1200)
    move = call(keyed, "POST", "/queues/src/move", json={"to": "dlq", "max_per_second": 100}).get_json()
    assert move["state"] == "IN_PROGRESS" and move["remaining"] > 0
    assert call(keyed, "POST", f"/moves/{move['ref']}/cancel").status_code == 200
    # the running move stops at its next chunk (the answer may still say IN_PROGRESS)
    _wait(lambda: any(m["ref"] == move["ref"] and m["state"] == "CANCELLED"
                      for m in call(keyed, "GET", "/queues/src").get_json()["moves"]))
    listed = call(keyed, "GET", "/queues").get_json()["moves"]
    assert {m["ref"] for m in listed} >= {move["ref"], r.get_json()["ref"]}


def test_server_and_session(keyed: Flask) -> None:
    s = call(keyed, "GET", "/server").get_json()
    assert s["node"] == "console-test" and s["open"] is False and s["free_bytes"] > 0
    assert call(keyed, "GET", "/session", key="k-view").get_json()["principal"] == "viewer"


def test_open_mode_needs_no_key(client: FlaskClient, tmp_path: Path, file_store: FileStore) -> None:
    app = create_app(Settings(root=tmp_path / "root", node_id="open"), store=file_store)
    assert call(app, "GET", "/session", key=None).get_json() == {
        "open": True, "principal": "open", "version": "0.2.0", "node": "open"}


def _msg(body: bytes):  # type: ignore[no-untyped-def]
    from spoolq.store.model import OutgoingMessage

    return OutgoingMessage(body=body)


def _wait(cond, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_permissions_use_the_name_users_know(keyed: Flask, file_store: FileStore) -> None:
    """The name each door's users know, except SQS queues, whose permissions name the store queue
    (``sqs:*:*:team-*``) as they do through the SQS door."""
    for store_name in ("team-x", "mq:team-y", "sqs:123456789012:us-east-1:team-z", "mq:other"):
        file_store.send(store_name, _msg(b"1"), create=QueueKind.STANDARD)
    rows = call(keyed, "GET", "/queues", key="k-team").get_json()["queues"]
    assert sorted(r["store_name"] for r in rows) == ["mq:team-y", "team-x"]
    assert call(keyed, "GET", "/queues/mq:other/messages", key="k-team").status_code == 403
    assert call(keyed, "GET", "/queues/mq:team-y/messages", key="k-team").status_code == 200


def test_sqs_queues_follow_the_sqs_permission_rules(tmp_path: Path) -> None:
    """An SQS queue's permissions name the store queue, as through the SQS door, and purge, unclaim
    and moves need ``admin`` on it, as PurgeQueue and move tasks do: a bare-name grant is not a way
    around the SQS door."""
    store = FileStore(tmp_path / "root", node_id="t", fsync=False)
    config = tmp_path / "c.yaml"
    config.write_text("""api_keys:
  - {name: bare, key: k-bare, permissions: ["queue|*|jobs"]}
  - {name: poller, key: k-poll, permissions: ["queue|poll,get_status|sqs:*:*:jobs"]}
  - {name: admin, key: k-sqs-admin, permissions: ["queue|*|sqs:*:*:jobs"]}
""")
    app = create_app(Settings(root=tmp_path / "root", config=config, fsync=False), store=store)
    sqs = "sqs:123456789012:us-east-1:jobs"
    store.send(sqs, _msg(b"1"), create=QueueKind.STANDARD)
    before = tree(tmp_path / "root")
    assert call(app, "GET", "/queues", key="k-bare").get_json()["queues"] == []
    for key in ("k-bare", "k-poll"):
        assert call(app, "POST", f"/queues/{sqs}/purge", key=key, json={"confirm": "jobs"}).status_code == 403
        assert call(app, "POST", f"/queues/{sqs}/unclaim", key=key).status_code == 403
    assert tree(tmp_path / "root") == before
    [row] = call(app, "GET", "/queues", key="k-poll").get_json()["queues"]
    assert row["can"] == {"get_status": True, "post": False, "poll": True, "manage": False}
    assert call(app, "POST", f"/queues/{sqs}/purge", key="k-sqs-admin", json={"confirm": "jobs"}).status_code == 200
    assert store.size(sqs) == 0
    store.close()


def test_a_test_send_is_json_unless_the_user_chose_text(keyed: Flask, root: Path, file_store: FileStore) -> None:
    """Invalid JSON is refused with where it fails and nothing is stored; text is sent only when
    asked for. EmoDB queues store the compact form their door stores (so dedup collapses it)."""
    file_store.create_queue("work")
    file_store.create_queue("__dedupq:events", QueueKind.DEDUP)
    file_store.create_queue("mq:raw")
    before = tree(root)
    for queue, body in [("work", '{"broken": '), ("mq:raw", "{'single': 1}"), ("work", "NaN"), ("work", "null"),
                        ("work", ""), ("__dedupq:events", "[1, 2")]:
        r = call(keyed, "POST", f"/queues/{queue}/messages", json={"body": body})
        assert r.status_code == 400, (queue, body)
        assert "JSON" in r.get_json()["message"] or "null" in r.get_json()["message"], r.get_json()
    r = call(keyed, "POST", "/queues/work/messages", json={"body": '{"broken": ', "format": "xml"})
    assert r.status_code == 400
    assert tree(root) == before
    assert "line 1, column 12" in call(keyed, "POST", "/queues/work/messages",
                                        json={"body": '{"broken": '}).get_json()["message"]

    assert call(keyed, "POST", "/queues/work/messages", json={"body": '{"broken": ', "format": "text"}
                ).get_json()["format"] == "text"
    assert call(keyed, "POST", "/queues/mq:raw/messages", json={"body": '{\n  "a": 1\n}'}).status_code == 200
    for body in ('{ "event" : "signup" }', '{"event":"signup"}'):
        assert call(keyed, "POST", "/queues/__dedupq:events/messages", json={"body": body}).status_code == 200
    assert [m.body for m in file_store.peek("work")] == [b'{"broken": ']
    assert [m.body for m in file_store.peek("mq:raw")] == [b'{\n  "a": 1\n}']
    assert [m.body for m in file_store.peek("__dedupq:events")] == [b'{"event":"signup"}']


def test_a_test_send_to_a_fifo_queue_is_held_to_the_store_s_rules(keyed: Flask, root: Path,
                                                                   file_store: FileStore) -> None:
    """The store decides a message's rules; the console words the one a user meets most (no group)."""
    file_store.create_queue("sqs:123456789012:us-east-1:jobs.fifo", QueueKind.FIFO)
    path = "/queues/sqs:123456789012:us-east-1:jobs.fifo/messages"
    before = tree(root)
    for group in (None, "", "two words", "g" * 129):
        r = call(keyed, "POST", path, json={"body": '{"n": 1}', **({} if group is None else {"group_id": group})})
        assert r.status_code == 400, (group, r.get_json())
        if not group:
            assert r.get_json()["message"] == "a FIFO queue needs a message group id"
        else:
            assert "group_id" in r.get_json()["message"], r.get_json()
    assert tree(root) == before
    assert call(keyed, "POST", path, json={"body": '{"n": 1}', "group_id": "orders-7"}).status_code == 200
    assert [m.group_id for m in file_store.peek("sqs:123456789012:us-east-1:jobs.fifo")] == ["orders-7"]
