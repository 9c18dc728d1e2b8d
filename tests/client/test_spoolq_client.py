"""The hand-written ``SpoolqClient`` facade: values and typed errors (real gunicorn spoolq)."""

from __future__ import annotations

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
