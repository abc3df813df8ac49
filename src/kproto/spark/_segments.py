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
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from kproto.spark._columns import (
    SEGMENT_ARROW_SCHEMA,
    SEGMENT_SCHEMA,
    arrow_columns_to_batch,
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
    "SegmentDataSource",
    "SegmentReader",
    "SegmentPartition",
    "plan_partitions",
    "read_range",
]

FORMAT_NAME: Final = "kproto-segments"

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
