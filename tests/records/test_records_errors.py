"""Corruption handling: DecodeError paths and offsets, partial tails, skipping."""

from __future__ import annotations

import struct

import pytest

from kproto.records import (
    ControlRecord,
    ControlRecordType,
    Record,
    decode_batches,
    decode_columns,
    decode_records,
    encode_batch,
    encode_control_batch,
    encode_legacy,
)
from kproto.serial.exceptions import DecodeError
from tests.records.records_testlib import (
    T0,
    fix_crc,
    kp_read,
    sample_records,
    with_region,
)


def _batch(n: int = 5, base_offset: int = 0, **kw: object) -> bytes:
    return encode_batch(sample_records(n), base_offset=base_offset, **kw)  # type: ignore[arg-type]


def _err(data: bytes, **kw: object) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        list(decode_batches(data, **kw))  # type: ignore[arg-type]
    return info.value


def test_crc_mismatch_v2_and_check_off() -> None:
    first = _batch(3, base_offset=0)
    second = bytearray(encode_batch([(b"k", b"x" * 50, [], T0)] * 4, base_offset=3))
    second[-10] ^= 0xFF  # inside the last record's value
    data = first + bytes(second)
    err = _err(data)
    assert err.path == f"batch@{len(first)}(base_offset=3).crc"
    assert err.offset == len(first) + 17
    assert "CRC-32C mismatch" in err.reason
    batches = list(decode_batches(data, check_crc=False))
    assert [len(b.records) for b in batches] == [3, 4]


def test_crc_mismatch_legacy() -> None:
    data = bytearray(
        encode_legacy(sample_records(2, headers=False), magic=1, base_offset=7)
    )
    data[-1] ^= 1
    err = _err(bytes(data))
    second = 12 + struct.unpack_from(">i", data, 8)[0]
    assert "CRC-32 mismatch" in err.reason
    assert (
        err.path == f"batch@{second}(base_offset=8).crc" and err.offset == second + 12
    )
    assert len(list(decode_batches(bytes(data), check_crc=False))) == 2


def test_partial_tail_reported_not_raised() -> None:
    a, b = _batch(3), _batch(4, base_offset=3)
    for cut in (1, 5, 11, 12, 20, 61, len(b) - 1):
        it = decode_batches(a + b[:cut])
        batches = list(it)
        assert len(batches) == 1
        assert it.partial_tail_bytes == cut
        assert it.partial_tail_position == len(a)
    it = decode_batches(a + b)
    assert len(list(it)) == 2 and it.partial_tail_bytes == 0
    cols = decode_columns(a + b[:30])
    assert cols.records == 3 and cols.partial_tail_bytes == 30
    assert cols.partial_tail_position == len(a)
    assert [r.offset for r in decode_records(a + b[:30])] == [0, 1, 2]


def test_truncated_inside_batch() -> None:
    full = _batch(5, base_offset=40)
    region = full[61:]
    err = _err(with_region(full, region[:-10]))
    assert err.path.startswith("batch@0(base_offset=40).records[4]")
    assert err.offset is not None and 61 <= err.offset < len(full)


def test_record_count_mismatch() -> None:
    full = _batch(5)
    err = _err(with_region(full, full[61:], count=6))
    assert "declares 6 records but holds only 5" in err.reason
    assert err.path == "batch@0(base_offset=0).records[5]"
    err = _err(with_region(full, full[61:], count=4))
    assert "after the 4 declared records" in err.reason
    err = _err(with_region(full, full[61:], count=-1))
    assert "negative record count" in err.reason


def _record(body: bytes) -> bytes:
    assert len(body) < 64
    return bytes([len(body) << 1]) + body


def test_bad_varint() -> None:
    full = _batch(1)
    region = _record(b"\x00" + b"\xff" * 10 + b"\x01")  # over-long timestamp delta
    err = _err(with_region(full, region, count=1))
    assert "varint longer than 10 bytes" in err.reason
    assert err.path == "batch@0(base_offset=0).records[0].timestamp_delta"
    assert err.offset == 63
    region = b"\xff\xff\xff\xff\xff\x01"  # over-long record length
    err = _err(with_region(full, region, count=1))
    assert "longer than 5 bytes" in err.reason and err.path.endswith(
        "records[0].length"
    )


def test_negative_lengths() -> None:
    full = _batch(1)
    # attributes, ts delta 0, offset delta 0, key length -2
    err = _err(with_region(full, _record(b"\x00\x00\x00\x03ab\x00\x00"), count=1))
    assert "negative length -2" in err.reason
    assert err.path == "batch@0(base_offset=0).records[0].key"
    assert err.offset == 61 + 4
    # value length -5
    err = _err(with_region(full, _record(b"\x00\x00\x00\x01\x09\x00"), count=1))
    assert err.path.endswith("records[0].value") and "negative length -5" in err.reason
    # header count -1
    err = _err(with_region(full, _record(b"\x00\x00\x00\x01\x01\x01"), count=1))
    assert "negative header count" in err.reason
    # null header key
    err = _err(with_region(full, _record(b"\x00\x00\x00\x01\x01\x02\x01\x01"), count=1))
    assert err.path.endswith("records[0].headers[0].key")
    # non-UTF-8 header key
    err = _err(
        with_region(full, _record(b"\x00\x00\x00\x01\x01\x02\x02\xff\x01"), count=1)
    )
    assert "UTF-8" in err.reason
    # key longer than the record
    err = _err(with_region(full, _record(b"\x00\x00\x00\x40ab\x01\x01\x00"), count=1))
    assert "runs past the end of the record" in err.reason
    # record length shorter than its fields
    err = _err(with_region(full, b"\x08\x00\x00\x00\x01\x01\x00", count=1))
    assert err.path.endswith("records[0].value.length") or "record length" in err.reason


def test_error_in_compressed_batch_names_decompressed_offset() -> None:
    from kproto.records._codecs import compress

    full = _batch(1)
    region = compress(4, _record(b"\x00\x00\x00\x03ab\x00\x00"))
    head = bytearray(full[:61])
    struct.pack_into(">h", head, 21, 4)
    err = _err(with_region(bytes(head), region, count=1))
    assert "(in decompressed data)" in err.reason and err.offset == 4


def test_bad_batch_length_and_magic() -> None:
    good = _batch(2)
    bad = bytearray(_batch(2, base_offset=2))
    struct.pack_into(">i", bad, 8, 5)
    err = _err(good + bytes(bad))
    assert err.path == f"batch@{len(good)}(base_offset=2).batch_length"
    it = decode_batches(good + bytes(bad) + good, skip_corrupt=True)
    assert len(list(it)) == 1 and it.corrupt[0][:2] == (len(good), 2)
    weird = bytearray(_batch(2, base_offset=2))
    weird[16] = 3
    err = _err(bytes(weird))
    assert "unknown magic 3" in err.reason


def test_skip_corrupt_columns() -> None:
    a = _batch(2, base_offset=0)
    b = bytearray(_batch(3, base_offset=2))
    b[-1] ^= 0x55
    c = _batch(4, base_offset=5)
    data = a + bytes(b) + c
    with pytest.raises(DecodeError):
        decode_columns(data)
    cols = decode_columns(data, skip_corrupt=True)
    assert cols["offset"] == [0, 1, 5, 6, 7, 8]
    assert cols.batches == 2 and cols.records == 6
    ((pos, base, msg),) = cols.corrupt
    assert (pos, base) == (len(a), 2) and "CRC-32C" in msg
    # a structurally broken (but CRC-valid) batch is skipped too
    broken = with_region(bytes(b), bytes(b)[61:-4])
    cols = decode_columns(a + broken + c, skip_corrupt=True)
    assert cols["offset"] == [0, 1, 5, 6, 7, 8] and len(cols.corrupt) == 1


def test_control_batches() -> None:
    data = encode_control_batch(
        ControlRecordType.COMMIT,
        coordinator_epoch=7,
        producer_id=5,
        producer_epoch=2,
        base_offset=100,
        timestamp=T0,
    ) + encode_control_batch(
        ControlRecordType.ABORT, coordinator_epoch=1, producer_id=6, producer_epoch=0
    )
    b1, b2 = list(decode_batches(data))
    assert b1.is_control and b1.is_transactional and b1.producer_id == 5
    assert b1.records[0].control == ControlRecord(ControlRecordType.COMMIT, 0, 7)
    assert b1.records[0].offset == 100 and b1.records[0].timestamp == T0
    assert b2.records[0].control == ControlRecord(ControlRecordType.ABORT, 0, 1)
    (kb, krecs), (_, krecs2) = kp_read(data)
    assert kb.is_control_batch and krecs[0].commit and krecs[0].type == 1
    assert krecs2[0].abort
    cols = decode_columns(data)
    assert cols["is_control"] == [True, True] and cols["is_transactional"] == [
        True,
        True,
    ]
    # librdkafka's mock cluster writes CRC 0 on markers: fails only with the check on
    zero = bytearray(data[: len(data) // 2])
    struct.pack_into(">I", zero, 17, 0)
    assert "CRC-32C" in _err(bytes(zero)).reason
    assert (
        list(decode_batches(bytes(zero), check_crc=False))[0].records[0].control
        is not None
    )


def test_bad_control_record() -> None:
    data = encode_control_batch(0, coordinator_epoch=1, producer_id=1, producer_epoch=1)
    region = _record(b"\x00\x00\x00\x04ab\x01\x00")  # 2-byte key
    err = _err(with_region(data, region, count=1))
    assert err.path.endswith("records[0].key") and "control record key" in err.reason


def test_legacy_errors() -> None:
    msg = bytearray(encode_legacy([(b"k", b"v", [], T0)], magic=1))
    struct.pack_into(">i", msg, 26, -3)  # key length
    err = _err(fix_legacy(bytes(msg)))
    assert (
        err.path == "batch@0(base_offset=0).key" and "negative length -3" in err.reason
    )
    wrapper = bytearray(
        encode_legacy(sample_records(3, headers=False), magic=1, compression=1)
    )
    wrapper[-8] ^= 0xFF  # damage the gzip stream (its CRC trailer)
    err = _err(fix_legacy(bytes(wrapper)))
    assert err.path == "batch@0(base_offset=2).value" and "gzip" in err.reason


def fix_legacy(msg: bytes) -> bytes:
    import zlib

    b = bytearray(msg)
    struct.pack_into(">I", b, 12, zlib.crc32(bytes(b[16:])))
    return bytes(b)


def test_unused_helper_fix_crc() -> None:
    data = bytearray(_batch(2))
    data[-1] ^= 1
    assert len(list(decode_batches(fix_crc(bytes(data))))) == 1


def test_encode_errors() -> None:
    from kproto.serial.exceptions import EncodeError

    with pytest.raises(EncodeError) as info:
        encode_batch([(b"k", b"v"), ("str", b"v")])
    assert info.value.path == "records[1].key"
    with pytest.raises(EncodeError) as info:
        encode_batch([(b"k", b"v", [("h", b"x")]), (b"k", b"v", [("h", "text")])])
    assert info.value.path == "records[1].headers[0].value"
    with pytest.raises(EncodeError) as info:
        encode_batch([(b"k", b"v", [(1, b"x")])])
    assert info.value.path == "records[0].headers[0]"
    with pytest.raises(EncodeError):
        encode_batch([])
    with pytest.raises(EncodeError):
        encode_batch([(b"k", b"v", [("h", b"x")])], magic=1)
    with pytest.raises(EncodeError):
        encode_batch([(b"k", b"v")], producer_id=2**63)
    with pytest.raises(EncodeError):
        encode_control_batch(5, coordinator_epoch=0, producer_id=1, producer_epoch=0)
    # Record objects and bytes-like inputs are accepted
    rec = Record(offset=99, timestamp=T0, key=bytearray(b"k"), value=memoryview(b"v"))  # type: ignore[arg-type]
    (batch,) = list(decode_batches(encode_batch([rec], base_offset=4)))
    assert batch.records[0] == Record(4, T0, b"k", b"v")
