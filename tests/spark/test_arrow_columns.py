"""Arrow arrays over decode_arrow_columns buffers equal the ones built from lists.

``arrow_columns_to_batch`` (buffers, zero copy) against ``columns_to_batch``
(decode_columns lists) and ``pa.array`` of the lists, on both paths of
:mod:`kproto.speedups`, for every codec and every kind of batch.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spark_data import (  # type: ignore[import-not-found]
    legacy_batch,
    make_records,
    three_v2_batches,
)

from kproto import speedups
from kproto.records import (
    Compression,
    TimestampType,
    decode_arrow_columns,
    decode_columns,
    encode_batch,
    encode_control_batch,
)
from kproto.spark._columns import (
    SEGMENT_ARROW_SCHEMA,
    arrow_columns_to_batch,
    record_arrays,
    record_key,
)
from tests.records.records_testlib import with_region
from tests.records.test_records_native import records_v2
from tests.spark.reference_batch import columns_to_batch

BOTH = [True, False] if speedups.available() else [False]
TYPES = {f.name: f.type for f in SEGMENT_ARROW_SCHEMA}


def check(data: bytes) -> pa.RecordBatch:
    """Buffers -> Arrow equals lists -> Arrow, column by column, on both paths."""
    lists = decode_columns(data)
    want = columns_to_batch(lists, "t", 3, "/x/t-3/0.log")
    for native in BOTH:
        with speedups.using(native):
            cols = decode_arrow_columns(data)
        got = arrow_columns_to_batch(cols, "t", 3, "/x/t-3/0.log")
        got.validate(full=True)
        assert got.schema.equals(SEGMENT_ARROW_SCHEMA)
        for f in SEGMENT_ARROW_SCHEMA:
            assert got.column(f.name).equals(want.column(f.name)), f.name
        arrays = record_arrays(cols)
        for name in ("offset", "key", "value"):
            assert arrays[name].equals(pa.array(lists[name], TYPES[name])), name
        assert arrays["headers"].to_pylist() == [
            [{"key": k, "value": v} for k, v in hs] for hs in lists["headers"]
        ]
        assert [record_key(cols, i) for i in range(cols.records)] == lists["key"]
    return got


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_kind_of_batch(codec: str) -> None:
    recs = make_records(120, seed=18)
    data = three_v2_batches(recs, (codec,) * 3)
    data += encode_batch(
        [(None, b"", [("é", None)], 5), (b"", None, [], 6)],
        base_offset=120,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        compression=Compression[codec.upper()],
    )
    data += encode_control_batch(
        0, coordinator_epoch=1, producer_id=5, producer_epoch=0, base_offset=122
    )
    data += with_region(encode_batch([(b"k", b"v")], base_offset=123), b"", 0)
    legacy_codec = "none" if codec == "zstd" else codec  # magic 0/1: no zstd
    data += legacy_batch(1, 123, recs[:5], legacy_codec) + legacy_batch(
        0, 128, recs[:2]
    )
    batch = check(data)
    assert batch.num_rows == 130
    assert batch.column("magic").to_pylist()[-7:] == [1] * 5 + [0] * 2


@settings(max_examples=40)
@given(records_v2, st.sampled_from(list(Compression)))
def test_hypothesis_batches(src: list[Any], codec: Compression) -> None:
    data = encode_batch(src, compression=codec, base_offset=3)
    data += encode_batch(src[::-1], compression=codec, base_offset=3 + len(src))
    check(data)


def test_empty_and_corrupt() -> None:
    assert check(b"").num_rows == 0
    good = encode_batch([(b"k", b"v", [("h", b"1")], 1)] * 3)
    bad = good[:40] + bytes([good[40] ^ 1]) + good[41:]  # CRC mismatch: reported
    cols = decode_arrow_columns(bad + good, skip_corrupt=True)
    assert cols.records == 3 and len(cols.corrupt) == 1
    assert arrow_columns_to_batch(cols, None, None, "").num_rows == 3
