"""The ``spoolq`` data source against a real gunicorn spoolq: produce, consume, peek, bad input."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.spoolq_server import KEY_NONE, Server
from tests.spark.conftest import opts

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]  # a loaded 2-core box starts Spark slowly


def produce(spark: Any, server: Server, queue: str, n: int, partitions: int = 2, **extra: Any) -> None:
    df = spark.range(0, n, 1, partitions).selectExpr("named_struct('n', id, 'tag', 'x') AS payload")
    df.write.format("spoolq").options(**opts(server, queue, **extra)).mode("append").save()


def batch_records(server: Server, queue: str) -> list[str]:
    """The batch claims the service still keeps for ``queue`` (acknowledged ones are forgotten)."""
    d = server.root / "batches" / queue
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_produce_10k_then_consume_available_now_exactly_once_after_dedup(
        spark: Any, server: Server, client: Any, queue: str, tmp_path: Path) -> None:
    produce(spark, server, queue, 10_000, batchSize=1000)
    assert client.size(queue) == 10_000
    out = tmp_path / "out"
    query = (spark.readStream.format("spoolq")
             .options(**opts(server, queue, maxMessagesPerTrigger=3000))
             .load().writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    assert query.awaitTermination(240)
    assert query.exception() is None
    df = spark.read.parquet(str(out))
    rows = df.dropDuplicates(["id"]).select("payload", "queue", "receive_count", "sent_at").collect()
    assert sorted(json.loads(r.payload)["n"] for r in rows) == list(range(10_000))
    assert {r.queue for r in rows} == {queue}
    assert all(r.receive_count >= 1 and r.sent_at is not None for r in rows)
    assert client.size(queue) == 0
    assert client.claim_count(queue) == 0
    assert batch_records(server, queue) == []  # every batch was acknowledged and forgotten
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert len(batches) >= 4 and max(p["numInputRows"] for p in batches) <= 3000


def test_failed_batch_replays_exactly_after_restart(
        spark: Any, server: Server, client: Any, queue: str, tmp_path: Path) -> None:
    produce(spark, server, queue, 1000)
    seen: dict[int, list[str]] = {}
    fail_on: set[int] = {1}

    def sink(df: Any, batch_id: int) -> None:
        ids = [r.id for r in df.select("id").collect()]
        seen.setdefault(batch_id, []).extend(ids)
        if batch_id in fail_on:
            raise RuntimeError("sink failure (test)")

    def start() -> Any:
        return (spark.readStream.format("spoolq")
                .options(**opts(server, queue, maxMessagesPerBatch=300))
                .load().writeStream.foreachBatch(sink)
                .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())

    first = start()
    with pytest.raises(Exception, match="sink failure"):
        first.awaitTermination(120)
    failed = list(seen[1])
    assert len(failed) == 300 and client.claim_count(queue) >= 300  # the failed batch is still claimed
    fail_on.clear()
    seen[1] = []
    second = start()
    assert second.awaitTermination(180)
    assert second.exception() is None
    assert sorted(seen[1]) == sorted(failed)  # the replay is the same batch, row for row
    all_ids = [i for ids in seen.values() for i in ids]
    assert len(set(all_ids)) == 1000 == len(all_ids)  # nothing lost; no id in two batches
    assert client.size(queue) == 0 and client.claim_count(queue) == 0


def test_idle_processing_time_query_acks_its_last_batch_within_a_trigger(
        spark: Any, server: Server, client: Any, queue: str, tmp_path: Path) -> None:
    produce(spark, server, queue, 50, partitions=1)
    got: list[int] = []
    done_at: list[float] = []

    def sink(df: Any, batch_id: int) -> None:
        got.extend(json.loads(r.payload)["n"] for r in df.select("payload").collect())
        if len(got) >= 50 and not done_at:
            done_at.append(time.monotonic())

    query = (spark.readStream.format("spoolq")
             .options(**opts(server, queue))
             .load().writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(processingTime="2 seconds").start())
    try:
        deadline = time.monotonic() + 90
        while not done_at and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done_at, "the 50 messages never reached the sink"
        while client.claim_count(queue) and time.monotonic() < done_at[0] + 30:
            time.sleep(0.2)
        acked_after = time.monotonic() - done_at[0]
        assert client.claim_count(queue) == 0 and client.size(queue) == 0
        assert acked_after < 2 * 2 + 3, f"the last batch was acknowledged {acked_after:.1f}s after it was processed"
        assert sorted(got) == list(range(50))
    finally:
        query.stop()


def test_peek_snapshot_has_no_side_effects(spark: Any, server: Server, client: Any, queue: str) -> None:
    produce(spark, server, queue, 30, partitions=1)
    claimed = client.poll(queue, limit=5, ttl=300)
    rows = spark.read.format("spoolq").options(**opts(server, queue, limit=1000)).load().collect()
    assert len(rows) == 30
    counts = {r.id: r.receive_count for r in rows}
    assert all(counts[m.id] == 1 for m in claimed)
    assert sum(counts.values()) == 5
    assert client.size(queue) == 30 and client.claim_count(queue) == 5  # unchanged by the read (size counts claimed ones)


def test_delay_and_ttl_columns(spark: Any, server: Server, client: Any, queue: str) -> None:
    df = spark.createDataFrame([('{"a":1}', 0.0, None), ('{"a":2}', 3600.0, None), ("[1,2]", None, 600.0)],
                               "payload STRING, delay DOUBLE, ttl DOUBLE")
    df.write.format("spoolq").options(**opts(server, queue)).mode("append").save()
    visible = client.peek(queue, limit=10)
    assert sorted(json.dumps(m.payload) for m in visible) == ['[1, 2]', '{"a": 1}']
    summary = {s.name: s for s in client.list_queues(prefix=queue)}[queue]
    assert summary.delayed == 1


# --- bad input: a clear error, nothing sent ------------------------------------------------

def _payloads(spark: Any, *texts: str) -> Any:
    return spark.createDataFrame([(t,) for t in texts], "payload STRING").coalesce(1)


def assert_nothing_sent(client: Any, queue: str) -> None:
    assert client.list_queues(prefix=queue) == []


def test_missing_queue_option_fails_planning(spark: Any, server: Server, client: Any, queue: str) -> None:
    with pytest.raises(Exception, match="option 'queue' is required"):
        _payloads(spark, "1").write.format("spoolq").option("url", server.url).mode("append").save()
    with pytest.raises(Exception, match="option 'queue' is required"):
        spark.readStream.format("spoolq").option("url", server.url).load()


def test_unknown_and_invalid_options_are_named(spark: Any, server: Server, client: Any, queue: str) -> None:
    with pytest.raises(Exception, match="unknown option 'batchsise'"):
        _payloads(spark, "1").write.format("spoolq").options(**opts(server, queue, batchSise=5)).mode("append").save()
    with pytest.raises(Exception, match="unknown option 'maxmessages'"):
        spark.readStream.format("spoolq").options(**opts(server, queue, maxMessages=5)).load()
    with pytest.raises(Exception, match="'claimTtl' must be between 1 and 3600"):
        spark.readStream.format("spoolq").options(**opts(server, queue, claimTtl=0)).load()
    assert_nothing_sent(client, queue)


def test_wrong_url_fails_with_a_clear_error(spark: Any, server: Server, client: Any, queue: str) -> None:
    from tests.e2e.spoolq_server import free_port
    bad = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(Exception, match="cannot reach spoolq at " + bad):
        _payloads(spark, "1").write.format("spoolq").options(**{**opts(server, queue), "url": bad}).mode("append").save()
    query = (spark.readStream.format("spoolq").options(**{**opts(server, queue), "url": bad})
             .load().writeStream.format("noop").trigger(availableNow=True).start())
    with pytest.raises(Exception, match="cannot reach spoolq at " + bad):
        query.awaitTermination(120)


def test_forbidden_key_fails_the_job(spark: Any, server: Server, client: Any, queue: str) -> None:
    with pytest.raises(Exception, match="HTTP 403"):
        _payloads(spark, "1", "2").write.format("spoolq").options(
            **{**opts(server, queue), "apiKey": KEY_NONE}).mode("append").save()
    assert_nothing_sent(client, queue)


def test_non_json_payload_string_fails_and_sends_nothing(spark: Any, server: Server, client: Any, queue: str) -> None:
    df = _payloads(spark, '{"ok":1}', '{"ok":2}', "not json", '{"ok":3}')
    with pytest.raises(Exception, match=r"row 2 of this partition: payload is not JSON"):
        df.write.format("spoolq").options(**opts(server, queue, batchSize=1)).mode("append").save()
    assert_nothing_sent(client, queue)


def test_claims_of_a_slow_batch_are_renewed(
        spark: Any, server: Server, client: Any, queue: str, tmp_path: Path) -> None:
    produce(spark, server, queue, 20, partitions=1)
    counts: list[int] = []

    def slow_sink(df: Any, batch_id: int) -> None:
        counts.extend(r.receive_count for r in df.select("receive_count").collect())
        time.sleep(7)  # longer than two claim TTLs: only renewal keeps the messages claimed

    query = (spark.readStream.format("spoolq")
             .options(**opts(server, queue, claimTtl=3, renewInterval=1))
             .load().writeStream.foreachBatch(slow_sink)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    assert query.awaitTermination(180)
    assert counts == [1] * 20  # no message was delivered a second time
    assert client.size(queue) == 0 and client.claim_count(queue) == 0


def test_dedup_option_uses_the_dedup_door(spark: Any, server: Server, client: Any, queue: str) -> None:
    _payloads(spark, '{"k":1}', '{"k":1}', '{"k":2}').write.format("spoolq").options(
        **opts(server, queue, dedup="true")).mode("append").save()
    rows = spark.read.format("spoolq").options(**opts(server, queue, dedup="TRUE")).load().collect()
    assert sorted(r.payload for r in rows) == ['{"k":1}', '{"k":2}']  # the pending copy absorbed the repeat
    assert client.list_queues(prefix=queue)[0].kind == "dedup"
