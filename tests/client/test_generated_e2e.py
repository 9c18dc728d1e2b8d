"""Every generated operation (spoolq_client._generated.api.*) against a real gunicorn spoolq."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from spoolq_client._generated.api.dedupq import (
    dedup_ack,
    dedup_claim_count,
    dedup_move,
    dedup_move_status,
    dedup_peek,
    dedup_poll,
    dedup_purge,
    dedup_renew,
    dedup_send,
    dedup_send_batch,
    dedup_send_batches,
    dedup_size,
    dedup_unclaim_all,
)
from spoolq_client._generated.api.mq import (
    mq_create_queue,
    mq_delete,
    mq_delete_queue,
    mq_fetch,
    mq_get_queue,
    mq_send,
)
from spoolq_client._generated.api.ops import healthz, metrics
from spoolq_client._generated.api.queue import (
    ack,
    claim_count,
    list_queues,
    move,
    move_status,
    peek,
    poll,
    purge,
    renew,
    send,
    send_batch,
    send_batches,
    size,
    unclaim_all,
)
from spoolq_client._generated.client import AuthenticatedClient, Client
from spoolq_client._generated.models import (
    DedupSendBatchesBody,
    Health,
    Message,
    MoveRef,
    MoveStatus,
    NotAuthorized,
    QueueSummary,
    SendBatchesBody,
    Success,
)
from spoolq_client._generated.types import File
from tests.e2e.spoolq_server import KEY_ALL, KEY_NONE, Server

_OPEN: list[AuthenticatedClient | Client] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().get_httpx_client().close()


def _client(server: Server, key: str = KEY_ALL) -> AuthenticatedClient:
    c = AuthenticatedClient(base_url=server.url, token=key, prefix="", auth_header_name="X-BV-API-Key")
    _OPEN.append(c)
    return c


def _wait_move(status_fn: object, ref: str, c: AuthenticatedClient) -> MoveStatus:
    deadline = time.monotonic() + 30
    while True:
        st = status_fn.sync(ref, client=c)  # type: ignore[attr-defined]
        assert isinstance(st, MoveStatus)
        if st.status != "IN_PROGRESS" or time.monotonic() > deadline:
            return st
        time.sleep(0.05)


def test_queue_operations(server: Server, qname: str) -> None:
    c = _client(server)
    assert isinstance(send.sync(qname, client=c, body={"n": 0}), Success)
    assert isinstance(send_batch.sync(qname, client=c, body=[{"n": 1}, {"n": 2}]), Success)
    other = qname + "-b"
    body = SendBatchesBody.from_dict({qname: [{"n": 3}], other: [{"n": 4}]})
    assert isinstance(send_batches.sync(client=c, body=body), Success)
    assert size.sync(qname, client=c) == 4
    peeked = peek.sync(qname, client=c, limit=10)
    assert isinstance(peeked, list) and [m.payload["n"] for m in peeked] == [0, 1, 2, 3]
    assert all(isinstance(m, Message) and len(m.id) == 40 for m in peeked)
    polled = poll.sync(qname, client=c, limit=2, ttl=30)
    assert isinstance(polled, list) and len(polled) == 2
    assert claim_count.sync(qname, client=c) == 2
    assert isinstance(renew.sync(qname, client=c, body=[polled[0].id], ttl=60), Success)
    assert isinstance(ack.sync(qname, client=c, body=[polled[0].id]), Success)
    assert isinstance(unclaim_all.sync(qname, client=c), Success)
    assert claim_count.sync(qname, client=c) == 0
    assert size.sync(qname, client=c) == 3
    names = list_queues.sync(client=c, prefix=qname)
    assert isinstance(names, list) and {q.name for q in names} == {qname, other}
    assert all(isinstance(q, QueueSummary) for q in names)
    ref = move.sync(client=c, from_=qname, to=other)
    assert isinstance(ref, MoveRef)
    st = _wait_move(move_status, ref.id, c)
    assert (st.from_, st.to, st.status) == (qname, other, "COMPLETE")
    assert size.sync(other, client=c) == 4
    assert isinstance(purge.sync(other, client=c), Success)
    assert size.sync(other, client=c) == 0


def test_dedup_operations(server: Server, qname: str) -> None:
    c = _client(server)
    assert isinstance(dedup_send.sync(qname, client=c, body="same"), Success)
    assert isinstance(dedup_send_batch.sync(qname, client=c, body=["same", "other"]), Success)
    assert isinstance(dedup_send_batches.sync(client=c, body=DedupSendBatchesBody.from_dict({qname: ["same"]})),
                      Success)
    assert dedup_size.sync(qname, client=c) == 2  # identical pending payloads collapsed
    assert len(dedup_peek.sync(qname, client=c) or []) == 2
    polled = dedup_poll.sync(qname, client=c, limit=10, ttl=30)
    assert isinstance(polled, list) and sorted(m.payload for m in polled) == ["other", "same"]
    assert dedup_claim_count.sync(qname, client=c) == 2
    assert isinstance(dedup_renew.sync(qname, client=c, body=[m.id for m in polled], ttl=0), Success)
    assert dedup_claim_count.sync(qname, client=c) == 0
    polled = dedup_poll.sync(qname, client=c, limit=1, ttl=30) or []
    assert isinstance(dedup_ack.sync(qname, client=c, body=[m.id for m in polled]), Success)
    assert isinstance(dedup_unclaim_all.sync(qname, client=c), Success)
    ref = dedup_move.sync(client=c, from_=qname, to=qname + "-d")
    assert isinstance(ref, MoveRef)
    assert _wait_move(dedup_move_status, ref.id, c).status == "COMPLETE"
    assert dedup_size.sync(qname + "-d", client=c) == 1
    assert isinstance(dedup_purge.sync(qname + "-d", client=c), Success)


def test_mq_operations(server: Server, qname: str) -> None:
    c = _client(server)
    created = mq_create_queue.sync_detailed(qname, client=c)
    assert created.status_code == 201
    assert mq_get_queue.sync_detailed(qname, client=c).status_code == 200
    sent = mq_send.sync_detailed(qname, client=c, body=File(payload=b"\x00raw bytes"))
    assert sent.status_code == 201
    fetched = mq_fetch.sync_detailed(qname, client=c, ttl=30)
    assert fetched.status_code == 200 and fetched.content == b"\x00raw bytes"
    mid = fetched.headers["X-Message-Id"]
    assert mq_delete.sync_detailed(qname, mid, client=c).status_code == 200
    assert mq_fetch.sync_detailed(qname, client=c).status_code == 204
    assert mq_delete_queue.sync_detailed(qname, client=c).status_code == 200
    assert mq_get_queue.sync_detailed(qname, client=c).status_code == 404


def test_ops_need_no_key(server: Server) -> None:
    anon = Client(base_url=server.url)
    _OPEN.append(anon)
    health = healthz.sync(client=anon)
    assert isinstance(health, Health) and health.status == "ok"
    text = metrics.sync(client=anon)
    assert isinstance(text, str) and "spoolq" in text


def test_errors_are_typed(server: Server, qname: str) -> None:
    refused = _client(server, KEY_NONE)
    r = send.sync_detailed(qname, client=refused, body=1)
    assert r.status_code == 403 and isinstance(r.parsed, NotAuthorized)
    bad = poll.sync_detailed(qname, client=_client(server), limit=0)
    assert bad.status_code == 400 and bad.parsed == "Limit must be >0"
    unknown = move_status.sync_detailed("A" * 42, client=_client(server))
    assert unknown.status_code == 404


def test_asyncio_variants(server: Server, qname: str) -> None:
    async def go() -> list[Message]:
        async with _client(server) as c:
            await send.asyncio(qname, client=c, body={"async": True})
            n = await size.asyncio(qname, client=c)
            assert n == 1
            got = await poll.asyncio(qname, client=c, limit=5, wait=1.0)
            assert isinstance(got, list)
            await ack.asyncio(qname, client=c, body=[m.id for m in got])
            return got
    got = asyncio.run(go())
    assert [m.payload for m in got] == [{"async": True}]


def test_raise_on_unexpected_status(server: Server) -> None:
    c = AuthenticatedClient(base_url=server.url, token=KEY_ALL, prefix="", auth_header_name="X-BV-API-Key",
                            raise_on_unexpected_status=True, timeout=httpx.Timeout(5))
    _OPEN.append(c)
    assert healthz.sync(client=c) is not None
