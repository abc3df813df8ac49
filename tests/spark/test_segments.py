"""read_log_segments: the Spark path against plain-Python decoding of the same files."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from kafka.record.memory_records import MemoryRecords
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from spark_data import CODECS, legacy_batch, make_records, v2_batch, write_segment

from kproto.records import ControlRecordType, decode_batches, encode_control_batch
from kproto.spark import (
    SEGMENT_SCHEMA,
    demo_table,
    read_log_segments,
    records_only,
    segment_errors,
)

COLUMNS = [f.name for f in SEGMENT_SCHEMA.fields if f.name != "timestamp"]


def spark_rows(df: DataFrame) -> list[dict[str, Any]]:
    """Collected rows as dicts; timestamp as exact µs since the epoch."""
    out = []
    for row in df.select(*COLUMNS, F.unix_micros("timestamp").alias("ts_us")).collect():
        d = row.asDict(recursive=True)
        d["headers"] = [(h["key"], h["value"]) for h in d["headers"] or []]
        out.append(d)
    return sorted(out, key=lambda d: (d["file"], d["offset"] is None, d["offset"] or 0))


def python_rows(
    path: Path, topic: str | None, partition: int | None
) -> list[dict[str, Any]]:
    """The rows read_log_segments should produce, by plain decode_batches."""
    out = []
    for b in decode_batches(path.read_bytes()):
        for r in b.records:
            out.append(
                {
                    "topic": topic,
                    "partition": partition,
                    "offset": r.offset,
                    "ts_us": r.timestamp * 1000,
                    "timestamp_type": int(b.timestamp_type),
                    "key": r.key,
                    "value": r.value,
                    "headers": list(r.headers),
                    "base_offset": b.base_offset,
                    "partition_leader_epoch": b.partition_leader_epoch,
                    "magic": b.magic,
                    "compression": b.compression.label,
                    "is_transactional": b.is_transactional,
                    "is_control": b.is_control,
                    "producer_id": b.producer_id,
                    "producer_epoch": b.producer_epoch,
                    "base_sequence": b.base_sequence,
                    "file": str(path),
                    "error": None,
                }
            )
    return out


def kafka_python_records(
    path: Path,
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record, by kafka-python's reader."""
    out = []
    mr = MemoryRecords(path.read_bytes())
    while mr.has_next():
        batch = mr.next_batch()
        for r in batch:
            out.append((r.offset, r.timestamp if batch.magic else -1, r.key, r.value))
    return out


@pytest.fixture(scope="module")
def mixed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every codec for magic 2, every legacy codec for magic 0 and 1, transactions."""
    root = tmp_path_factory.mktemp("mixed")
    recs = make_records(60, seed=1)
    off = 0
    v2: list[bytes] = []
    for codec in CODECS:
        v2.append(v2_batch(off, recs[:40], codec, leader_epoch=5))
        off += 40
    v2.append(
        v2_batch(
            off,
            recs[:7],
            "zstd",
            transactional=True,
            producer_id=42,
            producer_epoch=3,
            base_sequence=10,
        )
    )
    off += 7
    v2.append(
        encode_control_batch(
            ControlRecordType.COMMIT,
            coordinator_epoch=1,
            producer_id=42,
            producer_epoch=3,
            base_offset=off,
            timestamp=1_700_000_000_123,
        )
    )
    write_segment(root, "orders", 0, v2)
    for magic in (0, 1):
        legacy: list[bytes] = []
        off = 100
        for codec in ("none", "gzip", "snappy", "lz4"):
            legacy.append(legacy_batch(magic, off, recs[:15], codec))
            off += 15
        write_segment(root, f"legacy.m{magic}", magic, legacy, base=100)
    (root / "not-kafka").mkdir()
    (root / "not-kafka" / "dump.log").write_bytes(v2_batch(0, recs[:3]))
    return root


def test_mixed_equals_python_decoding(spark: SparkSession, mixed_dir: Path) -> None:
    df = read_log_segments(spark, mixed_dir)
    assert df.schema == SEGMENT_SCHEMA
    got = spark_rows(df)
    want: list[dict[str, Any]] = []
    for p in sorted(mixed_dir.rglob("*.log")):
        topic, partition = (
            (None, None)
            if p.parent.name == "not-kafka"
            else p.parent.name.rsplit("-", 1)
        )
        want += python_rows(p, topic, None if partition is None else int(partition))
    want.sort(key=lambda d: (d["file"], d["offset"]))
    assert len(got) == len(want) == 5 * 40 + 7 + 1 + 2 * 60 + 3
    for g, w in zip(got, want, strict=True):
        assert g == w
    # independent cross-check of offsets/timestamps/keys/values with kafka-python
    for p in sorted(mixed_dir.rglob("*.log")):
        ours = [
            (d["offset"], d["ts_us"] // 1000, d["key"], d["value"])
            for d in got
            if d["file"] == str(p)
        ]
        assert ours == kafka_python_records(p)


def test_codecs_magics_and_fields(spark: SparkSession, mixed_dir: Path) -> None:
    df = records_only(read_log_segments(spark, mixed_dir))
    seen = {
        (r.magic, r.compression)
        for r in df.select("magic", "compression").distinct().collect()
    }
    assert seen == {(2, c) for c in CODECS} | {
        (m, c) for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")
    }
    txn = df.where("is_transactional").orderBy("offset").collect()
    assert [r.is_control for r in txn] == [False] * 7 + [True]
    assert {(r.producer_id, r.producer_epoch) for r in txn} == {(42, 3)}
    assert txn[0].base_sequence == 10
    m0 = (
        df.where("magic = 0")
        .select("timestamp_type", F.unix_micros("timestamp").alias("t"))
        .distinct()
        .collect()
    )
    assert [(r.timestamp_type, r.t) for r in m0] == [(-1, -1000)]
    m2 = (
        df.where("magic = 2 and not is_control")
        .select("partition_leader_epoch")
        .distinct()
        .collect()
    )
    assert {r[0] for r in m2} == {5, 0}  # 0: the transactional batch
    nk = (
        df.where(F.col("file").contains("not-kafka"))
        .select("topic", "partition")
        .distinct()
        .collect()
    )
    assert [tuple(r) for r in nk] == [(None, None)]


def test_split_large_file_at_batch_boundaries(
    spark: SparkSession, tmp_path: Path
) -> None:
    recs = make_records(5000, seed=2)
    codecs = list(CODECS)
    batches = [
        v2_batch(50 * i, recs[50 * i : 50 * i + 50], codecs[i % 5]) for i in range(100)
    ]
    p = write_segment(tmp_path, "big", 1, batches)
    size = p.stat().st_size
    # chunk smaller than one batch: exercises reading batches larger than a chunk
    df = read_log_segments(spark, p, split_bytes=size // 9, chunk_bytes=512)
    assert df.rdd.getNumPartitions() >= 8
    got = spark_rows(df)
    assert [d["offset"] for d in got] == list(range(5000))
    assert got == python_rows(p, "big", 1)
    per_partition = df.rdd.mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()
    assert sum(per_partition) == 5000 and sum(1 for n in per_partition if n) >= 8


def _corrupt_dir(root: Path) -> tuple[Path, Path, Path]:
    recs = make_records(30, seed=3)
    batches = [v2_batch(10 * i, recs[10 * i : 10 * i + 10], "gzip") for i in range(3)]
    bad = bytearray(batches[1])
    bad[-3] ^= 0xFF  # inside the compressed records: CRC mismatch
    crc = write_segment(root, "crc", 0, [batches[0], bytes(bad), batches[2]])
    truncated = write_segment(root, "trunc", 0, [batches[0], batches[1][:-10]])
    garbage = write_segment(
        root, "garbage", 0, [batches[0], b"\x00" * 8 + struct.pack(">i", -5) + b"zz"]
    )
    return crc, truncated, garbage


def test_corrupt_batches_are_reported(spark: SparkSession, tmp_path: Path) -> None:
    crc, truncated, garbage = _corrupt_dir(tmp_path)
    df = read_log_segments(spark, tmp_path)
    errors = {r.file: r for r in segment_errors(df).collect()}
    assert set(errors) == {str(crc), str(truncated), str(garbage)}
    assert (
        "crc" in errors[str(crc)].error.lower() and errors[str(crc)].base_offset == 10
    )
    assert "truncated" in errors[str(truncated)].error
    assert "invalid batch length -5" in errors[str(garbage)].error
    offsets = {
        f: sorted(
            r.offset for r in records_only(df).where(F.col("file") == f).collect()
        )
        for f in map(str, (crc, truncated, garbage))
    }
    assert offsets[str(crc)] == list(range(10)) + list(range(20, 30))
    assert offsets[str(truncated)] == offsets[str(garbage)] == list(range(10))
    summary = {
        r.topic: r.corrupt_batches for r in demo_table(spark, tmp_path).collect()
    }
    assert summary == {"crc": 1, "garbage": 1, "trunc": 1}


def test_corrupt_fail_mode(spark: SparkSession, tmp_path: Path) -> None:
    _corrupt_dir(tmp_path)
    with pytest.raises(Exception, match="corrupt Kafka batch"):
        read_log_segments(spark, tmp_path, corrupt="fail").collect()


def test_bad_inputs(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_log_segments(spark, tmp_path / "nope")
    with pytest.raises(ValueError):
        read_log_segments(spark, tmp_path, corrupt="ignore")  # type: ignore[arg-type]
    assert read_log_segments(spark, tmp_path).count() == 0  # empty folder
    empty = write_segment(tmp_path, "e", 0, [])
    assert read_log_segments(spark, empty).count() == 0
    junk = tmp_path / "junk.log"
    junk.write_bytes(b"hello, this is not kafka at all" * 3)
    (row,) = read_log_segments(spark, junk).collect()
    assert row.error is not None and row.offset is None and row.file == str(junk)


def test_data_source_by_format_name(spark: SparkSession, mixed_dir: Path) -> None:
    read_log_segments(spark, mixed_dir)  # registers the source
    p = mixed_dir / "orders-0" / "00000000000000000000.log"
    df = spark.read.format("kproto-segments").load(str(p))
    assert df.count() == 5 * 40 + 8
