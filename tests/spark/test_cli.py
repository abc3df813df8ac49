"""The ``kproto spark`` subcommands, run in-process on the shared session."""

from __future__ import annotations

import argparse
import io
import json
import struct
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from spark_data import make_records, v2_batch, write_segment

from kproto.spark import SEGMENT_SCHEMA
from kproto.spark.cli import add_parsers, scan_summary


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kproto")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_segments_cli(spark: SparkSession, tmp_path: Path) -> None:
    recs = make_records(200, seed=5)
    src = tmp_path / "in"
    write_segment(
        src,
        "a",
        0,
        [v2_batch(0, recs[:100], "gzip"), v2_batch(100, recs[100:], "zstd")],
    )
    bad = bytearray(v2_batch(0, recs[:10], "snappy"))
    bad[-1] ^= 1
    write_segment(src, "b", 2, [bytes(bad), v2_batch(10, recs[:5])])
    for fmt, writer, fail in (
        ("parquet", "spark", False),
        ("json", "spark", False),
        ("parquet", "arrow", True),
    ):
        out_dir = tmp_path / f"out-{fmt}-{writer}"
        args = _parse(
            ["spark", "segments", str(src), "--out", str(out_dir), "--format", fmt]
            + ["--writer", writer]
            + (["--fail-on-corrupt"] if fail else [])
        )
        buf = io.StringIO()
        # One corrupt batch: an error row; a failure only with --fail-on-corrupt.
        assert args.func(args, out=buf) == (1 if fail else 0)
        text = buf.getvalue()
        assert "corrupt batches" in text and "records/s" in text
        summary = json.loads((out_dir / "_kproto_summary.json").read_text())
        assert (summary["files"], summary["batches"], summary["records"]) == (2, 4, 205)
        # the time is the whole run, Spark's start-up (here: the shared session) in it
        assert summary["seconds"] > summary["startup_seconds"] > 0
        assert f"(Spark start-up {summary['startup_seconds']:.1f} s)" in text
        assert summary["corrupt_batches"] == 1
        assert list(summary["corrupt_by_file"]) == [
            str(src / "b-2" / "00000000000000000000.log")
        ]
        back = (
            spark.read.parquet(str(out_dir))
            if fmt == "parquet"
            else spark.read.json(str(out_dir))
        )
        assert back.count() == 206
        if writer == "arrow":
            assert back.schema == SEGMENT_SCHEMA


def test_internal_topic_cli(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serial = pytest.importorskip("kproto.serial")
    from kproto.index import data_type

    key = struct.pack(">h", 2) + serial.encode(
        data_type("GroupMetadataKey", 2)(group="g")
    )
    value = struct.pack(">h", 3) + serial.encode(
        data_type("GroupMetadataValue", 3)(
            protocol_type="consumer", generation=1, protocol=None, leader=None
        )
    )
    bad_key = struct.pack(">h", 42)
    write_segment(
        tmp_path / "in",
        "__consumer_offsets",
        0,
        [v2_batch(0, [(1, key, value, []), (2, key, None, []), (3, bad_key, b"", [])])],
    )
    # a broker data dir holds other topics too: only __consumer_offsets-N is read
    write_segment(tmp_path / "in", "orders", 0, [v2_batch(0, make_records(5, seed=1))])
    write_segment(tmp_path / "in", "__consumer_offsets-x", 1, [b"\x00" * 70])
    out_dir = tmp_path / "out"
    args = _parse(
        [
            "spark",
            "internal-topic",
            str(tmp_path / "in"),
            "--topic",
            "__consumer_offsets",
            "--out",
            str(out_dir),
        ]
    )
    buf = io.StringIO()
    assert args.func(args, out=buf) == 0
    assert "records                       3" in buf.getvalue()
    assert "decode errors                 1" in buf.getvalue()
    assert "(Spark start-up " in buf.getvalue()
    progress = capsys.readouterr().err.splitlines()
    assert [line.split(" [")[0] for line in progress] == [
        "kproto spark: reading __consumer_offsets from 1 .log file",
        "kproto spark: starting Spark (local[*])",
        progress[2].split(" [")[0],
        f"kproto spark: decoding and writing parquet to {out_dir}",
        "kproto spark: counting the rows written",
    ]
    assert progress[2].startswith("kproto spark: Spark started in ")
    rows = spark.read.parquet(str(out_dir)).orderBy("offset").collect()
    assert (
        rows[0].group_metadata_value.generation == 1
        and rows[1].group_metadata_value is None
    )
    assert "unknown key version 42" in rows[2].error
    # the written Parquet is itself a Kafka-shaped input
    args2 = _parse(
        [
            "spark",
            "internal-topic",
            str(out_dir),
            "--topic",
            "__consumer_offsets",
            "--out",
            str(tmp_path / "out2"),
            "--input-format",
            "parquet",
        ]
    )
    with pytest.raises(Exception, match="already exist"):
        args2.func(args2, out=io.StringIO())


def test_scan_summary_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        scan_summary([str(tmp_path / "missing")])
    with pytest.raises(SystemExit):
        _parse(["spark", "internal-topic", "x", "--topic", "__other", "--out", "y"])


def test_parser_needs_no_pyspark_import() -> None:
    import subprocess
    import sys

    from kproto.spark import INTERNAL_TOPICS
    from kproto.spark.cli import TOPICS

    assert set(TOPICS) == set(INTERNAL_TOPICS)
    code = (
        "import sys, argparse; from kproto.spark.cli import add_parsers; "
        "p = argparse.ArgumentParser(); add_parsers(p.add_subparsers()); "
        "print(any(m.startswith(('pyspark', 'pyarrow')) for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_auto_writer_choice() -> None:
    from kproto.spark.cli import resolve_writer

    assert resolve_writer("auto", "parquet", "/tmp/out", "local[2]") == "arrow"
    assert resolve_writer("auto", "parquet", "file:///tmp/out", None) == "arrow"
    assert resolve_writer("auto", "json", "/tmp/out", "local[2]") == "spark"
    assert resolve_writer("auto", "parquet", "hdfs://nn/out", "local[2]") == "spark"
    assert resolve_writer("auto", "parquet", "/tmp/out", "yarn") == "spark"
    assert resolve_writer("spark", "parquet", "/tmp/out", "local[2]") == "spark"


def test_parquet_size_near_pyarrow_defaults(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Both writers' Parquet stays within 1.2x of pyarrow's default write of the same
    rows on repetitive payloads (with key/value dictionaries off it was 5x)."""
    import pyarrow.parquet as pq

    templates = [v2_batch(0, make_records(500, seed=s), "zstd") for s in range(4)]
    batches = []
    for i in range(40):
        b = bytearray(templates[i % 4])
        struct.pack_into(">q", b, 0, i * 500)
        batches.append(bytes(b))
    src = tmp_path / "in"
    write_segment(src, "t", 0, batches)
    sizes = {}
    for writer in ("spark", "arrow"):
        out_dir = tmp_path / writer
        args = _parse(
            ["spark", "segments", str(src), "--out", str(out_dir), "--writer", writer]
        )
        assert args.func(args, out=io.StringIO()) == 0
        sizes[writer] = sum(p.stat().st_size for p in out_dir.glob("*.parquet"))
    rows = pq.read_table(str(tmp_path / "arrow"))
    assert rows.num_rows == 20_000
    pq.write_table(rows, str(tmp_path / "default.parquet"))  # pyarrow's defaults
    reference = (tmp_path / "default.parquet").stat().st_size
    assert sizes["spark"] <= 1.2 * reference, (sizes, reference)
    assert sizes["arrow"] <= 1.2 * reference, (sizes, reference)


def test_arrow_writer_parquet_options(spark: SparkSession, tmp_path: Path) -> None:
    """``--writer arrow`` applies ARROW_PARQUET_OPTIONS: offset and timestamp
    DELTA_BINARY_PACKED, dictionaries elsewhere, no key/value statistics; the rows
    read back equal to Spark's writer's."""
    import pyarrow.parquet as pq

    from kproto.spark._arrow_write import ARROW_PARQUET_OPTIONS

    names = {f.name for f in SEGMENT_SCHEMA}
    encoded = set(ARROW_PARQUET_OPTIONS["use_dictionary"])  # type: ignore[arg-type]
    assert encoded | {"offset", "timestamp"} == names
    stats = set(ARROW_PARQUET_OPTIONS["write_statistics"])  # type: ignore[arg-type]
    assert stats | {"key", "value"} == names
    recs = make_records(300, seed=7)
    src = tmp_path / "in"
    write_segment(
        src, "t", 3, [v2_batch(0, recs[:150], "lz4"), v2_batch(150, recs[150:])]
    )
    for writer in ("spark", "arrow"):
        args = _parse(
            ["spark", "segments", str(src), "--out", str(tmp_path / writer)]
            + ["--writer", writer]
        )
        assert args.func(args, out=io.StringIO()) == 0
    (part,) = (tmp_path / "arrow").glob("*.parquet")
    meta = pq.ParquetFile(part).metadata.row_group(0)
    columns = {
        meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)
    }
    for name in ("offset", "timestamp"):
        assert "DELTA_BINARY_PACKED" in columns[name].encodings
        assert not columns[name].has_dictionary_page
    for name in ("key", "value", "topic", "producer_id"):
        assert columns[name].has_dictionary_page
    assert (
        columns["key"].statistics is None or not columns["key"].statistics.has_min_max
    )
    assert columns["value"].statistics is None
    assert columns["offset"].statistics.min == 0
    back = {
        w: spark.read.parquet(str(tmp_path / w)).orderBy("offset").collect()
        for w in ("spark", "arrow")
    }
    assert len(back["arrow"]) == 300
    assert back["arrow"] == back["spark"]
