"""The segment schema (:data:`SEGMENT_SCHEMA`: one row per record of a log segment,
the columns of ``kproto spark segments``) and its Arrow arrays over
:func:`kproto.records.decode_arrow_columns` buffers, zero copy.

The record-level columns (``offset``, ``key``, ``value``, ``headers`` and the
millisecond timestamps) are wrapped with ``pa.Array.from_buffers``: pyarrow keeps a
reference to each buffer, nothing is copied or converted element by element. The
batch-level columns (one value per batch, repeated for its records) are built from
one value per batch and run-end decoded. Timestamps become Spark's microseconds
(one vectorised multiply; values beyond its range are null, as before).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kproto.records import ArrowColumns

__all__ = [
    "HEADERS_TYPE",
    "SEGMENT_ARROW_SCHEMA",
    "SEGMENT_SCHEMA",
    "arrow_columns_to_batch",
    "record_arrays",
    "record_key",
    "spark_timestamps",
]

#: Spark's own Kafka source uses this for headers; so do we.
HEADERS_TYPE: Final = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)

#: Rows of ``read_log_segments``. Every column is nullable: error rows carry only
#: ``topic``, ``partition``, ``base_offset`` (when readable), ``file`` and ``error``.
SEGMENT_SCHEMA: Final = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestamp_type", IntegerType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("headers", HEADERS_TYPE),
        StructField("base_offset", LongType()),
        StructField("partition_leader_epoch", IntegerType()),
        StructField("magic", ByteType()),
        StructField("compression", StringType()),
        StructField("is_transactional", BooleanType()),
        StructField("is_control", BooleanType()),
        StructField("producer_id", LongType()),
        StructField("producer_epoch", ShortType()),
        StructField("base_sequence", IntegerType()),
        StructField("file", StringType()),
        StructField("error", StringType()),
    ]
)

#: The Arrow schema Spark requires of every batch the reader yields.
SEGMENT_ARROW_SCHEMA: Final = to_arrow_schema(SEGMENT_SCHEMA, timezone="UTC")

_TYPES: Final = {f.name: f.type for f in SEGMENT_ARROW_SCHEMA}
# Kafka timestamps are ms; Spark's are µs. Values beyond this would overflow int64 µs.
_MAX_MS: Final = (2**63 - 1) // 1000
_HEADERS: Final = _TYPES["headers"]
_HEADER_FIELDS: Final = (_HEADERS.value_type.field(0), _HEADERS.value_type.field(1))
# Batch-level columns: the BatchHead field each comes from.
_BATCH_LEVEL: Final[dict[str, Callable[[Any], Any]]] = {
    "timestamp_type": lambda h: int(h.timestamp_type),
    "base_offset": lambda h: h.base_offset,
    "partition_leader_epoch": lambda h: h.partition_leader_epoch,
    "magic": lambda h: h.magic,
    "compression": lambda h: h.compression.label,
    "is_transactional": lambda h: h.is_transactional,
    "is_control": lambda h: h.is_control,
    "producer_id": lambda h: h.producer_id,
    "producer_epoch": lambda h: h.producer_epoch,
    "base_sequence": lambda h: h.base_sequence,
}


def spark_timestamps(ms: list[int] | pa.Array) -> pa.Array:
    """Kafka's ms (a list or an int64 array) as Spark timestamps (µs)."""
    arr = ms if isinstance(ms, pa.Array) else pa.array(ms, pa.int64())
    try:
        us = pc.multiply_checked(arr, 1000)
    except pa.ArrowInvalid:
        # Out-of-range timestamps cannot be represented by Spark: null them.
        ok = pc.less_equal(pc.abs(arr), _MAX_MS)
        us = pc.multiply(pc.if_else(ok, arr, pa.scalar(None, pa.int64())), 1000)
    return us.cast(_TYPES["timestamp"])


def _buf(b: Any) -> pa.Buffer | None:
    return None if b is None else pa.py_buffer(b)


def _binary(
    t: pa.DataType, n: int, validity: Any, offsets: Any, data: Any, nulls: int
) -> pa.Array:
    return pa.Array.from_buffers(
        t, n, [_buf(validity), _buf(offsets), _buf(data)], null_count=nulls
    )


def record_arrays(cols: ArrowColumns) -> dict[str, pa.Array]:
    """``offset`` (int64), ``timestamp`` (Spark's timestamp, µs, UTC), ``key``,
    ``value`` (binary) and ``headers`` (``list<struct<key: string, value:
    binary>>``) of :data:`~kproto.spark.SEGMENT_ARROW_SCHEMA`'s types, over the
    buffers of ``cols`` (no copy but the timestamps' conversion to µs)."""
    n = cols.records
    hn = cols.header_count
    offset = pa.Array.from_buffers(pa.int64(), n, [None, _buf(cols.offset)])
    ms = pa.Array.from_buffers(pa.int64(), n, [None, _buf(cols.timestamp)])
    entries = pa.StructArray.from_arrays(
        [
            _binary(
                pa.string(),
                hn,
                None,
                cols.header_key_offsets,
                cols.header_key_data,
                0,
            ),
            _binary(
                pa.binary(),
                hn,
                cols.header_value_validity,
                cols.header_value_offsets,
                cols.header_value_data,
                cols.header_value_nulls,
            ),
        ],
        fields=list(_HEADER_FIELDS),
    )
    return {
        "offset": offset,
        "timestamp": spark_timestamps(ms),
        "key": _binary(
            pa.binary(),
            n,
            cols.key_validity,
            cols.key_offsets,
            cols.key_data,
            cols.key_nulls,
        ),
        "value": _binary(
            pa.binary(),
            n,
            cols.value_validity,
            cols.value_offsets,
            cols.value_data,
            cols.value_nulls,
        ),
        "headers": pa.Array.from_buffers(
            _HEADERS,
            n,
            [None, _buf(cols.header_offsets)],
            null_count=0,
            children=[entries],
        ),
    }


def arrow_columns_to_batch(
    cols: ArrowColumns, topic: str | None, partition: int | None, path: str
) -> pa.RecordBatch:
    """One Arrow batch in :data:`~kproto.spark.SEGMENT_ARROW_SCHEMA` from
    :func:`~kproto.records.decode_arrow_columns` buffers, built without
    per-record Python objects (the tests hold a list-based reference of the same
    rows, ``tests/spark/reference_batch.py``)."""
    n = cols.records
    arrays = record_arrays(cols)
    heads = []
    ends = []
    start = 0
    for head, end in zip(cols.batches, cols.batch_ends, strict=True):
        if end > start:  # a run of no records cannot be run-end encoded
            heads.append(head)
            ends.append(end)
        start = end
    run_ends = pa.array(ends, pa.int32())
    for name, get in _BATCH_LEVEL.items():
        values = pa.array([get(h) for h in heads], _TYPES[name])
        arrays[name] = pc.run_end_decode(
            pa.RunEndEncodedArray.from_arrays(run_ends, values)
        )
    arrays["topic"] = pa.repeat(pa.scalar(topic, pa.string()), n)
    arrays["partition"] = pa.repeat(pa.scalar(partition, pa.int32()), n)
    arrays["file"] = pa.repeat(pa.scalar(path, pa.string()), n)
    arrays["error"] = pa.nulls(n, pa.string())
    return pa.RecordBatch.from_arrays(
        [arrays[f.name] for f in SEGMENT_ARROW_SCHEMA], schema=SEGMENT_ARROW_SCHEMA
    )


def record_key(cols: ArrowColumns, i: int) -> bytes | None:
    """The key of record ``i`` (read from the buffers)."""
    v = cols.key_validity
    if v is not None and not v[i >> 3] >> (i & 7) & 1:
        return None
    o = memoryview(cols.key_offsets).cast("i")
    return bytes(cols.key_data[o[i] : o[i + 1]])
