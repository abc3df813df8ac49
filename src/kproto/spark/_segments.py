"""The ``kproto-segments`` Python Data Source: Kafka log segment files as rows.

Planning (driver side) lists the files, cuts files larger than ``splitBytes`` into byte
ranges at batch boundaries (a header-only scan) and packs small files together into
partitions of about ``splitBytes``. Each task reads its ranges in chunks of about
``chunkBytes`` of whole batches, decodes each chunk with
:func:`kproto.records.decode_arrow_columns` into Arrow buffers and yields pyarrow
``RecordBatch`` es of at most ``maxRecordsPerBatch`` rows wrapping those buffers
(:mod:`kproto.spark._columns`: no per-record Python object). Memory per task is therefore bounded by the chunk size (plus one batch, if a
single batch is larger) and its decompressed size, whatever the file size.

Batches that fail to decode (bad CRC, bad compression, bad framing, truncation) are
never dropped silently: each becomes one row whose ``error`` column says what went
wrong and where, with the record columns null.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
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

from kproto.spark._framing import (
    ByteRange,
    find_segment_files,
    frame_buffer,
    split_file,
)
from kproto.spark._typed import BatchDecoder, typed_schema
from kproto.spark._value_formats import Formats, parse_formats

__all__ = [
    "SEGMENT_SCHEMA",
    "SEGMENT_ARROW_SCHEMA",
    "SegmentDataSource",
    "SegmentReader",
    "SegmentPartition",
    "plan_partitions",
    "read_range",
    "columns_to_batch",
]

FORMAT_NAME: Final = "kproto-segments"

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

_ARROW_TYPES: Final = {f.name: f.type for f in SEGMENT_ARROW_SCHEMA}
# Batch-level decode_columns columns (one value repeated per record) converted
# directly, besides base_offset and compression.
_BATCH_LEVEL: Final = (
    "timestamp_type",
    "partition_leader_epoch",
    "magic",
    "is_transactional",
    "is_control",
    "producer_id",
    "producer_epoch",
    "base_sequence",
)
_HEADERS_ARROW: Final = _ARROW_TYPES["headers"]
_HEADER_FIELDS: Final = (
    _HEADERS_ARROW.value_type.field(0),
    _HEADERS_ARROW.value_type.field(1),
)
_COMPRESSION_LABELS: Final = ("none", "gzip", "snappy", "lz4", "zstd")
# Kafka timestamps are ms; Spark's are µs. Values beyond this would overflow int64 µs.
_MAX_MS: Final = (2**63 - 1) // 1000

DEFAULT_SPLIT_BYTES: Final = 64 * 1024 * 1024
DEFAULT_CHUNK_BYTES: Final = 8 * 1024 * 1024
DEFAULT_MAX_RECORDS: Final = 65536


class SegmentPartition(InputPartition):
    """One task's work: a list of :class:`~kproto.spark._framing.ByteRange`, as
    tuples ``(path, start, end, topic, partition)`` (picklable without kproto)."""

    def __init__(self, ranges: Sequence[tuple[str, int, int, str | None, int | None]]):
        super().__init__(list(ranges))
        self.ranges = list(ranges)


def plan_partitions(paths: Sequence[str], split_bytes: int) -> list[SegmentPartition]:
    """Partitions of about ``split_bytes`` each over all segment files under ``paths``.

    Large files are cut at batch boundaries; small files are packed together. Empty
    input gives no partitions.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    partitions: list[SegmentPartition] = []
    current: list[tuple[str, int, int, str | None, int | None]] = []
    current_bytes = 0
    for seg in find_segment_files(paths):
        for r in split_file(seg, split_bytes):
            size = r.end - r.start
            if current and current_bytes + size > split_bytes:
                partitions.append(SegmentPartition(current))
                current, current_bytes = [], 0
            current.append((r.path, r.start, r.end, r.topic, r.partition))
            current_bytes += size
    if current:
        partitions.append(SegmentPartition(current))
    return partitions


def _timestamps(ms: list[int] | pa.Array) -> pa.Array:
    """Kafka's ms (a list or an int64 array) as Spark timestamps (µs)."""
    arr = ms if isinstance(ms, pa.Array) else pa.array(ms, pa.int64())
    try:
        us = pc.multiply_checked(arr, 1000)
    except pa.ArrowInvalid:
        # Out-of-range timestamps cannot be represented by Spark: null them.
        ok = pc.less_equal(pc.abs(arr), _MAX_MS)
        us = pc.multiply(pc.if_else(ok, arr, pa.scalar(None, pa.int64())), 1000)
    return us.cast(_ARROW_TYPES["timestamp"])


def _headers(headers: list[Any]) -> pa.Array:
    """``array<struct<key, value>>`` from one list of ``(key, value)`` pairs per
    record (a plain loop: most records have none, and it beats numpy here)."""
    offsets = [0]
    keys: list[str] = []
    values: list[bytes | None] = []
    n = 0
    add_offset = offsets.append
    for hs in headers:
        if hs:
            for k, v in hs:
                keys.append(k)
                values.append(v)
            n += len(hs)
        add_offset(n)
    child = pa.StructArray.from_arrays(
        [pa.array(keys, pa.string()), pa.array(values, pa.binary())],
        fields=[_HEADER_FIELDS[0], _HEADER_FIELDS[1]],
    )
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), child, type=_HEADERS_ARROW
    )


def _compression(values: list[Any]) -> pa.Array:
    """Codec labels; accepts labels, :class:`Compression` members or codec ids."""
    if not values or isinstance(values[0], str):
        return pa.array(values, pa.string())
    labels = _COMPRESSION_LABELS
    out: list[str] = []
    for v in values:
        label = getattr(v, "label", None)
        if label is None:
            i = int(v)
            label = labels[i] if 0 <= i < len(labels) else f"unknown({i})"
        out.append(label)
    return pa.array(out, pa.string())


class _Runs:
    """Runs of equal ``base_offset``: the decoded batches (two adjacent batches with
    the same base offset make one run; :meth:`column` then checks every value)."""

    def __init__(self, base_offsets: pa.Array) -> None:
        ree = pc.run_end_encode(base_offsets, run_end_type=pa.int32())
        self.ends: list[int] = ree.run_ends.to_pylist()
        self.starts: list[int] = [0, *self.ends[:-1]] if self.ends else []
        # Row -> run index (0 0 0 1 1 ...), for take().
        self.take = pc.run_end_decode(
            pa.RunEndEncodedArray.from_arrays(
                ree.run_ends, pa.array(range(len(self.ends)), pa.int32())
            )
        )

    def firsts(self, values: list[Any]) -> list[Any] | None:
        """The value of each run, or None if some run holds more than one value."""
        firsts = [values[s] for s in self.starts]
        for v, s, e in zip(firsts, self.starts, self.ends, strict=True):
            if values[s:e].count(v) != e - s:
                return None
        return firsts

    def column(self, values: list[Any], t: pa.DataType) -> pa.Array:
        """``pa.array(values, t)``, converting one value per run when runs are
        uniform (batch-level columns repeat one value per record)."""
        firsts = self.firsts(values)
        if firsts is None:
            return pa.array(values, t)
        return pa.array(firsts, t).take(self.take)


def columns_to_batch(
    columns: dict[str, list[Any]], topic: str | None, partition: int | None, path: str
) -> pa.RecordBatch:
    """One Arrow batch in :data:`SEGMENT_ARROW_SCHEMA` from ``decode_columns`` lists.

    ``columns`` maps each of :data:`kproto.records.COLUMN_NAMES` to one list of equal
    length (timestamps in ms, compression as codec id or ``Compression``).

    Batch-level columns (``base_offset`` ... ``base_sequence``, ``timestamp_type``,
    ``compression``) are converted one value per batch and expanded in Arrow; the
    result is the same as converting every element.
    """
    n = len(columns["offset"])
    base_offset = pa.array(columns["base_offset"], pa.int64())
    runs = _Runs(base_offset)
    codecs = runs.firsts(columns["compression"])
    arrays: dict[str, pa.Array] = {
        "topic": pa.repeat(pa.scalar(topic, pa.string()), n),
        "partition": pa.repeat(pa.scalar(partition, pa.int32()), n),
        "offset": pa.array(columns["offset"], pa.int64()),
        "timestamp": _timestamps(columns["timestamp"]),
        "key": pa.array(columns["key"], pa.binary()),
        "value": pa.array(columns["value"], pa.binary()),
        "headers": _headers(columns["headers"]),
        "base_offset": base_offset,
        "compression": (
            _compression(columns["compression"])
            if codecs is None
            else _compression(codecs).take(runs.take)
        ),
        "file": pa.repeat(pa.scalar(path, pa.string()), n),
        "error": pa.nulls(n, pa.string()),
    }
    for name in _BATCH_LEVEL:
        arrays[name] = runs.column(columns[name], _ARROW_TYPES[name])
    return pa.RecordBatch.from_arrays(
        [arrays[f.name] for f in SEGMENT_ARROW_SCHEMA], schema=SEGMENT_ARROW_SCHEMA
    )


def error_batch(
    errors: Sequence[tuple[int, int | None, str]],
    topic: str | None,
    partition: int | None,
    path: str,
) -> pa.RecordBatch:
    """Error rows ``(position, base_offset or None, reason)``: record columns null."""
    n = len(errors)
    arrays = []
    for f in SEGMENT_ARROW_SCHEMA:
        if f.name == "topic":
            arrays.append(pa.array([topic] * n, pa.string()))
        elif f.name == "partition":
            arrays.append(pa.array([partition] * n, pa.int32()))
        elif f.name == "base_offset":
            arrays.append(pa.array([e[1] for e in errors], pa.int64()))
        elif f.name == "file":
            arrays.append(pa.array([path] * n, pa.string()))
        elif f.name == "error":
            arrays.append(pa.array([f"{e[2]} (batch at byte {e[0]})" for e in errors]))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=SEGMENT_ARROW_SCHEMA)


def _decode(data: bytes, check_crc: bool) -> tuple[Any, list[Any]]:
    """:func:`kproto.records.decode_arrow_columns` of whole batches: (columns,
    corrupt).

    ``corrupt`` holds ``(position in data, base_offset, message)`` per batch that
    failed to decode; an incomplete tail (impossible after framing) is reported too.
    """
    from kproto.records import decode_arrow_columns

    result = decode_arrow_columns(data, check_crc=check_crc, skip_corrupt=True)
    corrupt: list[Any] = list(result.corrupt)
    if result.partial_tail_bytes:
        corrupt.append(
            (
                result.partial_tail_position or 0,
                None,
                f"incomplete batch of {result.partial_tail_bytes} bytes",
            )
        )
    return result, corrupt


def _corrupt_item(item: Any, base: int) -> tuple[int, int | None, str]:
    """(file position, base offset, reason) of one corrupt-batch report entry."""
    position, base_offset, reason = item
    return base + int(position), base_offset, str(reason)


def read_range(
    r: ByteRange,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_records: int = DEFAULT_MAX_RECORDS,
    check_crc: bool = True,
) -> Iterator[pa.RecordBatch]:
    """Decode one byte range into Arrow batches of at most ``max_records`` rows.

    Reads about ``chunk_bytes`` of whole batches at a time (more only if one batch is
    larger). Corrupt batches and unframeable bytes become error rows.

    Raises:
        OSError: the file cannot be read.
    """
    with open(r.path, "rb") as f:
        f.seek(r.start)
        pos = r.start  # file position of buf[0]
        buf = b""
        while True:
            want = max(chunk_bytes, 17)
            remaining = r.end - pos - len(buf)
            if len(buf) < want and remaining > 0:
                more = f.read(min(want - len(buf), remaining))
                if not more:  # file shrank under us
                    remaining = 0
                buf += more
                remaining -= len(more)
            at_eof = remaining <= 0
            complete, error, need = frame_buffer(buf, at_eof)
            if complete == 0 and need is not None and not at_eof:
                # One batch bigger than the chunk: read exactly the rest of it.
                more = f.read(min(need - len(buf), remaining))
                buf += more
                continue
            if complete:
                columns, corrupt = _decode(buf[:complete], check_crc)
                n = columns.records
                if n:
                    from kproto.spark._columns import arrow_columns_to_batch

                    batch = arrow_columns_to_batch(
                        columns, r.topic, r.partition, r.path
                    )
                    for i in range(0, n, max_records):
                        yield batch.slice(i, max_records)
                if corrupt:
                    yield error_batch(
                        [_corrupt_item(c, pos) for c in corrupt],
                        r.topic,
                        r.partition,
                        r.path,
                    )
            if error is not None:
                yield error_batch(
                    [
                        (
                            pos + error.position,
                            error.base_offset,
                            f"{error.reason}; {error.length} bytes to the end of the "
                            "range not read",
                        )
                    ],
                    r.topic,
                    r.partition,
                    r.path,
                )
                return
            buf = buf[complete:]
            pos += complete
            if at_eof and not buf:
                return


class SegmentReader(DataSourceReader):
    """Reader of the ``kproto-segments`` source (see :class:`SegmentDataSource`)."""

    def __init__(
        self,
        options: Mapping[str, str],
        formats: Formats | None = None,
        schema: StructType = SEGMENT_SCHEMA,
    ) -> None:
        self.formats = formats
        self.target = to_arrow_schema(schema, timezone="UTC")
        # Spark hands options over case-insensitively; normalise to lower case.
        options = {k.lower(): v for k, v in options.items()}
        self.paths = _paths(options)
        self.split_bytes = int(options.get("splitbytes", DEFAULT_SPLIT_BYTES))
        self.chunk_bytes = int(options.get("chunkbytes", DEFAULT_CHUNK_BYTES))
        self.max_records = int(options.get("maxrecordsperbatch", DEFAULT_MAX_RECORDS))
        self.check_crc = options.get("checkcrc", "true").lower() != "false"
        if self.split_bytes <= 0 or self.chunk_bytes <= 0 or self.max_records <= 0:
            raise ValueError(
                "splitBytes, chunkBytes and maxRecordsPerBatch must be > 0"
            )

    def partitions(self) -> Sequence[InputPartition]:
        return plan_partitions(self.paths, self.split_bytes)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, SegmentPartition):
            return  # Spark plans one empty partition when there are no files
        decode = None
        if self.formats is not None and self.formats.typed:
            decode = BatchDecoder(self.formats, self.target)
        try:
            for path, start, end, topic, part in partition.ranges:
                for batch in read_range(
                    ByteRange(path, start, end, topic, part),
                    chunk_bytes=self.chunk_bytes,
                    max_records=self.max_records,
                    check_crc=self.check_crc,
                ):
                    yield batch if decode is None else decode(batch)
        finally:
            if decode is not None:
                decode.close()


def _paths(options: Mapping[str, str]) -> list[str]:
    if "paths" in options:
        value = json.loads(options["paths"])
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise ValueError("option 'paths' must be a JSON list of strings")
        return value
    if "path" in options:
        return [options["path"]]
    raise ValueError(
        "kproto-segments needs option 'paths' (JSON list) or a load() path"
    )


class SegmentDataSource(DataSource):
    """``spark.read.format("kproto-segments")``: Kafka ``.log`` segment files as rows.

    Options (all strings):
        paths: JSON list of files and folders (folders searched recursively for
            ``*.log``); or give one path to ``load()``. Paths must be readable by the
            executors under the same names.
        splitBytes: target bytes per partition (default 64 MiB).
        chunkBytes: bytes of whole batches decoded per step (default 8 MiB).
        maxRecordsPerBatch: rows per Arrow batch (default 65536).
        checkCrc: ``"false"`` to skip CRC checks (default ``"true"``).

    The schema is :data:`SEGMENT_SCHEMA`; ``keyFormat`` / ``valueFormat`` and
    their options type ``key`` / ``value`` as on ``kproto-kafka``
    (:mod:`kproto.spark._value_formats`; the subject must be named with
    ``valueSubject`` unless the schema is inline).
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _formats(self) -> Formats:
        formats: Formats | None = self.__dict__.get("_resolved_formats")
        if formats is None:
            formats = parse_formats(self.options)
            self.__dict__["_resolved_formats"] = formats
        return formats

    def schema(self) -> StructType:
        return typed_schema(SEGMENT_SCHEMA, self._formats())

    def reader(self, schema: StructType) -> DataSourceReader:
        return SegmentReader(self.options, self._formats(), schema)
