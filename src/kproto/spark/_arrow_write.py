"""``kproto spark segments --writer arrow``: Spark tasks that decode segments and
write Parquet themselves with pyarrow (no JVM row conversion, no Spark writer).

Importing this module imports neither pyspark nor pyarrow; running it does.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kproto.records import COLUMN_NAMES
from kproto.spark._framing import find_segment_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ARROW_PARQUET_OPTIONS", "resolve_writer", "write_segments_arrow"]

#: The columns of the segments schema (``kproto.spark._columns.SEGMENT_SCHEMA``,
#: which imports pyspark: this module does not).
_SEGMENT_COLUMNS: tuple[str, ...] = (
    "topic",
    "partition",
    *COLUMN_NAMES,
    "file",
    "error",
)

#: ``pyarrow.parquet.ParquetWriter`` settings of ``--writer arrow`` besides the
#: schema (the twin of :data:`kproto.spark.cli.PARQUET_OPTIONS`): pyarrow's defaults
#: (snappy, dictionaries) but ``offset`` and ``timestamp`` are DELTA_BINARY_PACKED
#: (offsets rise by one per record, timestamps nearly so within a partition: a few
#: bits per value where a dictionary of distinct values stores each once), and
#: ``key``/``value`` have no min/max statistics (arbitrary bytes no reader prunes
#: on). Against dictionaries on every column but ``offset`` (the settings before),
#: the benchmark's output is 34% smaller and the write takes 12% less CPU (pyarrow
#: 26; docs/performance.md, Spark pipeline).
ARROW_PARQUET_OPTIONS: dict[str, object] = {
    "use_dictionary": [c for c in _SEGMENT_COLUMNS if c not in ("offset", "timestamp")],
    "column_encoding": {
        "offset": "DELTA_BINARY_PACKED",
        "timestamp": "DELTA_BINARY_PACKED",
    },
    "write_statistics": [c for c in _SEGMENT_COLUMNS if c not in ("key", "value")],
}


def _arrow_task(
    index: int,
    ranges: list[tuple[str, int, int, str | None, int | None]],
    out: str,
    check_crc: bool,
) -> tuple[int, dict[str, int]]:
    """One Spark task of ``--writer arrow``: decode ranges, write one Parquet file with
    pyarrow; returns (record rows, corrupt batches per file)."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    from kproto.spark._columns import SEGMENT_ARROW_SCHEMA
    from kproto.spark._framing import ByteRange
    from kproto.spark._segments import read_range

    records = 0
    corrupt: dict[str, int] = {}
    path = os.path.join(out, f"part-{index:05d}.parquet")
    with pq.ParquetWriter(
        path, SEGMENT_ARROW_SCHEMA, **ARROW_PARQUET_OPTIONS
    ) as writer:
        for r in ranges:
            for batch in read_range(ByteRange(*r), check_crc=check_crc):
                errors = batch.num_rows - batch.column("error").null_count
                if errors:
                    corrupt[r[0]] = corrupt.get(r[0], 0) + errors
                records += batch.num_rows - errors
                writer.write_batch(batch)
    return records, corrupt


def resolve_writer(writer: str, fmt: str, out: str, master: str | None) -> str:
    """The writer ``--writer auto`` stands for: ``arrow`` when the output is Parquet
    to a local path and Spark runs embedded (``local[...]`` or no master), where every
    task can write the output directory; ``spark`` otherwise.

    >>> resolve_writer("auto", "parquet", "out/", "local[*]")
    'arrow'
    >>> resolve_writer("auto", "parquet", "s3a://bucket/out", "local[*]")
    'spark'
    >>> resolve_writer("auto", "parquet", "out/", "spark://host:7077")
    'spark'
    """
    if writer != "auto":
        return writer
    local_out = "://" not in out or out.startswith("file://")
    local_master = master is None or master.startswith("local")
    return "arrow" if fmt == "parquet" and local_out and local_master else "spark"


def write_segments_arrow(
    spark: SparkSession,
    paths: Sequence[str],
    out: str,
    *,
    split_bytes: int | None,
    check_crc: bool,
) -> tuple[int, dict[str, int]]:
    """Decode segments in Spark tasks that write Parquet themselves with pyarrow (no
    JVM row conversion, no Spark Parquet writer): one ``part-NNNNN.parquet`` per
    partition under ``out``, in the schema of :data:`kproto.spark.SEGMENT_SCHEMA`.

    ``out`` must be a local or shared filesystem path that every executor can write.
    Returns (record rows, corrupt batches per file).

    Raises:
        FileNotFoundError: an input path does not exist.
    """
    from kproto.spark._read import MIN_AUTO_SPLIT_BYTES
    from kproto.spark._segments import DEFAULT_SPLIT_BYTES, plan_partitions
    from kproto.spark._session import ensure_python_workers

    files = find_segment_files(paths)
    if split_bytes is None:
        total = sum(f.size for f in files)
        slots = 8 * spark.sparkContext.defaultParallelism
        split_bytes = min(
            DEFAULT_SPLIT_BYTES, max(MIN_AUTO_SPLIT_BYTES, total // slots)
        )
    parts = [p.ranges for p in plan_partitions([f.path for f in files], split_bytes)]
    ensure_python_workers(spark)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    if not parts:
        return 0, {}
    jobs = spark.sparkContext.parallelize(list(enumerate(parts)), len(parts))
    results = jobs.map(
        lambda item: _arrow_task(item[0], item[1], out, check_crc)
    ).collect()
    records = sum(r for r, _ in results)
    corrupt: dict[str, int] = {}
    for _, c in results:
        for f, n in c.items():
            corrupt[f] = corrupt.get(f, 0) + n
    Path(out, "_SUCCESS").touch()
    return records, corrupt
