"""The ``kproto-kafka`` Python Data Source: live Kafka topics as rows, no JVM connector.

Batch (``spark.read``) and Structured Streaming (``spark.readStream``) reads over
:class:`kproto.client.Client`, shaped like Spark's own Kafka source
(``spark-sql-kafka-0-10``): the same options (see :mod:`._kafka_options`), the same
columns, the same offsets JSON in the checkpoint. Planning (driver) lists offsets
with ListOffsets; each task reads one ``[start, end)`` offset range of one
partition with Fetch from the leader, decodes whole batches with
:func:`kproto.records.decode_arrow_columns` and yields Arrow batches over those
buffers (:mod:`kproto.spark._columns`).

Every task is bounded: each Fetch asks for at most ``kafka.max.partition.fetch.bytes``
(8 MiB) and waits at most 500 ms; a range that stops advancing before its end for
``kafkaConsumer.pollTimeoutMs`` fails the task with the partition and offset named,
instead of hanging.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import IntegerType, StructField, StructType

from kproto.client import (
    EARLIEST,
    AbortedFilter,
    AbortedTransaction,
    BrokerError,
    Client,
)
from kproto.errors import ErrorCode
from kproto.records import ArrowColumns
from kproto.spark._columns import (
    SEGMENT_SCHEMA,
    arrow_columns_to_batch,
    record_key,
)
from kproto.spark._kafka_options import (
    KafkaOptions,
    OffsetRange,
    Offsets,
    OffsetSpec,
    check_batch_specs,
    offsets_from_json,
    offsets_to_json,
    parse_options,
    rate_limit,
    resolve_offsets,
    split_ranges,
    topic_partitions,
)
from kproto.spark._typed import BatchDecoder, raw_schema, typed_schema
from kproto.spark._value_formats import Formats, parse_formats

__all__ = [
    "KAFKA_FORMAT_NAME",
    "KAFKA_SCHEMA",
    "DataLossError",
    "KafkaDataSource",
    "kafka_schema",
    "read_range",
]

KAFKA_FORMAT_NAME: Final = "kproto-kafka"

#: Spark's Kafka source columns (``headers`` only with ``includeHeaders``): the
#: segment schema's columns of the same names, and Spark's ``timestampType`` (the
#: segment schema's ``timestamp_type``). Each row is a segment row, selected by name.
KAFKA_SCHEMA: Final = StructType(
    [
        *(
            SEGMENT_SCHEMA[name]
            for name in ("key", "value", "topic", "partition", "offset", "timestamp")
        ),
        StructField("timestampType", IntegerType()),
    ]
)

#: kproto's batch columns (option ``includeBatchColumns``): ``read_log_segments``'
#: batch columns but ``is_control`` (the source returns no control records).
BATCH_FIELDS: Final = [
    SEGMENT_SCHEMA[name]
    for name in (
        "base_offset",
        "partition_leader_epoch",
        "magic",
        "compression",
        "is_transactional",
        "producer_id",
        "producer_epoch",
        "base_sequence",
    )
]

#: Longest single Fetch wait (ms): a task never blocks longer on one request.
FETCH_WAIT_MS: Final = 500
MAX_ROWS_PER_BATCH: Final = 65536


class DataLossError(RuntimeError):
    """Offsets a query should read are gone (deleted, truncated) and
    ``failOnDataLoss`` is true (Spark's ``failOnDataLoss`` message, kproto's words)."""


def kafka_schema(include_headers: bool, batch_columns: bool) -> StructType:
    """The source's schema: :data:`KAFKA_SCHEMA`, then ``headers``
    (``array<struct<key:string,value:binary>>``) and the batch columns if asked."""
    fields = list(KAFKA_SCHEMA.fields)
    if include_headers:
        fields.append(SEGMENT_SCHEMA["headers"])
    if batch_columns:
        fields.extend(BATCH_FIELDS)
    return StructType(fields)


class KafkaPartition(InputPartition):
    """One task: ``(topic, partition, start, end)`` plus the options (picklable)."""

    def __init__(self, r: OffsetRange) -> None:
        super().__init__((r.topic, r.partition, r.start, r.end))
        self.range = r


def _data_loss(opts: KafkaOptions, message: str) -> None:
    if opts.fail_on_data_loss:
        raise DataLossError(
            f"{message}. Some data may have been lost: the records were deleted "
            "(retention, DeleteRecords) or the topic was recreated. Set "
            "failOnDataLoss=false to continue from the first offset still there."
        )


def read_range(
    client: Client,
    r: OffsetRange,
    opts: KafkaOptions,
    schema: pa.Schema,
) -> Iterator[pa.RecordBatch]:
    """Fetch ``[r.start, r.end)`` of one partition as Arrow batches in ``schema``.

    Control records are left out, and with read_committed the records of aborted
    transactions (the Fetch's ``aborted_transactions``, :class:`AbortedFilter`, as
    Java's ``CompletedFetch``); offsets missing in the log (compaction,
    transaction markers) are skipped. Offsets below the log start are data loss:
    :class:`DataLossError` with ``failOnDataLoss`` (default), else reading resumes
    at the log start; likewise when the log now ends below ``r.end``.

    Raises:
        DataLossError: as above.
        kproto.client.ClientError: no progress for ``kafkaConsumer.pollTimeoutMs``.
        kproto.client.BrokerError, kproto.connection.KafkaConnectionError: Fetch.
    """
    from kproto.records import decode_arrow_columns

    where = f"{r.topic}-{r.partition}"
    offset = r.start
    stalled_since: float | None = None
    while offset < r.end:
        try:
            result = client.fetch(
                r.topic,
                r.partition,
                offset,
                max_bytes=opts.fetch_max_bytes,
                max_wait_ms=FETCH_WAIT_MS,
                isolation_level=opts.isolation_level,
                decode=False,  # decoded below, once, into columns
            )
        except BrokerError as err:
            if err.error_code != ErrorCode.OFFSET_OUT_OF_RANGE:
                raise
            listed = client.list_offsets(r.topic, [r.partition], timestamp=EARLIEST)
            earliest = listed[r.partition].offset
            if offset < earliest:
                _data_loss(
                    opts,
                    f"{where}: offsets {offset}..{earliest - 1} are gone "
                    f"(log start offset {earliest})",
                )
                offset = earliest
                continue
            _data_loss(opts, f"{where}: offset {offset} is past the log end")
            return
        if result.next_offset <= offset:
            if result.high_watermark <= offset:
                _data_loss(
                    opts,
                    f"{where}: the log ends at {result.high_watermark}, before the "
                    f"planned end offset {r.end}",
                )
                return
            now = time.monotonic()
            stalled_since = stalled_since or now
            time.sleep(0.05)  # e.g. read_committed below an open transaction
            if (now - stalled_since) * 1000 > opts.poll_timeout_ms:
                from kproto.client import ClientError

                raise ClientError(
                    f"{where}: no records at offset {offset} (high watermark "
                    f"{result.high_watermark}) for {opts.poll_timeout_ms} ms"
                )
            continue
        stalled_since = None
        if result.raw:
            columns = decode_arrow_columns(result.raw)
            offsets = memoryview(columns.offset).cast("q")
            lo = bisect.bisect_left(offsets, offset)
            hi = bisect.bisect_left(offsets, r.end)
            keep = None
            if opts.isolation_level == 1 and result.aborted_transactions:
                keep = _committed_mask(columns, result.aborted_transactions)
            if hi > lo:
                yield from _to_arrow(columns, lo, hi, r, schema, keep)
        offset = result.next_offset


def _committed_mask(
    columns: ArrowColumns, aborted: Sequence[AbortedTransaction]
) -> list[bool] | None:
    """Per row of ``columns`` (whole batches in offset order), whether a
    read_committed consumer sees it; None when every row is visible. An ABORT
    marker is a control record whose key's type (bytes 2-3) is 0."""
    committed = AbortedFilter(aborted)
    offsets = memoryview(columns.offset).cast("q")
    keep: list[bool] | None = None
    start = 0
    for head, end in zip(columns.batches, columns.batch_ends, strict=True):
        if end == start:
            continue
        control = head.is_control
        key = record_key(columns, start) if control else None
        visible = committed.keep(
            last_offset=offsets[end - 1],
            producer_id=head.producer_id,
            is_transactional=head.is_transactional,
            is_control=control,
            is_abort_marker=control and key is not None and key[2:4] == b"\0\0",
        )
        if not visible and not control:
            if keep is None:
                keep = [True] * columns.records
            keep[start:end] = [False] * (end - start)
        start = end
    return keep


def _to_arrow(
    columns: ArrowColumns,
    lo: int,
    hi: int,
    r: OffsetRange,
    schema: pa.Schema,
    keep: list[bool] | None = None,
) -> Iterator[pa.RecordBatch]:
    batch = arrow_columns_to_batch(columns, r.topic, r.partition, "")
    batch = batch.slice(lo, hi - lo)
    if keep is not None:
        batch = batch.filter(pa.array(keep[lo:hi], type=pa.bool_()))
    if any(h.is_control for h in columns.batches):
        batch = batch.filter(pc.invert(batch.column("is_control")))
    arrays = [
        batch.column("timestamp_type" if f.name == "timestampType" else f.name)
        for f in schema
    ]
    out = pa.RecordBatch.from_arrays(arrays, schema=schema)
    for i in range(0, out.num_rows, MAX_ROWS_PER_BATCH):
        yield out.slice(i, MAX_ROWS_PER_BATCH)


def _plan(
    opts: KafkaOptions, start: Offsets, end: Offsets, client: Client | None
) -> list[KafkaPartition]:
    """Tasks for ``start`` -> ``end``. Partitions in ``end`` only (new ones) start
    at their earliest offset; a partition whose end is below its start is data
    loss (topic recreated)."""
    new = [tp for tp in end if tp not in start]
    if new:
        assert client is not None
        start = {**start, **resolve_offsets(OffsetSpec("earliest"), new, client, opts)}
    ranges = []
    for tp, stop in sorted(end.items()):
        begin = start[tp]
        if stop < begin:
            _data_loss(
                opts,
                f"{tp[0]}-{tp[1]}: end offset {stop} is below start offset {begin}",
            )
            continue
        ranges.append(OffsetRange(tp[0], tp[1], begin, stop))
    pieces = split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
    return [KafkaPartition(r) for r in pieces]


def _read_partition(
    opts: KafkaOptions,
    schema: StructType,
    partition: InputPartition,
    formats: Formats | None = None,
) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, KafkaPartition):
        return  # Spark plans one empty partition when there is nothing to read
    arrow_schema = to_arrow_schema(raw_schema(schema), timezone="UTC")
    with opts.client() as client:
        if formats is None or not formats.typed:
            yield from read_range(client, partition.range, opts, arrow_schema)
            return
        decode = BatchDecoder(formats, to_arrow_schema(schema, timezone="UTC"))
        try:
            for batch in read_range(client, partition.range, opts, arrow_schema):
                yield decode(batch)
        finally:
            decode.close()


def topic_names(opts: KafkaOptions) -> tuple[str, ...]:
    """The topics named by ``subscribe`` or ``assign`` (none for a pattern)."""
    return tuple(dict.fromkeys(opts.subscribe + tuple(t for t, _ in opts.assign)))


class KafkaBatchReader(DataSourceReader):
    """``spark.read.format("kproto-kafka")``: offsets resolved once, at planning."""

    def __init__(
        self, opts: KafkaOptions, schema: StructType, formats: Formats | None = None
    ) -> None:
        check_batch_specs(opts)
        self.opts = opts
        self.schema = schema
        self.formats = formats

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.opts
        with opts.client() as client:
            tps = topic_partitions(opts, client)
            start = resolve_offsets(
                opts.starting or OffsetSpec("earliest"), tps, client, opts
            )
            end = resolve_offsets(opts.ending, tps, client, opts, ending=True)
            for tp in tps:  # Spark: an end before the start is an error in batch
                if end[tp] < start[tp]:
                    raise ValueError(
                        f"{tp[0]}-{tp[1]}: ending offset {end[tp]} is before the "
                        f"starting offset {start[tp]}"
                    )
            return _plan(opts, start, end, client)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.opts, self.schema, partition, self.formats)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kproto-kafka")``: offsets are Spark's Kafka JSON
    ``{"topic": {"partition": next offset}}``, kept in the query's checkpoint, so a
    restarted query resumes at the offsets of its last committed batch."""

    def __init__(
        self, opts: KafkaOptions, schema: StructType, formats: Formats | None = None
    ) -> None:
        self.opts = opts
        self.schema = schema
        self.formats = formats
        self._client: Client | None = None
        self._target: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None  # sockets stay on the driver
        return state

    def _get_client(self) -> Client:
        if self._client is None:
            self._client = self.opts.client()
        return self._client

    def initialOffset(self) -> dict[str, Any]:
        client = self._get_client()
        tps = topic_partitions(self.opts, client)
        spec = self.opts.starting or OffsetSpec("latest")
        return offsets_to_json(resolve_offsets(spec, tps, client, self.opts))

    def _latest(self) -> Offsets:
        client = self._get_client()
        tps = topic_partitions(self.opts, client)
        return resolve_offsets(OffsetSpec("latest"), tps, client, self.opts)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = offsets_from_json_dict(start)
        latest = self._target if self._target is not None else self._latest()
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        return offsets_to_json(latest)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return offsets_to_json(self._latest())

    def partitions(
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> Sequence[InputPartition]:
        begin = offsets_from_json_dict(start)
        stop = offsets_from_json_dict(end)
        client = self._get_client() if set(stop) - set(begin) else None
        return _plan(self.opts, begin, stop, client)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(self.opts, self.schema, partition, self.formats)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: as in Spark, offsets live in the checkpoint, not in a
        consumer group."""

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def offsets_from_json_dict(value: Mapping[str, Any]) -> Offsets:
    """``{"t": {"0": 5}}`` (already parsed JSON) -> ``{("t", 0): 5}``."""
    import json

    return offsets_from_json(json.dumps(value), "offset")


class KafkaDataSource(DataSource):
    """``format("kproto-kafka")``: read and write live Kafka topics with
    :mod:`kproto.client` (batch and streaming), options and columns as Spark's
    Kafka source (``spark-sql-kafka-0-10``; see docs/guide/spark.md for the
    option table).

    Read columns: ``key``, ``value`` binary; ``topic`` string; ``partition`` int;
    ``offset`` bigint; ``timestamp`` timestamp; ``timestampType`` int (0 create, 1
    log append); ``headers`` with ``includeHeaders=true``; with
    ``includeBatchColumns=true`` also ``base_offset``, ``partition_leader_epoch``,
    ``magic``, ``compression``, ``is_transactional``, ``producer_id``,
    ``producer_epoch``, ``base_sequence``. ``keyFormat`` / ``valueFormat`` type
    ``key`` / ``value`` (Kafka's primitives, Avro, Protobuf, JSON Schema, with a
    Schema Registry or an inline schema; :mod:`kproto.spark._value_formats`,
    ``docs/guide/spark-typed.md``); in PERMISSIVE mode ``_key_error`` /
    ``_value_error`` follow.

    Raises (at ``load()`` / planning):
        kproto.spark._kafka_options.KafkaOptionError: a bad or unsupported option.
        kproto.spark._value_formats.FormatOptionError: a bad format option, or a
            reader schema that cannot be had.
    """

    @classmethod
    def name(cls) -> str:
        return KAFKA_FORMAT_NAME

    def _formats(self, opts: KafkaOptions) -> Formats:
        """The key/value formats, resolved once per source (the reader schema is
        the subject's latest when the query is planned)."""
        formats: Formats | None = self.__dict__.get("_resolved_formats")
        if formats is None:
            formats = parse_formats(self.options, topic_names(opts))
            self.__dict__["_resolved_formats"] = formats
        return formats

    def schema(self) -> StructType:
        opts = parse_options(self.options)
        base = kafka_schema(opts.include_headers, opts.batch_columns)
        return typed_schema(base, self._formats(opts))

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = parse_options(self.options)
        return KafkaBatchReader(opts, schema, self._formats(opts))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = parse_options(self.options)
        return KafkaStreamReader(opts, schema, self._formats(opts))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from kproto.spark._kafka_sink import KafkaWriter

        return KafkaWriter(self.options, schema, overwrite)

    def streamWriter(
        self, schema: StructType, overwrite: bool
    ) -> DataSourceStreamWriter:
        from kproto.spark._kafka_sink import KafkaStreamWriter

        return KafkaStreamWriter(self.options, schema, overwrite)
