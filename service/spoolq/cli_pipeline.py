"""``spoolq pipeline <name> ...``: the Spark pipelines of the optional ``spoolq-spark`` package.

The arguments after ``pipeline`` are handed to ``spoolq_spark.pipelines.main`` unchanged
(``spoolq pipeline --help`` there lists them). Without spoolq-spark (and so pyspark) installed the
command fails with one line saying what to install.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from spoolq.cli_client import CliError


def add_pipeline_command(sub: Any) -> None:
    p = sub.add_parser("pipeline", help="run a Spark pipeline (audit, requeue, replay); needs spoolq-spark",
                       add_help=False, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n"
                              "  spoolq pipeline audit ./data --out /tmp/audit\n"
                              "  spoolq pipeline requeue orders-dlq orders --where \"receive_count < 5\"\n"
                              "  spoolq pipeline replay ./data orders-again --queue orders --since 2026-09-21T10:00"
                              " --dry-run\n"
                              "  spoolq pipeline --help")
    p.add_argument("rest", nargs=argparse.REMAINDER, metavar="NAME ARGS",
                   help="the pipeline (audit, requeue, replay) and its arguments; `spoolq pipeline --help` lists them")
    p.set_defaults(handler=run_pipeline)


def run_pipeline(args: argparse.Namespace) -> int:
    try:
        pipelines = importlib.import_module("spoolq_spark.pipelines.main")
    except ImportError as e:
        raise CliError(f"spoolq pipeline needs the spoolq-spark package with pyspark and pyarrow "
                       f"(pip install -e clients/spark, or pip install spoolq-spark): {e}", 2) from None
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    code: int = pipelines.main(rest)
    return code
