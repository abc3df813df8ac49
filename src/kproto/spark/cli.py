"""``kproto spark ...`` subcommands: segment files and internal topics to Parquet/JSON.

Wire into a top-level argparse CLI with :func:`add_parsers`; each subcommand sets
``func`` (``run_segments`` / ``run_internal_topic``) which takes the parsed
``argparse.Namespace`` and returns an exit code.

    kproto spark segments PATH... --out DIR [--format parquet|json] [--master URL]
    kproto spark internal-topic INPUT --topic __consumer_offsets --out DIR [--master URL]

Spark runs embedded (``local[*]``) unless ``--master`` names a cluster; then kproto
must be installed on the executors and the input paths readable there.

Building the parser needs neither pyspark nor pyarrow; running a subcommand without
them fails with :class:`~kproto.cli._common.CliError` (``pip install 'kproto[spark]'``).
Inputs are checked before Spark starts (missing paths, no ``.log`` segments, bad
``--conf``); phase lines go to stderr while it runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import attrs

from kproto.cli._common import CliError
from kproto.spark._arrow_write import resolve_writer, write_segments_arrow
from kproto.spark._framing import (
    FramingError,
    SegmentFile,
    find_segment_files,
    scan_file,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Kept here (not imported from _decode) so that building the parser does not import
# pyspark; tests check it equals kproto.spark.INTERNAL_TOPICS.
TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")

__all__ = [
    "add_parsers",
    "require_spark",
    "run_segments",
    "run_internal_topic",
    "make_session",
    "resolve_writer",
    "write_segments_arrow",
    "PARQUET_OPTIONS",
    "SESSION_CONF",
    "Summary",
    "scan_summary",
]


@attrs.define
class Summary:
    """What a run read and wrote.

    Attributes:
        files: segment files read.
        batches: batches framed by the header scan (including corrupt ones).
        records: record rows written.
        corrupt_batches: error rows (batches that failed to decode or frame).
        bytes: total size of the input files.
        seconds: wall-clock time of the whole run, Spark's start-up included.
        corrupt_by_file: corrupt batch count per file (only files with any).
        startup_seconds: of ``seconds``, the time Spark took to start.
    """

    files: int = 0
    batches: int = 0
    records: int = 0
    corrupt_batches: int = 0
    bytes: int = 0
    seconds: float = 0.0
    corrupt_by_file: dict[str, int] = attrs.field(factory=dict)
    startup_seconds: float = 0.0

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def render(self) -> str:
        """Human-readable multi-line summary."""
        mb = self.bytes / 1e6
        lines = [
            f"files            {self.files:>14,}",
            f"batches          {self.batches:>14,}",
            f"records          {self.records:>14,}",
            f"corrupt batches  {self.corrupt_batches:>14,}",
            f"bytes            {self.bytes:>14,}  ({mb:,.1f} MB)",
            f"time             {self.seconds:>14.1f} s  "
            f"(Spark start-up {self.startup_seconds:.1f} s)",
            f"records/s        {self.records_per_second:>14,.0f}",
        ]
        for f, n in sorted(self.corrupt_by_file.items()):
            lines.append(f"  corrupt: {n:>6} in {f}")
        return "\n".join(lines)


def require_spark() -> None:
    """Check that the ``spark`` extra is installed, without importing it.

    Raises:
        CliError: pyspark, pyarrow or pandas is missing (the message says how to
            install them).
    """
    missing = [
        m
        for m in ("pyspark", "pyarrow", "pandas")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise CliError(
            f"kproto spark needs {', '.join(missing)}: pip install 'kproto[spark]'"
        )


class _Progress:
    """Phase lines on stderr, ``kproto spark: <phase> [<seconds since start> s]``."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def __call__(self, phase: str) -> None:
        print(f"kproto spark: {phase} [{self.elapsed():.1f} s]", file=sys.stderr)
        sys.stderr.flush()


def _files(n: int) -> str:
    return f"{n:,} .log file{'' if n == 1 else 's'}"


def _check_conf(items: Sequence[str]) -> None:
    for item in items:
        if "=" not in item:
            raise CliError(f"--conf expects KEY=VALUE, got {item!r}")


def _start_spark(
    args: argparse.Namespace, app: str, progress: _Progress
) -> tuple[SparkSession, float]:
    """(SparkSession, its start-up seconds), with a phase line before and after."""
    progress(f"starting Spark ({args.master or 'local[*]'})")
    before = progress.elapsed()
    spark = make_session(args.master, app, args.conf)
    seconds = progress.elapsed() - before
    progress(f"Spark started in {seconds:.1f} s")
    return spark, seconds


def scan_summary(paths: Sequence[str]) -> Summary:
    """Files, bytes and batch count of segment inputs by a header-only scan (reads 17
    bytes per batch; no decoding).

    Raises:
        FileNotFoundError: a path does not exist.
    """
    s = Summary()
    for seg in find_segment_files(paths):
        s.files += 1
        s.bytes += seg.size
        for item in scan_file(seg.path, 0, seg.size):
            if not isinstance(item, FramingError):
                s.batches += 1
    return s


def make_session(
    master: str | None, app_name: str, extra: Sequence[str] = ()
) -> SparkSession:
    """A SparkSession for the CLI: ``local[*]`` by default, console progress on,
    Arrow schema validation on, UTC session time zone, and :data:`SESSION_CONF`
    (Parquet timestamps as TIMESTAMP_MICROS, not INT96).

    ``extra`` holds ``key=value`` Spark settings (``--conf``); they win over the
    defaults.

    Raises:
        ValueError: a ``--conf`` item without ``=``.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master or "local[*]")
        .appName(app_name)
        .config("spark.ui.showConsoleProgress", "true")
        .config("spark.sql.execution.arrow.pyspark.validateSchema.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in SESSION_CONF.items():
        builder = builder.config(key, value)
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--conf expects key=value, got {item!r}")
        builder = builder.config(key, value)
    existing = SparkSession.getActiveSession()
    spark = builder.getOrCreate()
    if existing is None:
        spark.sparkContext.setLogLevel("WARN")
    return spark


#: Parquet writer options for ``read_log_segments`` output (Spark's writer), chosen
#: to give about the size of pyarrow's default write of the same rows:
#:
#: * ``key`` and ``value`` keep their dictionaries, as pyarrow's defaults do, with a
#:   dictionary page of up to 8 MiB instead of 1 MiB: Spark writes 128 MiB row
#:   groups (pyarrow: one per written batch), and payloads that repeat across a
#:   row group (common in real topics: a few distinct events, keys, JSON shapes)
#:   overflowed 1 MiB and fell back to plain pages. With both off the output was
#:   5.3x pyarrow's, with 1 MiB pages 3.5x (``make bench-spark``). Unique payloads
#:   still fall back to plain pages once the dictionary passes 8 MiB, a bounded
#:   cost per column chunk.
#: * no dictionary for ``offset`` (unique per partition: built, then abandoned);
#: * no min/max statistics for ``key``/``value`` (comparing every payload byte-wise
#:   cost ~0.2-0.4 CPU-s per million records; payload min/max prune almost nothing).
PARQUET_OPTIONS: dict[str, str] = {
    "parquet.enable.dictionary#offset": "false",
    "parquet.dictionary.page.size": str(8 * 1024 * 1024),
    **{f"parquet.column.statistics.enabled#{c}": "false" for c in ("key", "value")},
}

#: Spark settings of the CLI's session (``--conf`` overrides them), recommended for
#: any session that writes ``read_log_segments`` output to Parquet:
#: ``outputTimestampType=TIMESTAMP_MICROS`` stores ``timestamp`` as a Parquet
#: TIMESTAMP(MICROS, UTC) int64 column, as pyarrow (``--writer arrow``) does, instead
#: of Spark's legacy INT96 default (12-byte binaries built and dictionary-hashed per
#: row: ~0.6 CPU-s more per million records). Spark and other readers read both.
SESSION_CONF: dict[str, str] = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


def _write(df: DataFrame, out: str, fmt: str) -> None:
    writer = df.write.mode("overwrite")
    if fmt == "json":
        writer.json(out)
    else:
        writer.options(**PARQUET_OPTIONS).parquet(out)


def _read_back(spark: SparkSession, out: str, fmt: str) -> DataFrame:
    return spark.read.json(out) if fmt == "json" else spark.read.parquet(out)


def _counts(spark: SparkSession, out: str, fmt: str) -> tuple[int, dict[str, int]]:
    """(record rows, corrupt batches per file) of a written segments dataset."""
    from pyspark.sql import functions as F

    df = _read_back(spark, out, fmt)
    if "error" not in df.columns:  # an empty JSON output has no columns
        return 0, {}
    records = df.where(F.col("error").isNull()).count()
    errors = df.where(F.col("error").isNotNull()).groupBy("file").count().collect()
    return records, {str(r["file"]): int(r["count"]) for r in errors}


def run_segments(args: argparse.Namespace, *, out: TextIO = sys.stdout) -> int:
    """``kproto spark segments``: decode segment files and write one row per record
    (plus one ``error`` row per corrupt batch) to ``--out`` as Parquet or JSON Lines;
    print a summary. Returns 0 (corrupt batches are error rows, counted in the
    summary), or 1 with ``--fail-on-corrupt`` when there was any.

    Raises:
        FileNotFoundError: an input path does not exist.
        CliError: the extra is missing, no ``.log`` segments under the paths, or an
            option is wrong (before Spark starts).
    """
    progress = _Progress()
    require_spark()
    paths = [str(p) for p in args.paths]
    summary = scan_summary(paths)
    if not summary.files:
        raise CliError(f"no .log segments under {', '.join(paths)}")
    if args.writer == "arrow" and args.format != "parquet":
        raise CliError("--writer arrow writes Parquet only")
    _check_conf(args.conf)
    progress(f"{_files(summary.files)}, {summary.bytes:,} bytes")
    from kproto.spark._read import read_log_segments

    spark, summary.startup_seconds = _start_spark(
        args, "kproto spark segments", progress
    )
    split_bytes = int(args.split_mb * 1024 * 1024) if args.split_mb else None
    # The session's own master: spark-submit may set it without --master.
    writer = resolve_writer(
        args.writer, args.format, args.out, spark.sparkContext.master
    )
    progress(f"decoding and writing {args.format} to {args.out} ({writer} writer)")
    if writer == "arrow":
        summary.records, summary.corrupt_by_file = write_segments_arrow(
            spark, paths, args.out, split_bytes=split_bytes, check_crc=not args.no_crc
        )
    else:
        df = read_log_segments(
            spark, paths, split_bytes=split_bytes, check_crc=not args.no_crc
        )
        _write(df, args.out, args.format)
        progress("counting the rows written")
        summary.records, summary.corrupt_by_file = _counts(spark, args.out, args.format)
    summary.seconds = progress.elapsed()
    summary.corrupt_batches = sum(summary.corrupt_by_file.values())
    print(summary.render(), file=out)
    print(f"wrote {args.format} to {args.out}", file=out)
    _write_summary(args.out, summary)
    return 1 if args.fail_on_corrupt and summary.corrupt_batches else 0


def _write_summary(out_dir: str, summary: Summary) -> None:
    # Next to the data files; Spark ignores names starting with "_" when reading.
    data: dict[str, Any] = attrs.asdict(summary)
    data["records_per_second"] = summary.records_per_second
    Path(out_dir, "_kproto_summary.json").write_text(json.dumps(data, indent=2) + "\n")


def _is_segments(path: str) -> bool:
    p = Path(path)
    if p.is_file():
        return p.suffix == ".log"
    return p.is_dir() and next(p.rglob("*.log"), None) is not None


def topic_segments(path: str, topic: str) -> list[SegmentFile]:
    """The segments under ``path`` that belong to ``topic``: those in its
    ``<topic>-<partition>`` directories, and those in directories not named that way
    (taken as given). A broker data directory thus gives only that topic's logs.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    return [f for f in find_segment_files([path]) if f.topic in (topic, None)]


def _has_dataset_files(path: str) -> bool:
    p = Path(path)
    if p.is_file():
        return True
    return any(
        q.is_file() and not q.name.startswith(("_", "."))
        for q in p.rglob("*")
        if not any(part.startswith(("_", ".")) for part in q.relative_to(p).parts)
    )


def run_internal_topic(args: argparse.Namespace, *, out: TextIO = sys.stdout) -> int:
    """``kproto spark internal-topic``: decode ``__consumer_offsets`` or
    ``__transaction_state`` records and write them with typed key/value structs.

    INPUT is segment files/folders of that topic, or a Parquet/JSON dataset shaped
    like Spark's Kafka source (binary ``key`` and ``value``); ``--input-format auto``
    picks segments if INPUT is or contains ``*.log``. Corrupt batches and records
    that fail to decode are rows with ``error`` set. Returns 0, or 1 with
    ``--fail-on-corrupt`` when there was any.

    Segments are only those of ``--topic`` (:func:`topic_segments`).

    Raises:
        FileNotFoundError: INPUT does not exist.
        CliError: the extra is missing, INPUT holds no segments of the topic (or no
            dataset files), or an option is wrong (before Spark starts).
    """
    progress = _Progress()
    require_spark()
    if not Path(args.input).exists():
        raise FileNotFoundError(f"no such file or folder: {args.input}")
    fmt = args.input_format
    if fmt == "auto":
        fmt = "segments" if _is_segments(args.input) else "parquet"
    files: list[SegmentFile] = []
    if fmt == "segments":
        files = topic_segments(args.input, args.topic)
        if not files:
            raise CliError(f"no .log segments of {args.topic} under {args.input}")
        progress(f"reading {args.topic} from {_files(len(files))}")
    elif not _has_dataset_files(args.input):
        raise CliError(f"no .log segments or {fmt} files under {args.input}")
    _check_conf(args.conf)
    from pyspark.sql import functions as F

    from kproto.spark._decode import decode_internal_topic
    from kproto.spark._read import read_log_segments

    spark, startup = _start_spark(
        args, f"kproto spark internal-topic {args.topic}", progress
    )
    progress(f"decoding and writing {args.format} to {args.out}")
    if fmt == "segments":  # corrupt batches stay as error rows
        source = read_log_segments(spark, [f.path for f in files])
    elif fmt == "json":
        # Spark writes binary columns to JSON as base64 strings.
        source = (
            spark.read.json(args.input)
            .withColumn("key", F.unbase64("key"))
            .withColumn("value", F.unbase64("value"))
        )
    else:
        source = spark.read.parquet(args.input)
    decoded = decode_internal_topic(source, args.topic)
    _write(decoded, args.out, args.format)
    progress("counting the rows written")
    written = _read_back(spark, args.out, args.format)
    total = written.count()
    bad = written.where(F.col("error").isNotNull()).count() if total else 0
    by_type = (
        {str(r[0]): int(r[1]) for r in written.groupBy("record_type").count().collect()}
        if total
        else {}
    )
    print(f"records          {total:>14,}", file=out)
    for name, n in sorted(by_type.items()):
        print(f"  {name:<15}{n:>14,}", file=out)
    seconds = progress.elapsed()
    print(f"decode errors    {bad:>14,}", file=out)
    print(
        f"time             {seconds:>14.1f} s  (Spark start-up {startup:.1f} s)",
        file=out,
    )
    print(f"records/s        {total / seconds if seconds else 0:>14,.0f}", file=out)
    print(f"wrote {args.format} to {args.out}", file=out)
    return 1 if args.fail_on_corrupt and bad else 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output folder (replaced if it exists)")
    p.add_argument("--format", choices=("parquet", "json"), default="parquet")
    p.add_argument(
        "--master",
        default=None,
        help="Spark master URL (default: embedded local[*]); e.g. spark://host:7077",
    )
    p.add_argument(
        "--fail-on-corrupt",
        action="store_true",
        help="exit 1 when a batch or record did not decode (default: write it as a "
        "row with 'error' set and exit 0)",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting (repeatable)",
    )


def add_parsers(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``spark`` command (with ``segments`` and ``internal-topic``) to an
    argparse ``subparsers`` object; returns the ``spark`` parser. Each leaf parser
    sets ``func`` to its run function.

    Needs neither pyspark nor pyarrow: the run functions check for them
    (:func:`require_spark`).
    """
    spark = subparsers.add_parser(
        "spark",
        help="decode Kafka data with PySpark (needs kproto[spark])",
        description="Decode Kafka log segments and internal topics with PySpark.",
    )
    sub = spark.add_subparsers(dest="spark_command", required=True)

    seg = sub.add_parser(
        "segments",
        help="Kafka .log segment files to Parquet/JSON, one row per record",
        description="Decode Kafka log segment files (files, or folders searched "
        "recursively for *.log) to one row per record. Corrupt batches become rows "
        "with an 'error' column and are counted in the summary.",
    )
    seg.add_argument("paths", nargs="+", metavar="PATH")
    _common(seg)
    seg.add_argument(
        "--split-mb",
        type=float,
        default=None,
        help="target MiB per Spark partition (default: input size / (8 x cores), "
        "between 4 and 64)",
    )
    seg.add_argument("--no-crc", action="store_true", help="skip CRC checks")
    seg.add_argument(
        "--writer",
        choices=("auto", "spark", "arrow"),
        default="auto",
        help="spark: read_log_segments + Spark's writer (any output URI); arrow: "
        "Spark tasks write Parquet directly with pyarrow (about half the CPU; OUT must "
        "be a path every executor can write); auto (default): arrow for Parquet to a "
        "local path on an embedded (local) master, else spark",
    )
    seg.set_defaults(func=run_segments)

    it = sub.add_parser(
        "internal-topic",
        help="decode __consumer_offsets / __transaction_state records",
        description="Decode the keys and values of an internal topic by their "
        "version prefixes into typed columns.",
    )
    it.add_argument(
        "input", metavar="INPUT", help="segments, or a Kafka-shaped dataset"
    )
    it.add_argument("--topic", required=True, choices=TOPICS)
    it.add_argument(
        "--input-format",
        choices=("auto", "segments", "parquet", "json"),
        default="auto",
        help="how to read INPUT (default: segments if it holds *.log, else parquet)",
    )
    _common(it)
    it.set_defaults(func=run_internal_topic)
    return spark  # type: ignore[no-any-return]
