"""Bulk produce: ``df.write.format("spoolq")...save()``.

Columns: ``payload`` (required) is either JSON text (STRING: each value must be one JSON value and
is sent as that value, byte for byte) or a STRUCT / MAP / ARRAY (serialised to JSON; SQL NULL
becomes JSON ``null``). Optional numeric ``delay`` and ``ttl`` columns (seconds) map to the
``sendbatch`` request's ``delay`` and ``ttl`` parameters; the service takes them per request, so
rows are grouped by their ``(delay, ttl)`` pair and each group is sent in its own batches. Any
other column is ignored.

Each Spark task (partition) runs :meth:`SpoolqArrowWriter.write` on an executor: it receives Arrow
record batches, encodes and **validates every row of the partition before sending anything**
(a non-JSON payload string fails the task with the row number, and that partition sends
nothing), then sends ``batchSize`` messages per ``sendbatch`` request. A send is all-or-nothing
on the service; 429/5xx/connection errors are retried honouring ``Retry-After``; any other refusal
(403 key, 400 body) fails the task with the service's message, so the job fails loudly. Rows are
never dropped silently. Partitions of one job are independent: when one partition fails, others
may already have sent theirs (a queue has no transaction spanning requests).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    NumericType,
    StringType,
    StructType,
)

from spoolq_spark.http import Api, SpoolqError
from spoolq_spark.options import OptionError, Options


@dataclass
class SentCount(WriterCommitMessage):
    rows: int


def check_write_schema(schema: StructType) -> tuple[bool, bool, bool]:
    """(payload is text, has delay, has ttl); :class:`OptionError` when the columns do not fit."""
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    payload = fields.get("payload")
    if payload is None:
        raise OptionError(f"spoolq write: the DataFrame needs a 'payload' column (columns: {schema.simpleString()})")
    if not isinstance(payload, StringType | StructType | MapType | ArrayType):
        raise OptionError("spoolq write: column 'payload' must be STRING (JSON text), STRUCT, MAP or ARRAY, "
                          f"got {payload.simpleString()}")
    for name in ("delay", "ttl"):
        t: DataType | None = fields.get(name)
        if t is not None and not isinstance(t, NumericType):
            raise OptionError(f"spoolq write: column {name!r} must be numeric (seconds), got {t.simpleString()}")
    return isinstance(payload, StringType), "delay" in fields, "ttl" in fields


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", "replace")
    return str(value)  # dates, timestamps, decimals


def _seconds(name: str, value: Any, row: int) -> float | None:
    if value is None:
        return None
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise SpoolqError(f"spoolq write: row {row}: {name} must be a finite number of seconds >= 0, got {value!r}")
    return v


class SpoolqArrowWriter(DataSourceArrowWriter):
    def __init__(self, opts: Options, text_payload: bool, has_delay: bool, has_ttl: bool) -> None:
        self.opts = opts
        self.text_payload = text_payload
        self.has_delay = has_delay
        self.has_ttl = has_ttl

    def encode(self, iterator: Iterator[pa.RecordBatch]) -> dict[tuple[float | None, float | None], list[bytes]]:
        groups: dict[tuple[float | None, float | None], list[bytes]] = {}
        row = 0
        for batch in iterator:
            names = [n.lower() for n in batch.schema.names]
            col = batch.column(names.index("payload"))
            if self.text_payload:
                texts: list[str | None] = col.to_pylist()
                encoded = []
                for i, text in enumerate(texts):
                    if text is None:
                        encoded.append(b"null")
                        continue
                    try:
                        json.loads(text, parse_constant=_reject_constant)
                    except ValueError as e:
                        raise SpoolqError(f"spoolq write: row {row + i} of this partition: payload is not JSON "
                                          f"text ({e}): {text[:80]!r}; nothing of this partition was sent") from None
                    encoded.append(text.encode("utf-8"))
            else:
                values = col.to_pylist(maps_as_pydicts="lossy")
                encoded = [json.dumps(v, separators=(",", ":"), default=_default, allow_nan=False).encode()
                           for v in values]
            delays = batch.column(names.index("delay")).to_pylist() if self.has_delay else None
            ttls = batch.column(names.index("ttl")).to_pylist() if self.has_ttl else None
            for i, data in enumerate(encoded):
                key = (_seconds("delay", delays[i], row + i) if delays is not None else None,
                       _seconds("ttl", ttls[i], row + i) if ttls is not None else None)
                if key[1] is not None and key[1] <= 0:
                    raise SpoolqError(f"spoolq write: row {row + i}: ttl must be > 0")
                groups.setdefault(key, []).append(data)
            row += len(encoded)
        return groups

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SentCount:
        groups = self.encode(iterator)
        api = Api(self.opts)
        sent = 0
        try:
            for (delay, ttl), payloads in groups.items():
                for i in range(0, len(payloads), self.opts.batch_size):
                    chunk = payloads[i:i + self.opts.batch_size]
                    api.send_batch(chunk, delay=delay, ttl=ttl)
                    sent += len(chunk)
        finally:
            api.close()
        return SentCount(sent)
