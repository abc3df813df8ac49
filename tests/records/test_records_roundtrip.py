"""Property tests: encode -> decode roundtrips, and corruption only raises DecodeError."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto.records import (
    Compression,
    Record,
    decode_batches,
    decode_columns,
    encode_batch,
)
from kproto.records._v2_loop import v2_columns_fast as _v2_columns_fast
from kproto.records._v2_loop import v2_records_fast as _v2_records_fast
from kproto.serial.exceptions import DecodeError

blobs = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(st.tuples(st.text(max_size=12), blobs), max_size=4)
timestamps = st.integers(min_value=0, max_value=(1 << 50))
records_v2 = st.lists(
    st.tuples(blobs, blobs, headers, timestamps), min_size=1, max_size=40
)
records_legacy = st.lists(
    st.tuples(blobs, blobs, st.just([]), timestamps), min_size=1, max_size=20
)
SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _check(
    batch_records: tuple[Record, ...], src: list[Any], base: int, magic: int
) -> None:
    assert len(batch_records) == len(src)
    for i, (rec, (key, value, hdrs, ts)) in enumerate(
        zip(batch_records, src, strict=True)
    ):
        assert rec.offset == base + i
        assert (rec.key, rec.value) == (key, value)
        assert rec.headers == tuple(hdrs)
        assert rec.timestamp == (ts if magic else -1)


@SETTINGS
@given(records_v2, st.sampled_from(list(Compression)), st.integers(0, 1 << 40))
def test_roundtrip_v2(src: list[Any], codec: Compression, base: int) -> None:
    data = encode_batch(src, compression=codec, base_offset=base)
    (batch,) = list(decode_batches(data))
    assert batch.compression == codec
    _check(batch.records, src, base, 2)
    cols = decode_columns(data)
    assert cols["offset"] == [r.offset for r in batch.records]
    assert cols["headers"] == [list(r.headers) for r in batch.records]
    assert cols["key"] == [r.key for r in batch.records]
    assert cols["timestamp"] == [r.timestamp for r in batch.records]


@SETTINGS
@given(records_legacy, st.sampled_from(list(Compression)[:4]), st.sampled_from([0, 1]))
def test_roundtrip_legacy(src: list[Any], codec: Compression, magic: int) -> None:
    data = encode_batch(src, magic=magic, compression=codec, base_offset=10)
    records = tuple(r for b in decode_batches(data) for r in b.records)
    _check(records, src, 10, magic)


@SETTINGS
@given(records_v2, st.data())
def test_corruption_raises_only_decode_error(
    src: list[Any], data: st.DataObject
) -> None:
    good = bytearray(encode_batch(src))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(61, len(good) - 1))
        good[i] = data.draw(st.integers(0, 255))
    buf = bytes(good)
    try:
        objects = list(decode_batches(buf, check_crc=False))
    except DecodeError as exc:
        assert exc.reason != "malformed records"  # careful path must explain
        objects = None
    try:
        cols = decode_columns(buf, check_crc=False)
    except DecodeError:
        cols = None
    # both fast paths accept exactly the same inputs
    assert (objects is None) == (cols is None)
    if objects is not None and cols is not None:
        assert cols["value"] == [r.value for b in objects for r in b.records]


@SETTINGS
@given(records_v2)
def test_fast_paths_agree(src: list[Any]) -> None:
    data = encode_batch(src, base_offset=3)
    recs = _v2_records_fast(data, 61, len(data), len(src), 3, 0)
    cols = _v2_columns_fast(data, 61, len(data), len(src), 3, 0)
    assert [r.offset for r in recs] == cols[0]
    assert [r.timestamp for r in recs] == cols[1]
    assert [list(r.headers) for r in recs] == cols[4]
