"""The batch-claim extension of ``/queue/1`` and ``/dedupq/1``: ``claimbatch``, ``renewbatches``,
``ackbatches`` (the Spark streaming source's replayable claims)."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from tests.conftest import tree


@pytest.mark.parametrize("door", ["queue", "dedupq"])
def test_claim_fetch_again_renew_and_ack_a_batch(client: FlaskClient, door: str) -> None:
    base = f"/{door}/1/b"
    assert client.post(f"{base}/sendbatch", json=[{"n": i} for i in range(12)]).status_code == 200
    first = client.post(f"{base}/claimbatch?token=s1-0-0&limit=5&ttl=60&meta=true")
    assert first.status_code == 200
    rows = first.get_json()
    assert len(rows) == 5 and all(r["receiveCount"] == 1 and "sentAt" in r for r in rows)
    again = client.post(f"{base}/claimbatch?token=s1-0-0&limit=5&ttl=60&meta=true").get_json()
    assert again == rows  # the same messages, in the same order, counted once
    rest = client.post(f"{base}/claimbatch?token=s1-0-1&limit=100").get_json()
    assert len(rest) == 7 and not {r["id"] for r in rest} & {r["id"] for r in rows}
    assert client.get(f"{base}/claimcount").get_json() == 12
    renewed = client.post(f"{base}/renewbatches?ttl=120", json=["s1-0-0", "s1-0-1", "unknown"])
    assert renewed.status_code == 200 and renewed.get_json() == {"count": 12}
    acked = client.post(f"{base}/ackbatches", json=["s1-0-0", "s1-0-1"])
    assert acked.get_json() == {"count": 12}
    assert client.get(f"{base}/size").get_json() == 0
    assert client.post(f"{base}/ackbatches", json=["s1-0-0"]).get_json() == {"count": 0}


def test_max_bytes_limits_a_batch(client: FlaskClient) -> None:
    client.post("/queue/1/mb/sendbatch", json=["x" * 98] * 40)  # 100-byte bodies
    got = client.post("/queue/1/mb/claimbatch?token=t&limit=1000&maxBytes=1000").get_json()
    assert 9 <= len(got) <= 11


@pytest.mark.parametrize(("url", "body", "text"), [
    ("/queue/1/bad/claimbatch", None, "token is required"),
    ("/queue/1/bad/claimbatch?token=../x", None, "invalid batch token"),
    ("/queue/1/bad/claimbatch?token=t&limit=0", None, "Limit must be >0"),
    ("/queue/1/bad/claimbatch?token=t&limit=10001", None, "Limit must be >0 and <=10000"),
    ("/queue/1/bad/claimbatch?token=t&ttl=0", None, "ClaimTtl must be >0"),
    ("/queue/1/bad/claimbatch?token=t&ttl=3601", None, "ClaimTtl must be >0 and <=1 hour"),
    ("/queue/1/bad/claimbatch?token=t&maxBytes=0", None, "MaxBytes must be >0"),
    ("/queue/1/bad/claimbatch?token=t&limit=ten", None, "\"ten\" is not a number"),
    ("/queue/1/bad/renewbatches?ttl=0", ["t"], "ClaimTtl must be >0"),
    ("/queue/1/bad/renewbatches", ["a/b"], "invalid batch token"),
    ("/queue/1/bad/ackbatches", ["ok", ".hidden"], "invalid batch token"),
])
def test_bad_requests_are_named_and_change_nothing(client: FlaskClient, root: object, url: str,
                                                   body: object, text: str) -> None:
    client.post("/queue/1/bad/sendbatch", json=[1, 2, 3])
    client.post("/queue/1/bad/claimbatch?token=held&limit=1")
    before = tree(root)  # type: ignore[arg-type]
    r = client.post(url) if body is None else client.post(url, json=body)
    assert r.status_code == 400 and text in r.get_data(as_text=True)
    assert tree(root) == before  # type: ignore[arg-type]


def test_batches_need_the_poll_permission(client: FlaskClient) -> None:
    client.post("/queue/1/p/send", json=1)
    for url, body in (("/queue/1/p/claimbatch?token=t", None), ("/queue/1/p/renewbatches", ["t"]),
                      ("/queue/1/p/ackbatches", ["t"])):
        r = client.post(url, headers={"X-BV-API-Key": "k-none"}, json=body)
        assert r.status_code == 403, url
    assert client.get("/queue/1/p/claimcount").get_json() == 0


def test_renew_and_ack_want_a_json_list_of_tokens(client: FlaskClient) -> None:
    assert client.post("/queue/1/j/ackbatches", data="t", content_type="text/plain").status_code == 415
    assert client.post("/queue/1/j/ackbatches", json={"t": 1}).status_code == 400
