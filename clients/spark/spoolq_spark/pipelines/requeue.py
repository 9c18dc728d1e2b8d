"""The ``requeue`` pipeline: move the messages of one queue that match a Spark SQL condition to another.

Loop, driven from the Spark driver, until the source has nothing unclaimed left (or the number of
messages the source held at the start has been looked at):

1. claim up to ``batch`` messages of the source (``poll``, ``meta=true``, claim ``claimTtl``);
2. make them a DataFrame with the stream schema (``id, queue, payload, sent_at, receive_count``)
   and filter it with the ``--where`` expression (e.g. ``get_json_object(payload, '$.kind') = 'x'``);
3. send the chosen payloads to the target through the ``spoolq`` writer (a Spark job);
4. only when that job succeeded, acknowledge the chosen messages at the source.

Messages that do not match stay claimed by the job (renewed while it runs) so the next poll does
not return them again, and are released when it ends. If the job dies anywhere, nothing is lost:
unacknowledged source messages come back when their claims expire, and a message whose send
succeeded but whose ack did not is sent again by the next run (at-least-once; the target may see
duplicates, never a gap). A bad ``--where`` fails before anything is claimed.
"""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql import SparkSession

from spoolq_spark.http import Api
from spoolq_spark.options import parse
from spoolq_spark.stream import MESSAGE_SCHEMA, to_rows


def run_requeue(spark: SparkSession, *, url: str, source: str, target: str, where: str,
                api_key: str | None = None, dedup: bool = False, batch: int = 1000, claim_ttl: int = 300,
                limit: int | None = None) -> dict[str, int]:
    """Returns ``{"looked": n, "sent": m, "kept": k}``."""
    common: dict[str, str] = {"url": url, "dedup": str(dedup).lower()}
    if api_key:
        common["apiKey"] = api_key
    src = Api(parse({**common, "queue": source}, "read"))
    write_opts = {**common, "queue": target, "batchSize": str(min(batch, 1000))}
    empty = spark.createDataFrame([], MESSAGE_SCHEMA)
    empty.where(where).count()  # a bad expression fails here, before any claim
    budget = src.size() if limit is None else limit
    looked = sent = 0
    kept: list[str] = []
    last_renew = time.monotonic()
    try:
        while looked < budget:
            got = src.poll(min(batch, 1000, budget - looked), claim_ttl)
            if not got:
                break
            looked += len(got)
            rows = to_rows(got)
            df = spark.createDataFrame(
                [(i, source, p, _ts(s), rc) for i, p, s, rc in rows], MESSAGE_SCHEMA)
            chosen_ids = {r.id for r in df.where(where).select("id").collect()}
            chosen = [r for r in rows if r[0] in chosen_ids]
            if chosen:
                out = spark.createDataFrame([(r[1],) for r in chosen], "payload STRING")
                out.write.format("spoolq").options(**write_opts).mode("append").save()
                src.ack([r[0] for r in chosen])  # only after the target accepted every one
                sent += len(chosen)
            kept.extend(r[0] for r in rows if r[0] not in chosen_ids)
            if kept and time.monotonic() - last_renew > claim_ttl / 3:
                src.renew(kept, claim_ttl)
                last_renew = time.monotonic()
    finally:
        if kept:
            src.renew(kept, 0)  # ttl=0 releases: the messages not chosen go back to the source
        src.close()
    return {"looked": looked, "sent": sent, "kept": len(kept)}


def _ts(seconds: float) -> Any:
    import datetime as dt

    return dt.datetime.fromtimestamp(seconds, dt.UTC)
