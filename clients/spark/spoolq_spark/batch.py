"""Batch read: ``spark.read.format("spoolq")...load()`` is a snapshot through ``peek``.

One partition, one ``peek?limit=<limit>&meta=true`` request from an executor: up to ``limit``
(at most 5000) messages as the queue holds them now, claimed ones included, with no claim, no
ack and no other side effect. ``receive_count`` is the number of deliveries so far.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from spoolq_spark.http import Api
from spoolq_spark.options import Options
from spoolq_spark.stream import record_batch, to_rows


class SpoolqPeekReader(DataSourceReader):
    def __init__(self, opts: Options) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        api = Api(self.opts)
        try:
            rows = to_rows(api.peek(self.opts.limit))
        finally:
            api.close()
        yield record_batch(self.opts.queue, rows)
