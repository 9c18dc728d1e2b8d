"""A Spark driver process for the crash tests: one streaming query from a ``spoolq`` queue.

    python stream_driver.py QUEUE CHECKPOINT OUT [--kill-at BATCH] [--option NAME=VALUE ...]

The service is found through ``SPOOLQ_URL`` (no ``url`` option). The query reads the queue with
``availableNow`` into a ``foreachBatch`` sink that appends: every call writes the ids it got to
``OUT/<batch id>-<attempt>.json`` (renamed into place), so re-runs of a batch show up as more
files for the same batch id. With ``--kill-at B`` the sink, once it has written batch ``B``,
creates ``OUT/reached-B`` and waits: the batch is claimed and in the sink but not committed, and
the test kills this process tree with SIGKILL.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("queue")
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    ap.add_argument("--kill-at", type=int)
    ap.add_argument("--option", action="append", default=[])
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from spoolq_spark import SpoolqDataSource

    spark = (SparkSession.builder.master("local[2]").appName("spoolq-crash-driver")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "768m").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(SpoolqDataSource)
    os.makedirs(args.out, exist_ok=True)

    def sink(df: Any, batch_id: int) -> None:
        ids = [r.id for r in df.select("id").collect()]
        name = f"{batch_id}-{uuid.uuid4().hex[:8]}.json"
        tmp = os.path.join(args.out, "." + name)
        with open(tmp, "w") as f:
            json.dump(ids, f)
        os.rename(tmp, os.path.join(args.out, name))
        if batch_id == args.kill_at:
            open(os.path.join(args.out, f"reached-{batch_id}"), "w").close()
            time.sleep(600)  # killed here

    reader = spark.readStream.format("spoolq").option("queue", args.queue)
    for pair in args.option:
        key, _, value = pair.partition("=")
        reader = reader.option(key, value)
    query = (reader.load().writeStream.foreachBatch(sink)
             .option("checkpointLocation", args.checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
