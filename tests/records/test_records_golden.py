"""kproto.records against kafka-python 3.0.12 and aiokafka 0.14.0 (C)."""

from __future__ import annotations

import struct

import pytest
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

from kproto.records import (
    Compression,
    TimestampType,
    decode_batches,
    decode_columns,
    decode_records,
    encode_batch,
    encode_legacy,
)
from tests.records.records_testlib import (
    CODEC_IDS,
    CODECS,
    T0,
    kp_legacy,
    kp_read,
    kp_v2,
    sample_records,
)


def _kp_headers(rec: object) -> tuple[tuple[str, bytes | None], ...]:
    return tuple((k, v) for k, v in rec.headers)  # type: ignore[attr-defined]


@pytest.mark.parametrize("codec", CODECS)
def test_decode_kafka_python_v2(codec: str) -> None:
    records = sample_records(40)
    data = kp_v2(
        records, CODEC_IDS[codec], producer_id=77, producer_epoch=3, base_sequence=10
    )
    ((kbatch, krecs),) = kp_read(data)
    (batch,) = list(decode_batches(data))
    assert batch.magic == 2 and batch.position == 0
    assert batch.compression == Compression(kbatch.compression_type)
    assert batch.compression.label == codec
    assert batch.base_offset == kbatch.base_offset == 0
    assert batch.crc == kbatch.crc
    assert batch.attributes == kbatch.attributes
    assert batch.last_offset_delta == kbatch.last_offset_delta == 39
    assert batch.base_timestamp == kbatch.first_timestamp
    assert batch.max_timestamp == kbatch.max_timestamp
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 10)
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    assert not batch.is_transactional and not batch.is_control
    assert batch.batch_length == len(data) - 12
    assert len(batch.records) == len(krecs) == 40
    for mine, theirs, src in zip(batch.records, krecs, records, strict=True):
        assert mine.offset == theirs.offset
        assert mine.timestamp == theirs.timestamp == src[3]
        assert mine.key == theirs.key == src[0]
        assert mine.value == theirs.value == src[1]
        assert mine.headers == _kp_headers(theirs) == tuple(src[2])
        assert mine.control is None


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS[:4])
def test_decode_kafka_python_legacy(magic: int, codec: str) -> None:
    records = sample_records(15, headers=False)
    data = kp_legacy(records, magic, CODEC_IDS[codec])
    kbatches = kp_read(data)
    batches = list(decode_batches(data))
    assert len(batches) == len(kbatches)
    mine = [r for b in batches for r in b.records]
    theirs = [r for _, rs in kbatches for r in rs]
    assert len(mine) == len(theirs) == 15
    for m, t, src in zip(mine, theirs, records, strict=True):
        assert m.offset == t.offset
        assert m.timestamp == (t.timestamp if magic else -1)
        if magic:
            assert m.timestamp == src[3]
        assert (m.key, m.value) == (t.key, t.value) == (src[0], src[1])
        assert m.headers == ()
    for b in batches:
        assert b.magic == magic
        assert b.crc == struct.unpack_from(">I", data, b.position + 12)[0]
        assert b.compression.label == codec
        assert b.partition_leader_epoch == b.producer_id == b.producer_epoch == -1
        assert b.base_sequence == -1
        assert b.timestamp_type == (
            TimestampType.NO_TIMESTAMP if magic == 0 else TimestampType.CREATE_TIME
        )
    if codec != "none":
        # one wrapper; kafka-python writes wrapper offset 0 (produce data),
        # whose inner offsets are kept as written (Kafka does the same)
        assert len(batches) == 1
        expect = list(range(15))
        assert [r.offset for r in batches[0].records] == expect
        assert batches[0].base_offset == expect[0]
        assert batches[0].last_offset_delta == 14


@pytest.mark.parametrize("codec", CODECS)
def test_encode_read_by_kafka_python_and_aiokafka_v2(codec: str) -> None:
    records = sample_records(30)
    data = encode_batch(
        records,
        compression=Compression[codec.upper()],
        base_offset=1000,
        partition_leader_epoch=5,
        producer_id=9,
        producer_epoch=1,
        base_sequence=100,
        is_transactional=True,
    )
    ((kbatch, krecs),) = kp_read(data)
    assert kbatch.compression_type == CODEC_IDS[codec]
    assert kbatch.is_transactional
    assert (kbatch.producer_id, kbatch.producer_epoch, kbatch.base_sequence) == (
        9,
        1,
        100,
    )
    assert [r.offset for r in krecs] == list(range(1000, 1030))
    for t, src in zip(krecs, records, strict=True):
        assert (t.key, t.value, t.timestamp) == (src[0], src[1], src[3])
        assert _kp_headers(t) == tuple(src[2])
    aio = AioMemoryRecords(data)
    abatch = aio.next_batch()
    assert abatch is not None and abatch.validate_crc()
    arecs = list(abatch)
    assert [r.offset for r in arecs] == list(range(1000, 1030))
    for a, src in zip(arecs, records, strict=True):
        assert (a.key, a.value, a.timestamp) == (src[0], src[1], src[3])
        assert tuple(a.headers) == tuple(src[2])


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS[:4])
def test_encode_read_by_kafka_python_and_aiokafka_legacy(
    magic: int, codec: str
) -> None:
    records = sample_records(12, headers=False)
    data = encode_batch(
        records, magic=magic, compression=Compression[codec.upper()], base_offset=50
    )
    theirs = [r for _, rs in kp_read(data) for r in rs]
    assert [r.offset for r in theirs] == list(range(50, 62))
    for t, src in zip(theirs, records, strict=True):
        assert (t.key, t.value) == (src[0], src[1])
        if magic:
            assert t.timestamp == src[3]
    if magic == 0 and codec == "lz4":
        return  # aiokafka refuses lz4 with magic 0 (KAFKA-3160 era brokers)
    aio = AioMemoryRecords(data)
    arecs = []
    while aio.has_next():
        b = aio.next_batch()
        assert b is not None and b.validate_crc()
        arecs.extend(b)
    assert [r.offset for r in arecs] == list(range(50, 62))
    assert [(r.key, r.value) for r in arecs] == [(s[0], s[1]) for s in records]


def test_byte_identical_with_kafka_python_uncompressed() -> None:
    records = sample_records(50)
    theirs = kp_v2(records, producer_id=4, producer_epoch=2, base_sequence=7)
    mine = encode_batch(
        records,
        partition_leader_epoch=0,
        producer_id=4,
        producer_epoch=2,
        base_sequence=7,
    )
    assert mine == theirs
    for magic in (0, 1):
        plain = sample_records(10, headers=False)
        assert encode_legacy(plain, magic=magic) == kp_legacy(plain, magic)


def test_byte_identical_transactional() -> None:
    records = sample_records(5)
    b = DefaultRecordBatchBuilder(2, 0, True, 8, 0, 0, 1 << 30)
    for i, (k, v, h, ts) in enumerate(records):
        b.append(i, ts, k, v, h)
    theirs = bytes(b.build())
    mine = encode_batch(
        records,
        partition_leader_epoch=0,
        producer_id=8,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    assert mine == theirs


def test_mixed_stream_positions_and_columns() -> None:
    parts = [
        encode_batch(sample_records(3), base_offset=0),
        encode_legacy(sample_records(2, headers=False), magic=1, base_offset=3),
        encode_batch(sample_records(4), compression=Compression.ZSTD, base_offset=5),
        encode_legacy(
            sample_records(2, headers=False),
            magic=0,
            base_offset=9,
            compression=Compression.GZIP,
        ),
    ]
    data = b"".join(parts)
    batches = list(decode_batches(data))
    positions = [0]
    for p in parts[:-1]:
        positions.append(positions[-1] + len(p))
    # the magic 1 set has 2 messages (two batches), the magic 0 wrapper one
    assert [b.position for b in batches] == [
        positions[0],
        positions[1],
        positions[1] + 12 + struct.unpack_from(">i", parts[1], 8)[0],
        positions[2],
        positions[3],
    ]
    offsets = [r.offset for r in decode_records(data)]
    assert offsets == list(range(11))
    cols = decode_columns(data)
    assert cols.batches == 5 and cols.records == 11
    assert cols["offset"] == offsets
    assert cols["magic"] == [2] * 3 + [1] * 2 + [2] * 4 + [0] * 2
    assert cols["compression"] == ["none"] * 5 + ["zstd"] * 4 + ["gzip"] * 2
    assert cols["timestamp"][9:] == [-1, -1]
    assert cols["timestamp_type"][9:] == [-1, -1]
    mine = [r for b in batches for r in b.records]
    assert cols["key"] == [r.key for r in mine]
    assert cols["headers"] == [list(r.headers) for r in mine]
    assert list(cols) == list(cols.columns) and tuple(cols) == tuple(
        __import__("kproto.records", fromlist=["COLUMN_NAMES"]).COLUMN_NAMES
    )


def test_magic1_log_append_time_and_relative_offsets() -> None:
    records = sample_records(6, headers=False)
    data = encode_legacy(
        records,
        magic=1,
        compression=Compression.SNAPPY,
        base_offset=100,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    (batch,) = list(decode_batches(data))
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    wrapper_ts = max(r[3] for r in records)
    assert batch.max_timestamp == wrapper_ts
    assert [r.offset for r in batch.records] == list(range(100, 106))
    assert all(r.timestamp == wrapper_ts for r in batch.records)
    # wrapper offset is that of the last inner message
    assert struct.unpack_from(">q", data, 0)[0] == 105


def test_v2_log_append_time() -> None:
    records = sample_records(5)
    data = encode_batch(records, timestamp_type=TimestampType.LOG_APPEND_TIME)
    (batch,) = list(decode_batches(data))
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert all(r.timestamp == batch.max_timestamp for r in batch.records)
    ((kb, krecs),) = kp_read(data)
    assert [r.timestamp for r in krecs] == [r.timestamp for r in batch.records]
    assert decode_columns(data)["timestamp"] == [batch.max_timestamp] * 5


def test_nested_legacy_wrappers_flattened() -> None:
    inner = encode_legacy(
        sample_records(3, headers=False),
        magic=0,
        compression=Compression.GZIP,
        base_offset=10,
    )
    # a magic 0 wrapper whose payload is itself a compressed wrapper
    from kproto.records._codecs import compress
    from kproto.records._encode import _legacy_message

    outer = _legacy_message(0, 12, 2, -1, None, compress(2, inner))
    (batch,) = list(decode_batches(outer))
    assert [r.offset for r in batch.records] == [10, 11, 12]
    assert [r.key for r in batch.records] == [r[0] for r in sample_records(3)]


def test_empty_input_and_base_timestamp() -> None:
    it = decode_batches(b"")
    assert (
        list(it) == []
        and it.partial_tail_bytes == 0
        and it.partial_tail_position is None
    )
    data = encode_batch([(b"k", b"v", [], T0 + 5)], base_timestamp=T0)
    (b,) = list(decode_batches(data))
    assert b.base_timestamp == T0 and b.records[0].timestamp == T0 + 5
