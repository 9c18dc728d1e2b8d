"""Streaming consume: ``spark.readStream.format("spoolq")...load()``, at-least-once, ack after commit.

A claim queue cannot be re-read at an offset, so the reader turns claims into a replayable log:

* **Offsets** are small dicts ``{"seq": n}`` (plus ``"tick": k`` for a flush tick, below): batch
  ``n`` is the spool file ``<spoolDir>/<n:012d>.json``. Payloads never go into Spark's offset log.
* ``latestOffset(start, limit)`` (driver host, the query's long-lived source runner process):
  if the spool of ``start.seq + 1`` exists (written before a crash), it is reused as is, so a
  batch replays exactly. Otherwise it polls (``meta=true``, claim ``claimTtl``, ``POLLERS``
  requests at a time) up to the limit
  (``ReadMaxRows`` = ``maxMessagesPerBatch``; ``ReadAllAvailable`` = until the queue is empty;
  after ``prepareForTriggerAvailableNow`` never more than the queue held at that moment), writes
  the claimed messages to the spool durably (temp file, fsync, rename, fsync dir) and only then
  returns ``{"seq": n + 1}``.
* ``partitions(start, end)`` reads the spools ``start.seq+1 .. end.seq`` and puts the messages
  themselves into the ``InputPartition``s (``partitionSize`` each), so executors need no access
  to the spool and a replayed batch sees exactly the same rows.
* ``commit(end)``: Spark calls it once the batch is durably in the sink (while it plans the next
  batch). It records ``end.seq`` in ``<spoolDir>/committed``, acknowledges every message of the
  spools up to ``end.seq`` and deletes them. If the ack fails the query fails; on restart the
  spools at or below ``committed`` are acknowledged first.
* **Flush tick.** Spark commits batch ``n`` only when it plans batch ``n + 1``; with no new data
  the last batch would stay unacknowledged (its claims expire and the messages are delivered
  again). So when a poll finds nothing while an uncommitted spool exists, ``latestOffset``
  returns ``{"seq": n, "tick": k + 1}`` once: Spark plans one empty batch and commits batch ``n``.
  An ``availableNow`` run therefore ends with nothing claimed, and an idle ``processingTime``
  query acknowledges its last batch one trigger later.
* **Renewal.** A daemon thread in the runner process renews the claims of every spooled,
  uncommitted message every ``renewInterval`` seconds (``renew`` re-claims a message whose claim
  lapsed if it is still unclaimed), and once at start-up before the first poll.

Sinks see every message at least once: a batch that fails in the sink is replayed from its spool
with the same rows; a crash between writing a spool and Spark logging its offset replays that
spool as the next batch. Deduplicate by ``id`` in the sink for exactly-once output.

The ``spoolDir`` must be on durable storage that the driver host sees as a POSIX path, and must
belong to one query (its ``meta.json`` pins the URL and queue).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
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

from spoolq_spark.http import Api, SpoolqError
from spoolq_spark.options import Options

MESSAGE_SCHEMA = "id STRING, queue STRING, payload STRING, sent_at TIMESTAMP, receive_count INT"
ARROW_SCHEMA = pa.schema([("id", pa.string()), ("queue", pa.string()), ("payload", pa.string()),
                          ("sent_at", pa.timestamp("us", tz="UTC")), ("receive_count", pa.int32())])
#: concurrent poll (and ack) requests of the source runner
POLLERS = 4
_SPOOL_RE = re.compile(r"^(\d{12})\.json$")

#: one message in a spool or a partition: (id, payload JSON text, sent_at epoch seconds, receive_count)
Row = tuple[str, str, float, int]


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


class Spool:
    """The claimed batches of one query on disk: ``<seq:012d>.json``, ``committed``, ``meta.json``."""

    def __init__(self, path: str, opts: Options) -> None:
        self.path = path
        os.makedirs(path, exist_ok=True)
        meta = {"url": opts.url, "queue": opts.queue, "dedup": opts.dedup}
        meta_path = os.path.join(path, "meta.json")
        if os.path.exists(meta_path):
            with open(meta_path) as f:
                found = json.load(f)
            if found != meta:
                raise SpoolqError(f"spoolq: spoolDir {path} belongs to another stream ({found}); "
                                  "give each query its own spoolDir next to its checkpoint")
        else:
            self._atomic_write("meta.json", json.dumps(meta).encode())

    def file(self, seq: int) -> str:
        return os.path.join(self.path, f"{seq:012d}.json")

    def seqs(self) -> list[int]:
        return sorted(int(m.group(1)) for n in os.listdir(self.path) if (m := _SPOOL_RE.match(n)))

    def exists(self, seq: int) -> bool:
        return os.path.exists(self.file(seq))

    def read(self, seq: int) -> list[Row]:
        try:
            with open(self.file(seq), "rb") as f:
                return [tuple(r) for r in json.load(f)["messages"]]  # type: ignore[misc]
        except FileNotFoundError:
            raise SpoolqError(f"spoolq: the spool of batch {seq} is missing from {self.path}: that batch "
                              "cannot be replayed (was the spoolDir changed or cleaned?)") from None

    def write(self, seq: int, rows: list[Row]) -> None:
        self._atomic_write(os.path.basename(self.file(seq)),
                           json.dumps({"seq": seq, "messages": rows}, separators=(",", ":")).encode())

    def committed(self) -> int:
        try:
            with open(os.path.join(self.path, "committed")) as f:
                return int(f.read().strip() or 0)
        except FileNotFoundError:
            return 0

    def set_committed(self, seq: int) -> None:
        if seq > self.committed():
            self._atomic_write("committed", str(seq).encode())

    def remove(self, seq: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.file(seq))

    def _atomic_write(self, name: str, data: bytes) -> None:
        tmp = os.path.join(self.path, f".{name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(self.path, name))
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class SpoolqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: Options) -> None:
        self.opts = opts  # nothing else: __init__ runs in several processes and is pickled
        self._live: dict[str, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "_live": None}

    # --- runner-process state (created on first use, never pickled) ---------------------

    def _state(self) -> dict[str, Any]:
        if self._live is None:
            spool = Spool(self.opts.spool_dir or "", self.opts)
            api = Api(self.opts)
            live: dict[str, Any] = {"spool": spool, "api": api, "renew_api": Api(self.opts), "lock": threading.Lock(),
                                    "stop": threading.Event(), "budget": None,
                                    "pool": ThreadPoolExecutor(POLLERS, thread_name_prefix="spoolq-poll")}
            self._live = live
            self._ack_committed()
            self._renew_spooled()
            thread = threading.Thread(target=self._renew_loop, name="spoolq-renew", daemon=True)
            live["thread"] = thread
            thread.start()
        return self._live

    def _ack_committed(self) -> None:
        live = self._live
        assert live is not None
        spool: Spool = live["spool"]
        upto = spool.committed()
        with live["lock"]:
            for seq in spool.seqs():
                if seq > upto:
                    break
                ids = [r[0] for r in spool.read(seq)]
                chunks = [ids[i:i + 1000] for i in range(0, len(ids), 1000)]
                list(live["pool"].map(live["api"].ack, chunks))
                spool.remove(seq)

    def _renew_spooled(self) -> None:
        live = self._live
        assert live is not None
        spool: Spool = live["spool"]
        with live["lock"]:
            ids = [r[0] for seq in spool.seqs() if seq > spool.committed() for r in spool.read(seq)]
        if ids:
            live["renew_api"].renew(ids, self.opts.claim_ttl)

    def _renew_loop(self) -> None:
        live = self._live
        assert live is not None
        while not live["stop"].wait(self.opts.renew_interval):
            try:
                self._renew_spooled()
            except Exception as e:  # keep renewing; a lapsed claim only means a redelivery
                print(f"spoolq: renewing spooled claims failed: {e}", file=sys.stderr)

    # --- DataSourceStreamReader --------------------------------------------------------

    def initialOffset(self) -> dict[str, int]:
        return {"seq": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.opts.max_per_batch)

    def prepareForTriggerAvailableNow(self) -> None:
        live = self._state()
        live["budget"] = live["api"].size()

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        live = self._state()
        spool: Spool = live["spool"]
        nxt = int(start["seq"]) + 1
        if spool.exists(nxt):
            return {"seq": nxt}  # claimed before a restart: replay that spool
        want = limit.max_rows if isinstance(limit, ReadMaxRows) else sys.maxsize
        if not isinstance(limit, ReadMaxRows | ReadAllAvailable):
            want = self.opts.max_per_batch
        if live["budget"] is not None:
            want = min(want, live["budget"])
        rows = self._claim(live, want)
        if rows:
            with live["lock"]:
                spool.write(nxt, rows)
            if live["budget"] is not None:
                live["budget"] -= len(rows)
            return {"seq": nxt}
        uncommitted = any(seq <= start["seq"] for seq in spool.seqs())
        if uncommitted and "tick" not in start:
            return {"seq": int(start["seq"]), "tick": 1}  # an empty batch, so Spark commits the last one
        return start

    def _claim(self, live: dict[str, Any], want: int) -> list[Row]:
        """Poll up to ``want`` messages, ``POLLERS`` requests at a time, until the queue runs dry."""
        rows: list[Row] = []
        api: Api = live["api"]
        pool: ThreadPoolExecutor = live["pool"]
        while len(rows) < want:
            sizes: list[int] = []
            left = want - len(rows)
            while left > 0 and len(sizes) < POLLERS:
                sizes.append(min(self.opts.poll_size, left))
                left -= sizes[-1]
            batches = list(pool.map(lambda n: api.poll(n, self.opts.claim_ttl), sizes))
            for got in batches:
                rows.extend(to_rows(got))
            if any(len(got) < n for got, n in zip(batches, sizes, strict=True)):
                break  # the queue had no more unclaimed messages
        return rows

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        spool = Spool(self.opts.spool_dir or "", self.opts)
        out: list[InputPartition] = []
        size = self.opts.partition_size
        for seq in range(int(start["seq"]) + 1, int(end["seq"]) + 1):
            rows = spool.read(seq)
            out.extend(InputPartition(rows[i:i + size]) for i in range(0, len(rows), size))
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield record_batch(self.opts.queue, partition.value)

    def commit(self, end: dict[str, int]) -> None:
        live = self._state()
        live["spool"].set_committed(int(end["seq"]))
        self._ack_committed()

    def stop(self) -> None:
        if self._live is not None:
            self._live["stop"].set()
            self._live["api"].close()
            self._live["renew_api"].close()
            self._live["pool"].shutdown(wait=False)
            self._live = None
