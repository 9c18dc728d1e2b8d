"""``spoolq pipeline <name> ...``: the pipelines as a command of ``spoolq``, found through the
``spoolq.commands`` entry point of this distribution (the server's ``spoolq`` never imports it).

The arguments after ``pipeline`` go to :func:`spoolq_spark.pipelines.main.main` unchanged (``spoolq
pipeline --help`` lists them); pyspark is imported only when a pipeline runs. Without the server,
``spoolq-spark-pipeline`` and ``python -m spoolq_spark.pipelines`` take the same arguments.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


class PipelineCommand:
    """The ``pipeline`` command: ``name``, ``summary`` and ``main(argv, prog)`` as ``spoolq`` expects."""

    name = "pipeline"
    summary = "run a Spark pipeline (audit, requeue, replay)"

    def main(self, argv: Sequence[str], prog: str = "spoolq pipeline") -> int:
        try:
            from spoolq_spark.pipelines.main import main
        except ImportError as e:  # a broken install: pyspark and pyarrow are dependencies of spoolq-spark
            print(f"{prog}: spoolq-spark cannot load ({e}): reinstall spoolq-spark with its dependencies "
                  "(pyspark, pyarrow)", file=sys.stderr)
            return 2
        return main(list(argv), prog)


PIPELINE = PipelineCommand()
