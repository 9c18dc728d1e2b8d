"""The ``audit`` pipeline: figures per queue and per hour over the archive of acknowledged messages.

Input: the archive (:func:`spoolq_spark.archive.read_archive`). Each record is attributed to the
UTC hour of its ``acked_at``. Per ``(queue, hour)``:

* ``acked``: records;
* ``receive_p50/p95/p99``: percentiles of ``first_received_at - sent_at`` (seconds, send to first
  receive), ``ack_p50/p95/p99``: of ``acked_at - sent_at`` (send to ack). Exact percentiles with
  linear interpolation between the two nearest ranks (Spark's ``percentile``);
* ``redelivered``: records received more than once; ``redeliveries``: the extra receives
  (``sum(receive_count - 1)``);
* ``dead_lettered``: records acknowledged on a dead-letter queue of this queue in that hour.
  The archive does not say where a dead-lettered message came from, so the mapping is given:
  ``dead_letter={"jobs-dlq": "jobs"}`` (``--dead-letter jobs-dlq=jobs``). The dead-letter queue's
  own records also count in its own rows.

Output: Parquet (one row per queue and hour, sorted) and the HTML report of
:mod:`spoolq_spark.pipelines.report`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spoolq_spark.archive import read_archive
from spoolq_spark.pipelines.figures import COUNTS, FIGURES
from spoolq_spark.pipelines.report import render_report

__all__ = ["FIGURES", "audit_frame", "run_audit"]
_PCTS = "array(0.5D, 0.95D, 0.99D)"


def audit_frame(archive: DataFrame, dead_letter: Mapping[str, str] | None = None) -> DataFrame:
    """One row per ``(queue, hour)`` with :data:`FIGURES`; ``dead_letter`` maps DLQ -> source queue."""
    df = (archive
          .withColumn("hour", F.date_trunc("hour", F.timestamp_seconds(F.col("acked_at"))))
          .withColumn("to_receive", F.col("first_received_at") - F.col("sent_at"))
          .withColumn("to_ack", F.col("acked_at") - F.col("sent_at")))
    main = (df.groupBy("queue", "hour").agg(
        F.count(F.lit(1)).alias("acked"),
        F.expr(f"percentile(to_receive, {_PCTS})").alias("rp"),
        F.expr(f"percentile(to_ack, {_PCTS})").alias("ap"),
        F.sum(F.when(F.col("receive_count") > 1, 1).otherwise(0)).alias("redelivered"),
        F.sum(F.greatest(F.col("receive_count") - 1, F.lit(0))).alias("redeliveries")))
    main = main.select("queue", "hour", "acked",
                       *[F.col("rp")[i].alias(f"receive_p{p}") for i, p in enumerate((50, 95, 99))],
                       *[F.col("ap")[i].alias(f"ack_p{p}") for i, p in enumerate((50, 95, 99))],
                       "redelivered", "redeliveries")
    mapping = dict(dead_letter or {})
    if mapping:
        spark = archive.sparkSession
        pairs = spark.createDataFrame(list(mapping.items()), "dlq STRING, source STRING")
        dl = (df.join(F.broadcast(pairs), df.queue == pairs.dlq)
              .groupBy(F.col("source").alias("queue"), "hour").agg(F.count(F.lit(1)).alias("dead_lettered")))
        main = main.join(dl, ["queue", "hour"], "full_outer")
    else:
        main = main.withColumn("dead_lettered", F.lit(0).cast("long"))
    counts: dict[str, bool | float | int | str] = {c: 0 for c in COUNTS}
    return (main.fillna(counts)
            .select("queue", "hour", *[F.col(c).cast("long") if c in counts else F.col(c) for c in FIGURES])
            .orderBy("queue", "hour"))


def run_audit(spark: SparkSession, archive_root: str, out_dir: str, *, queues: list[str] | None = None,
              dead_letter: Mapping[str, str] | None = None, title: str = "spoolq audit") -> dict[str, Any]:
    """Compute, write ``<out>/audit.parquet`` and ``<out>/report.html``; returns a summary."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")  # hours are UTC hours
    result = audit_frame(read_archive(spark, archive_root, queues), dead_letter).cache()
    result.coalesce(1).write.mode("overwrite").parquet(f"{out_dir.rstrip('/')}/audit.parquet")
    shown = result.withColumn("hour", F.date_format("hour", "yyyy-MM-dd HH:00"))  # in the session time zone
    rows = [r.asDict() for r in shown.collect()]
    html = render_report(rows, title=title, source=archive_root)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "report.html"), "w", encoding="utf-8") as f:
        f.write(html)
    result.unpersist()
    return {"rows": len(rows), "acked": sum(r["acked"] for r in rows), "queues": len({r["queue"] for r in rows})}
