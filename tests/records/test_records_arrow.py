"""decode_arrow_columns: the C ArrowBuilder against PyArrowBuilder, and both against
decode_columns.

Proves that the Arrow buffers are byte-equal on both paths (bitmaps' unused bits
included), that read back they are exactly decode_columns' lists, and that damaged
input raises the same DecodeError (reason, path, offset) as decode_columns, on both
paths. Inputs: the hypothesis batches of test_records_native for every codec, the
sample records with legacy, control, transactional and log-append-time batches,
raw record regions, and a bounded mutation loop.
"""

from __future__ import annotations

import os
import random
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto import speedups
from kproto.exceptions import DecodeError
from kproto.records import (
    ArrowColumns,
    Compression,
    TimestampType,
    decode_arrow_columns,
    decode_columns,
    encode_batch,
    encode_control_batch,
)
from kproto.records import _native as records_native
from kproto.records._arrow import PyArrowBuilder
from kproto.records._header import RECORDS_AT
from tests.records.records_testlib import (
    CODEC_IDS,
    fix_crc,
    kp_legacy,
    mutated,
    sample_records,
    with_region,
)
from tests.records.test_records_native import REJECTED, records_v2

BOTH = [True, False] if speedups.available() else [False]
INT64_MAX = (1 << 63) - 1


@pytest.fixture(scope="module")
def records_path() -> str:
    """Overrides the conftest's: these tests pick each path themselves."""
    return "both"


def _bits(validity: Any, i: int) -> bool:
    return validity is None or bool(validity[i >> 3] >> (i & 7) & 1)


def _binary(offsets: Any, validity: Any, data: Any, n: int) -> list[bytes | None]:
    o = memoryview(offsets).cast("i")
    assert len(o) == n + 1 and o[0] == 0 and o[n] == len(data)
    if validity is not None:
        assert len(validity) == (n + 7) // 8
    return [
        bytes(data[o[i] : o[i + 1]]) if _bits(validity, i) else None for i in range(n)
    ]


def as_columns(r: ArrowColumns) -> dict[str, list[Any]]:
    """The buffers read back as decode_columns' dict (no pyarrow)."""
    n = r.records
    hn = r.header_count
    names = _binary(r.header_key_offsets, None, r.header_key_data, hn)
    hvalues = _binary(
        r.header_value_offsets, r.header_value_validity, r.header_value_data, hn
    )
    ho = memoryview(r.header_offsets).cast("i")
    assert len(ho) == n + 1 and ho[0] == 0 and ho[n] == hn
    keys = _binary(r.key_offsets, r.key_validity, r.key_data, n)
    values = _binary(r.value_offsets, r.value_validity, r.value_data, n)
    assert (r.key_nulls, r.value_nulls) == (keys.count(None), values.count(None))
    assert r.header_value_nulls == hvalues.count(None)
    for validity, nulls in (
        (r.key_validity, r.key_nulls),
        (r.value_validity, r.value_nulls),
        (r.header_value_validity, r.header_value_nulls),
    ):
        assert (validity is None) == (nulls == 0)
    cols: dict[str, list[Any]] = {
        "offset": list(memoryview(r.offset).cast("q")),
        "timestamp": list(memoryview(r.timestamp).cast("q")),
        "key": keys,
        "value": values,
        "headers": [
            [(names[j].decode(), hvalues[j]) for j in range(ho[i], ho[i + 1])]  # type: ignore[union-attr]
            for i in range(n)
        ],
    }
    batch_level = {
        "timestamp_type": lambda h: int(h.timestamp_type),
        "base_offset": lambda h: h.base_offset,
        "partition_leader_epoch": lambda h: h.partition_leader_epoch,
        "magic": lambda h: h.magic,
        "compression": lambda h: h.compression.label,
        "is_transactional": lambda h: h.is_transactional,
        "is_control": lambda h: h.is_control,
        "producer_id": lambda h: h.producer_id,
        "producer_epoch": lambda h: h.producer_epoch,
        "base_sequence": lambda h: h.base_sequence,
    }
    start = 0
    for name in batch_level:
        cols[name] = []
    for head, end in zip(r.batches, r.batch_ends, strict=True):
        for name, get in batch_level.items():
            cols[name] += [get(head)] * (end - start)
        start = end
    assert start == n
    return cols


def _outcome(native: bool, data: bytes, **kw: Any) -> Any:
    with speedups.using(native):
        try:
            r = decode_arrow_columns(data, **kw)
        except DecodeError as exc:
            return ("error", str(exc), exc.path, exc.offset)
    fields = attrs.asdict(r, recurse=False)
    for k, v in fields.items():
        if isinstance(v, bytearray):
            fields[k] = bytes(v)
    return ("ok", fields)


def _columns_outcome(data: bytes, **kw: Any) -> Any:
    try:
        r = decode_columns(data, **kw)
    except DecodeError as exc:
        return ("error", str(exc), exc.path, exc.offset)
    return ("ok", dict(r), r.corrupt, r.partial_tail_bytes, r.partial_tail_position)


def assert_arrow_agrees(data: bytes, **kw: Any) -> ArrowColumns | None:
    """Both paths give byte-equal buffers or the same error, and that is what
    decode_columns gives (columns read back, or the error)."""
    outcomes = [_outcome(native, data, **kw) for native in BOTH]
    assert all(o == outcomes[0] for o in outcomes)
    want = _columns_outcome(data, **kw)
    got = outcomes[0]
    if got[0] == "error":
        assert got == want
        return None
    r = ArrowColumns(**got[1])
    assert want[0] == "ok"
    assert as_columns(r) == want[1]
    got_report = [list(r.corrupt), r.partial_tail_bytes, r.partial_tail_position]
    assert got_report == list(want[2:])
    assert len(r.batches) == len(r.batch_ends)
    return r


@given(records_v2, st.sampled_from(list(Compression)), st.integers(0, 1 << 40))
def test_hypothesis_batches_alike(
    src: list[Any], codec: Compression, base: int
) -> None:
    data = encode_batch(src, compression=codec, base_offset=base)
    data += encode_batch(src[:3], compression=codec, base_offset=base + len(src))
    assert_arrow_agrees(data)


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_every_kind_of_batch_alike(codec: str) -> None:
    c = Compression(CODEC_IDS[codec])
    recs = sample_records(40)
    data = encode_batch(recs, compression=c, base_offset=7)
    data += encode_batch(
        recs[:5],
        compression=c,
        base_offset=47,
        producer_id=9,
        producer_epoch=2,
        is_transactional=True,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    data += encode_control_batch(
        1, coordinator_epoch=3, producer_id=9, producer_epoch=2, base_offset=52
    )
    data += with_region(encode_batch([(b"k", b"v")], base_offset=53), b"", 0)  # empty
    legacy_codec = 0 if codec == "zstd" else CODEC_IDS[codec]  # magic 0/1: no zstd
    data += kp_legacy(recs[:6], 1, legacy_codec, base_offset=53)
    data += kp_legacy(recs[:4], 0, base_offset=59)
    data += encode_batch(recs[:9], compression=c, base_offset=63)[:-5]  # partial tail
    r = assert_arrow_agrees(data)
    assert r is not None and r.partial_tail_bytes > 0
    wrappers = 1 if legacy_codec else 6  # uncompressed: a message per record
    assert [h.magic for h in r.batches] == [2] * 4 + [1] * wrappers + [0] * 4
    assert r.batch_ends[:5] == (40, 45, 46, 46, 40 + 5 + 1 + 6 // wrappers)
    assert r.records == 56


def test_nulls_empties_and_validity() -> None:
    src = [
        (None, b"", [], 1),
        (b"", None, [("a", None), ("", b"")], 2),
        (b"k", b"v", [("é", b"\x00")], 3),
    ] * 3
    r = assert_arrow_agrees(encode_batch(src))
    assert r is not None
    # Bit i (least significant first): item i is not null; unused bits 0.
    assert r.key_validity == bytes([0b10110110, 0b1])
    assert r.value_validity == bytes([0b01101101, 0b1])
    assert r.header_value_validity == bytes([0b10110110, 0b1])
    assert (r.key_nulls, r.value_nulls, r.header_value_nulls) == (3, 3, 3)
    # No nulls: no bitmap at all.
    r = assert_arrow_agrees(encode_batch([(b"k", b"v", [("h", b"")], 1)] * 9))
    assert r is not None
    assert (r.key_validity, r.value_validity, r.header_value_validity) == (None,) * 3
    # Nothing at all.
    r = assert_arrow_agrees(b"")
    assert r is not None and r.records == 0 and bytes(r.key_offsets) == bytes(4)


@pytest.mark.parametrize(
    ("base_offset", "base_ts", "delta"),
    [(INT64_MAX, 0, 1), (0, INT64_MAX, 1), (0, -INT64_MAX - 1, -1)],
)
def test_int64_overflow_is_a_decode_error(
    base_offset: int, base_ts: int, delta: int
) -> None:
    # decode_columns returns Python ints past int64; Arrow's int64 cannot hold them.
    data = encode_batch(
        [(b"k", b"v", [], 0), (b"k", None, [], delta)], base_timestamp=0
    )
    data = data[:27] + base_ts.to_bytes(8, "big", signed=True) + data[35:]
    data = base_offset.to_bytes(8, "big", signed=True) + fix_crc(data)[8:]
    outcomes = {_outcome(n, data)[:3] for n in BOTH}
    assert len(outcomes) == 1
    kind, reason, path = outcomes.pop()
    assert kind == "error" and "outside int64" in reason
    assert path == f"batch@0(base_offset={base_offset}).records"
    assert decode_columns(data).records == 2


def test_damaged_batches_raise_what_decode_columns_raises() -> None:
    good = encode_batch(sample_records(6))
    region = good[RECORDS_AT:]
    cases = [
        with_region(good, region, count=7),  # more declared than held
        with_region(good, region + b"\x00"),  # trailing byte
        with_region(good, b"\x03" + region[1:]),  # negative length
        good[:30] + b"\xff" + good[31:],  # CRC mismatch
        with_region(good, region[:-3]),
    ]
    for data in cases:
        assert assert_arrow_agrees(data) is None  # the same DecodeError
        r = assert_arrow_agrees(data + good, skip_corrupt=True)
        assert r is not None and len(r.corrupt) == 1 and r.records == 6
        assert_arrow_agrees(data, check_crc=False, skip_corrupt=True)


def test_mutated_batches_fuzz() -> None:
    """A bounded mutation loop over encoded batches (KPROTO_FUZZ_CASES sets it)."""
    cases = int(os.environ.get("KPROTO_FUZZ_CASES", "1500")) // 3
    rng = random.Random(18)
    outcomes: list[bool] = []
    seeds = [
        encode_batch(sample_records(12)),
        encode_batch([(b"k" * 200, None, [("h" * 130, b"x" * 140)], 1 << 40)] * 3),
    ]
    for i in range(cases):
        data = mutated(seeds[i % len(seeds)], rng, RECORDS_AT) + bytes(seeds[0])
        outcomes.append(assert_arrow_agrees(data, check_crc=False) is None)
        assert_arrow_agrees(data, check_crc=False, skip_corrupt=True)
    assert 0 < sum(outcomes) < len(outcomes)  # errors and decodes both seen


def _builders() -> list[Any]:
    out: list[Any] = [PyArrowBuilder()]
    if speedups.available():
        with speedups.using(True):
            out.append(records_native.arrow_builder())
    return out


def _add(builder: Any, *args: Any) -> str:
    try:
        builder.add_v2(*args)
    except REJECTED:
        return "rejected"
    except OverflowError as exc:
        return str(exc)
    return "ok"


@given(st.binary(max_size=64), st.integers(-1, 12), st.data())
def test_arbitrary_regions_and_rollback(
    raw: bytes, count: int, data: st.DataObject
) -> None:
    # Raw bytes straight into the builders, between two good batches: accepted or
    # rejected alike, and a rejected batch leaves nothing behind.
    pos = data.draw(st.integers(0, len(raw)))
    good = encode_batch([(None, b"v", [("h", None)], 5), (b"k", None, [], 6)])
    results = []
    for b in _builders():
        _add(b, good, RECORDS_AT, len(good), 2, 0, 0, None)
        outcome = _add(b, raw, pos, len(raw), count, 100, 1_700_000_000_000, None)
        _add(b, good, RECORDS_AT, len(good), 2, 9, 0, 77)
        results.append((outcome, [bytes(x) if x else x for x in b.finish()]))
    assert all(r == results[0] for r in results)


def test_add_lists_alike() -> None:
    headers: list[list[tuple[str, bytes | None]]] = [[("é", None), ("b", b"1")], []]
    cols = ([1, 2], [3, 4], [None, b"k"], [b"", None], headers)
    results = []
    for b in _builders():
        b.add_lists(*cols)
        with pytest.raises(OverflowError, match="outside int64"):
            b.add_lists([1 << 63], [0], [None], [None], [[("x", b"y")]])
        with pytest.raises(TypeError):  # appends nothing either
            b.add_lists([7, "8"], [0, 0], [b"a", None], [None, b"b"], [[], []])
        results.append([bytes(x) if x else x for x in b.finish()])
        assert b.finish()[0] == 0  # finish starts again empty
    assert all(r == results[0] for r in results)
