"""MQ's six endpoints through the Flask test client."""

from __future__ import annotations

from flask.testing import FlaskClient

from spoolq.errors import StorageUnavailable
from spoolq.http.app import create_app
from spoolq.settings.server import Settings
from tests.http.fakes import FakeStore


def test_lifecycle(client: FlaskClient) -> None:
    assert client.get("/mq/q1").status_code == 404
    assert client.put("/mq/q1", data=b"ignored").status_code == 201
    assert client.put("/mq/q1").status_code == 200
    assert client.get("/mq/q1").status_code == 200
    assert client.get("/mq/q1/messages").status_code == 204
    r = client.post("/mq/q1/messages", data=b"\x00binary\xff")
    assert r.status_code == 201
    mid = r.headers["X-Message-Id"]
    r = client.get("/mq/q1/messages")
    assert (r.status_code, r.data, r.headers["X-Message-Id"]) == (200, b"\x00binary\xff", mid)
    assert client.get("/mq/q1/messages").status_code == 204  # claimed
    assert client.delete(f"/mq/q1/messages/{mid}").status_code == 200
    assert client.delete(f"/mq/q1/messages/{mid}").status_code == 404
    assert client.delete("/mq/q1").status_code == 200
    assert client.get("/mq/q1").status_code == 404


def test_send_to_missing_queue_is_404_text(client: FlaskClient) -> None:
    r = client.post("/mq/nope/messages", data=b"x")
    assert r.status_code == 404 and r.mimetype == "text/plain"


def test_fetch_ttl_redelivers(client: FlaskClient) -> None:
    client.put("/mq/q2")
    client.post("/mq/q2/messages", data=b"a")
    assert client.get("/mq/q2/messages?ttl=1").status_code == 200
    assert client.get("/mq/q2/messages?ttl=abc").status_code == 400
    assert client.get("/mq/q2/messages?wait=21").status_code == 400


def test_bad_message_id(client: FlaskClient) -> None:
    client.put("/mq/q3")
    r = client.delete("/mq/q3/messages/4ad814ab-213e-11e3-a9a3-0025904f6e08")
    assert r.status_code == 400 and r.mimetype == "text/plain"


def test_storage_unavailable_gives_503_retry_after(tmp_path: object) -> None:
    store = FakeStore()
    app = create_app(Settings(node_id="t"), store=store)
    c = app.test_client()
    c.put("/mq/q")
    store.fail_with = StorageUnavailable("disk full", retry_after=30)
    r = c.post("/mq/q/messages", data=b"x")
    assert (r.status_code, r.headers["Retry-After"]) == (503, "30")
    r = c.post("/queue/1/q/send", data=b"1", headers={"Content-Type": "application/json"})
    assert r.status_code == 503 and r.headers["Retry-After"] == "30"
    assert r.json["retryAfterSeconds"] == 30
    assert c.get("/readyz").status_code == 503
    assert c.get("/healthz").status_code == 200  # liveness: the process serves; a restart cures nothing
