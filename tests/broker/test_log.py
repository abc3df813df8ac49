"""PartitionLog: Kafka's on-disk layout, offsets, recovery, sequences, limits."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from kproto.broker.log import LogAppendError, PartitionLog
from kproto.records import decode_records, encode_batch

SEG = 1 << 20


def batch(n: int, start: int = 0, **kw: int) -> bytes:
    return encode_batch(
        [(None, b"v%d" % (start + i), (), 1000 + i) for i in range(n)], **kw
    )


def open_log(path: Path, segment_bytes: int = SEG) -> PartitionLog:
    return PartitionLog.open("t", 0, path / "t-0", segment_bytes=segment_bytes)


def test_append_assigns_base_offsets_and_keeps_the_batch_bytes(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    first = batch(3)
    assert asyncio.run(plog.append(first)) == 0
    assert plog.append_batches(batch(2, 3)).base_offset == 3
    assert plog.high_watermark == 5
    data = (tmp_path / "t-0" / "00000000000000000000.log").read_bytes()
    # the first batch as produced (its base offset was already 0), then the second
    # with base offset 3 patched in; CRCs stay valid.
    assert data[: len(first)] == first
    assert [r.offset for r in decode_records(data)] == [0, 1, 2, 3, 4]
    assert [r.value for r in decode_records(data)] == [
        b"v0",
        b"v1",
        b"v2",
        b"v3",
        b"v4",
    ]


def test_segments_roll_and_recovery_restores_offsets(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=200)
    for i in range(10):
        plog.append_batches(batch(2, 2 * i))
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert len(names) > 1 and names[0] == "00000000000000000000.log"
    assert all(len(n) == 24 for n in names)
    plog.close()
    again = open_log(tmp_path, segment_bytes=200)
    assert again.high_watermark == 20
    assert [r.value for b in again.batches(0) for r in b.records] == [
        b"v%d" % i for i in range(20)
    ]
    assert again.append_batches(batch(1)).base_offset == 20


def _tear(data: bytes) -> bytes:
    return data[:-7]  # a crash in the middle of the second batch


def _flip_last_byte(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 0xFF])  # CRC mismatch in the last batch


@pytest.mark.parametrize("damage", [_tear, _flip_last_byte])
def test_recovery_truncates_a_damaged_trailing_batch(
    tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    plog = open_log(tmp_path)
    plog.append_batches(batch(3))
    plog.append_batches(batch(3, 3))
    plog.close()
    path = tmp_path / "t-0" / "00000000000000000000.log"
    path.write_bytes(damage(path.read_bytes()))
    again = open_log(tmp_path)
    assert again.high_watermark == 3
    assert path.stat().st_size == len(batch(3))
    assert again.append_batches(batch(1)).base_offset == 3


def test_corrupt_crc_and_oversized_batches_are_refused(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    bad = bytearray(batch(2))
    bad[-1] ^= 1
    with pytest.raises(LogAppendError) as err:
        plog.append_batches(bytes(bad))
    assert err.value.error_code == 2  # CORRUPT_MESSAGE
    with pytest.raises(LogAppendError) as err:
        plog.append_batches(batch(50), max_message_bytes=100)
    assert err.value.error_code == 10  # MESSAGE_TOO_LARGE
    with pytest.raises(LogAppendError) as err:
        plog.append_batches(batch(2)[:-3])
    assert err.value.error_code == 87  # INVALID_RECORD
    assert plog.high_watermark == 0


def test_idempotent_sequences_as_kafka(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    pid = dict(producer_id=7, producer_epoch=0)
    assert plog.append_batches(batch(2, base_sequence=0, **pid)).base_offset == 0
    assert plog.append_batches(batch(2, base_sequence=2, **pid)).base_offset == 2
    # a retried batch among the last five: not written again, earlier offset returned
    assert plog.append_batches(batch(2, base_sequence=0, **pid)).base_offset == 0
    assert plog.high_watermark == 4
    with pytest.raises(LogAppendError) as err:  # a gap
        plog.append_batches(batch(1, base_sequence=9, **pid))
    assert err.value.error_code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert (
        plog.append_batches(
            batch(1, base_sequence=0, producer_id=7, producer_epoch=1)
        ).base_offset
        == 4
    )
    with pytest.raises(LogAppendError) as err:  # the old epoch is fenced
        plog.append_batches(batch(1, base_sequence=4, **pid))
    assert err.value.error_code == 47  # INVALID_PRODUCER_EPOCH
    plog.close()
    again = open_log(tmp_path)  # sequence state is rebuilt from the log
    assert (
        again.append_batches(
            batch(1, base_sequence=0, producer_id=7, producer_epoch=1)
        ).base_offset
        == 4
    )


def test_read_returns_whole_batches_and_the_first_even_if_too_large(
    tmp_path: Path,
) -> None:
    plog = open_log(tmp_path)
    sizes = [len(batch(5, 5 * i)) for i in range(3)]
    for i in range(3):
        plog.append_batches(batch(5, 5 * i))
    assert len(plog.read(0, sizes[0] + sizes[1])) == sizes[0] + sizes[1]
    assert len(plog.read(7, 10**6)) == sizes[1] + sizes[2]  # from the batch holding 7
    assert len(plog.read(0, 1)) == sizes[0]  # KIP-74: the first batch whole
    assert plog.read(0, 1, min_one=False) == b""
    assert plog.read(15, 1000) == b""


def test_delete_records_and_retention_move_the_log_start(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=150)
    for i in range(6):
        plog.append_batches(batch(2, 2 * i))
    segments = len(plog.segments)
    assert plog.delete_records_before(5) == 5
    assert len(plog.segments) < segments
    with pytest.raises(LogAppendError):
        plog.delete_records_before(99)
    with pytest.raises(LogAppendError, match="-1001"):
        plog.delete_records_before(-1001)  # only -1 (the high watermark) is special
    plog.apply_retention(retention_ms=-1, retention_bytes=0, now_ms=0)
    assert len(plog.segments) == 1
    assert plog.log_start_offset == plog.segments[0].base_offset


def test_list_offsets_by_timestamp(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append_batches(batch(3))  # timestamps 1000, 1001, 1002
    plog.append_batches(encode_batch([(None, b"x", (), 5000), (None, b"y", (), 2000)]))
    assert plog.offset_for_timestamp(1001) == (1, 1001)
    assert plog.offset_for_timestamp(1003) == (3, 5000)
    assert plog.offset_for_timestamp(6000) is None
    assert plog.max_timestamp() == (3, 5000)


def test_log_append_time_restamps_the_batch(tmp_path: Path) -> None:
    from kproto.records import TimestampType, decode_batches

    plog = open_log(tmp_path)
    plog.append_batches(batch(3), log_append_time_ms=123456)
    (stored,) = decode_batches(plog.read(0, 10**6))  # CRC checked
    assert stored.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert stored.max_timestamp == 123456
    assert [r.timestamp for r in stored.records] == [123456] * 3


def test_one_batch_per_partition_when_asked(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    with pytest.raises(LogAppendError) as err:
        plog.append_batches(batch(1) + batch(1), one_batch=True)
    assert err.value.error_code == 87
    assert plog.append_batches(batch(1) + batch(1)).base_offset == 0
    assert plog.high_watermark == 2
