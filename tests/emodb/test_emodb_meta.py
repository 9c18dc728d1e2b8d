"""The ``meta=true`` extension of poll and peek: ``sentAt`` and ``receiveCount`` per message."""

from __future__ import annotations

import time

import pytest
from flask.testing import FlaskClient


@pytest.mark.parametrize("door", ["queue", "dedupq"])
def test_meta_adds_sent_at_and_receive_count(client: FlaskClient, door: str) -> None:
    before = time.time()
    assert client.post(f"/{door}/1/m/send", json={"a": 1}).status_code == 200
    plain = client.get(f"/{door}/1/m/peek").get_json()
    assert plain == [{"id": plain[0]["id"], "payload": {"a": 1}}]  # EmoDB's shape unless asked
    peeked = client.get(f"/{door}/1/m/peek?meta=true").get_json()
    assert peeked[0]["receiveCount"] == 0
    assert before - 1 <= peeked[0]["sentAt"] <= time.time() + 1
    first = client.get(f"/{door}/1/m/poll?meta=TRUE&ttl=30").get_json()
    assert first[0]["receiveCount"] == 1 and first[0]["payload"] == {"a": 1}
    assert client.post(f"/{door}/1/m/renew?ttl=0", json=[first[0]["id"]]).status_code == 200  # release
    second = client.get(f"/{door}/1/m/poll?meta=true&ttl=30").get_json()
    assert second[0]["receiveCount"] == 2
    assert second[0]["sentAt"] == peeked[0]["sentAt"]
    assert "sentAt" not in client.get(f"/{door}/1/m/peek?meta=false").get_json()[0]


def test_meta_must_be_boolean(client: FlaskClient) -> None:
    client.post("/queue/1/m/send", json=1)
    r = client.get("/queue/1/m/poll?meta=yes")
    assert r.status_code == 400
    assert client.get("/queue/1/m/size").get_json() == 1  # nothing was claimed
    assert client.get("/queue/1/m/claimcount").get_json() == 0
