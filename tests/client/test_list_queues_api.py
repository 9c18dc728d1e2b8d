"""``GET /queue/1/_queues`` (operationId list_queues) through the Flask test client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from spoolq.http.app import create_app
from spoolq.settings.server import Settings
from spoolq.store import FileStore

CONFIG = """
api_keys:
  - name: all
    key: k-all
    permissions: ["queue|*|*"]
  - name: some
    key: k-some
    permissions: ["queue|get_status|a*"]
"""


@pytest.fixture
def client(tmp_path: Path) -> Iterator[FlaskClient]:
    store = FileStore(tmp_path / "root", node_id="lq-test", fsync=False)
    (tmp_path / "keys.yaml").write_text(CONFIG)
    app = create_app(Settings(root=tmp_path / "root", config=tmp_path / "keys.yaml", node_id="lq-test"), store=store)
    c = app.test_client()
    c.environ_base["HTTP_X_BV_API_KEY"] = "k-all"
    yield c
    store.close()


def _send(c: FlaskClient, path: str, body: object, **query: str) -> None:
    r = c.post(path, data=json.dumps(body), content_type="application/json", query_string=query)
    assert r.status_code == 200, r.data


def test_lists_counts_kinds_and_dedup_names(client: FlaskClient) -> None:
    assert client.get("/queue/1/_queues").get_json() == []
    _send(client, "/queue/1/alpha/sendbatch", [1, 2, 3])
    _send(client, "/queue/1/alpha/send", 4, delay="100")
    _send(client, "/dedupq/1/beta/sendbatch", ["x", "x", "y"])
    assert len(client.get("/queue/1/alpha/poll?limit=1&ttl=60").get_json()) == 1
    got = {q["name"]: q for q in client.get("/queue/1/_queues").get_json()}
    assert got["alpha"] == {"name": "alpha", "kind": "emodb", "ready": 2, "claimed": 1, "delayed": 1,
                            "exact": True}
    assert got["beta"]["kind"] == "dedup" and got["beta"]["ready"] == 2
    assert [q["name"] for q in client.get("/queue/1/_queues?prefix=b").get_json()] == ["beta"]


def test_filters_by_get_status_permission(client: FlaskClient) -> None:
    _send(client, "/queue/1/alpha/send", 1)
    _send(client, "/queue/1/bravo/send", 1)
    r = client.get("/queue/1/_queues", headers={"X-BV-API-Key": "k-some"})
    assert [q["name"] for q in r.get_json()] == ["alpha"]
    assert client.get("/queue/1/_queues", headers={"X-BV-API-Key": "nope"}).status_code == 403


@pytest.mark.parametrize("limit", ["0", "-1", "x"])
def test_bad_limit_is_400_and_changes_nothing(client: FlaskClient, limit: str) -> None:
    r = client.get(f"/queue/1/_queues?limit={limit}")
    assert r.status_code == 400


def test_limit_estimates_beyond(client: FlaskClient) -> None:
    _send(client, "/queue/1/big/sendbatch", list(range(50)))
    (q,) = client.get("/queue/1/_queues?limit=10").get_json()
    assert q["name"] == "big" and q["ready"] >= 10
    (q,) = client.get("/queue/1/_queues?limit=1000").get_json()
    assert q["exact"] and q["ready"] == 50
