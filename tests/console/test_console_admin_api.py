"""The console's queue administration on the Flask test client over a real store: create a queue
of any door (its door's name rule and permission), delete one (every door), delete empty ones.
Every refusal leaves the data directory as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask

from spoolq.http.app import create_app
from spoolq.settings.server import Settings
from spoolq.store import FileStore
from spoolq.store.model import OutgoingMessage, QueueKind
from tests.conftest import tree

CONFIG = """
api_keys:
  - {name: admin, key: k-admin, permissions: ["queue|*|*"]}
  - {name: viewer, key: k-view, permissions: ["queue|get_status|*"]}
  - {name: poster, key: k-post, permissions: ["queue|post,poll,get_status|*"]}
"""


@pytest.fixture
def keyed(tmp_path: Path, file_store: FileStore) -> Flask:
    config = tmp_path / "console.yaml"
    config.write_text(CONFIG)
    return create_app(Settings(root=tmp_path / "root", config=config, node_id="console-test"), store=file_store)


def call(app: Flask, method: str, path: str, key: str = "k-admin", **kw: object):  # type: ignore[no-untyped-def]
    return app.test_client().open(f"/console/api{path}", method=method, headers={"X-BV-API-Key": key}, **kw)


@pytest.mark.parametrize(("body", "store_name", "kind"), [
    ({"door": "queue", "name": "orders"}, "orders", "emodb"),
    ({"door": "dedupq", "name": "events"}, "__dedupq:events", "dedup"),
    ({"door": "sqs", "name": "Jobs"}, "sqs:123456789012:us-east-1:Jobs", "sqs"),
    ({"door": "sqs", "name": "Jobs.fifo", "fifo": True, "content_based_dedup": True},
     "sqs:123456789012:us-east-1:Jobs.fifo", "sqs-fifo"),
    ({"door": "sqs", "name": "west", "region": "eu-west-1"}, "sqs:123456789012:eu-west-1:west", "sqs"),
    ({"door": "mq", "name": "Thumbs"}, "mq:Thumbs", "mq"),
    ({"door": "disque", "name": "MyJobs"}, "disque:MyJobs", "disque"),
    ({"kind": "sqs-fifo", "name": "Kind.fifo"}, "sqs:123456789012:us-east-1:Kind.fifo", "sqs-fifo"),
    ({"kind": "emodb", "name": "by-kind"}, "by-kind", "emodb"),
])
def test_create_a_queue_of_every_door(keyed: Flask, file_store: FileStore, body: dict[str, object],
                                      store_name: str, kind: str) -> None:
    r = call(keyed, "POST", "/queues", json=body)
    assert r.status_code == 200, r.get_json()
    door = body.get("door") or {"sqs-fifo": "sqs", "emodb": "queue"}[str(body["kind"])]
    assert r.get_json() == {"store_name": store_name, "door": door, "name": body["name"], "kind": kind}
    info = file_store.get_queue(store_name)
    assert info.kind.value == {"emodb": "standard", "sqs": "standard", "sqs-fifo": "fifo", "mq": "standard",
                               "disque": "standard", "dedup": "dedup"}[kind]
    assert info.config.content_based_dedup is bool(body.get("content_based_dedup"))
    assert store_name in [q["store_name"] for q in call(keyed, "GET", "/queues").get_json()["queues"]]


def test_refused_creations_change_nothing(keyed: Flask, file_store: FileStore, root: Path) -> None:
    file_store.create_queue("taken")
    before = tree(root)
    cases = [
        ("k-admin", {"door": "queue", "name": "Capital"}, 400, "EmoDB queue names"),
        ("k-admin", {"door": "queue", "name": "__dedupq:x"}, 400, "EmoDB queue names"),
        ("k-admin", {"door": "sqs", "name": "a.fifo"}, 400, "ends in .fifo"),
        ("k-admin", {"door": "sqs", "name": "plain", "fifo": True}, 400, "SQS queue names"),
        ("k-admin", {"door": "sqs", "name": "x" * 81}, 400, "SQS queue names"),
        ("k-admin", {"door": "sqs", "name": "r", "region": "../etc"}, 400, "region"),
        ("k-admin", {"door": "mq", "name": ".."}, 400, "MQ queue names"),
        ("k-admin", {"door": "disque", "name": "a b"}, 400, "Disque queue names"),
        ("k-admin", {"door": "mq", "name": "f", "fifo": True}, 400, "SQS queue settings"),
        ("k-admin", {"door": "nosuch", "name": "x"}, 400, "door"),
        ("k-admin", {"door": "queue"}, 400, "name"),
        ("k-admin", {"door": "queue", "name": "taken"}, 409, "already exists"),
        ("k-view", {"door": "queue", "name": "new"}, 403, "may not create the EmoDB queue 'new' (that needs post)"),
        ("k-post", {"door": "sqs", "name": "new"}, 403, "may not create the SQS queue 'new' (that needs admin)"),
    ]
    for key, body, status, text in cases:
        r = call(keyed, "POST", "/queues", key=key, json=body)
        assert (r.status_code, text in r.get_json()["message"]) == (status, True), (body, r.get_json())
    assert tree(root) == before


def test_delete_any_door_s_queue_with_its_name_typed(keyed: Flask, file_store: FileStore, root: Path) -> None:
    names = {"orders": "orders", "__dedupq:events": "events", "sqs:123456789012:us-east-1:Orders": "Orders",
             "mq:thumbs": "thumbs", "disque:MyJobs": "MyJobs"}
    for store_name in names:
        file_store.send(store_name, OutgoingMessage(b"1"),
                        create=QueueKind.DEDUP if store_name.startswith("__") else QueueKind.STANDARD)
    before = tree(root)
    refused = [
        call(keyed, "POST", "/queues/orders/delete", json={"confirm": "order"}),
        call(keyed, "POST", "/queues/orders/delete", json={}),
        call(keyed, "POST", "/queues/orders/delete", key="k-view", json={"confirm": "orders"}),
        call(keyed, "POST", "/queues/sqs:123456789012:us-east-1:Orders/delete", key="k-post",
             json={"confirm": "Orders"}),
        call(keyed, "POST", "/queues/nosuch/delete", json={"confirm": "nosuch"}),
    ]
    assert [r.status_code for r in refused] == [400, 400, 403, 403, 404]
    assert "that needs admin" in refused[3].get_json()["message"]
    assert tree(root) == before
    assert call(keyed, "POST", "/queues/mq:thumbs/delete", key="k-post", json={"confirm": "thumbs"}).status_code == 200
    for store_name, shown in names.items():
        if store_name != "mq:thumbs":
            r = call(keyed, "POST", f"/queues/{store_name}/delete", json={"confirm": shown})
            assert r.status_code == 200, r.get_json()
    assert file_store.list_queues() == []
    assert call(keyed, "GET", "/queues").get_json()["queues"] == []


def test_delete_empty_queues(keyed: Flask, file_store: FileStore, root: Path) -> None:
    file_store.create_queue("empty-a")
    file_store.create_queue("disque:Empty")
    file_store.send("full", OutgoingMessage(b"x"), create=QueueKind.STANDARD)
    file_store.send("sqs:123456789012:us-east-1:empty-sqs", OutgoingMessage(b"x"), create=QueueKind.STANDARD)
    file_store.purge("sqs:123456789012:us-east-1:empty-sqs")
    everything = ["empty-a", "disque:Empty", "full", "sqs:123456789012:us-east-1:empty-sqs", "gone"]
    before = tree(root)
    # one queue the key may not delete: nothing is deleted
    r = call(keyed, "POST", "/queues/delete-empty", key="k-post", json={"queues": everything})
    assert r.status_code == 403 and "SQS queue 'empty-sqs'" in r.get_json()["message"]
    assert call(keyed, "POST", "/queues/delete-empty", json={"queues": ["../x"]}).status_code == 400
    assert call(keyed, "POST", "/queues/delete-empty", json={"queues": []}).status_code == 400
    assert tree(root) == before
    r = call(keyed, "POST", "/queues/delete-empty", json={"queues": everything})
    assert r.status_code == 200
    assert r.get_json() == {"deleted": ["empty-a", "disque:Empty", "sqs:123456789012:us-east-1:empty-sqs"],
                            "not_empty": ["full"], "missing": ["gone"]}
    assert file_store.list_queues() == ["full"]
    assert [m.body for m in file_store.peek("full")] == [b"x"]


def test_receive_then_acknowledge_release_or_delete_each(keyed: Flask, file_store: FileStore, root: Path) -> None:
    q = "disque:MyJobs"
    file_store.send_batch(q, [OutgoingMessage(b"%d" % i) for i in range(4)], create=QueueKind.STANDARD)
    got = call(keyed, "POST", f"/queues/{q}/receive", json={"limit": 3, "visibility_timeout": 120}).get_json()
    assert [m["body"] for m in got["messages"]] == ["0", "1", "2"]
    assert all(m["receive_count"] == 1 and m["receipt"] and m["claimed_until"] for m in got["messages"])
    assert file_store.counts(q).claimed == 3
    first, second, third = got["messages"]
    before = tree(root)
    refused = [
        call(keyed, "POST", f"/queues/{q}/receive", key="k-view", json={}),
        call(keyed, "POST", f"/queues/{q}/ack", key="k-view", json={"receipts": [first["receipt"]]}),
        call(keyed, "POST", f"/queues/{q}/release", key="k-view", json={"receipts": [first["receipt"]]}),
        call(keyed, "POST", f"/queues/{q}/messages/{first['id']}/delete", key="k-view"),
        call(keyed, "POST", f"/queues/{q}/receive", json={"limit": 11}),
        call(keyed, "POST", f"/queues/{q}/receive", json={"visibility_timeout": 0}),
        call(keyed, "POST", f"/queues/{q}/ack", json={"receipts": []}),
        call(keyed, "POST", f"/queues/{q}/ack", json={"receipts": ["not-a-receipt"]}),
        call(keyed, "POST", f"/queues/{q}/messages/not-an-id/delete"),
        call(keyed, "POST", "/queues/nosuch/receive", json={}),
    ]
    assert [r.status_code for r in refused] == [403] * 4 + [400] * 5 + [404]
    assert tree(root) == before
    assert call(keyed, "POST", f"/queues/{q}/ack", json={"receipts": [first["receipt"]]}).get_json() == {"done": [True]}
    assert call(keyed, "POST", f"/queues/{q}/ack", json={"receipts": [first["receipt"]]}).get_json() == {"done": [False]}
    assert call(keyed, "POST", f"/queues/{q}/release", json={"receipts": [second["receipt"]]}).get_json() == {
        "done": [True]}
    # delete by id: the claimed third, and the never received fourth by its Disque job id
    assert call(keyed, "POST", f"/queues/{q}/messages/{third['id']}/delete").status_code == 200
    fourth = next(m for m in file_store.peek(q, limit=10) if m.body == b"3")
    from spoolq.queues.job_ids import to_disque

    job_id = to_disque(fourth.id, 0, False)
    assert call(keyed, "POST", f"/queues/{q}/messages/{job_id}/delete").status_code == 200
    r = call(keyed, "POST", f"/queues/{q}/messages/{job_id}/delete")
    assert r.status_code == 404 and "no message" in r.get_json()["message"]
    assert [(m.body, m.receive_count, m.claimed_until) for m in file_store.peek(q, limit=10)] == [(b"1", 1, None)]
