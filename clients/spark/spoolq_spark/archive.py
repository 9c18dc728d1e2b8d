"""The archive of acknowledged messages, read with Spark's built-in JSON reader.

Queues with ``archive`` enabled keep every acknowledged message in JSON-lines segments under
``<data root>/archive/<queue dir>/<segment>.jsonl`` (:func:`archive_dir`: the queue's name with
``+`` for ``:``). One line::

    {"queue", "id", "body" (UTF-8 text or null), "body_base64", "attributes", "sent_at",
     "first_received_at", "acked_at", "receive_count"}      (times: epoch seconds)

:data:`ARCHIVE_SCHEMA` is that record as a Spark DDL schema (``attributes`` is kept as its JSON
text). Giving the reader an explicit schema skips inference (a full extra pass) and makes types
stable across segments; Spark's JSON reader is several times faster than a Python data source
over the same files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession

ARCHIVE_SCHEMA = ("queue STRING, id STRING, body STRING, body_base64 STRING, attributes STRING, "
                  "sent_at DOUBLE, first_received_at DOUBLE, acked_at DOUBLE, receive_count INT")


def archive_dir(queue: str) -> str:
    """The directory of a queue's segments under ``archive/``: its name (names over 200 characters
    shortened with a hash, as the store does) with ``+`` for ``:``, so Hadoop can list it."""
    name = queue if len(queue) <= 200 else queue[:150] + "~" + hashlib.sha256(queue.encode()).hexdigest()[:32]
    return name.replace(":", "+")


def archive_paths(root: str, queues: Sequence[str] | None = None) -> list[str]:
    """Glob paths of the segments under a data root (or an ``archive/`` directory itself);
    ``queues`` are queue names as ``spoolq queues`` lists them (store names)."""
    base = root.rstrip("/")
    if os.path.basename(base) != "archive":
        base = f"{base}/archive"
    if not queues:
        return [f"{base}/*/*.jsonl"]
    return [f"{base}/{archive_dir(q)}/*.jsonl" for q in queues]


class NoArchive(ValueError):
    """No archive segment under the root (or for the queues named): no queue keeps its archive."""


def no_archive_sentence(root: str, queues: Sequence[str] | None = None) -> str:
    whose = f"none of the queues {', '.join(queues)}" if queues else "no queue"
    return (f"{whose} under {root} has its archive on, so there is nothing to read: turn it on with "
            "`spoolq settings QUEUE --archive on` (or `archive: true` for the queue in the config file's "
            "queues:, or in queue_defaults for new queues), and messages acknowledged from then on are kept")


def read_archive(spark: SparkSession, root: str, queues: Sequence[str] | None = None) -> DataFrame:
    """The archived messages under ``root`` (a spoolq data root or its ``archive/`` directory).

    ``queues`` limits the read to those queues (store names: ``jobs``, ``mq:mail``,
    ``sqs:123456789012:us-east-1:orders``). Paths may be any Hadoop URI (``hdfs://``, ``s3a://``).
    :class:`NoArchive` (a sentence saying how to turn the archive on) when there is no segment."""
    from pyspark.errors import AnalysisException

    paths = archive_paths(root, queues)
    segments = _segments(spark, paths)
    if segments == []:  # asked first: Spark logs a Java stack trace before its PATH_NOT_FOUND
        raise NoArchive(no_archive_sentence(root, queues))
    try:
        # the segments themselves, not the glob: given one glob path, Spark looks for a streaming
        # sink's metadata under it and logs a FileNotFoundException's stack trace on success
        return spark.read.schema(ARCHIVE_SCHEMA).option("mode", "FAILFAST").json(segments or paths)
    except AnalysisException as e:
        if "PATH_NOT_FOUND" not in str(e) and "Path does not exist" not in str(e):
            raise
        raise NoArchive(no_archive_sentence(root, queues)) from None


def _segments(spark: SparkSession, paths: Sequence[str]) -> list[str] | None:
    """The files ``paths`` (Hadoop globs, any file system Spark reads) match, sorted; None when that
    cannot be asked (Spark Connect: then the globs are read, and Spark's PATH_NOT_FOUND translated)."""
    try:
        jvm = spark.sparkContext._jvm
        conf = spark.sparkContext._jsc.hadoopConfiguration()
    except Exception:  # no JVM in this process (Spark Connect)
        return None
    if jvm is None:
        return None
    found: list[str] = []
    for pattern in paths:
        path = jvm.org.apache.hadoop.fs.Path(pattern)
        for status in path.getFileSystem(conf).globStatus(path) or []:
            found.append(str(status.getPath().toString()))
    return sorted(found)
