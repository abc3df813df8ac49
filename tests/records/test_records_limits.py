"""Bounds found by fuzzing: decompression memory, record counts, absurd batch headers.

Memory is measured with tracemalloc peaks (every buffer here is a Python object), never
RSS or time.
"""

from __future__ import annotations

import gzip
import struct
import tracemalloc
from collections.abc import Callable
from typing import Any

import cramjam
import pytest

from kproto.records import (
    DEFAULT_MAX_RECORDS,
    Compression,
    decode_batches,
    decode_columns,
    decode_records,
    encode_batch,
    encode_legacy,
)
from kproto.records._codecs import compress, decompress
from kproto.records._encode import _legacy_message
from kproto.serial.exceptions import DecodeError
from tests.records.records_testlib import sample_records, with_region

MiB = 1 << 20


def _peak(fn: Callable[[], Any]) -> tuple[int, Any]:
    """(peak bytes traced while ``fn`` ran, its result or the exception it raised)."""
    tracemalloc.start()
    try:
        try:
            result: Any = fn()
        except Exception as exc:  # returned for the caller to check
            result = exc
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def _zstd_claiming(payload: bytes, claimed: int) -> bytes:
    """A zstd frame of ``payload`` whose header declares ``claimed`` content bytes."""
    zstandard = pytest.importorskip("zstandard")
    frame: bytes = zstandard.ZstdCompressor(write_content_size=False).compress(payload)
    fhd = frame[4]
    assert fhd >> 6 == 0 and not fhd & 0x20 and not fhd & 3  # no FCS, window byte
    blocks = frame[6:]  # after magic, descriptor and window descriptor
    # single segment (no window byte), 8-byte Frame_Content_Size
    return frame[:4] + bytes((0xE0,)) + struct.pack("<Q", claimed) + blocks


# (a) a frame's declared content size is not allocated up front


def test_zstd_declared_size_is_not_allocated() -> None:
    frame = _zstd_claiming(b"x" * 100, 200 * MiB)
    batch = with_region(
        encode_batch([(None, b"x", [], 0)], compression=Compression.ZSTD), frame
    )
    assert len(batch) < 100  # the fuzzer's reproducer was 83 bytes
    peak, err = _peak(lambda: list(decode_batches(batch)))
    assert isinstance(err, DecodeError) and "zstd" in err.reason
    assert err.path == "batch@0(base_offset=0).records"
    assert peak < 4 * MiB


def test_zstd_plausible_lie_allocates_what_the_data_yields() -> None:
    # Claims 2 MiB (below what 400 bytes of zstd could hold): the buffer grows only
    # as real output fills it, so the peak stays near the 100 real bytes.
    frame = _zstd_claiming(bytes(range(100)) * 4, 2 * MiB)
    peak, err = _peak(lambda: decompress(Compression.ZSTD, frame, 256 * MiB))
    assert isinstance(err, DecodeError)
    assert peak < 2 * MiB


def test_zstd_large_frame_still_decodes() -> None:
    payload = bytes(range(256)) * (40 * 1024)  # 10 MiB, above the scratch buffer
    frame = bytes(cramjam.zstd.compress(payload))
    assert decompress(Compression.ZSTD, frame, len(payload)) == payload
    with pytest.raises(DecodeError, match="max_decompressed_size"):
        decompress(Compression.ZSTD, frame, len(payload) - 1)


# (b) the limit bounds the peak, not only the result


@pytest.mark.parametrize("size", [16 * MiB])
def test_gzip_bomb_peak_is_bounded_by_the_limit(size: int) -> None:
    bomb = gzip.compress(bytes(size), 1)
    peak, out = _peak(lambda: decompress(Compression.GZIP, bomb, size))
    assert out == bytes(size)
    assert peak < size + 3 * MiB  # was about 2 * size
    peak, err = _peak(lambda: decompress(Compression.GZIP, bomb, size - 1))
    assert isinstance(err, DecodeError) and "max_decompressed_size" in err.reason
    assert peak < 6 * MiB  # a few 1 MiB steps, not the 16 MiB limit


def test_gzip_bomb_in_batch_peak() -> None:
    data = encode_batch([(None, bytes(16 * MiB), [], 0)], compression=Compression.GZIP)
    peak, err = _peak(
        lambda: list(decode_batches(data, max_decompressed_size=16 * MiB - 1))
    )
    assert isinstance(err, DecodeError) and "max_decompressed_size" in err.reason
    assert peak < 6 * MiB  # a few 1 MiB steps, not the 16 MiB limit


def test_gzip_members_and_errors_after_bounded_rewrite() -> None:
    payload = bytes(range(256)) * 20_000  # 5 MB: measured in steps, then re-read
    data = gzip.compress(payload[: 3 * MiB]) + gzip.compress(payload[3 * MiB :])
    assert decompress(Compression.GZIP, data, len(payload)) == payload
    with pytest.raises(DecodeError, match="max_decompressed_size"):
        decompress(Compression.GZIP, data, len(payload) - 1)
    with pytest.raises(DecodeError, match="truncated"):
        decompress(Compression.GZIP, gzip.compress(payload)[:-20], len(payload))


def test_snappy_declared_length_above_what_the_block_can_hold() -> None:
    block = b"\xff\xff\xff\x7f" + bytes(10)  # declares 256 MiB - 1 in 14 bytes
    with pytest.raises(DecodeError, match="declares"):
        decompress(Compression.SNAPPY, block, 1 << 30)


# (c) a records budget, checked before the work


def _empty_records_batch(n: int) -> bytes:
    # length 6, attributes 0, timestamp delta 0, offset delta 0, null key and value,
    # no headers: 7 bytes each, compressing to almost nothing
    region = b"\x0c\x00\x00\x00\x01\x01\x00" * n
    template = encode_batch([(None, None, [], 0)], compression=Compression.ZSTD)
    return with_region(template, bytes(cramjam.zstd.compress(region, level=19)), n)


def test_millions_of_empty_records_hit_max_records_first() -> None:
    batch = _empty_records_batch(4_000_000)
    assert len(batch) < 4096  # the fuzzer's reproducer was 2,645 bytes
    for decode in (lambda: list(decode_batches(batch)), lambda: decode_columns(batch)):
        peak, err = _peak(decode)
        assert isinstance(err, DecodeError)
        assert f"max_records ({DEFAULT_MAX_RECORDS})" in err.reason
        assert err.path == "batch@0(base_offset=0).records_count"
        assert err.offset == 57
        assert peak < 1 * MiB  # refused before decompressing


def test_max_records_is_the_bound() -> None:
    batch = _empty_records_batch(1000)
    assert len(decode_columns(batch, max_records=1000)["offset"]) == 1000
    with pytest.raises(DecodeError, match="max_records"):
        decode_columns(batch, max_records=999)
    it = decode_batches(batch + batch, max_records=999, skip_corrupt=True)
    assert list(it) == [] and len(it.corrupt) == 2


def test_max_records_counts_legacy_inner_messages() -> None:
    wrapper = encode_legacy(
        sample_records(5, headers=False), magic=1, compression=Compression.GZIP
    )
    assert len(list(decode_records(wrapper, max_records=5))) == 5
    with pytest.raises(DecodeError, match=r"max_records \(4\)"):
        list(decode_records(wrapper, max_records=4))


# (d) the limit message names the configured limit and what was left


def test_nested_wrapper_limit_message() -> None:
    inner = encode_legacy(
        sample_records(3, headers=False), magic=0, compression=Compression.GZIP
    )
    outer = _legacy_message(0, 2, 2, -1, None, compress(2, inner))
    assert len(list(decode_records(outer, max_decompressed_size=len(inner) + 1000)))
    with pytest.raises(DecodeError) as info:
        list(decode_records(outer, max_decompressed_size=len(inner)))
    reason = info.value.reason
    assert f"max_decompressed_size ({len(inner)} bytes; 0 left" in reason
    assert "(0 bytes)" not in reason


# issue 9: an absurd batch length is an error, not an incomplete tail


def test_absurd_header_is_an_error_not_a_partial_tail() -> None:
    with pytest.raises(DecodeError) as info:
        list(decode_records(bytes(range(256))))
    assert info.value.reason == "unknown magic 16"
    assert info.value.path == "batch@0(base_offset=283686952306183).magic"
    good = encode_batch([(b"k", b"v", [], 0)])
    for bad_length, field in ((0x7FFFFFFF, "batch_length"), (13, "batch_length")):
        tail = struct.pack(">qi", 1, bad_length) + good[12:40]
        with pytest.raises(DecodeError) as info:
            list(decode_records(good + tail))
        assert info.value.path == f"batch@{len(good)}(base_offset=1).{field}"
    # a magic 1 message set claiming less than its header needs
    short = struct.pack(">qiIbb", 0, 20, 0, 1, 0) + bytes(30)
    with pytest.raises(DecodeError, match="minimum 22 for magic 1"):
        list(decode_records(good + short))


def test_plausible_truncated_tail_is_still_skipped() -> None:
    good = encode_batch([(b"k", b"v", [], 0)])
    tail = struct.pack(">qi", 1, 1 << 30) + good[12:40]  # 1 GiB batch, cut off
    it = decode_batches(good + tail)
    assert len(list(it)) == 1
    assert it.partial_tail_position == len(good)
    assert it.partial_tail_bytes == len(tail)
    assert decode_columns(good + good[:16]).partial_tail_bytes == 16
