"""columns_to_batch: the run-wise conversion equals converting every element."""

from __future__ import annotations

from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from spark_data import (  # type: ignore[import-not-found]
    make_records,
    three_v2_batches,
)

from kproto.records import COLUMN_NAMES, Compression, decode_columns
from kproto.spark._columns import SEGMENT_ARROW_SCHEMA
from tests.spark.reference_batch import Runs, columns_to_batch

_LABELS = ("none", "gzip", "snappy", "lz4", "zstd")


def reference_batch(
    columns: dict[str, list[Any]], topic: str | None, partition: int | None, path: str
) -> pa.RecordBatch:
    """Element by element, the obvious way."""
    n = len(columns["offset"])
    types = {f.name: f.type for f in SEGMENT_ARROW_SCHEMA}
    out: dict[str, pa.Array] = {
        "topic": pa.array([topic] * n, pa.string()),
        "partition": pa.array([partition] * n, pa.int32()),
        "file": pa.array([path] * n, pa.string()),
        "error": pa.array([None] * n, pa.string()),
        "timestamp": pc.multiply(pa.array(columns["timestamp"], pa.int64()), 1000).cast(
            types["timestamp"]
        ),
        "compression": pa.array(
            [
                c if isinstance(c, str) else getattr(c, "label", None) or _LABELS[c]
                for c in columns["compression"]
            ],
            pa.string(),
        ),
        "headers": pa.array(
            [
                None if hs is None else [{"key": k, "value": v} for k, v in hs]
                for hs in columns["headers"]
            ],
            types["headers"],
        ),
    }
    # a None header list is written as an empty list
    out["headers"] = pc.if_else(
        pc.is_null(out["headers"]),
        pa.array([[]] * n, types["headers"]),
        out["headers"],
    )
    for name in COLUMN_NAMES:
        if name not in out:
            out[name] = pa.array(columns[name], types[name])
    return pa.RecordBatch.from_arrays(
        [out[f.name] for f in SEGMENT_ARROW_SCHEMA], schema=SEGMENT_ARROW_SCHEMA
    )


def check(columns: dict[str, list[Any]]) -> None:
    got = columns_to_batch(columns, "t", 3, "/x/t-3/0.log")
    want = reference_batch(columns, "t", 3, "/x/t-3/0.log")
    assert got.schema.equals(SEGMENT_ARROW_SCHEMA)
    for f in SEGMENT_ARROW_SCHEMA:
        assert got.column(f.name).equals(want.column(f.name)), f.name


def test_decoded_batches() -> None:
    recs = make_records(300, seed=4)
    data = three_v2_batches(recs, ("none", "gzip", "zstd"))
    columns = decode_columns(data)
    assert len(columns["offset"]) == 300
    check(columns)


def test_runs_that_are_not_uniform() -> None:
    """Adjacent batches sharing a base offset but not other fields (or one value
    changing inside a run): every column still comes out element by element."""
    n = 6
    columns: dict[str, list[Any]] = {
        "offset": list(range(n)),
        "timestamp": [1, 2, 3, 4, 5, -1],
        "timestamp_type": [0, 0, 0, 1, 1, 1],
        "key": [b"k", None, b"", b"k2", None, b"k3"],
        "value": [None, b"v", b"vv", b"", b"v5", None],
        "headers": [[], [("a", b"1"), ("b", None)], None, [], [("c", b"")], []],
        "base_offset": [0, 0, 0, 0, 10, 10],
        "partition_leader_epoch": [1, 1, 1, 2, 2, 2],
        "magic": [2, 2, 2, 2, 2, 2],
        "compression": [
            Compression.NONE,
            Compression.NONE,
            Compression.GZIP,
            Compression.GZIP,
            Compression.ZSTD,
            Compression.ZSTD,
        ],
        "is_transactional": [False, False, False, True, True, True],
        "is_control": [False, False, False, False, False, True],
        "producer_id": [-1, -1, -1, None, 5, 5],
        "producer_epoch": [-1, -1, -1, -1, 0, 0],
        "base_sequence": [-1, -1, -1, -1, 3, 3],
    }
    runs = Runs(pa.array(columns["base_offset"], pa.int64()))
    assert runs.ends == [4, 6]
    assert runs.firsts(columns["magic"]) == [2, 2]
    for name in ("is_control", "producer_id", "compression", "timestamp_type"):
        assert runs.firsts(columns[name]) is None, name
    check(columns)
    columns["compression"] = [0, 0, 1, 1, 4, 4]
    check(columns)
    columns["compression"] = ["none", "none", "gzip", "gzip", "zstd", "zstd"]
    check(columns)


def test_empty() -> None:
    check({name: [] for name in COLUMN_NAMES})
