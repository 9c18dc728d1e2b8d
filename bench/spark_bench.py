#!/usr/bin/env python3
"""Spark benchmark: the ``spoolq`` data source at ``local[1]`` and ``local[2]`` against ``spoolq_client``.

One real ``spoolq serve`` (gunicorn, open mode on loopback), ``--messages`` messages of about
60 bytes each way, in every round:

* ``client produce``  one Python process, ``SpoolqClient.send_batch`` of ``--batch`` messages
* ``client consume``  ``Consumer(concurrency=8, batch_size=10)`` with a no-op handler, until all acked
* ``spark produce``   ``df.write.format("spoolq")`` from as many partitions as executor cores
* ``spark consume``   ``readStream.format("spoolq")`` with ``availableNow`` into the ``noop`` sink,
                      ``--per-trigger`` messages per micro-batch, until the query ends (every
                      batch committed and acknowledged)

Each ``--masters`` entry gets its own SparkSession (started and warmed up before timing; one
session at a time). Rounds alternate the order of the masters and the client; each figure is
the median over ``--rounds``. Prints msgs/s, Spark / client, and ``local[2]`` / ``local[1]``, with
the load average before and after. Not a test.

    python bench/spark_bench.py [--messages 30000] [--rounds 3] [--masters local[1],local[2]]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))

from spoolq_client import Consumer, Message, SpoolqClient  # noqa: E402
from tests.e2e.spoolq_server import running_server  # noqa: E402

PAYLOAD_TAG = "bench-payload-xxxxxxxxxxxxxxxx"


def client_produce(url: str, queue: str, n: int, batch: int) -> float:
    with SpoolqClient(url) as c:
        t = time.perf_counter()
        for start in range(0, n, batch):
            c.send_batch(queue, [{"n": i, "tag": PAYLOAD_TAG} for i in range(start, min(n, start + batch))])
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
    df = spark.range(0, n, 1, partitions).selectExpr(f"named_struct('n', id, 'tag', '{PAYLOAD_TAG}') AS payload")
    t = time.perf_counter()
    df.write.format("spoolq").option("url", url).option("queue", queue).option("batchSize", batch) \
        .mode("append").save()
    return time.perf_counter() - t


def spark_consume(spark: Any, url: str, queue: str, checkpoint: Path, per_trigger: int) -> float:
    t = time.perf_counter()
    q = (spark.readStream.format("spoolq").option("url", url).option("queue", queue)
         .option("maxMessagesPerTrigger", per_trigger).load()
         .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    return time.perf_counter() - t


def session(master: str) -> Any:
    from pyspark.sql import SparkSession

    from spoolq_spark import SpoolqDataSource

    spark = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(SpoolqDataSource)
    return spark


def cores(master: str) -> int:
    inside = master[master.find("[") + 1:master.find("]")]
    return os.cpu_count() or 1 if inside == "*" else int(inside)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=30_000)
    ap.add_argument("--batch", type=int, default=500, help="messages per sendbatch (client and Spark)")
    ap.add_argument("--per-trigger", type=int, default=10_000, help="maxMessagesPerTrigger of the stream")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--masters", default="local[1],local[2]")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    masters = args.masters.split(",")
    n = args.messages
    figures: dict[str, list[float]] = {}

    def record(name: str, seconds: float) -> None:
        figures.setdefault(name, []).append(n / seconds)

    with tempfile.TemporaryDirectory() as d, running_server(Path(d), keys=False, workers=2, threads=16) as srv:
        tmp = Path(d)
        load0 = os.getloadavg()
        counter = iter(range(1_000_000))

        def fresh(prefix: str) -> str:
            return f"{prefix}-{next(counter)}"

        def run_client() -> None:
            q = fresh("client")
            record("client produce", client_produce(srv.url, q, n, args.batch))
            record("client consume", client_consume(srv.url, q, n))

        def run_spark(master: str) -> None:
            spark = session(master)
            try:
                warm = fresh("warm")
                spark_produce(spark, srv.url, warm, 1000, args.batch, cores(master))
                spark_consume(spark, srv.url, warm, tmp / fresh("ck"), args.per_trigger)
                q = fresh("spark")
                record(f"spark produce {master}", spark_produce(spark, srv.url, q, n, args.batch, cores(master)))
                record(f"spark consume {master}", spark_consume(spark, srv.url, q, tmp / fresh("ck"),
                                                                args.per_trigger))
            finally:
                spark.stop()

        steps: list[Callable[[], None]] = [run_client, *[lambda m=m: run_spark(m) for m in masters]]
        for r in range(args.rounds):
            for step in (steps if r % 2 == 0 else steps[::-1]):
                step()
        load1 = os.getloadavg()

    median = {name: statistics.median(rates) for name, rates in figures.items()}
    print(f"messages={n} batch={args.batch} per_trigger={args.per_trigger} rounds={args.rounds} "
          f"load average (1/5/15 min) {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f} -> "
          f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f} on {os.cpu_count()} cores")
    for name, rate in median.items():
        runs = ", ".join(f"{x:.0f}" for x in figures[name])
        print(f"{name:24s} {rate:8.0f} msgs/s   (runs: {runs})")
    for master in masters:
        for kind in ("produce", "consume"):
            ratio = median[f"spark {kind} {master}"] / median[f"client {kind}"]
            print(f"{kind} {master}: spark/client = {ratio:.2f}")
    if {"local[1]", "local[2]"} <= set(masters):
        for kind in ("produce", "consume"):
            print(f"{kind}: local[2]/local[1] = "
                  f"{median[f'spark {kind} local[2]'] / median[f'spark {kind} local[1]']:.2f}")


if __name__ == "__main__":
    main()
