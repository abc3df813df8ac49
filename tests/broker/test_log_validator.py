"""Produce validation as Kafka's LogValidator: offsets, control batches, record
count and sizes, keys on compacted topics, timestamps, short writes."""

from __future__ import annotations

import os
import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import crc32c
import pytest

from kproto.broker import Cluster
from kproto.broker.log import LogAppendError, PartitionLog
from kproto.broker.log_validator import (
    LogPolicy,
    RecordValidationError,
    validate_batches,
)
from kproto.broker.segment import Segment
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.records import (
    Compression,
    ControlRecordType,
    decode_records,
    encode_batch,
    encode_control_batch,
)
from tests.broker import wire

_LAST_OFFSET_DELTA_AT = 23
_RECORDS_COUNT_AT = 57


def batch(n: int, *, key: bytes | None = b"k", **kw: Any) -> bytes:
    return encode_batch([(key, b"v%d" % i, (), 1000 + i) for i in range(n)], **kw)


def patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    """``data`` with one header field replaced and the CRC-32C recomputed."""
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def refused(records: bytes, policy: LogPolicy | None = None) -> RecordValidationError:
    with pytest.raises(RecordValidationError) as err:
        validate_batches(records, policy or LogPolicy())
    return err.value


# ------------------------------------------------------------------ unit level


def test_well_formed_batches_pass_in_every_codec() -> None:
    for codec in Compression:
        out = validate_batches(batch(20, compression=codec), LogPolicy(one_batch=True))
        assert [(b.position, b.last_offset_delta) for b in out] == [(0, 19)]


def test_last_offset_delta_must_match_the_record_count() -> None:
    one = batch(1)
    err = refused(patched(one, _LAST_OFFSET_DELTA_AT, ">i", 2**31 - 1))
    assert err.error_code == ErrorCode.INVALID_RECORD
    assert "Inconsistent batch offset range [0, 2147483647]" in str(err)
    err = refused(patched(batch(5), _LAST_OFFSET_DELTA_AT, ">i", -5))
    assert err.error_code == ErrorCode.INVALID_RECORD
    assert "invalid offset range" in str(err)


def test_declared_count_must_match_the_records() -> None:
    three = batch(3)
    # count and last_offset_delta agree, but only three records follow
    four = patched(patched(three, _RECORDS_COUNT_AT, ">i", 4), 23, ">i", 3)
    err = refused(four)
    assert err.error_code == ErrorCode.INVALID_RECORD
    assert "premature EOF" in str(err)
    two = patched(patched(three, _RECORDS_COUNT_AT, ">i", 2), 23, ">i", 1)
    assert "records still remaining" in str(refused(two))
    assert "Invalid reported count" in str(
        refused(patched(three, _RECORDS_COUNT_AT, ">i", 0))
    )


def test_record_sizes_must_be_consistent() -> None:
    data = bytearray(batch(2))
    # the first record's length varint (zigzag) sits at byte 61: make it 2 longer
    (length,) = struct.unpack_from(">B", data, 61)
    data[61] = length + 4
    data[17:21] = struct.pack(">I", crc32c.crc32c(bytes(data[21:])))
    err = refused(bytes(data))
    assert err.error_code == ErrorCode.INVALID_RECORD


def test_offset_deltas_must_run_in_order() -> None:
    data = bytearray(batch(2))
    # record 0: length(1) attributes(1) timestamp delta(1) offset delta at 64
    assert data[64] == 0
    data[64] = 2  # zigzag 1
    data[17:21] = struct.pack(">I", crc32c.crc32c(bytes(data[21:])))
    err = refused(bytes(data))
    assert err.error_code == ErrorCode.INVALID_RECORD
    assert "offset delta 1" in str(err)


def test_client_control_batches_are_refused() -> None:
    marker = encode_control_batch(
        ControlRecordType.COMMIT, producer_id=5, producer_epoch=0, coordinator_epoch=0
    )
    err = refused(marker)
    assert err.error_code == ErrorCode.INVALID_RECORD
    assert "Clients are not allowed to write control records" in str(err)
    # the broker's own appends (group coordinator, markers) may
    assert validate_batches(marker, LogPolicy(client=False))


def test_crc_base_offset_and_size() -> None:
    bad = bytearray(batch(2))
    bad[-1] ^= 1
    assert refused(bytes(bad)).error_code == ErrorCode.CORRUPT_MESSAGE
    err = refused(batch(2, base_offset=7))
    assert (err.error_code, "should be 0, but it is 7" in str(err)) == (
        ErrorCode.INVALID_RECORD,
        True,
    )
    too_big = refused(batch(50), LogPolicy(max_message_bytes=100))
    assert too_big.error_code == ErrorCode.MESSAGE_TOO_LARGE
    seq = refused(batch(1, producer_id=3, producer_epoch=0, base_sequence=-1))
    assert "Invalid sequence number -1" in str(seq)
    two = batch(1) + batch(1)
    assert "exactly one" in str(refused(two, LogPolicy(one_batch=True)))


def test_keyless_records_refused_on_compacted_topics_with_record_errors() -> None:
    records = encode_batch([(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4")])
    assert validate_batches(records, LogPolicy())
    for codec in (Compression.NONE, Compression.ZSTD):
        mixed = encode_batch(
            [(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4")],
            compression=codec,
        )
        err = refused(mixed, LogPolicy(compacted=True))
        assert err.error_code == ErrorCode.INVALID_RECORD
        assert [i for i, _ in err.record_errors] == [1, 3]
        assert "Compacted topic cannot accept message without key" in str(err)


def test_timestamps_outside_the_topic_bounds_are_refused() -> None:
    now = 10_000_000
    policy = LogPolicy(now_ms=now, before_max_ms=1000, after_max_ms=1000)
    ok = encode_batch([(b"k", b"v", (), now - 500)])
    assert validate_batches(ok, policy)
    late = encode_batch([(b"k", b"v", (), now + 5000)])
    err = refused(late, policy)
    assert err.error_code == ErrorCode.INVALID_TIMESTAMP
    assert err.record_errors[0][0] == 0
    # LogAppendTime topics replace timestamps: not checked
    assert validate_batches(
        late, LogPolicy(now_ms=now, after_max_ms=0, log_append_time=True)
    )


# ------------------------------------------------------------- the log's writes


def test_short_writes_are_retried_and_a_failed_write_is_not_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = PartitionLog.open("t", 0, tmp_path / "t-0", segment_bytes=1 << 20)
    real = os.pwrite
    calls: list[int] = []

    def halves(fd: int, data: Any, offset: int) -> int:
        calls.append(len(data))
        part = bytes(data)[: max(len(data) // 2, 1)]
        return real(fd, part, offset)

    monkeypatch.setattr(os, "pwrite", halves)
    assert plog.append_batches(batch(3)).base_offset == 0
    assert len(calls) > 1  # the short writes were repeated
    monkeypatch.setattr(os, "pwrite", real)
    assert [r.value for r in decode_records(plog.read(0, 1 << 20))] == [
        b"v0",
        b"v1",
        b"v2",
    ]

    def full_disk(fd: int, data: Any, offset: int) -> int:
        real(fd, bytes(data)[:10], offset)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full_disk)
    with pytest.raises(LogAppendError) as err:
        plog.append_batches(batch(2))
    assert err.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    monkeypatch.setattr(os, "pwrite", lambda fd, data, offset: 0)
    with pytest.raises(LogAppendError):
        plog.append_batches(batch(2))
    monkeypatch.setattr(os, "pwrite", real)
    assert plog.high_watermark == 3
    segment: Segment = plog.segments[-1]
    assert segment.path.stat().st_size == segment.size  # the torn bytes are gone
    assert plog.append_batches(batch(1)).base_offset == 3
    plog.close()
    assert (
        PartitionLog.open(
            "t", 0, tmp_path / "t-0", segment_bytes=1 << 20
        ).high_watermark
        == 4
    )


# ---------------------------------------------------------------- over the wire


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1) as c:
        c.create_topic("plain", 1)
        c.create_topic("compacted", 1, configs={"cleanup.policy": "compact"})
        yield c


def produce(cluster: Cluster, topic: str, records: bytes) -> Any:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=30) as conn:
        response = wire.produce(conn, topic, {0: records}, cluster=cluster)
    return response.responses[0].partition_responses[0]


def high_watermark(cluster: Cluster, topic: str) -> int:
    return cluster._on_loop(lambda: cluster.state.logs[(topic, 0)].high_watermark)


def test_hostile_batches_never_move_the_high_watermark(cluster: Cluster) -> None:
    assert produce(cluster, "plain", batch(5)).error_code == 0
    hostile = [
        patched(batch(1), _LAST_OFFSET_DELTA_AT, ">i", 2**31 - 1),
        patched(batch(5), _LAST_OFFSET_DELTA_AT, ">i", -5),
        encode_control_batch(
            ControlRecordType.COMMIT,
            producer_id=5,
            producer_epoch=0,
            coordinator_epoch=0,
        ),
    ]
    for records in hostile:
        answer = produce(cluster, "plain", records)
        assert answer.error_code == ErrorCode.INVALID_RECORD, answer
        assert answer.error_message
        assert high_watermark(cluster, "plain") == 5
    assert produce(cluster, "plain", batch(3)).base_offset == 5
    offsets = [r.offset for r in cluster.records("plain")]
    assert offsets == list(range(8))


def test_keyless_record_to_a_compacted_topic_gets_record_errors(
    cluster: Cluster,
) -> None:
    answer = produce(cluster, "compacted", encode_batch([(b"a", b"1"), (None, b"2")]))
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert [e.batch_index for e in answer.record_errors] == [1]
    assert "Compacted topic cannot accept message without key" in (
        answer.record_errors[0].batch_index_error_message
    )
    assert high_watermark(cluster, "compacted") == 0
    assert produce(cluster, "compacted", batch(2)).error_code == 0


def test_confluent_keyless_produce_to_a_compacted_topic_fails(cluster: Cluster) -> None:
    ck = pytest.importorskip("confluent_kafka")
    errors: list[Any] = []
    p = ck.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "retries": 0, "log_level": 2}
    )
    p.produce("compacted", b"no key", on_delivery=lambda e, m: errors.append(e))
    p.flush(30)
    p.produce(
        "compacted", b"keyed", key=b"k", on_delivery=lambda e, m: errors.append(e)
    )
    p.flush(30)
    assert len(errors) == 2
    assert errors[0] is not None and errors[0].code() == ck.KafkaError.INVALID_RECORD
    assert errors[1] is None


# ---------------------------------------------------------------- schema id framing


def test_the_walk_reads_schema_id_framing_when_asked() -> None:
    """Confluent's schema validation on: each non-null key / value's framing by
    batch index (ids, header GUIDs, unframed); null keys and values in none."""
    guid = bytes(range(16))
    records = [
        (b"\x00\x00\x00\x00\x07key", b"\x00\x00\x00\x01\x00v"),
        (None, b"plain"),
        (b"k", None),
        (b"\x00\x00\x00\x00\x07", b"bare", [("__value_schema_id", b"\x01" + guid)]),
        (b"\x00\x00", b"\x00\x00\x00\x01\x00", [("__key_schema_id", b"\x02")]),
    ]
    for compression in (Compression.NONE, Compression.ZSTD):
        data = encode_batch(records, compression=compression)
        policy = LogPolicy(key_schema_ids=True, value_schema_ids=True)
        (checked,) = validate_batches(data, policy)
        ids = checked.schema_ids
        assert ids is not None and ids.key is not None and ids.value is not None
        assert ids.value.ids == {256: [0, 4]}
        assert ids.value.guids == {guid: [3]}
        assert [i for i, _ in ids.value.unframed] == [1]
        assert "starts with byte 0x70" in ids.value.unframed[0][1]
        assert ids.key.ids == {7: [0, 3]}
        assert [i for i, _ in ids.key.unframed] == [2, 4]
        assert "of 1 bytes is too short" in ids.key.unframed[0][1]
        assert "header is not magic byte 1" in ids.key.unframed[1][1]
    only_values = validate_batches(
        encode_batch(records), LogPolicy(value_schema_ids=True)
    )[0].schema_ids
    assert only_values is not None and only_values.key is None
    assert validate_batches(encode_batch(records), LogPolicy())[0].schema_ids is None


def test_the_framing_walk_still_refuses_malformed_records() -> None:
    data = patched(batch(3), _RECORDS_COUNT_AT, ">i", 4)
    with pytest.raises(RecordValidationError):
        validate_batches(data, LogPolicy(value_schema_ids=True))


def test_the_framing_of_the_record_loop_equals_the_walks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The two readers of the framing (the record loop's columns grouped by
    prefix, the walk) agree on random keys, values and id headers."""
    from kproto.broker import log_validator
    from kproto.records._v2_loop import v2_columns_fast

    rng = random.Random(26)

    def field() -> bytes | None:
        kind = rng.randrange(5)
        if kind == 0:
            return None
        if kind == 1:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
        if kind == 2:
            return struct.pack(">bI", 0, rng.randrange(3)) + b"p"
        return bytes([rng.randrange(3)]) + bytes(rng.randrange(8))

    def headers() -> list[tuple[str, bytes | None]]:
        names = ["__key_schema_id", "__value_schema_id", "other"]
        return [
            (
                rng.choice(names),
                rng.choice(
                    [None, b"\x01" + bytes(16), b"\x01" + b"\x07" * 16, b"\x01"]
                ),
            )
            for _ in range(rng.randrange(3))
        ]

    policy = LogPolicy(key_schema_ids=True, value_schema_ids=True)
    for _ in range(50):
        records = [(field(), field(), headers()) for _ in range(rng.randrange(1, 40))]
        data = encode_batch(records)
        columns = validate_batches(data, policy)
        with monkeypatch.context() as m:
            m.setattr(log_validator, "v2_loops", lambda: (v2_columns_fast, None))
            assert validate_batches(data, policy) == columns
