"""Command line of the pipelines: ``spoolq pipeline audit|requeue|replay ...`` and ``spark-submit main.py ...``.

Under ``spark-submit`` the session takes its master and configuration from spark-submit; run
directly (``spoolq pipeline``, ``python -m spoolq_spark.pipelines``) it starts ``local[*]`` unless
``--master`` says otherwise. Python workers run this interpreter unless ``PYSPARK_PYTHON`` is set.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any


def build_parser(prog: str = "spoolq pipeline") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="spoolq Spark pipelines", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  spoolq pipeline audit ./data --out /tmp/audit\n"
               "  spoolq pipeline requeue orders-dlq orders --where \"receive_count < 5\"\n"
               "  spoolq pipeline replay ./data orders-again --queue orders --since 2026-09-21T10:00 --dry-run")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    sub = parser.add_subparsers(dest="pipeline", metavar="PIPELINE", required=True)

    a = sub.add_parser("audit", help="per queue and hour figures over the archive: Parquet + HTML report")
    a.add_argument("archive", help="spoolq data root or its archive/ directory (any Hadoop path)")
    a.add_argument("--out", required=True, help="output directory (audit.parquet/, report.html)")
    a.add_argument("--queue", action="append", dest="queues",
                   help="only this queue, as `spoolq queues` lists it (repeatable)")
    a.add_argument("--dead-letter", action="append", default=[], metavar="DLQ=SOURCE",
                   help="count records of DLQ as dead-lettered from SOURCE (repeatable)")
    a.add_argument("--title", default="spoolq audit", help="the report's title")

    r = sub.add_parser("requeue", help="send the messages of a queue that match --where to another queue")
    r.add_argument("source", help="queue to read (claimed, and acknowledged once the target has them)")
    r.add_argument("target", help="queue the chosen messages are sent to")
    r.add_argument("--where", required=True, help="Spark SQL condition over id, queue, payload, sent_at, "
                   "receive_count, e.g. \"get_json_object(payload, '$.kind') = 'retry'\"")
    r.add_argument("--url", default=os.environ.get("SPOOLQ_URL", "http://127.0.0.1:8480"),
                   help="the spoolq service (default $SPOOLQ_URL or http://127.0.0.1:8480)")
    r.add_argument("--api-key", default=os.environ.get("SPOOLQ_API_KEY"), help="API key (default $SPOOLQ_API_KEY)")
    r.add_argument("--dedup", action="store_true", help="use the /dedupq/1 door")
    r.add_argument("--batch", type=int, default=1000, help="messages claimed per round (1..1000)")
    r.add_argument("--claim-ttl", type=int, default=300, help="seconds a claimed message stays with this job")
    r.add_argument("--limit", type=int, help="look at no more than this many messages")

    p = sub.add_parser("replay", help="send archived messages chosen by queue, time and --where into a queue")
    p.add_argument("archive", help="spoolq data root or its archive/ directory (any Hadoop path)")
    p.add_argument("target", help="queue the chosen messages are sent to")
    p.add_argument("--queue", action="append", dest="queues", help="only this archived queue (repeatable)")
    p.add_argument("--where", help="Spark SQL condition over queue, id, body, payload, attributes, sent_at, "
                   "first_received_at, acked_at, receive_count, e.g. \"get_json_object(payload, '$.kind') = 'x'\"")
    p.add_argument("--since", help="only messages whose --time-field is at or after this (epoch seconds or ISO "
                   "8601; no zone: UTC)")
    p.add_argument("--until", help="only messages whose --time-field is before this")
    p.add_argument("--time-field", default="acked_at", choices=["acked_at", "sent_at", "first_received_at"],
                   help="the time --since/--until apply to (default acked_at)")
    p.add_argument("--dry-run", action="store_true", help="count the chosen messages; send nothing")
    p.add_argument("--envelope", action=argparse.BooleanOptionalAction, default=None,
                   help="send {\"replayOf\": {queue, id}, \"payload\": ...} instead of the payload alone "
                   "(default: on with --dedup, where it makes a rerun collapse by original id)")
    p.add_argument("--url", default=os.environ.get("SPOOLQ_URL", "http://127.0.0.1:8480"),
                   help="the spoolq service (default $SPOOLQ_URL or http://127.0.0.1:8480)")
    p.add_argument("--api-key", default=os.environ.get("SPOOLQ_API_KEY"), help="API key (default $SPOOLQ_API_KEY)")
    p.add_argument("--dedup", action="store_true", help="the target is a dedup queue (the /dedupq/1 door)")
    p.add_argument("--batch", type=int, default=500, help="messages per sendbatch request (1..10000)")
    return parser


def session(master: str | None, name: str) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from spoolq_spark import SpoolqDataSource

    builder = SparkSession.builder.appName(name)
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit
        builder = builder.master("local[*]").config("spark.ui.enabled", "false")
    spark = builder.config("spark.sql.session.timeZone", "UTC").getOrCreate()
    spark.dataSource.register(SpoolqDataSource)
    return spark


def java_runtime() -> str | None:
    """The ``java`` Spark will start: ``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        return java if os.access(java, os.X_OK) else None
    return shutil.which("java")


def main(argv: Sequence[str] | None = None, prog: str = "spoolq pipeline") -> int:
    args = build_parser(prog).parse_args(argv)
    dead_letter: dict[str, str] = {}
    if args.pipeline == "audit":
        for pair in args.dead_letter:
            dlq, sep, src = pair.partition("=")
            if not sep or not dlq or not src:
                print(f"{prog}: --dead-letter wants DLQ=SOURCE, got {pair!r}", file=sys.stderr)
                return 2
            dead_letter[dlq] = src
    if args.pipeline == "requeue" and not 1 <= args.batch <= 1000:
        print(f"{prog}: --batch must be between 1 and 1000", file=sys.stderr)
        return 2
    times: dict[str, float | None] = {"since": None, "until": None}
    if args.pipeline == "replay":
        from spoolq_spark.pipelines.replay import parse_time

        if not 1 <= args.batch <= 10_000:
            print(f"{prog}: --batch must be between 1 and 10000", file=sys.stderr)
            return 2
        for name in times:
            raw = getattr(args, name)
            try:
                times[name] = None if raw is None else parse_time(raw)
            except ValueError as e:
                print(f"{prog}: --{name}: {e}", file=sys.stderr)
                return 2
    if "PYSPARK_GATEWAY_PORT" not in os.environ and java_runtime() is None:  # not under spark-submit
        print(f"{prog}: Spark runs on a Java runtime and none was found: install Java 17 or later "
              "(java on PATH, or JAVA_HOME)", file=sys.stderr)
        return 2
    from pyspark.errors import AnalysisException, PySparkRuntimeError

    try:
        spark = session(args.master, f"spoolq-{args.pipeline}")
    except PySparkRuntimeError as e:  # a Java runtime that does not start
        print(f"{prog}: Spark could not start: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        return 2

    from spoolq_spark.archive import NoArchive

    try:
        if args.pipeline == "audit":
            from spoolq_spark.pipelines.audit import run_audit

            result = run_audit(spark, args.archive, args.out, queues=args.queues, dead_letter=dead_letter,
                               title=args.title)
        elif args.pipeline == "requeue":
            from spoolq_spark.pipelines.requeue import run_requeue

            result = run_requeue(spark, url=args.url, source=args.source, target=args.target, where=args.where,
                                 api_key=args.api_key, dedup=args.dedup, batch=args.batch,
                                 claim_ttl=args.claim_ttl, limit=args.limit)
        else:
            from spoolq_spark.pipelines.replay import run_replay

            result = run_replay(spark, args.archive, args.target, url=args.url, queues=args.queues,
                                where=args.where, since=times["since"], until=times["until"],
                                time_field=args.time_field, api_key=args.api_key, dedup=args.dedup,
                                envelope=args.envelope, dry_run=args.dry_run, batch=args.batch)
    except NoArchive as e:  # nothing archived: how to turn the archive on
        print(f"{prog} {args.pipeline}: {e}", file=sys.stderr)
        return 2
    except AnalysisException as e:  # a bad --where, a missing column or path: the first line says which
        print(f"{prog} {args.pipeline}: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
