"""The hand-written ``SpoolqClient`` facade: values and typed errors (real gunicorn spoolq)."""

from __future__ import annotations

import time

import pytest

from spoolq_client import BadRequest, NotAuthorized, NotFound, SpoolqClient
from tests.e2e.spoolq_server import KEY_NONE, KEY_PREFIX, Server


def test_verbs(sq: SpoolqClient, qname: str) -> None:
    assert sq.healthy()
    sq.send_batches({qname: [1, 2], qname + "-2": [3]})
    sq.send(qname, {"x": 1}, ttl=600)
    assert sq.size(qname) == 3 and sq.size(qname, limit=1) >= 1
    got = sq.poll(qname, limit=3, ttl=60, wait=0.5)
    assert [m.payload for m in got] == [1, 2, {"x": 1}]
    sq.renew(qname, [got[0].id], 120)
    sq.release(qname, [got[1].id])
    assert sq.claim_count(qname) == 2
    sq.ack(qname, [got[0].id])
    sq.unclaim_all(qname)
    assert sq.claim_count(qname) == 0 and sq.size(qname) == 2
    assert [m.payload for m in sq.peek(qname)] == [2, {"x": 1}]
    sq.purge(qname)
    assert sq.size(qname) == 0
    summaries = sq.list_queues(prefix=qname)
    assert [(q.name, q.ready) for q in summaries] == [(qname, 0), (qname + "-2", 1)]


def test_poll_reports_receive_counts_and_send_times(sq: SpoolqClient, qname: str) -> None:
    before = time.time()
    sq.send(qname, "a")
    sq.send(qname, "b", dedup=True)
    for dedup in (False, True):
        first = sq.poll(qname, limit=1, ttl=60, dedup=dedup)
        assert [m.receive_count for m in first] == [1]
        assert isinstance(first[0].sent_at, float) and before - 1 <= first[0].sent_at <= time.time() + 1
        sq.release(qname, [first[0].id], dedup=dedup)
        again = sq.poll(qname, limit=1, ttl=60, dedup=dedup)
        assert [(m.id, m.receive_count) for m in again] == [(first[0].id, 2)]


def test_typed_errors(server: Server, sq: SpoolqClient, qname: str) -> None:
    with pytest.raises(BadRequest, match="Limit must be >0"):
        sq.poll(qname, limit=0)
    with pytest.raises(NotFound):
        sq.move_status("A" * 42)
    with SpoolqClient(server.url, KEY_NONE) as none, pytest.raises(NotAuthorized) as e:
        none.send(qname, 1)
    assert e.value.status == 403
    with SpoolqClient(server.url, KEY_PREFIX) as prefix, pytest.raises(NotAuthorized, match="not authorized"):
        prefix.send_batches({"p-ok": [1], "elsewhere": [2]})
