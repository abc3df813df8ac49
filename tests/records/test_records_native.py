"""The C record loops (kproto._speedups) against the pure-Python reference.

Proves the contract of :mod:`kproto.speedups`: on any input the C loops accept exactly
what the Python loops of ``_v2_loop`` accept and return equal values (types included),
and the public decoders give equal batches, columns and DecodeErrors (reason, path,
offset) on both paths. Inputs: hypothesis-made batches for every codec, the sample
records of the golden tests, raw record regions of arbitrary bytes, and a bounded
mutation loop over encoded batches (``KPROTO_FUZZ_CASES`` sets its size; ``make
fuzz`` runs a long one).
"""

from __future__ import annotations

import gc
import os
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto import speedups
from kproto._varint import VarintError
from kproto.exceptions import DecodeError, EncodeError
from kproto.records import (
    Compression,
    Record,
    decode_batches,
    decode_columns,
    encode_batch,
    encode_control_batch,
)
from kproto.records import _native as records_native
from kproto.records._header import RECORDS_AT
from kproto.records._v2_loop import Bad, v2_columns_fast, v2_records_fast
from tests.records.records_testlib import mutated, sample_records

pytestmark = pytest.mark.skipif(
    not speedups.available(), reason=f"no C extension: {speedups.reason()}"
)

REJECTED = (Bad, IndexError, VarintError, UnicodeDecodeError)
INT64_MAX = (1 << 63) - 1

blobs = st.one_of(st.none(), st.binary(max_size=200))
headers = st.lists(st.tuples(st.text(max_size=10), blobs), max_size=4)
records_v2 = st.lists(
    st.tuples(blobs, blobs, headers, st.integers(0, 1 << 50)), min_size=1, max_size=30
)


@pytest.fixture(scope="module")
def records_path() -> str:
    """Overrides the conftest's: these tests pick each path themselves."""
    return "both"


def _loop(fn: Any, *args: Any) -> Any:
    """The loop's result, or the string "rejected" when it rejects the records."""
    try:
        return fn(*args)
    except REJECTED:
        return "rejected"


def _native_loops() -> tuple[Any, Any]:
    with speedups.using(True):
        return records_native.v2_loops()


def _native(make: Callable[[], Any]) -> Any:
    """What ``make`` returns with the C extension in use: one of its functions."""
    with speedups.using(True):
        fn = make()
    assert fn is not None
    return fn


def assert_loops_agree(
    data: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int
) -> None:
    """Both loops (columns and records) agree on ``data[pos:end]``, types included,
    and the C scan rejects what they reject and summarises what they return."""
    native_columns, native_records = _native_loops()
    args = (data, pos, end, count, base_offset, base_ts)
    want = _loop(v2_columns_fast, *args)
    got = _loop(native_columns, *args)
    assert got == want
    if want != "rejected":
        assert [type(x) for c in got for x in c] == [type(x) for c in want for x in c]
        assert all(type(h) is list for h in got[4])
    got_s = _loop(_native(records_native.v2_scan), *args)
    if want == "rejected":
        assert got_s == "rejected"
    else:
        offsets, timestamps, keys = want[0], want[1], want[2]
        in_int64 = all(-INT64_MAX - 1 <= t <= INT64_MAX for t in timestamps)
        if offsets != list(range(base_offset, base_offset + count)) or not in_int64:
            assert got_s is None
        else:
            low, high = min(timestamps, default=INT64_MAX), max(
                timestamps, default=-INT64_MAX - 1
            )
            assert got_s == (low, high, keys.count(None))
    want_r = _loop(v2_records_fast, *args)
    got_r = _loop(native_records, *args)
    assert got_r == want_r
    if want_r != "rejected":
        assert type(got_r) is tuple and all(type(r) is Record for r in got_r)
        assert all(type(r.headers) is tuple for r in got_r)
    # The lazy loop: its check rejects exactly what the records loop rejects, and
    # iterating it (built one record at a time) gives the same records.
    got_l = _loop(_native(records_native.v2_lazy), *args)
    if want_r == "rejected":
        assert got_l == "rejected"
    else:
        built = list(got_l)  # before anything else builds the tuple
        assert built == list(want_r) and got_l == want_r and len(got_l) == len(want_r)
        assert all(type(r) is Record and type(r.headers) is tuple for r in built)


def _outcome(fn: Any, data: bytes, **kw: Any) -> Any:
    try:
        result = fn(data, **kw)
        if fn is decode_batches:
            batches = list(result)
            return ("ok", batches, result.partial_tail_bytes, result.corrupt)
        return ("ok", dict(result), result.records, result.corrupt)
    except DecodeError as exc:
        return ("error", str(exc), exc.path, exc.offset)


def assert_decoders_agree(data: bytes, **kw: Any) -> None:
    """decode_batches and decode_columns give equal results or equal errors."""
    for fn in (decode_batches, decode_columns):
        with speedups.using(True):
            native = _outcome(fn, data, **kw)
        with speedups.using(False):
            python = _outcome(fn, data, **kw)
        assert native == python


@given(records_v2, st.sampled_from(list(Compression)), st.integers(0, 1 << 40))
def test_hypothesis_batches_decode_alike(
    src: list[Any], codec: Compression, base: int
) -> None:
    data = encode_batch(src, compression=codec, base_offset=base)
    assert_decoders_agree(data)
    assert_decoders_agree(data, skip_corrupt=True)


@pytest.mark.parametrize("codec", list(Compression))
def test_sample_records_decode_alike(codec: Compression) -> None:
    data = encode_batch(sample_records(40), compression=codec, base_offset=7)
    data += encode_control_batch(
        1, coordinator_epoch=3, producer_id=5, producer_epoch=1, timestamp=9
    )
    assert_decoders_agree(data)


@given(st.binary(max_size=64), st.integers(-1, 12), st.data())
def test_arbitrary_record_regions(raw: bytes, count: int, data: st.DataObject) -> None:
    # Raw bytes straight into the loops: mostly rejections, which must agree.
    pos = data.draw(st.integers(0, len(raw)))
    assert_loops_agree(raw, pos, len(raw), count, 100, 1_700_000_000_000)


@pytest.mark.parametrize(
    ("base_offset", "base_ts"),
    [(INT64_MAX, INT64_MAX), (-INT64_MAX - 1, -INT64_MAX - 1), (0, -1)],
)
def test_int64_overflow_gives_python_ints(base_offset: int, base_ts: int) -> None:
    # base + delta past int64 is an exact Python int on both paths, not a wrap.
    src = [(b"k", b"v", [], t) for t in (0, 1 << 62, -(1 << 62), 5)]
    data = encode_batch(src, base_timestamp=0)
    pos = RECORDS_AT
    assert_loops_agree(data, pos, len(data), 4, base_offset, base_ts)
    cols = _native_loops()[0](data, pos, len(data), 4, base_offset, base_ts)
    assert cols[1][1] == base_ts + (1 << 62)


def test_header_names_reused_but_equal() -> None:
    # The C loop reuses an equal str for a repeated header name; values still match.
    src = [
        (b"k", b"v", [("trace", b"1"), ("é", b"2"), ("x" * i, None)], i)
        for i in range(5)
    ]
    data = encode_batch(src)
    assert_loops_agree(data, RECORDS_AT, len(data), 5, 0, 0)


def test_repeated_headers_and_timestamps_shared_but_equal() -> None:
    # The C loop shares a (name, value) pair, a headers tuple or a timestamp equal to
    # the previous record's; a pair that differs only in its value, a null, a
    # non-ASCII name or a longer header list must not be taken for the previous one.
    headers = [
        [("ct", b"json"), ("id", b"1")],
        [("ct", b"json"), ("id", b"1")],
        [("ct", b"json"), ("id", b"2")],
        [("ct", b"jsom"), ("id", b"2")],
        [("ct", None), ("id", b"2")],
        [("ct", b""), ("id", b"2")],
        [("ct", b""), ("id", b"2"), ("x", b"")],
        [("ct", b""), ("id", b"2")],
        [("cu", b""), ("id", b"2")],
        [("é", b""), ("é", b"")],
        [("é", b""), ("é", b"")],
        [(f"h{i}", b"v") for i in range(12)],
        [(f"h{i}", b"v") for i in range(12)],
        [],
        [("ct", b"json")],
    ]
    src = [(b"k", b"v", h, 1000 + i // 3) for i, h in enumerate(headers)]
    data = encode_batch(src)
    assert_loops_agree(data, RECORDS_AT, len(data), len(src), 0, 0)
    _, native_records = _native_loops()
    got = native_records(data, RECORDS_AT, len(data), len(src), 0, 0)
    assert [r.headers for r in got] == [tuple(h) for h in headers]
    assert [r.timestamp for r in got] == [s[3] - 1000 for s in src]  # base_ts 0
    assert got[1].headers is got[0].headers  # shared, which only `is` can see
    assert got[2].headers[0] is got[1].headers[0]


def test_columns_header_pairs_untracked_and_batches_joined() -> None:
    # v2_columns builds header pairs untracked by the GC (a str and bytes/None tuple:
    # what the collector does itself at its first pass); decode_columns takes the
    # first batch's lists as its columns and extends them with the next batches'.
    src = [(b"k", b"v", [("ct", b"json"), ("id", bytes([i]))], i) for i in range(3)]
    two = encode_batch(src) + encode_batch(
        [(None, None, [("é", None)], 9)], base_offset=3, compression=Compression.GZIP
    )
    results = []
    for native in (True, False):
        with speedups.using(native):
            results.append(decode_columns(two))
    c_cols, py_cols = results
    assert c_cols == py_cols
    assert c_cols["offset"] == [0, 1, 2, 3]
    assert c_cols["compression"] == ["none"] * 3 + ["gzip"]
    assert c_cols["headers"][3] == [("é", None)]
    assert len({id(column) for column in c_cols.values()}) == len(c_cols)
    pairs = [pair for headers in c_cols["headers"] for pair in headers]
    assert not any(gc.is_tracked(pair) for pair in pairs)
    assert all(gc.is_tracked(headers) for headers in c_cols["headers"])


def test_non_bytes_input_is_a_type_error() -> None:
    native_columns, _ = _native_loops()
    data = encode_batch([(b"k", b"v")])
    with pytest.raises(TypeError):
        native_columns(bytearray(data), RECORDS_AT, len(data), 1, 0, 0)


def test_mutated_batches_fuzz() -> None:
    """A bounded mutation loop: flip, insert and delete bytes of encoded batches."""
    cases = int(os.environ.get("KPROTO_FUZZ_CASES", "1500"))
    rng = random.Random(11)
    seeds = [
        encode_batch(sample_records(12)),
        encode_batch(
            [(b"k" * 200, b"v" * 300, [("h" * 130, b"x" * 140)], 1 << 40)] * 3
        ),
    ]
    for i in range(cases):
        data = mutated(seeds[i % len(seeds)], rng, RECORDS_AT)
        # The loops directly (no CRC in the way), then the whole decoder.
        for count in (12, 3, rng.randrange(0, 40)):
            assert_loops_agree(data, RECORDS_AT, len(data), count, 0, 0)
        assert_decoders_agree(data, check_crc=False, skip_corrupt=True)


def _encode_outcome(native: bool, src: list[Any], **kw: Any) -> Any:
    with speedups.using(native):
        try:
            return encode_batch(src, **kw)
        except EncodeError as exc:
            return ("error", str(exc), exc.path)


@given(records_v2, st.sampled_from(list(Compression)))
def test_hypothesis_batches_encode_alike(src: list[Any], codec: Compression) -> None:
    # Byte-identical batches from the C writer and the Python one (a compressed
    # batch holds the same region, so compare through its decode too).
    native = _encode_outcome(True, src, compression=codec)
    python = _encode_outcome(False, src, compression=codec)
    if codec == Compression.NONE:
        assert native == python
    with speedups.using(False):
        assert list(decode_batches(native)) == list(decode_batches(python))


@pytest.mark.parametrize(
    "src",
    [
        [(b"k", b"v", [("bad\ud800", b"x")], 1)],  # not UTF-8: Python names it
        [(b"k", b"v", [(b"bytes-name", b"x")], 1)],
        [(b"k", b"v", [("n", bytearray(b"x"))], 1)],  # not plain: Python encodes
        [(b"k", b"v", [["n", b"x"]], 1)],
        [(b"k", b"v", (("n", None),), 1), (None, None, None, (1 << 63) - 1)],
        [(bytearray(b"k"), memoryview(b"v"), [], -(1 << 63))],
        [(b"k", b"v", [], (1 << 63) - 1), (b"k", b"v", [], -(1 << 63))],
        # not as _normalize returns them: it fills in or converts first
        [(b"k", b"v", None, 5), (b"k", b"v"), [b"k", b"v", [], 7]],
        [Record(offset=9, timestamp=4, key=b"k", value=None, headers=(("h", b""),))],
        [(b"k", b"v", [], 1 << 63)],
        [(b"k", b"v", [], True)],
    ],
)
def test_odd_encode_input_alike(src: list[Any]) -> None:
    native = _encode_outcome(True, src, base_timestamp=0)
    assert native == _encode_outcome(False, src, base_timestamp=0)
