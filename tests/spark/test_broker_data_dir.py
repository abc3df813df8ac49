"""read_log_segments on a kproto broker's data directory returns every produced record."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kproto.broker import Cluster
from kproto.spark import read_log_segments
from tests.consuming import read_committing

ck = pytest.importorskip("confluent_kafka")


def test_read_log_segments_on_a_broker_data_dir(
    spark: SparkSession, tmp_path: Path
) -> None:
    with Cluster(nodes=2, data_dir=tmp_path) as cluster:
        cluster.create_topic("orders", 2)
        producer = ck.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "compression.type": "lz4",
                "log_level": 2,
            }
        )
        for i in range(100):
            producer.produce("orders", b"order-%d" % i, key=b"k%d" % i, partition=i % 2)
        assert producer.flush(30) == 0
        stored = {
            (p, r.offset, r.value)
            for p in range(2)
            for r in cluster.records("orders", p)
        }
    rows = read_log_segments(spark, [str(tmp_path)]).where("topic = 'orders'").collect()
    assert {(r["partition"], r["offset"], bytes(r["value"])) for r in rows} == stored
    assert len(rows) == 100


def test_decode_kip848_group_records(spark: SparkSession, tmp_path: Path) -> None:
    """A ``group.protocol=consumer`` group's records in ``__consumer_offsets``
    (ConsumerGroup* record types 3-8) and its offset commits decode with no
    error."""
    from kproto.spark import decode_internal_topic

    with Cluster(
        data_dir=tmp_path,
        offsets_partitions=1,
        consumer_heartbeat_interval_ms=200,
        consumer_session_timeout_ms=4000,
    ) as cluster:
        cluster.create_topic("clicks", 2)
        producer = ck.Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 2}
        )
        for i in range(4):
            producer.produce("clicks", b"c%d" % i, partition=i % 2)
        assert producer.flush(30) == 0
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "kip848",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "log_level": 2,
            }
        )
        consumer.subscribe(["clicks"])
        got = read_committing(consumer, 4)
        consumer.close()
        assert got == 4
    df = read_log_segments(spark, [str(tmp_path)]).where("topic = '__consumer_offsets'")
    rows = decode_internal_topic(df, "__consumer_offsets").collect()
    assert [r.error for r in rows if r.error is not None] == []
    types = {r.key_version: r.record_type for r in rows}
    assert {
        1: "OffsetCommitKey",
        3: "ConsumerGroupMetadataKey",
        4: "ConsumerGroupPartitionMetadataKey",
        5: "ConsumerGroupMemberMetadataKey",
        6: "ConsumerGroupTargetAssignmentMetadataKey",
        7: "ConsumerGroupTargetAssignmentMemberKey",
        8: "ConsumerGroupCurrentMemberAssignmentKey",
    }.items() <= types.items()
    metadata = [r for r in rows if r.key_version == 3]
    assert {r.consumer_group_metadata_key.group_id for r in metadata} == {"kip848"}
    assert max(r.consumer_group_metadata_value.epoch for r in metadata if r.value) >= 1
    commits = [r.offset_commit_value.offset for r in rows if r.key_version == 1]
    assert max(commits) == 2
