"""The ``replay`` pipeline: send archived messages into a queue again, chosen with Spark SQL.

Input: the archive of acknowledged messages (:func:`spoolq_spark.archive.read_archive`), limited
to some queues' directories, a time range (``since <= <time field> < until``, the field being
``acked_at`` unless told otherwise) and a Spark SQL condition (``--where``) over the columns
``queue, id, body, payload, attributes, sent_at, first_received_at, acked_at, receive_count``.

What is sent: ``payload``, the message body as the queue accepted it when it is JSON (sent byte
for byte); a text body that is not JSON (from another door) as a JSON string; a binary body (no
UTF-8 text in the archive) as the JSON string of its base64 form. With ``envelope``, each message
is instead ``{"replayOf": {"queue": <archived queue>, "id": <original id>}, "payload": <payload>}``.

Output: the chosen messages go to the target through the ``spoolq`` writer (one Spark job; each
task sends its partition in all-or-nothing ``sendbatch`` requests). ``dry_run`` counts and sends
nothing. While the job runs, a progress line gives the tasks done and about how many messages.

Reruns. The archive does not change under a replay, so a rerun chooses the same messages again.
Into a dedup queue (``dedup``), the envelope is on by default and makes the rerun idempotent by
original message id: a replayed message and its rerun are the same JSON, so the rerun collapses
into the copy still pending (the dedup queue's rule: only while that copy is unclaimed), while two
different archived messages with equal bodies stay two. Into any other queue a rerun sends every
chosen message again.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spoolq_spark.archive import read_archive

TIME_FIELDS = ("acked_at", "sent_at", "first_received_at")


def parse_time(text: str) -> float:
    """Epoch seconds from ``1790000000``, ``2026-09-21``, ``2026-09-21T10:00`` or ``...+02:00``
    (no zone: UTC)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (epoch seconds or ISO 8601, e.g. 2026-09-21T10:00)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


def payload_column() -> Column:
    """The JSON text to send for each archived record (see the module docstring)."""
    as_json_string = F.regexp_extract(F.to_json(F.array(F.col("text"))), r"^\[(.*)\]$", 1)
    return (F.when(F.col("body").isNotNull() & F.expr("try_parse_json(body)").isNotNull(), F.col("body"))
            .otherwise(as_json_string))


def chosen(archive: DataFrame, *, where: str | None = None, since: float | None = None,
           until: float | None = None, time_field: str = "acked_at") -> DataFrame:
    """The archived records a replay sends, with ``payload`` beside the archive's columns."""
    if time_field not in TIME_FIELDS:
        raise ValueError(f"time field must be one of {', '.join(TIME_FIELDS)}, got {time_field!r}")
    df = (archive.withColumn("text", F.coalesce(F.col("body"), F.col("body_base64")))
          .withColumn("payload", payload_column()).drop("text"))
    if since is not None:
        df = df.where(F.col(time_field) >= F.lit(since))
    if until is not None:
        df = df.where(F.col(time_field) < F.lit(until))
    if where:
        df = df.where(where)
    return df


def with_envelope(df: DataFrame) -> DataFrame:
    """``payload`` becomes ``{"replayOf": {"queue", "id"}, "payload": <payload>}``, the payload spliced
    in byte for byte (``to_json`` of the head with its closing brace replaced by the member)."""
    head = F.to_json(F.struct(F.struct(F.col("queue"), F.col("id")).alias("replayOf")))
    return (df.withColumn("_head", head)
            .withColumn("payload", F.concat(F.expr("substring(_head, 1, length(_head) - 1)"),
                                            F.lit(',"payload":'), F.col("payload"), F.lit("}")))
            .drop("_head"))


def run_replay(spark: SparkSession, archive_root: str, target: str, *, url: str,
               queues: Sequence[str] | None = None, where: str | None = None, since: float | None = None,
               until: float | None = None, time_field: str = "acked_at", api_key: str | None = None,
               dedup: bool = False, envelope: bool | None = None, dry_run: bool = False,
               batch: int = 500, progress: TextIO | None = sys.stderr) -> dict[str, Any]:
    """Replay; returns ``{"matched", "sent", "target", "envelope", "dry_run"}``."""
    use_envelope = dedup if envelope is None else envelope
    df = chosen(read_archive(spark, archive_root, queues), where=where, since=since, until=until,
                time_field=time_field)
    matched = df.count()  # a bad --where fails here, before anything is sent
    result: dict[str, Any] = {"matched": matched, "sent": 0, "target": target, "envelope": use_envelope,
                              "dry_run": dry_run}
    if dry_run or matched == 0:
        return result
    out = (with_envelope(df) if use_envelope else df).select("payload")
    options = {"url": url, "queue": target, "dedup": str(dedup).lower(), "batchSize": str(batch)}
    if api_key:
        options["apiKey"] = api_key
    with _Progress(spark, matched, progress, f"replay into {target}"):
        out.write.format("spoolq").options(**options).mode("append").save()
    result["sent"] = matched
    return result


class _Progress:
    """A progress line while a Spark job runs: tasks done of the job's tasks, and about how many
    messages that is (tasks are of about equal size)."""

    def __init__(self, spark: SparkSession, total: int, out: TextIO | None, label: str) -> None:
        self.sc = spark.sparkContext
        self.total = total
        self.out = out
        self.label = label
        self.group = f"spoolq-{label}-{time.monotonic_ns()}"
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Progress:
        self.sc.setJobGroup(self.group, self.label)
        if self.out is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        if self.thread.is_alive():
            self.thread.join(5)
        self.sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        if self.out is not None and exc[0] is None:
            self.out.write(f"{chr(13) if self.out.isatty() else ''}{self.label}: sent {self.total:,} messages\n")
            self.out.flush()

    def _run(self) -> None:
        tracker = self.sc.statusTracker()
        while not self.done.wait(2.0):
            done = total = 0
            for job in tracker.getJobIdsForGroup(self.group):
                info = tracker.getJobInfo(job)
                for stage in (info.stageIds if info else []):
                    s = tracker.getStageInfo(stage)
                    if s is not None:
                        done += s.numCompletedTasks
                        total += s.numTasks
            if total:
                self._line(self.total * done // total, done, total)

    def _line(self, messages: int, done: int, tasks: int) -> None:
        assert self.out is not None
        end = "" if self.out.isatty() else "\n"
        start = "\r" if self.out.isatty() else ""
        self.out.write(f"{start}{self.label}: {done}/{tasks} tasks, ~{messages:,} of {self.total:,} messages{end}")
        self.out.flush()
