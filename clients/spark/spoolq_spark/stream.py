"""Streaming consume: ``spark.readStream.format("spoolq")...load()``, at-least-once, ack after commit.

A claim queue cannot be re-read at an offset, so the reader makes every micro-batch a set of
**batch claims** that the service keeps addressable by token (``claimbatch`` / ``renewbatches`` /
``ackbatches``, see ``docs/compatibility.md``). The replay guarantee comes from Spark's own
checkpoint plus the service; nothing else has to be durable:

* **Offsets** are small dicts ``{"stream": s, "batch": n, "parts": k, "limit": m, "bytes": b,
  "prev": j}``: micro-batch ``n`` of stream ``s`` is ``k`` partitions, partition ``p`` claiming up
  to ``m`` messages (and about ``b`` bytes) under the token ``s-n-p``; ``prev`` is the number of
  partitions of batch ``n - 1``. ``s`` is chosen once, in ``initialOffset``, and carried by every
  later offset, so tokens are unique to one checkpoint. Payloads never go into Spark's offset log.
* ``latestOffset(start, limit)`` (driver host, the query's long-lived source runner process)
  looks, without claiming, whether any message is ready (``poll?ttl=0&limit=1``) and estimates
  how many (``size - claimcount``), then plans the next batch within the limit
  (``ReadMaxRows`` = ``maxMessagesPerTrigger``; ``ReadAllAvailable`` = everything ready; after
  ``prepareForTriggerAvailableNow`` never more than the queue held then, unclaimed). The driver
  plans; it never moves a payload.
* ``partitions(start, end)`` makes ``end.parts`` partitions that carry only their token and
  limits. ``read(partition)`` runs on the executors: ``claimbatch`` claims the partition's
  messages under its token, or, when Spark re-runs a batch (a task retry, a failed batch, a
  restarted driver replaying its offset log), answers the same messages again, row for row, with
  their claims renewed. Consumption therefore grows with executor cores.
* ``commit(end)``: Spark calls it once batch ``end.batch`` is durably in the sink (while it plans
  the next one). The batch's tokens, and those of the batch before it that a driver killed
  during that acknowledgement left claimed, go to the runner's ack thread, which acknowledges
  them (``ackbatches``, ``ACKERS`` requests at once) while Spark runs the next batch; a failed
  acknowledgement fails the query at its next planning step, and ``stop`` waits for the
  acknowledgements already committed.
* **Flush tick.** Spark commits batch ``n`` only when it plans batch ``n + 1``; with no new data
  the last batch would stay unacknowledged until its claims expire. So when nothing is ready
  while a batch is unacknowledged, ``latestOffset`` returns ``{..., "tick": 1}`` once (a second
  time only if a restart left the batch unacknowledged after the first): Spark plans
  one empty batch and commits batch ``n``. An ``availableNow`` run therefore ends with nothing
  claimed, and an idle ``processingTime`` query acknowledges its last batch one trigger later.
* **Renewal.** A thread of the runner process renews the claims of every planned,
  unacknowledged batch every ``renewInterval`` seconds (``renewbatches``), and the offset a
  restarted query resumes from is renewed at once.

Delivery is at least once. A batch re-run while its claims are held sees exactly its first
rows, so a sink that writes each batch once (Spark's file sink, ``foreachBatch`` keyed by batch
id) gets every message once. A message can reach the sink twice only if its claim expired
before its batch was acknowledged (the query was stopped or down for longer than ``claimTtl``,
or a batch ran longer than ``claimTtl`` with renewal failing): it then went back to the queue
and is delivered again in a later batch. Deduplicate by ``id`` in the sink for exactly-once
output in that case too.
"""

from __future__ import annotations

import json
import math
import queue
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from spoolq_spark.http import Api
from spoolq_spark.options import Options

MESSAGE_SCHEMA = "id STRING, queue STRING, payload STRING, sent_at TIMESTAMP, receive_count INT"
ARROW_SCHEMA = pa.schema([("id", pa.string()), ("queue", pa.string()), ("payload", pa.string()),
                          ("sent_at", pa.timestamp("us", tz="UTC")), ("receive_count", pa.int32())])

#: concurrent ``ackbatches`` requests of the source runner (the service spreads them over workers)
ACKERS = 2

#: one message in a partition: (id, payload JSON text, sent_at epoch seconds, receive_count)
Row = tuple[str, str, float, int]
Offset = dict[str, Any]


def to_rows(messages: Sequence[dict[str, Any]]) -> list[Row]:
    return [(m["id"], json.dumps(m["payload"], separators=(",", ":"), ensure_ascii=False),
             float(m.get("sentAt") or 0.0), int(m.get("receiveCount") or 0)) for m in messages]


def record_batch(queue: str, rows: Sequence[Row]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([
        pa.array([r[0] for r in rows], pa.string()),
        pa.array([queue] * len(rows), pa.string()),
        pa.array([r[1] for r in rows], pa.string()),
        pa.array([round(r[2] * 1_000_000) for r in rows], pa.timestamp("us", tz="UTC")),
        pa.array([r[3] for r in rows], pa.int32()),
    ], schema=ARROW_SCHEMA)


def tokens_of(stream: str, batch: int, parts: int) -> list[str]:
    """The batch-claim tokens of micro-batch ``batch``: one per partition."""
    return [f"{stream}-{batch}-{p}" for p in range(parts)]


def plan(opts: Options, total: int) -> tuple[int, int, int]:
    """(partitions, messages per partition, bytes per partition or 0) for a batch of ``total``."""
    parts = max(opts.min_partitions, math.ceil(total / opts.partition_size))
    per_part = max(1, math.ceil(total / parts))
    per_bytes = max(1, opts.max_bytes_per_batch // parts) if opts.max_bytes_per_batch else 0
    return parts, per_part, per_bytes


class _Runner:
    """State of the source runner process (one per query run): never pickled."""

    def __init__(self, opts: Options) -> None:
        self.api = Api(opts)
        self.renew_api = Api(opts)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.unacked: dict[int, list[str]] = {}  # batch -> tokens, planned and not acknowledged yet
        self.acked_upto = -1
        self.budget: int | None = None  # availableNow: the messages ready when the run started
        self.planned: dict[int, int] = {}  # batch -> messages planned, until its acknowledgement counts them
        self.consumed = 0  # messages acknowledged by this run
        self.thread: threading.Thread | None = None
        self.acks: queue.Queue[tuple[list[int], list[str]] | None] = queue.Queue()
        self.ack_apis = [Api(opts) for _ in range(ACKERS)]
        self.ack_pool = ThreadPoolExecutor(ACKERS, thread_name_prefix="spoolq-ack")
        self.ack_error: BaseException | None = None
        self.acker = threading.Thread(target=self._ack_loop, name="spoolq-acks", daemon=True)
        self.acker.start()

    def hold(self, batch: int, tokens: list[str]) -> None:
        with self.lock:
            if batch > self.acked_upto and tokens:
                self.unacked.setdefault(batch, tokens)

    def held_tokens(self) -> list[str]:
        with self.lock:
            return [t for tokens in self.unacked.values() for t in tokens]

    def _ack_loop(self) -> None:
        """Acknowledge committed batches in the order they were committed, ``ACKERS`` requests at
        a time, while Spark already runs the next batch. A failure is kept and fails the query at
        its next planning step (the claims then expire and the messages come back: no loss)."""
        while True:
            job = self.acks.get()
            try:
                if job is None:
                    return
                batches, tokens = job
                if self.ack_error is None:
                    share = math.ceil(len(tokens) / ACKERS)
                    chunks = [tokens[i:i + share] for i in range(0, len(tokens), share)]
                    jobs = zip(self.ack_apis, chunks, strict=False)  # at most ACKERS chunks
                    acked = sum(self.ack_pool.map(lambda j: j[0].ack_batches(j[1]), jobs))
                    with self.lock:
                        if any(b in self.planned for b in batches):  # not a batch an earlier run planned
                            self.consumed += acked
                        for b in batches:
                            self.planned.pop(b, None)
            except BaseException as e:  # kept, and raised in the query's thread
                self.ack_error = e
            finally:
                self.acks.task_done()

    def budget_left(self) -> int | None:
        """availableNow: messages still to plan. Batches not acknowledged yet count as planned;
        if that leaves nothing, wait for the acknowledgements under way, which count what the
        batches really claimed (fewer than planned when others took messages meanwhile)."""
        if self.budget is None:
            return None
        with self.lock:
            left = self.budget - self.consumed - sum(self.planned.values())
        if left <= 0 and self.acks.unfinished_tasks:
            self.acks.join()
            self.check()
            with self.lock:
                left = self.budget - self.consumed - sum(self.planned.values())
        return max(0, left)

    def check(self) -> None:
        if self.ack_error is not None:
            raise self.ack_error

    def close(self, timeout: float) -> None:
        """Finish the acknowledgements already committed (at most ``timeout`` s), then stop."""
        self.stop.set()
        self.acks.put(None)
        self.acker.join(timeout)
        self.ack_pool.shutdown(wait=False)
        for api in (self.api, self.renew_api, *self.ack_apis):
            api.close()


class SpoolqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: Options) -> None:
        self.opts = opts  # nothing else: __init__ runs in several processes and is pickled
        self._live: _Runner | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "_live": None}

    def _runner(self) -> _Runner:
        if self._live is None:
            self._live = _Runner(self.opts)
            self._live.thread = threading.Thread(target=self._renew_loop, args=(self._live,),
                                                 name="spoolq-renew", daemon=True)
            self._live.thread.start()
        return self._live

    def _renew_loop(self, live: _Runner) -> None:
        while not live.stop.wait(self.opts.renew_interval):
            tokens = live.held_tokens()
            if not tokens:
                continue
            try:
                live.renew_api.renew_batches(tokens, self.opts.claim_ttl)
            except Exception as e:  # keep renewing; a lapsed claim only means a redelivery
                print(f"spoolq: renewing the claims of unacknowledged batches failed: {e}", file=sys.stderr)

    def _resume(self, live: _Runner, offset: Offset) -> None:
        """Hold (and renew now) the batches an offset names that this run has not acknowledged:
        after a restart, Spark resumes from its last offset, whose batch may still be unacked."""
        batch = int(offset.get("batch", 0))
        fresh: list[str] = []
        for b, parts in ((batch, int(offset.get("parts", 0))), (batch - 1, int(offset.get("prev", 0)))):
            tokens = tokens_of(str(offset["stream"]), b, parts) if b >= 0 else []
            with live.lock:
                known = b in live.unacked or b <= live.acked_upto
            if tokens and not known:
                live.hold(b, tokens)
                fresh.extend(tokens)
        if fresh:
            live.api.renew_batches(fresh, self.opts.claim_ttl)

    # --- DataSourceStreamReader --------------------------------------------------------

    def initialOffset(self) -> Offset:
        return {"stream": uuid.uuid4().hex[:16], "batch": 0, "parts": 0, "limit": 0, "bytes": 0, "prev": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.opts.max_per_batch)

    def prepareForTriggerAvailableNow(self) -> None:
        live = self._runner()
        live.budget = max(0, live.api.size() - live.api.claim_count())  # exact: ready and delayed

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        live = self._runner()
        live.check()
        self._resume(live, start)
        if isinstance(limit, ReadAllAvailable):
            want = sys.maxsize
        elif isinstance(limit, ReadMaxRows):
            want = limit.max_rows
        else:
            want = self.opts.max_per_batch
        left = live.budget_left()
        if left is not None:
            want = min(want, left)
        total = self._ready_estimate(live, want) if want > 0 else 0
        if total <= 0:
            with live.lock:
                unacked = int(start["batch"]) in live.unacked
            tick = int(start.get("tick", 0))
            if unacked and tick < 2:  # a second tick only after a restart left the batch unacked
                return {**start, "tick": tick + 1}  # an empty batch, so Spark commits the last one
            return start
        parts, per_part, per_bytes = plan(self.opts, total)
        batch = int(start["batch"]) + 1
        with live.lock:
            live.planned[batch] = parts * per_part
        live.hold(batch, tokens_of(str(start["stream"]), batch, parts))
        return {"stream": start["stream"], "batch": batch, "parts": parts, "limit": per_part,
                "bytes": per_bytes, "prev": int(start.get("parts", 0))}

    def _ready_estimate(self, live: _Runner, want: int) -> int:
        """How many of ``want`` messages a batch planned now should claim: 0 unless one is ready."""
        if not live.api.any_ready():
            return 0
        estimate = live.api.size() - live.api.claim_count()  # ready + delayed (+ claims just expired)
        return max(1, min(want, estimate))

    def partitions(self, start: Offset, end: Offset) -> Sequence[InputPartition]:
        if int(end["batch"]) <= int(start["batch"]) or not end.get("parts"):
            return []
        tokens = tokens_of(str(end["stream"]), int(end["batch"]), int(end["parts"]))
        if self._live is not None:
            self._live.hold(int(end["batch"]), tokens)
        limits = (int(end["limit"]), int(end["bytes"]) or None)
        return [InputPartition((token, *limits)) for token in tokens]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        token, limit, max_bytes = partition.value
        api = Api(self.opts)
        try:
            messages = api.claim_batch(token, limit, self.opts.claim_ttl, max_bytes)
        finally:
            api.close()
        yield record_batch(self.opts.queue, to_rows(messages))

    def commit(self, end: Offset) -> None:
        live = self._runner()
        live.check()
        batch = int(end["batch"])
        self._resume(live, end)  # a restarted run: the batch before may have been left unacked
        with live.lock:
            done = sorted(b for b in live.unacked if b <= batch)
            tokens = [t for b in done for t in live.unacked.pop(b)]
            live.acked_upto = max(live.acked_upto, batch)
        if tokens:
            live.acks.put((done, tokens))  # acknowledged by the runner's ack thread, in commit order

    def stop(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.close(self.opts.retry_timeout + self.opts.timeout)
