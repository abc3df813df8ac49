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
    for fmt, writer in (("parquet", "spark"), ("json", "spark"), ("parquet", "arrow")):
        out_dir = tmp_path / f"out-{fmt}-{writer}"
        args = _parse(
            ["spark", "segments", str(src), "--out", str(out_dir), "--format", fmt]
            + ["--writer", writer]
        )
        buf = io.StringIO()
        assert args.func(args, out=buf) == 1  # one corrupt batch
        text = buf.getvalue()
        assert "corrupt batches" in text and "records/s" in text
        summary = json.loads((out_dir / "_kproto_summary.json").read_text())
        assert (summary["files"], summary["batches"], summary["records"]) == (2, 4, 205)
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


def test_internal_topic_cli(spark: SparkSession, tmp_path: Path) -> None:
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
    assert args.func(args, out=buf) == 1
    assert "decode errors                 1" in buf.getvalue()
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
