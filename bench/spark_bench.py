#!/usr/bin/env python3
"""Spark benchmark: the ``spoolq`` data source on ``local[2]`` against ``spoolq_client``, in one run.

One real ``spoolq serve`` (gunicorn, open mode on loopback), ``--messages`` messages of about
60 bytes each way:

* ``client produce``  one Python process, ``SpoolqClient.send_batch`` of ``--batch`` messages
* ``spark produce``   ``df.write.format("spoolq")`` from ``--partitions`` partitions, same batch size
* ``client consume``  ``Consumer(concurrency=8, batch_size=10)`` with a no-op handler, until all acked
* ``spark consume``   ``readStream.format("spoolq")`` with ``availableNow`` into the ``noop`` sink,
                      until the query ends (every batch committed and acknowledged)

Each Spark figure is wall time of the job (the session is started and warmed up before timing).
Prints msgs/s, the ratio Spark / client and Spark's rate per executor core. Not a test.

    python bench/spark_bench.py [--messages 50000] [--batch 500] [--partitions 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))

from spoolq_client import Consumer, Message, SpoolqClient  # noqa: E402
from tests.e2e.spoolq_server import running_server  # noqa: E402


def client_produce(url: str, queue: str, n: int, batch: int) -> float:
    with SpoolqClient(url) as c:
        t = time.perf_counter()
        for start in range(0, n, batch):
            c.send_batch(queue, [{"n": i, "tag": "bench-payload-xxxxxxxxxxxxxxxx"}
                                 for i in range(start, min(n, start + batch))])
        return time.perf_counter() - t


def client_consume(url: str, queue: str, n: int) -> float:
    done = threading.Event()
    seen = [0]
    lock = threading.Lock()

    def handle(m: Message) -> None:
        with lock:
            seen[0] += 1
            if seen[0] >= n:
                done.set()

    with SpoolqClient(url) as c:
        consumer = Consumer(c, queue, handle, concurrency=8, batch_size=10, claim_ttl=60, wait=1)
        t = time.perf_counter()
        consumer.start()
        done.wait()
        while consumer.stats.acked < n:
            time.sleep(0.001)
        elapsed = time.perf_counter() - t
        consumer.stop()
        consumer.join(30)
        return elapsed


def spark_produce(spark: Any, url: str, queue: str, n: int, batch: int, partitions: int) -> float:
    df = spark.range(0, n, 1, partitions).selectExpr(
        "named_struct('n', id, 'tag', 'bench-payload-xxxxxxxxxxxxxxxx') AS payload")
    t = time.perf_counter()
    df.write.format("spoolq").option("url", url).option("queue", queue).option("batchSize", batch) \
        .mode("append").save()
    return time.perf_counter() - t


def spark_consume(spark: Any, url: str, queue: str, tmp: Path) -> float:
    t = time.perf_counter()
    q = (spark.readStream.format("spoolq").option("url", url).option("queue", queue)
         .option("spoolDir", str(tmp / "ck" / "spool")).option("maxMessagesPerBatch", 20000).load()
         .writeStream.format("noop").option("checkpointLocation", str(tmp / "ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--partitions", type=int, default=2)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from spoolq_spark import SpoolqDataSource

    n = args.messages
    with tempfile.TemporaryDirectory() as d, running_server(Path(d), keys=False, workers=2, threads=16) as srv:
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(SpoolqDataSource)
        try:
            spark_produce(spark, srv.url, "warmup", 1000, args.batch, args.partitions)  # start the workers
            spark_consume(spark, srv.url, "warmup", Path(d) / "warm")
            load0 = os.getloadavg()[0]
            figures = {
                "client produce": n / client_produce(srv.url, "bench-client", n, args.batch),
                "spark produce": n / spark_produce(spark, srv.url, "bench-spark", n, args.batch, args.partitions),
                "client consume": n / client_consume(srv.url, "bench-client", n),
                "spark consume": n / spark_consume(spark, srv.url, "bench-spark", Path(d) / "run"),
            }
            load1 = os.getloadavg()[0]
        finally:
            spark.stop()
    print(f"messages={n} batch={args.batch} partitions={args.partitions} local[2] "
          f"load average {load0:.1f} -> {load1:.1f} on {os.cpu_count()} cores")
    for name, rate in figures.items():
        print(f"{name:15s} {rate:10.0f} msgs/s")
    for kind in ("produce", "consume"):
        ratio = figures[f"spark {kind}"] / figures[f"client {kind}"]
        print(f"{kind}: spark/client = {ratio:.2f}, spark per executor core = {figures[f'spark {kind}'] / 2:.0f} msgs/s")


if __name__ == "__main__":
    main()
