"""spoolq-spark: the ``spoolq`` PySpark data source and the archive helpers.

``from spoolq_spark import SpoolqDataSource; spark.dataSource.register(SpoolqDataSource)``, then
``format("spoolq")``. See :mod:`spoolq_spark.datasource` and ``docs/spark.md``.
"""

from spoolq_spark.archive import ARCHIVE_SCHEMA, read_archive
from spoolq_spark.datasource import SpoolqDataSource
from spoolq_spark.http import SpoolqError
from spoolq_spark.options import OptionError
from spoolq_spark.stream import MESSAGE_SCHEMA

__all__ = ["ARCHIVE_SCHEMA", "MESSAGE_SCHEMA", "OptionError", "SpoolqDataSource", "SpoolqError", "read_archive"]
