"""decode_column and decode_internal_topic."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import BinaryType, LongType, StructField, StructType
from spark_data import v2_batch, write_segment
from spark_entities import (
    AllTypes,
    pickle_reader,
    pickle_writer,
    sample_all_types,
    to_plain,
)

from kproto.spark import (
    decode_column,
    decode_internal_topic,
    merged_schema,
    read_log_segments,
    records_only,
    spark_schema,
)

serial = pytest.importorskip("kproto.serial")
index = pytest.importorskip("kproto.index")

BIN = StructType([StructField("id", LongType()), StructField("payload", BinaryType())])


def test_decode_column_all_types(spark: SparkSession) -> None:
    entities = [sample_all_types(i) for i in range(40)]
    rows = [(i, pickle_writer(e)) for i, e in enumerate(entities)]
    rows += [(100, None), (101, b"\x00\x00\x00\x09abc")]  # null stays null; truncated
    df = spark.createDataFrame(rows, BIN).repartition(2)
    out = decode_column(df, "payload", AllTypes, reader=pickle_reader)
    assert out.schema["payload"].dataType == spark_schema(AllTypes)
    got = {r.id: r.asDict(recursive=True) for r in out.collect()}
    for i, e in enumerate(entities):
        assert got[i]["payload"] == to_plain(e)
        assert got[i]["decode_error"] is None
    assert got[100]["payload"] is None and got[100]["decode_error"] is None
    assert got[101]["payload"] is None and "truncated" in got[101]["decode_error"]
    with pytest.raises(Exception, match="truncated"):
        decode_column(
            df, "payload", AllTypes, reader=pickle_reader, error_column=None
        ).collect()
    with pytest.raises(ValueError):
        decode_column(df, "id", AllTypes)


def test_decode_column_generated_class(spark: SparkSession) -> None:
    from kproto.schema.group_metadata_value.v4 import GroupMetadataValue, MemberMetadata

    values = [
        GroupMetadataValue(
            protocol_type="consumer",
            generation=g,
            protocol=None if g % 2 else "range",
            leader=f"m{g}",
            current_state_timestamp=1_700_000_000_000 + g,
            members=tuple(
                MemberMetadata(
                    member_id=f"m{j}",
                    group_instance_id=None if j % 2 else f"i{j}",
                    client_id="c",
                    client_host="/10.0.0.1",
                    rebalance_timeout=300000,
                    session_timeout=45000,
                    subscription=b"\x00\x01sub",
                    assignment=b"",
                )
                for j in range(g % 3)
            ),
        )
        for g in range(20)
    ]
    rows = [(i, serial.encode(v)) for i, v in enumerate(values)]
    rows.append((99, serial.encode(values[1])[:-3]))
    rows.append((98, serial.encode(values[1]) + b"\x00"))
    df = spark.createDataFrame(rows, BIN)
    got = {
        r.id: r.asDict(recursive=True)
        for r in decode_column(df, "payload", GroupMetadataValue).collect()
    }
    for i, v in enumerate(values):
        assert got[i]["payload"] == to_plain(v), i
    assert got[99]["payload"] is None and got[99]["decode_error"]
    assert "trailing" in got[98]["decode_error"]


def _kv(version: int, entity: Any) -> bytes:
    return struct.pack(">h", version) + serial.encode(entity)


def test_decode_column_version_prefix(spark: SparkSession) -> None:
    """Internal-topic values carry an int16 version first: bare decoding fails with
    a hint naming ``version_prefix``; with it the prefix is checked and skipped."""
    cls = index.data_type("OffsetCommitValue", 3)
    value = cls(offset=42, leader_epoch=7, metadata="m", commit_timestamp=1_700)
    rows = [
        (0, _kv(3, value)),
        (1, _kv(1, value)),  # another version's prefix
        (2, b"\x00"),  # too short for a version
        (3, None),
    ]
    df = spark.createDataFrame(rows, BIN)
    bare = {r.id: r.decode_error for r in decode_column(df, "payload", cls).collect()}
    assert "pass version_prefix=True" in bare[0]  # whatever the failure
    got = {
        r.id: r.asDict(recursive=True)
        for r in decode_column(df, "payload", cls, version_prefix=True).collect()
    }
    assert got[0]["payload"] == to_plain(value) and got[0]["decode_error"] is None
    assert got[1]["payload"] is None
    assert "version prefix 1, but decoding as v3" in got[1]["decode_error"]
    assert "too short" in got[2]["decode_error"]
    assert got[3]["payload"] is None and got[3]["decode_error"] is None


def _consumer_offsets_records() -> list[tuple[bytes | None, bytes | None, str]]:
    """(key, value, what) for __consumer_offsets, incl. tombstones and bad versions."""
    dt = index.data_type
    out: list[tuple[bytes | None, bytes | None, str]] = []
    for kv, vv in [(0, 0), (1, 1), (1, 3), (1, 4)]:
        key = dt("OffsetCommitKey", kv)(group="g1", topic="orders", partition=kv)
        cls = dt("OffsetCommitValue", vv)
        fields = {
            "offset": 1000 + vv,
            "metadata": "m",
            "commit_timestamp": 1_700_000_000_000,
        }
        if vv == 1:
            fields["expire_timestamp"] = 1_800_000_000_000
        if vv >= 3:
            fields["leader_epoch"] = 7
        out.append((_kv(kv, key), _kv(vv, cls(**fields)), f"oc{vv}"))
    gk = _kv(2, dt("GroupMetadataKey", 2)(group="g1"))
    for vv in range(5):
        cls = dt("GroupMetadataValue", vv)
        out.append(
            (
                gk,
                _kv(
                    vv,
                    cls(
                        protocol_type="consumer",
                        generation=vv,
                        protocol="range",
                        leader="m",
                    ),
                ),
                f"gm{vv}",
            )
        )
    out.append((gk, None, "tombstone"))
    out.append((struct.pack(">h", 9) + b"xx", b"\x00\x00", "badkey"))
    out.append(
        (
            _kv(1, dt("OffsetCommitKey", 1)(group="g", topic="t", partition=0)),
            struct.pack(">h", 7) + b"zz",
            "badvalue",
        )
    )
    out.append((gk, struct.pack(">h", 3) + b"\x00", "garbage"))
    return out


def test_decode_internal_topic_consumer_offsets(spark: SparkSession) -> None:
    recs = _consumer_offsets_records()
    schema = StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("what", StructType([]).add("w", "string")),
        ]
    )
    df = spark.createDataFrame([(k, v, (w,)) for k, v, w in recs], schema)
    out = decode_internal_topic(df, "__consumer_offsets")
    assert out.schema["offset_commit_value"].dataType == merged_schema(
        "OffsetCommitValue"
    )
    rows = {r.what.w: r for r in out.collect()}
    oc1 = rows["oc1"]
    assert (oc1.key_version, oc1.value_version, oc1.record_type) == (
        1,
        1,
        "OffsetCommitKey",
    )
    assert oc1.offset_commit_key.asDict() == {
        "group": "g1",
        "topic": "orders",
        "partition": 1,
    }
    assert oc1.offset_commit_value.expire_timestamp == 1_800_000_000_000
    assert (
        oc1.offset_commit_value.leader_epoch is None
        and oc1.group_metadata_value is None
    )
    assert rows["oc3"].offset_commit_value.leader_epoch == 7
    assert rows["oc4"].offset_commit_value.unknown_tagged_fields == []
    for vv in range(5):
        r = rows[f"gm{vv}"]
        assert r.error is None and r.group_metadata_value.generation == vv
        assert r.group_metadata_key.group == "g1" and r.offset_commit_key is None
    t = rows["tombstone"]
    assert (
        t.error is None
        and t.group_metadata_key.group == "g1"
        and t.group_metadata_value is None
    )
    assert "unknown key version 9" in rows["badkey"].error
    assert "unknown OffsetCommitValue version 7" in rows["badvalue"].error
    assert rows["badvalue"].offset_commit_key.topic == "t"
    assert rows["garbage"].error.startswith("value:")


def test_internal_topic_from_segments(spark: SparkSession, tmp_path: Path) -> None:
    dt = index.data_type
    key = _kv(0, dt("TransactionLogKey", 0)(transactional_id="tx-1"))
    P = (
        dt("TransactionLogValue", 1)
        .__attrs_attrs__.transaction_partitions.metadata["kproto"]
        .element.entity
    )
    value = dt("TransactionLogValue", 1)(
        producer_id=5,
        producer_epoch=1,
        transaction_timeout_ms=60000,
        transaction_status=2,
        transaction_partitions=(P(topic="orders", partition_ids=(0, 3)),),
        transaction_last_update_timestamp_ms=1,
        transaction_start_timestamp_ms=0,
        previous_producer_id=4,
    )
    v0 = dt("TransactionLogValue", 0)(
        producer_id=5,
        producer_epoch=0,
        transaction_timeout_ms=1,
        transaction_status=0,
        transaction_partitions=None,
        transaction_last_update_timestamp_ms=1,
        transaction_start_timestamp_ms=0,
    )
    records = [
        (0, key, _kv(1, value), []),
        (1, key, _kv(0, v0), []),
        (2, key, None, []),
    ]
    write_segment(tmp_path, "__transaction_state", 4, [v2_batch(0, records, "lz4")])
    df = decode_internal_topic(
        records_only(read_log_segments(spark, tmp_path)), "__transaction_state"
    )
    rows = df.orderBy("offset").collect()
    assert [r.error for r in rows] == [None] * 3
    assert rows[0].transaction_log_key.transactional_id == "tx-1"
    v = rows[0].transaction_log_value
    assert (v.previous_producer_id, v.transaction_partitions[0].partition_ids) == (
        4,
        [0, 3],
    )
    assert rows[1].transaction_log_value.transaction_partitions is None
    assert rows[1].transaction_log_value.previous_producer_id is None  # not in v0
    assert rows[2].transaction_log_value is None and rows[2].value_version is None
    with pytest.raises(ValueError):
        decode_internal_topic(df, "__nope")


def test_uuid_and_nested_arrays_of_generated_class(spark: SparkSession) -> None:
    from kproto.schema.metadata.v12 import response as m

    topic_cls = m.MetadataResponse.__attrs_attrs__.topics.metadata[
        "kproto"
    ].element.entity
    resp = m.MetadataResponse(
        throttle_time_ms=5,
        topics=(topic_cls(error_code=0, name="orders", topic_id=uuid.UUID(int=12345)),),
    )
    df = spark.createDataFrame([(1, serial.encode(resp))], BIN)
    (row,) = decode_column(df, "payload", m.MetadataResponse).collect()
    assert row.asDict(recursive=True)["payload"] == to_plain(resp)
    assert row.payload.topics[0].topic_id == str(uuid.UUID(int=12345))


def test_internal_topic_composes_with_read_log_segments(
    spark: SparkSession, tmp_path: Path
) -> None:
    from kproto.records import ControlRecordType, encode_control_batch

    dt = index.data_type
    key = _kv(1, dt("OffsetCommitKey", 1)(group="g", topic="t", partition=2))
    value = _kv(3, dt("OffsetCommitValue", 3)(offset=42, leader_epoch=1, metadata=""))
    commit = v2_batch(0, [(1, key, value, [])], producer_id=5, producer_epoch=0)
    marker = encode_control_batch(
        ControlRecordType.COMMIT,
        coordinator_epoch=1,
        producer_id=5,
        producer_epoch=0,
        base_offset=1,
        timestamp=2,
    )
    broken = bytearray(v2_batch(2, [(3, key, value, [])]))
    broken[-1] ^= 0xFF  # fails its CRC: an error row from read_log_segments
    write_segment(tmp_path, "__consumer_offsets", 7, [commit, marker, bytes(broken)])
    # The call decode_internal_topic's docstring invites, with no records_only().
    df = decode_internal_topic(read_log_segments(spark, tmp_path), "__consumer_offsets")
    assert df.columns.count("error") == 1
    rows = df.orderBy("file", "base_offset").collect()
    assert len(rows) == 3
    ok, control, bad = rows
    assert ok.error is None and ok.record_type == "OffsetCommitKey"
    assert (ok.offset_commit_key.partition, ok.offset_commit_value.offset) == (2, 42)
    assert control.is_control and control.error is None
    assert control.record_type is None and control.offset_commit_key is None
    assert bad.error is not None and "CRC" in bad.error and bad.record_type is None
