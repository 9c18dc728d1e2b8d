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
the load average before and after.

CPU per phase (``server_cpu.py``), read from ``/proc`` at the start and end of each timed phase:

* ``service``  the ``spoolq serve`` process tree (gunicorn master and workers)
* ``app``      the rest of this process's tree: this process (the client phases run in it; the
               Spark driver's Python side) and, for Spark, its JVM and the JVM's Python workers
               and planners. Processes that end within the phase count (their parents' reaped
               children time).
* ``machine``  every core's busy time from ``/proc/stat``, whoever used it

Each is printed as CPU-ms per 1,000 messages (service, app) and as cores busy on average over
the phase (service + app, the machine, and the difference: everything else the machine ran),
with the cores' worth of time the service's and app's threads were ready to run but waited for
a core (run-queue wait from ``/proc/<pid>/task/<tid>/schedstat``; threads that end within the
phase are missed, so it is a lower bound).

For consume, the machine's cores can carry at most ``cores / (CPU seconds per message at
local[1])`` messages per second, i.e. ``local[2]`` / ``local[1]`` can be at most ``cores /
(cores busy for service + app at local[1])`` unless a message costs less CPU at ``local[2]``;
the bench prints that ceiling next to the measured ``local[2]`` rate. It is measured on the
machine as loaded: when ``local[1]``'s threads also waited for a core, it was short of CPU and
would keep more cores busy on a machine of its own, so the ceiling is looser than on that
machine (busy plus waiting is no ceiling either: waiting stretches each thread's turn, so it
overstates what the threads would use with cores free). Not a test.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))
sys.path.insert(0, str(CHECKOUT / "bench"))

from server_cpu import machine_busy_cpu, process_table, subtree, thread_waits, tree_cpu, waited_between  # noqa: E402

from spoolq_client import Consumer, Message, SpoolqClient  # noqa: E402
from tests.e2e.spoolq_server import running_server  # noqa: E402

PAYLOAD_TAG = "bench-payload-xxxxxxxxxxxxxxxx"


@dataclass(frozen=True)
class Reading:
    """Wall clock and CPU seconds used so far by the service tree, the app's tree and the machine."""

    wall: float
    service: float
    app: float
    machine: float
    waits: dict[tuple[int, int], int]


@dataclass(frozen=True)
class Phase:
    """One timed phase: how long it took and the CPU seconds each side spent in it."""

    messages: int
    seconds: float
    service: float
    app: float
    machine: float
    #: seconds the service's and the app's threads were ready to run and had no core
    waited: float

    @staticmethod
    def between(messages: int, a: Reading, b: Reading) -> Phase:
        return Phase(messages, b.wall - a.wall, b.service - a.service, b.app - a.app, b.machine - a.machine,
                     waited_between(a.waits, b.waits))

    @property
    def rate(self) -> float:
        return self.messages / self.seconds

    def ms_per_1000(self, cpu_seconds: float) -> float:
        return cpu_seconds * 1e6 / self.messages

    @property
    def cores_ours(self) -> float:
        return (self.service + self.app) / self.seconds

    @property
    def cores_waited(self) -> float:
        return self.waited / self.seconds

    @property
    def cores_machine(self) -> float:
        return self.machine / self.seconds


class Meter:
    """Reads the CPU of the service's process tree, of this process's other descendants and of the machine."""

    def __init__(self, service_pid: int) -> None:
        self.service_pid = service_pid

    def read(self) -> Reading:
        machine = machine_busy_cpu()
        table = process_table()
        wall = time.perf_counter()
        service = subtree(table, self.service_pid)
        app = subtree(table, os.getpid()) - service
        return Reading(wall, tree_cpu(table, service), tree_cpu(table, app), machine, thread_waits(service | app))


def client_produce(meter: Meter, url: str, queue: str, n: int, batch: int) -> Phase:
    with SpoolqClient(url) as c:
        start = meter.read()
        for first in range(0, n, batch):
            c.send_batch(queue, [{"n": i, "tag": PAYLOAD_TAG} for i in range(first, min(n, first + batch))])
        return Phase.between(n, start, meter.read())


def client_consume(meter: Meter, url: str, queue: str, n: int) -> Phase:
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
        start = meter.read()
        consumer.start()
        done.wait()
        while consumer.stats.acked < n:
            time.sleep(0.001)
        end = meter.read()
        consumer.stop()
        consumer.join(30)
        return Phase.between(n, start, end)


def spark_produce(meter: Meter, spark: Any, url: str, queue: str, n: int, batch: int, partitions: int) -> Phase:
    df = spark.range(0, n, 1, partitions).selectExpr(f"named_struct('n', id, 'tag', '{PAYLOAD_TAG}') AS payload")
    start = meter.read()
    df.write.format("spoolq").option("url", url).option("queue", queue).option("batchSize", batch) \
        .mode("append").save()
    return Phase.between(n, start, meter.read())


def spark_consume(meter: Meter, spark: Any, url: str, queue: str, n: int, checkpoint: Path,
                  per_trigger: int) -> Phase:
    start = meter.read()
    q = (spark.readStream.format("spoolq").option("url", url).option("queue", queue)
         .option("maxMessagesPerTrigger", per_trigger).load()
         .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    return Phase.between(n, start, meter.read())


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


def median_of(phases: list[Phase], figure: Callable[[Phase], float]) -> float:
    return statistics.median(figure(p) for p in phases)


def report(phases: dict[str, list[Phase]], masters: list[str]) -> None:
    machine_cores = os.cpu_count() or 1
    print(f"{'phase':24s} {'msgs/s':>8s} {'service':>9s} {'app':>9s} {'cores busy':>10s} {'waiting':>8s} "
          f"{'machine':>8s} {'others':>7s}   runs (msgs/s)")
    print(f"{'':24s} {'':8s} {'CPU-ms/1k':>9s} {'CPU-ms/1k':>9s} {'svc+app':>10s} {'svc+app':>8s} "
          f"{'cores':>8s} {'cores':>7s}")
    for name, runs in phases.items():
        print(f"{name:24s} {median_of(runs, lambda p: p.rate):8.0f} "
              f"{median_of(runs, lambda p: p.ms_per_1000(p.service)):9.0f} "
              f"{median_of(runs, lambda p: p.ms_per_1000(p.app)):9.0f} "
              f"{median_of(runs, lambda p: p.cores_ours):10.2f} "
              f"{median_of(runs, lambda p: p.cores_waited):8.2f} "
              f"{median_of(runs, lambda p: p.cores_machine):8.2f} "
              f"{median_of(runs, lambda p: p.cores_machine - p.cores_ours):7.2f}   "
              + ", ".join(f"{p.rate:.0f}" for p in runs))
    rate = {name: median_of(runs, lambda p: p.rate) for name, runs in phases.items()}
    for master in masters:
        for kind in ("produce", "consume"):
            print(f"{kind} {master}: spark/client = {rate[f'spark {kind} {master}'] / rate[f'client {kind}']:.2f}")
    if {"local[1]", "local[2]"} <= set(masters):
        for kind in ("produce", "consume"):
            print(f"{kind}: local[2]/local[1] = {rate[f'spark {kind} local[2]'] / rate[f'spark {kind} local[1]']:.2f}")
        one, two = phases["spark consume local[1]"], phases["spark consume local[2]"]
        used = median_of(one, lambda p: p.cores_ours)
        wanted = median_of(one, lambda p: p.cores_ours + p.cores_waited)
        cpu_per_msg = median_of(one, lambda p: (p.service + p.app) / p.messages)
        ceiling = machine_cores / cpu_per_msg
        print(f"consume ceiling: at local[1] service+spark kept {used:.2f} of {machine_cores} cores busy, "
              f"so local[2]/local[1] <= {machine_cores}/{used:.2f} = {machine_cores / used:.2f} "
              f"({machine_cores} cores / {cpu_per_msg * 1e6:.0f} CPU-ms per 1,000 messages = {ceiling:.0f} msgs/s); "
              f"local[2] measured {rate['spark consume local[2]']:.0f} msgs/s "
              f"({rate['spark consume local[2]'] / ceiling:.2f} of that ceiling) at "
              f"{median_of(two, lambda p: (p.service + p.app) * 1e6 / p.messages):.0f} CPU-ms per 1,000 messages")
        print(f"consume local[1] was ready to run on {wanted:.2f} cores on average (busy {used:.2f} plus waiting "
              f"for a core {wanted - used:.2f}): the more it waited, the more it was short of CPU, and the looser "
              f"the ceiling above is next to a machine of its own")


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
    phases: dict[str, list[Phase]] = {}

    def record(name: str, phase: Phase) -> None:
        phases.setdefault(name, []).append(phase)

    with tempfile.TemporaryDirectory() as d, running_server(Path(d), keys=False, workers=2, threads=16) as srv:
        assert srv.proc is not None
        meter = Meter(srv.proc.pid)
        tmp = Path(d)
        load0 = os.getloadavg()
        counter = iter(range(1_000_000))

        def fresh(prefix: str) -> str:
            return f"{prefix}-{next(counter)}"

        def run_client() -> None:
            q = fresh("client")
            record("client produce", client_produce(meter, srv.url, q, n, args.batch))
            record("client consume", client_consume(meter, srv.url, q, n))

        def run_spark(master: str) -> None:
            spark = session(master)
            try:
                warm = fresh("warm")
                spark_produce(meter, spark, srv.url, warm, 1000, args.batch, cores(master))
                spark_consume(meter, spark, srv.url, warm, 1000, tmp / fresh("ck"), args.per_trigger)
                q = fresh("spark")
                record(f"spark produce {master}",
                       spark_produce(meter, spark, srv.url, q, n, args.batch, cores(master)))
                record(f"spark consume {master}",
                       spark_consume(meter, spark, srv.url, q, n, tmp / fresh("ck"), args.per_trigger))
            finally:
                spark.stop()

        steps: list[Callable[[], None]] = [run_client, *[lambda m=m: run_spark(m) for m in masters]]
        for r in range(args.rounds):
            for step in (steps if r % 2 == 0 else steps[::-1]):
                step()
        load1 = os.getloadavg()

    print(f"messages={n} batch={args.batch} per_trigger={args.per_trigger} rounds={args.rounds} "
          f"load average (1/5/15 min) {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f} -> "
          f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f} on {os.cpu_count()} cores")
    report(phases, masters)


if __name__ == "__main__":
    main()
