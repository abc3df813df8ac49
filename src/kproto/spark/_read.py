"""``read_log_segments`` and friends: the DataFrame-level API over the data source."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kproto.spark._framing import find_segment_files
from kproto.spark._segments import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_SPLIT_BYTES,
    FORMAT_NAME,
    SegmentDataSource,
)
from kproto.spark._session import ensure_python_workers

__all__ = [
    "register",
    "read_log_segments",
    "read_kafka",
    "segment_errors",
    "records_only",
    "demo_table",
]

#: Lower bound of the automatic ``split_bytes``.
MIN_AUTO_SPLIT_BYTES = 4 * 1024 * 1024


def register(spark: SparkSession) -> None:
    """Register the ``kproto-segments`` and ``kproto-kafka`` data sources with
    ``spark`` (idempotent).

    The executors' Python must be able to import :mod:`kproto`: on a local master
    this points the session's Python workers at ``sys.executable`` (or at
    ``spark.pyspark.python``) unless ``PYSPARK_PYTHON`` is set; see
    :func:`kproto.spark._session.ensure_python_workers`.
    """
    ensure_python_workers(spark)
    spark.dataSource.register(SegmentDataSource)
    try:  # kproto-kafka needs pyspark >= 4.2 (streaming admission control)
        from kproto.spark._kafka_source import KafkaDataSource
    except ImportError:
        return
    spark.dataSource.register(KafkaDataSource)


def read_kafka(
    spark: SparkSession,
    bootstrap_servers: str,
    topics: str | Sequence[str],
    *,
    starting_offsets: str = "earliest",
    ending_offsets: str = "latest",
    include_headers: bool = False,
    batch_columns: bool = False,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """Read live Kafka topics into a DataFrame (a batch read through the
    ``kproto-kafka`` source, which needs no JVM Kafka connector).

    Args:
        spark: the session (the source is registered on it).
        bootstrap_servers: ``"host:port,..."`` (``kafka.bootstrap.servers``).
        topics: a topic or several (``subscribe``).
        starting_offsets, ending_offsets: ``"earliest"`` / ``"latest"`` or Spark's
            JSON ``{"topic": {"0": 23}}`` (-2 earliest, -1 latest).
        include_headers: add the ``headers`` column.
        batch_columns: add kproto's batch columns (``compression``, ``producer_id``...).
        options: any other option of the source (Spark's Kafka option names, e.g.
            ``minPartitions``, ``failOnDataLoss``, ``kafka.isolation.level``).

    Returns:
        A lazy DataFrame: ``key``, ``value`` binary, ``topic`` string,
        ``partition`` int, ``offset`` bigint, ``timestamp`` timestamp,
        ``timestampType`` int, then the optional columns. The offsets are
        resolved when Spark plans the read (ListOffsets), each partition range is
        then read with Fetch by one task.

    Raises:
        kproto.spark._kafka_options.KafkaOptionError: a bad option (raised by
            Spark as an analysis error that carries this message).
        ImportError: pyspark older than 4.2.
    """
    from kproto.spark._kafka_source import KAFKA_FORMAT_NAME  # pyspark >= 4.2

    register(spark)
    names = [topics] if isinstance(topics, str) else list(topics)
    reader = (
        spark.read.format(KAFKA_FORMAT_NAME)
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", ",".join(names))
        .option("startingOffsets", starting_offsets)
        .option("endingOffsets", ending_offsets)
        .option("includeHeaders", str(include_headers).lower())
        .option("includeBatchColumns", str(batch_columns).lower())
    )
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader.load()


def read_log_segments(
    spark: SparkSession,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    corrupt: Literal["rows", "fail"] = "rows",
    split_bytes: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    check_crc: bool = True,
) -> DataFrame:
    """Read Kafka log segment files into a DataFrame, one row per record.

    Args:
        spark: the session to read with.
        paths: one path or several; a file is read whatever its name, a folder is
            searched recursively for ``*.log``. Executors must see the same paths.
        corrupt: ``"rows"`` (default): each batch that fails to decode or frame is one
            row with ``error`` set (what and at which byte) and the record columns
            null; :func:`segment_errors` summarises them per file. ``"fail"``: raise
            when the job meets the first one (a Spark job failure whose message
            carries the error text).
        split_bytes: target bytes per Spark partition; larger files are split at batch
            boundaries, smaller ones packed together. Default: the input size over
            8 x the default parallelism (several waves keep every core busy to
            the end), between 4 MiB and 64 MiB.
        chunk_bytes: bytes of whole batches decoded at a time per task (bounds memory).
        check_crc: verify batch CRCs (a mismatch makes an error row).

    Python workers: Spark runs the decoding in Python worker processes, which must
    import kproto. Unless ``PYSPARK_PYTHON`` is set, the session's workers are
    pointed at ``spark.pyspark.python`` if set, else (local master) at this
    process's ``sys.executable``; on a cluster set ``spark.pyspark.python`` to the
    executors' Python with kproto installed.

    Returns:
        A lazy DataFrame with the columns of
        :data:`kproto.spark.SEGMENT_SCHEMA`: ``topic`` string and ``partition`` int
        (from ``<topic>-<partition>/<base offset>.log``, else null), ``offset``
        bigint, ``timestamp`` timestamp (Kafka ms, exact; -1 for magic 0),
        ``timestamp_type`` int (0 create, 1 log append, -1 none), ``key``/``value``
        binary, ``headers`` ``array<struct<key:string,value:binary>>``,
        ``base_offset`` bigint, ``partition_leader_epoch`` int, ``magic`` tinyint,
        ``compression`` string (none|gzip|snappy|lz4|zstd), ``is_transactional``,
        ``is_control`` boolean, ``producer_id`` bigint, ``producer_epoch``
        smallint, ``base_sequence`` int, ``file`` string, ``error`` string (null on
        record rows).

    Writing Parquet: Spark's writer is most of the CPU of a read-and-write job.
    Set ``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS`` on the session
    (the ``kproto spark segments`` CLI does: :data:`kproto.spark.cli.SESSION_CONF`)
    rather than the legacy INT96 default, and pass
    :data:`kproto.spark.cli.PARQUET_OPTIONS` to ``df.write.options(...)``
    (``key``/``value`` dictionaries with 8 MiB dictionary pages, none for
    ``offset``, no statistics for ``key``/``value``): the output is then about the
    size of pyarrow's default write of the same rows. ``spark.sql.parquet.compression.codec=zstd`` halves the
    output against the default snappy for a few percent more CPU.

    Raises:
        FileNotFoundError: a path does not exist (checked here, before Spark runs).
        ValueError: ``corrupt`` or a size is invalid.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    resolved = [os.path.abspath(os.fspath(p)) for p in paths]
    if corrupt not in ("rows", "fail"):
        raise ValueError(f"corrupt must be 'rows' or 'fail', not {corrupt!r}")
    if (split_bytes is not None and split_bytes <= 0) or chunk_bytes <= 0:
        raise ValueError("split_bytes and chunk_bytes must be positive")
    files = find_segment_files(resolved)  # fails early on missing paths
    if split_bytes is None:
        total = sum(f.size for f in files)
        try:
            slots = 8 * spark.sparkContext.defaultParallelism
        except Exception:  # e.g. Spark Connect: no SparkContext
            slots = 16
        split_bytes = min(
            DEFAULT_SPLIT_BYTES, max(MIN_AUTO_SPLIT_BYTES, total // slots)
        )
    register(spark)
    df = (
        spark.read.format(FORMAT_NAME)
        .option("paths", json.dumps(resolved))
        .option("splitBytes", str(split_bytes))
        .option("chunkBytes", str(chunk_bytes))
        .option("checkCrc", "true" if check_crc else "false")
        .load()
    )
    if corrupt == "fail":
        df = df.withColumn(
            "error",
            F.when(
                F.col("error").isNotNull(),
                F.raise_error(
                    F.concat(
                        F.lit("corrupt Kafka batch in "),
                        F.col("file"),
                        F.lit(": "),
                        F.col("error"),
                    )
                ),
            ).cast("string"),
        )
    return df


def segment_errors(df: DataFrame) -> DataFrame:
    """Error rows of a :func:`read_log_segments` DataFrame, one per corrupt batch:
    ``file``, ``topic``, ``partition``, ``base_offset``, ``error``."""
    return df.where(F.col("error").isNotNull()).select(
        "file", "topic", "partition", "base_offset", "error"
    )


def records_only(df: DataFrame) -> DataFrame:
    """The record rows of a :func:`read_log_segments` DataFrame, without the
    ``file`` and ``error`` columns (the shape of Spark's Kafka source plus batch
    fields)."""
    return df.where(F.col("error").isNull()).drop("file", "error")


def demo_table(spark: SparkSession, segment_dir: str | os.PathLike[str]) -> DataFrame:
    """A small summary of the segments under ``segment_dir``, one row per topic
    partition (and one per file with corrupt batches).

    Columns: ``topic``, ``partition``, ``records`` (bigint), ``first_offset``,
    ``last_offset`` (bigint), ``first_timestamp``, ``last_timestamp`` (timestamp),
    ``codecs`` (sorted ``array<string>``), ``key_bytes``, ``value_bytes`` (bigint),
    ``corrupt_batches`` (bigint), ordered by topic and partition.

    Raises:
        FileNotFoundError: ``segment_dir`` does not exist.
    """
    df = read_log_segments(spark, segment_dir)
    ok = F.col("error").isNull()
    return (
        df.groupBy("topic", "partition")
        .agg(
            F.count(F.when(ok, 1)).alias("records"),
            F.min("offset").alias("first_offset"),
            F.max("offset").alias("last_offset"),
            F.min("timestamp").alias("first_timestamp"),
            F.max("timestamp").alias("last_timestamp"),
            F.array_sort(F.collect_set("compression")).alias("codecs"),
            F.coalesce(F.sum(F.length("key")), F.lit(0))
            .cast("bigint")
            .alias("key_bytes"),
            F.coalesce(F.sum(F.length("value")), F.lit(0))
            .cast("bigint")
            .alias("value_bytes"),
            F.count(F.when(~ok, 1)).alias("corrupt_batches"),
        )
        .orderBy("topic", "partition")
    )
