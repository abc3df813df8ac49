"""Writes of the ``kproto-kafka`` data source: ``df.write`` / ``df.writeStream``.

Spark's Kafka sink shape (``KafkaWriter`` / ``KafkaWriteTask`` of
``spark-sql-kafka-0-10``): columns ``value`` (required, binary or string), ``key``
(binary or string), ``topic`` (string, unless the ``topic`` option names it; the
option wins, as in Spark), ``partition`` (int; null: Kafka's default partitioner,
murmur2 of the key, sticky for null keys) and ``headers``
(``array<struct<key:string,value:binary>>``).

With ``keyFormat`` / ``valueFormat`` (:mod:`kproto.spark._value_formats`) the
``key`` / ``value`` columns are typed (a struct for ``avro``) and serialized here
(:class:`kproto.spark._typed.BatchEncoder`).

Each task opens one :class:`kproto.client.Client` and produces what it is given in
batches of about ``kafka.batch.size`` bytes (default 512 KiB) per topic partition,
with the codec of ``kafka.compression.type`` and ``kafka.acks`` (default all). A
Produce error fails the task, its message naming the topic partition and how many
records of the task had been acknowledged.

Each task's client is one idempotent producer (``kafka.enable.idempotence``,
default true with ``kafka.acks=all``, as Java's producer since Kafka 3.0): a batch
resent after a retriable error is stored once. Delivery is still at least once
across tasks, as Spark's Kafka sink: a failed task that Spark re-runs is a new
producer and writes its acknowledged records again. Nothing is undone on
``abort`` (a Kafka log is append-only).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, Final

import attrs
import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from kproto.records import Compression
from kproto.spark._kafka_options import KafkaOptionError, KafkaOptions, parse_options
from kproto.spark._typed import BatchEncoder, avro_schema_of, write_type_error
from kproto.spark._value_formats import Formats, parse_formats

__all__ = ["KafkaCommitMessage", "KafkaStreamWriter", "KafkaWriter", "write_batches"]

#: Below Kafka's default ``message.max.bytes`` (1 MiB + 12) with room to spare.
DEFAULT_BATCH_BYTES: Final = 512 * 1024
_ACKS: Final = {"all": -1, "-1": -1, "1": 1, "0": 0}


@attrs.frozen
class SinkSettings:
    """What a write task needs (picklable)."""

    opts: KafkaOptions
    topic: str | None
    compression: Compression
    acks: int
    batch_bytes: int
    idempotent: bool = False
    formats: Formats | None = None


@attrs.frozen
class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote: ``records`` acknowledged."""

    records: int


def sink_settings(options: Mapping[str, str], schema: StructType) -> SinkSettings:
    """Check the options and the DataFrame's columns before any task runs.

    Raises:
        KafkaOptionError: a bad option, no topic (column or option), a missing
            ``value`` column, a column of the wrong type.
    """
    lower = {k.lower(): v for k, v in options.items()}
    opts = parse_options(options, sink=True)
    topic = lower.get("topic")
    types = {f.name.lower(): f.dataType for f in schema.fields}
    binary_or_string = (BinaryType(), StringType())
    if "value" not in types:
        raise KafkaOptionError("kproto-kafka writes need a 'value' column")
    derived: dict[str, str] = {}
    for name in ("key", "value"):
        if name in types:
            try:
                derived[name] = avro_schema_of(types[name])
            except ValueError:
                pass  # named if the field's format is avro and needs it
    formats = parse_formats(
        options, (topic,) if topic else (), sink=True, column_schemas=derived
    )
    for fmt in (formats.key, formats.value):
        if fmt.typed and fmt.field in types:
            problem = write_type_error(fmt, types[fmt.field])
            if problem:
                raise KafkaOptionError(problem)
        elif fmt.field in types and types[fmt.field] not in binary_or_string:
            raise KafkaOptionError(
                f"column {fmt.field!r} must be binary or string, not "
                f"{types[fmt.field]} (or set {fmt.field}Format)"
            )
    if topic is None and types.get("topic") != StringType():
        raise KafkaOptionError(
            "kproto-kafka writes need a string 'topic' column or the 'topic' option"
        )
    if "partition" in types and types["partition"] != IntegerType():
        raise KafkaOptionError("column 'partition' must be int")
    if "headers" in types and not isinstance(types["headers"], ArrayType):
        raise KafkaOptionError(
            "column 'headers' must be array<struct<key:string,value:binary>>"
        )
    codec = lower.get("kafka.compression.type", "none").lower()
    try:
        compression = Compression[codec.upper()]
    except KeyError:
        raise KafkaOptionError(
            f"kafka.compression.type must be none, gzip, snappy, lz4 or zstd, not "
            f"{codec!r}"
        ) from None
    acks = _ACKS.get(lower.get("kafka.acks", "all").lower())
    if acks is None:
        raise KafkaOptionError("kafka.acks must be all, -1, 0 or 1")
    batch_bytes = int(lower.get("kafka.batch.size", DEFAULT_BATCH_BYTES))
    if batch_bytes <= 0:
        raise KafkaOptionError("kafka.batch.size must be > 0")
    # Java's producer: idempotent by default unless acks is not all; asking for
    # idempotence with acks 0 or 1 is a configuration error.
    raw = lower.get("kafka.enable.idempotence")
    if raw is not None and raw.strip().lower() not in ("true", "false"):
        raise KafkaOptionError(
            f"kafka.enable.idempotence must be true or false, not {raw!r}"
        )
    idempotent = acks == -1 if raw is None else raw.strip().lower() == "true"
    if idempotent and acks != -1:
        raise KafkaOptionError(
            "kafka.enable.idempotence=true needs kafka.acks=all (as Java's producer)"
        )
    return SinkSettings(
        opts,
        topic,
        compression,
        acks,
        batch_bytes,
        idempotent,
        formats if formats.typed else None,
    )


def _as_bytes(values: list[Any]) -> list[bytes | None]:
    return [v.encode() if isinstance(v, str) else v for v in values]


def _column(batch: pa.RecordBatch, name: str) -> list[Any]:
    """A column's values by case-insensitive name; nulls if absent."""
    for i, n in enumerate(batch.schema.names):
        if n.lower() == name:
            values: list[Any] = batch.column(i).to_pylist()
            return values
    return [None] * batch.num_rows


def _topics(batch: pa.RecordBatch, settings: SinkSettings) -> list[Any]:
    if settings.topic:
        return [settings.topic] * batch.num_rows
    return _column(batch, "topic")


def _columns(batch: pa.RecordBatch, settings: SinkSettings) -> tuple[list[Any], ...]:
    """``keys, values, topics, partitions, headers`` of one Arrow batch."""
    topics = _topics(batch, settings)
    return (
        _as_bytes(_column(batch, "key")),
        _as_bytes(_column(batch, "value")),
        topics,
        _column(batch, "partition"),
        _column(batch, "headers"),
    )


def write_batches(
    settings: SinkSettings, batches: Iterator[pa.RecordBatch]
) -> KafkaCommitMessage:
    """Produce the rows of ``batches``; one client for the whole task.

    Raises:
        RuntimeError: a Produce failed (the cause chained), naming the topic
            partition and the records acknowledged so far by this task.
        KafkaOptionError: a row with a null topic and no ``topic`` option.
    """
    pending: dict[tuple[str, int | None], list[tuple[Any, ...]]] = {}
    sizes: dict[tuple[str, int | None], int] = {}
    done = 0
    encode = None if settings.formats is None else BatchEncoder(settings.formats)
    with (
        contextlib.ExitStack() as cleanup,
        settings.opts.client(producer=True, idempotent=settings.idempotent) as client,
    ):
        if encode is not None:
            cleanup.callback(encode.close)  # its registry clients

        def flush(target: tuple[str, int | None]) -> None:
            nonlocal done
            records = pending.pop(target)
            sizes.pop(target)
            topic, partition = target
            try:
                client.produce(
                    topic,
                    records,
                    partition=partition,
                    acks=settings.acks,
                    compression=settings.compression,
                )
            except Exception as err:
                where = topic if partition is None else f"{topic}-{partition}"
                raise RuntimeError(
                    f"kproto-kafka write to {where} failed after {done} records of "
                    f"this task were acknowledged: {err}"
                ) from err
            done += len(records)

        for batch in batches:
            if encode is not None:
                batch = encode(batch, _topics(batch, settings))
            keys, values, topics, parts, headers = _columns(batch, settings)
            n = batch.num_rows
            for i in range(n):
                topic = topics[i]
                if topic is None:
                    raise KafkaOptionError(
                        "a row has a null 'topic' and no 'topic' option is set"
                    )
                hs = headers[i]
                record = (
                    keys[i],
                    values[i],
                    [(h["key"], h["value"]) for h in hs] if hs else [],
                )
                target = (topic, parts[i])
                pending.setdefault(target, []).append(record)
                size = sizes.get(target, 0) + len(values[i] or b"") + 20
                sizes[target] = size + len(keys[i] or b"")
                if sizes[target] >= settings.batch_bytes:
                    flush(target)
        for target in list(pending):
            flush(target)
    return KafkaCommitMessage(done)


class KafkaWriter(DataSourceArrowWriter):
    """``df.write.format("kproto-kafka")`` (append only)."""

    def __init__(
        self, options: Mapping[str, str], schema: StructType, overwrite: bool
    ) -> None:
        if overwrite:
            raise KafkaOptionError(
                "kproto-kafka writes append; mode('overwrite') is not supported"
            )
        self.settings = sink_settings(options, schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return write_batches(self.settings, iterator)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("kproto-kafka")``: each micro-batch's tasks produce
    (idempotent within a task, at least once across task re-runs, as Spark's
    Kafka sink); ``commit`` has nothing to do."""

    def __init__(
        self, options: Mapping[str, str], schema: StructType, overwrite: bool
    ) -> None:
        self.settings = sink_settings(options, schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return write_batches(self.settings, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to commit: every record was acknowledged by its task."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo (Kafka logs are append-only): at least once."""
