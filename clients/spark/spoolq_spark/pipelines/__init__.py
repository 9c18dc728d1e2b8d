"""Runnable Spark jobs over spoolq: ``audit`` (archive -> per queue and hour figures) and ``requeue``.

Run them with ``spoolq pipeline <name> ...`` (local mode by default), ``python -m
spoolq_spark.pipelines <name> ...`` or ``spark-submit <path of main.py> <name> ...`` on a cluster.
"""
