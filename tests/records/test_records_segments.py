"""The batch-boundary scanner shared by the decoder and kproto.spark."""

from __future__ import annotations

import struct

from kproto.records import encode_batch, encode_legacy
from kproto.records.segments import (
    MAX_LENGTH,
    FramingError,
    check_header,
    frame_buffer,
    header_problem,
    next_frame,
)

V2 = encode_batch([(b"k", b"v", [], 0)], base_offset=5)
V0 = encode_legacy([(b"k", b"v", [], 0)], magic=0)


def test_next_frame_on_whole_and_cut_batches() -> None:
    data = V2 + V0
    f = next_frame(data, 0, len(data))
    assert (f.base_offset, f.batch_length, f.magic) == (5, len(V2) - 12, 2)
    assert f.complete and f.problem is None and f.end == len(V2)
    g = next_frame(data, f.end, len(data))
    assert g.magic == 0 and g.complete and g.end == len(data)
    cut = next_frame(V2[:20], 0, 20)
    assert not cut.complete and cut.problem is None and cut.magic == 2
    short = next_frame(V2[:14], 0, 14)
    assert short.magic is None and short.problem is None and not short.complete
    assert next_frame(V2[:11], 0, 11).base_offset is None


def test_header_problems_name_the_field() -> None:
    assert header_problem(len(V2) - 12, 2) is None
    assert header_problem(-1, None) == ("invalid batch length -1", 8)
    reason, at = header_problem(MAX_LENGTH + 1, None) or ("", 0)
    assert "above the largest batch" in reason and at == 8
    assert header_problem(13, None) == ("batch length 13 is below the minimum 14", 8)
    assert header_problem(100, 3) == ("unknown magic 3", 16)
    assert header_problem(21, 1) == (
        "batch length 21 is below the minimum 22 for magic 1",
        8,
    )
    assert header_problem(48, 2) is not None and header_problem(49, 2) is None
    bad = struct.pack(">qi", 7, 100) + bytes(4) + b"\x09"
    f = next_frame(bad, 0, len(bad))
    assert f.problem == "unknown magic 9" and f.problem_at == 16 and not f.complete


def test_check_header_and_frame_buffer() -> None:
    assert check_header(len(V2) - 12, 2, len(V2)) is None
    assert (
        check_header(len(V2) - 12, None, 15) == "truncated batch header: 15 bytes left"
    )
    assert (
        check_header(len(V2) - 12, 2, 30)
        == f"truncated batch: needs {len(V2)} bytes, 30 left"
    )
    data = V2 + V0
    assert frame_buffer(data, True) == (len(data), None, None)
    assert frame_buffer(data + V2[:10], False) == (len(data), None, 17)
    assert frame_buffer(data + V2[:30], False) == (len(data), None, len(V2))
    complete, err, need = frame_buffer(data + V2[:30], True)
    assert (complete, need) == (len(data), None)
    assert err == FramingError(
        len(data), 5, 30, f"truncated batch: needs {len(V2)} bytes, 30 left"
    )
    garbage = struct.pack(">qi", 1, -5) + bytes(10)
    complete, err, need = frame_buffer(V2 + garbage, False)
    assert complete == len(V2) and need is None
    assert err == FramingError(len(V2), 1, len(garbage), "invalid batch length -5")


def test_read_batch_head_matches_the_decoder_and_checks_crc() -> None:
    from kproto.records import Compression, decode_batches, encode_batch
    from kproto.records.segments import batch_crc_valid, read_batch_head

    data = encode_batch(
        [(b"k", b"v", (), 1_700_000_000_000), (None, b"w", (), 1_700_000_000_005)],
        base_offset=40,
        compression=Compression.GZIP,
    )
    (batch,) = decode_batches(data)
    found = read_batch_head(data, 0)
    assert found is not None
    head, count = found
    assert count == 2
    assert (head.base_offset, head.last_offset_delta, head.compression, head.crc) == (
        batch.base_offset,
        batch.last_offset_delta,
        batch.compression,
        batch.crc,
    )
    assert batch_crc_valid(data, 0) is True
    corrupt = bytearray(data)
    corrupt[-1] ^= 0xFF
    assert batch_crc_valid(bytes(corrupt), 0) is False
    assert batch_crc_valid(data[:-1], 0) is None  # incomplete: not judged
    assert read_batch_head(data[:10], 0) is None


def test_read_batch_head_legacy_magic_1() -> None:
    from kproto.records import encode_batch
    from kproto.records.segments import batch_crc_valid, read_batch_head

    data = encode_batch([(b"k", b"v", (), 1_600_000_000_000)], magic=1, base_offset=7)
    found = read_batch_head(data, 0)
    assert found is not None
    head, count = found
    assert (head.magic, head.base_offset, head.base_timestamp, count) == (
        1,
        7,
        1_600_000_000_000,
        None,
    )
    assert batch_crc_valid(data, 0) is True
