"""The replay pipeline: archived messages chosen by queue, time and Spark SQL, sent into a queue.

The archive here is made by a real store (archive-enabled queues, sends, polls, acks and the
store's own compaction, on a fake clock so the times are known); the target is a queue of the
real gunicorn spoolq of the ``spark`` tier.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest

from spoolq.store import FileStore, OutgoingMessage, QueueConfig
from tests.conftest import FakeClock
from tests.e2e.spoolq_server import KEY_ALL, Server

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

T0 = 1_790_000_000.0


def make_archive(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Two archive-enabled queues; returns, per queue, what each message was (id, body, acked_at)."""
    clock = FakeClock(T0)
    store = FileStore(root, node_id="archive-maker", fsync=False, clock=clock)
    made: dict[str, list[dict[str, Any]]] = {"orders": [], "mail": []}
    try:
        for q in made:
            store.create_queue(q, config=QueueConfig(archive=True))
        bodies = [b'{"n":%d,"kind":"%s"}' % (i, b"retry" if i % 3 == 0 else b"ok") for i in range(600)]
        bodies += [b"plain text from another door", b"\xff\xfe binary", b'{"n":1,"kind":"ok"}']  # a repeat
        for i, body in enumerate(bodies):
            q = "orders" if i % 4 else "mail"
            mid = store.send(q, OutgoingMessage(body=body)).id
            clock.advance(1)
            [d] = store.poll(q, limit=1, claim_ttl=60)
            assert d.message.id == mid
            store.ack(q, [d.receipt])
            made[q].append({"id": mid, "body": body, "acked_at": clock()})
        clock.advance(30)
        for q in made:  # a pass of maintenance compacts the acknowledged files into segments
            store.poll(q, limit=1)
    finally:
        store.close()
    for q in made:
        assert list((root / "archive" / q).glob("*.jsonl")), f"no segment for {q}"
    return made


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    root = tmp_path_factory.mktemp("replay-archive") / "root"
    return root, make_archive(root)


def sent_payload(body: bytes) -> str:
    """What replay sends for an archived body (docs/spark.md)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return json.dumps(base64.b64encode(body).decode())
    try:
        json.loads(text)
        return text
    except ValueError:
        return json.dumps(text, ensure_ascii=False)


def drain(client: Any, queue: str, dedup: bool = False) -> list[str]:
    out: list[str] = []
    while True:
        got = client.poll(queue, limit=1000, ttl=60, dedup=dedup)
        if not got:
            return out
        out.extend(json.dumps(m.payload, separators=(",", ":"), ensure_ascii=False) for m in got)
        client.ack(queue, [m.id for m in got], dedup=dedup)


def test_replay_by_queue_time_and_where_sends_exactly_the_chosen_bodies(
        spark: Any, server: Server, client: Any, queue: str,
        archive: tuple[Path, dict[str, list[dict[str, Any]]]]) -> None:
    from spoolq_spark.pipelines.replay import run_replay

    root, made = archive
    since, until = T0 + 100, T0 + 500
    chosen = [m for m in made["orders"] if since <= m["acked_at"] < until
              and b'"kind":"retry"' in m["body"]]
    progress = io.StringIO()
    dry = run_replay(spark, str(root), queue, url=server.url, api_key=KEY_ALL, queues=["orders"],
                     where="get_json_object(payload, '$.kind') = 'retry'", since=since, until=until, dry_run=True)
    assert dry == {"matched": len(chosen), "sent": 0, "target": queue, "envelope": False, "dry_run": True}
    assert client.list_queues(prefix=queue) == []  # a dry run sends nothing
    result = run_replay(spark, str(root), queue, url=server.url, api_key=KEY_ALL, queues=["orders"],
                        where="get_json_object(payload, '$.kind') = 'retry'", since=since, until=until,
                        progress=progress)
    assert result["sent"] == len(chosen) > 50
    assert sorted(drain(client, queue)) == sorted(m["body"].decode() for m in chosen)
    assert f"sent {len(chosen):,} messages" in progress.getvalue()


def test_bodies_that_are_not_json_are_replayed_as_json_strings(
        spark: Any, server: Server, client: Any, queue: str,
        archive: tuple[Path, dict[str, list[dict[str, Any]]]]) -> None:
    from spoolq_spark.pipelines.replay import run_replay

    root, made = archive
    everything = made["orders"] + made["mail"]
    result = run_replay(spark, str(root), queue, url=server.url, api_key=KEY_ALL, progress=None)
    assert result["sent"] == len(everything)
    got = sorted(drain(client, queue))
    want = sorted(json.dumps(json.loads(sent_payload(m["body"])), separators=(",", ":"), ensure_ascii=False)
                  for m in everything)
    assert got == want


def test_rerun_into_a_dedup_queue_collapses_by_original_id(
        spark: Any, server: Server, client: Any, queue: str,
        archive: tuple[Path, dict[str, list[dict[str, Any]]]]) -> None:
    from spoolq_spark.pipelines.replay import run_replay

    root, made = archive
    where = "get_json_object(payload, '$.n') = 1"  # two archived messages with the very same body
    args = dict(url=server.url, api_key=KEY_ALL, where=where, dedup=True, progress=None)
    first = run_replay(spark, str(root), queue, **args)  # type: ignore[arg-type]
    again = run_replay(spark, str(root), queue, **args)  # type: ignore[arg-type]
    assert first["matched"] == again["matched"] == 2 and first["envelope"] is True
    got = [json.loads(p) for p in drain(client, queue, dedup=True)]
    originals = {m["id"] for m in made["orders"] + made["mail"] if m["body"] == b'{"n":1,"kind":"ok"}'}
    assert len(got) == 2  # the rerun collapsed into the pending copies; equal bodies stayed two
    assert {g["replayOf"]["id"] for g in got} == originals
    assert all(g["payload"] == {"n": 1, "kind": "ok"} for g in got)


def test_a_bad_where_fails_before_anything_is_sent(
        spark: Any, server: Server, client: Any, queue: str,
        archive: tuple[Path, dict[str, list[dict[str, Any]]]]) -> None:
    from spoolq_spark.pipelines.replay import run_replay

    root, _ = archive
    with pytest.raises(Exception, match="nosuchcolumn"):
        run_replay(spark, str(root), queue, url=server.url, api_key=KEY_ALL, where="nosuchcolumn = 1")
    assert client.list_queues(prefix=queue) == []
