"""``SpoolqDataSource``: the ``spoolq`` format for ``spark.read``, ``spark.readStream`` and ``df.write``.

Register it once per SparkSession::

    from spoolq_spark import SpoolqDataSource
    spark.dataSource.register(SpoolqDataSource)

* ``df.write.format("spoolq").option("queue", Q).mode("append").save()``: bulk produce
  (:mod:`spoolq_spark.writer`);
* ``spark.readStream.format("spoolq").option("queue", Q).load()`` (with Spark's ``checkpointLocation``):
  consume, at-least-once, acknowledged after Spark commits each batch (:mod:`spoolq_spark.stream`);
* ``spark.read.format("spoolq").option("queue", Q).load()``: a peek snapshot (:mod:`spoolq_spark.batch`).

Options are checked when the query is planned (:mod:`spoolq_spark.options`); each mode also
checks once that the service answers ``/healthz``, so a wrong URL fails at planning (a stream:
when it starts).
Every method here runs in Python workers Spark starts on the driver host, not in the user's
process, and everything is pickled: nothing here holds a connection.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, DataSourceWriter
from pyspark.sql.types import StructType

from spoolq_spark.batch import SpoolqPeekReader
from spoolq_spark.http import Api
from spoolq_spark.options import OptionError, check_common, parse
from spoolq_spark.stream import MESSAGE_SCHEMA, SpoolqStreamReader
from spoolq_spark.writer import SpoolqArrowWriter, check_write_schema


def _probe(api: Api) -> None:
    try:
        api.health()
    finally:
        api.close()


class SpoolqDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "spoolq"

    def schema(self) -> str:
        # the first call Spark makes for reads (``load()``): check what every mode needs now
        check_common(self.options)
        return MESSAGE_SCHEMA

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise OptionError("spoolq write: only mode('append') is supported (a queue cannot be overwritten)")
        opts = parse(self.options, "write")
        text, has_delay, has_ttl = check_write_schema(schema)
        _probe(Api(opts))
        return SpoolqArrowWriter(opts, text, has_delay, has_ttl)

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = parse(self.options, "read")
        _probe(Api(opts))
        return SpoolqPeekReader(opts)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = parse(self.options, "stream")
        _probe(Api(opts))  # runs when the query starts: a wrong URL fails it at once, not after retries
        return SpoolqStreamReader(opts)
