"""Errors set per partition and per topic (``Cluster.partition_push_request_errors``,
``Cluster.topic_set_error``, :mod:`kproto.broker.partition_errors`) and error + rtt
pairs per node (``Cluster.broker_push_request_error_rtts``), proved with kproto's
connection, confluent-kafka and kafka-python."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, TopicPartition

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.records import encode_batch
from tests.broker import wire
from tests.broker.conftest import cluster_with_topic
from tests.eventually import eventually


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    yield from cluster_with_topic("t", 3, nodes=1)


def connect(cluster: Cluster) -> Connection:
    return wire.connect(cluster, caps=wire.BY_NAME)


def produce(conn: Connection, *partitions: int, topic: str = "t") -> dict[int, int]:
    batch = encode_batch([(b"k", b"v")])
    response = wire.produce(conn, topic, {p: batch for p in partitions})
    return {p.index: p.error_code for p in wire.partition_answers(response)}


def test_partition_errors_answer_that_partition_alone(cluster: Cluster) -> None:
    cluster.partition_push_request_errors(
        "t", 1, [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR]
    )
    conn = connect(cluster)
    assert produce(conn, 0, 1, 2) == {
        0: ErrorCode.NONE,
        1: ErrorCode.NOT_LEADER_OR_FOLLOWER,
        2: ErrorCode.NONE,
    }
    assert produce(conn, 1) == {1: ErrorCode.KAFKA_STORAGE_ERROR}
    assert produce(conn, 1) == {1: ErrorCode.NONE}  # used up
    conn.close()
    assert [len(cluster.records("t", p)) for p in range(3)] == [1, 1, 1]


def test_librdkafka_retries_a_partition_error(cluster: Cluster) -> None:
    cluster.partition_push_request_errors(
        "t", 0, [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS]
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for p in range(3):
        producer.produce("t", b"v", partition=p)
    assert producer.flush(10) == 0
    # each partition stored once: the retried one after its two errors
    assert [len(cluster.records("t", p)) for p in range(3)] == [1, 1, 1]
    produced = cluster.requests.filter(api_key=ApiKey.PRODUCE)
    assert len(produced) >= 3  # the first request and two retries at least


def test_kafka_python_consumer_gets_past_a_partition_error(cluster: Cluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce("t", b"v", partition=2)
    assert producer.flush(10) == 0
    cluster.partition_push_request_errors("t", 2, [ErrorCode.OFFSET_OUT_OF_RANGE])
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    try:
        consumer.assign([TopicPartition("t", 2)])
        values = [m.value for m in consumer]  # retries, then reads the record
    finally:
        consumer.close()
    assert values == [b"v"]
    # its first request naming the partition (ListOffsets) took the error
    listed = cluster.requests.filter(api_key=ApiKey.LIST_OFFSETS)
    first = listed[0].response.topics[0].partitions[0]
    assert (first.partition_index, first.error_code) == (
        2,
        ErrorCode.OFFSET_OUT_OF_RANGE,
    )


def test_fetch_error_on_one_partition_keeps_the_others(cluster: Cluster) -> None:
    conn = connect(cluster)
    produce(conn, 0, 2)
    cluster.partition_push_request_errors("t", 2, [ErrorCode.KAFKA_STORAGE_ERROR])
    response = wire.fetch(conn, "t", (0, 2), min_bytes=0)
    parts = {p.partition_index: p for t in response.responses for p in t.partitions}
    assert parts[0].error_code == ErrorCode.NONE and parts[0].records
    assert parts[2].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert not parts[2].records and parts[2].high_watermark == -1
    conn.close()


def test_sticky_topic_error_in_metadata_until_cleared(cluster: Cluster) -> None:
    cluster.topic_set_error("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    described = admin.list_topics(topic="t", timeout=10).topics["t"]
    assert described.error is not None
    assert described.error.code() == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    conn = connect(cluster)
    assert produce(conn, 0, 1) == {
        0: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        1: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    }
    assert produce(conn, 0) == {0: ErrorCode.TOPIC_AUTHORIZATION_FAILED}  # sticky
    cluster.topic_set_error("t", ErrorCode.NONE)
    assert produce(conn, 0) == {0: ErrorCode.NONE}
    conn.close()
    assert admin.list_topics(topic="t", timeout=10).topics["t"].error is None


def test_sticky_topic_error_fails_a_confluent_consumer(cluster: Cluster) -> None:
    cluster.topic_set_error("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g"}
    )
    try:
        consumer.subscribe(["t"])

        def failed() -> Any:
            message = consumer.poll(0.2)
            if message is not None and message.error() is not None:
                return message.error()
            return None

        error = eventually(failed, 15, retry_on=())
        assert error.code() == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    finally:
        consumer.close()


def test_error_rtt_pairs_per_node(cluster: Cluster) -> None:
    cluster.broker_push_request_error_rtts(
        1,
        ApiKey.METADATA,
        [(ErrorCode.NONE, 300), (ErrorCode.UNKNOWN_SERVER_ERROR, 0)],
    )
    conn = connect(cluster)
    started = time.monotonic()
    assert conn.request(ApiKey.METADATA, topics=None).brokers[0].node_id == 1
    assert time.monotonic() - started >= 0.3  # answered as usual, late
    response = conn.request(ApiKey.METADATA, topics=[{"name": "t"}])
    assert response.topics[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert conn.request(ApiKey.METADATA, topics=None).topics  # used up
    conn.close()


def test_partition_errors_for_one_api_leave_the_others(cluster: Cluster) -> None:
    cluster.partition_push_request_errors(
        "t", 0, [ErrorCode.LEADER_NOT_AVAILABLE], api_key=ApiKey.LIST_OFFSETS
    )
    conn = connect(cluster)
    assert produce(conn, 0) == {0: ErrorCode.NONE}  # Produce is not ListOffsets
    listed = wire.list_offsets(conn, "t")
    assert listed.error_code == ErrorCode.LEADER_NOT_AVAILABLE
    assert wire.list_offsets(conn, "t").offset == 1
    conn.close()
    with pytest.raises(ValueError, match="METADATA names no partitions"):
        cluster.partition_push_request_errors(
            "t", 0, [ErrorCode.NONE], api_key=ApiKey.METADATA
        )
