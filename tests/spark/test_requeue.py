"""The requeue pipeline: chosen messages reach the target, the rest stay, nothing is lost when it dies."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.e2e.spoolq_server import KEY_ALL, Server

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]  # a loaded 2-core box starts Spark slowly

WHERE = "get_json_object(payload, '$.kind') = 'retry'"


def fill(client: Any, queue: str, n: int) -> None:
    for start in range(0, n, 500):
        client.send_batch(queue, [{"i": i, "kind": "retry" if i % 3 == 0 else "keep"}
                                  for i in range(start, min(n, start + 500))])


def drain(client: Any, queue: str) -> list[int]:
    out: list[int] = []
    while batch := client.poll(queue, limit=1000, ttl=60):
        out.extend(m.payload["i"] for m in batch)
        client.ack(queue, [m.id for m in batch])
    return out


class Died(BaseException):
    """Stands for the job being killed: not an Exception, so nothing on the way catches it."""


def test_requeue_killed_midway_then_rerun_loses_nothing(
        spark: Any, server: Server, client: Any, queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from spoolq_spark.http import Api
    from spoolq_spark.pipelines.requeue import run_requeue

    source, target = queue, queue + "-target"
    fill(client, source, 1500)
    acks = {"n": 0}
    real_ack, real_renew = Api.ack, Api.renew

    def dying_ack(self: Api, ids: Any, queue: str | None = None) -> None:
        acks["n"] += 1
        if acks["n"] == 3:  # the target accepted round 3, the job dies before acking it at the source
            raise Died()
        real_ack(self, ids, queue)

    def no_release(self: Api, ids: Any, ttl: int) -> None:
        if ttl:  # a killed job releases nothing: its claims simply run out
            real_renew(self, ids, ttl)

    monkeypatch.setattr(Api, "ack", dying_ack)
    monkeypatch.setattr(Api, "renew", no_release)
    kw = dict(url=server.url, source=source, target=target, where=WHERE, api_key=KEY_ALL, batch=200)
    with pytest.raises(Died):
        run_requeue(spark, claim_ttl=5, **kw)
    assert 0 < client.size(target) < 500 and client.claim_count(source) > 0
    monkeypatch.setattr(Api, "ack", real_ack)
    monkeypatch.setattr(Api, "renew", real_renew)
    time.sleep(5.5)  # the dead job's claims expire
    result = run_requeue(spark, claim_ttl=60, **kw)
    assert result["kept"] == 1000 and result["sent"] >= 500 - 200

    moved = drain(client, target)
    assert set(moved) == {i for i in range(1500) if i % 3 == 0}  # every chosen one, duplicates only from round 3
    assert len(moved) - len(set(moved)) <= 200
    assert client.claim_count(source) == 0  # the messages not chosen were released
    left = drain(client, source)
    assert sorted(left) == [i for i in range(1500) if i % 3 != 0]


def test_bad_where_claims_nothing(spark: Any, server: Server, client: Any, queue: str) -> None:
    from spoolq_spark.pipelines.requeue import run_requeue

    client.send_batch(queue, [{"i": 1}])
    with pytest.raises(Exception, match="no_such_column"):
        run_requeue(spark, url=server.url, source=queue, target=queue + "-t", where="no_such_column = 1",
                    api_key=KEY_ALL)
    assert client.claim_count(queue) == 0 and json.dumps(client.peek(queue)[0].payload) == '{"i": 1}'
