"""The fixture examples of docs/guide/broker.md, run as written (through the pytest11 plugin)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")
pytest.importorskip("aiokafka")


def test_roundtrip(kafka_cluster: Any) -> None:
    from confluent_kafka import Consumer, Producer

    servers = kafka_cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": servers})
    producer.produce("orders", b"v1", key=b"k1")
    producer.flush(10)
    consumer = Consumer(
        {"bootstrap.servers": servers, "group.id": "g", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["orders"])
    msg = consumer.poll(10)
    assert (msg.key(), msg.value()) == (b"k1", b"v1")
    consumer.close()


def test_aiokafka_roundtrip(kafka_cluster: Any) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def roundtrip(kafka_cluster: Any) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers)
        await producer.start()
        await producer.send_and_wait("orders", b"v1")
        await producer.stop()
        consumer = AIOKafkaConsumer(
            "orders",
            bootstrap_servers=kafka_cluster.bootstrap_servers,
            group_id="g",
            auto_offset_reset="earliest",
        )
        await consumer.start()
        assert (await asyncio.wait_for(consumer.getone(), 30)).value == b"v1"
        await consumer.stop()

    asyncio.run(roundtrip(kafka_cluster))


def test_session_fixture_is_shared(
    kafka_cluster_session: Any, kafka_cluster: Any
) -> None:
    assert kafka_cluster_session.bootstrap_servers != kafka_cluster.bootstrap_servers
    kafka_cluster_session.create_topic("shared", 2)
    assert kafka_cluster_session.state.topic_partitions("shared") == 2


@pytest.mark.kafka_cluster(
    nodes=3, auto_create_topics=False, configs={"num.partitions": "6"}
)
def test_three_nodes(kafka_cluster: Any, kafka_cluster_factory: Any) -> None:
    """The guide's marker example (the plugin runs in this suite too)."""
    orders = kafka_cluster.create_topic("orders")  # 6 partitions over 3 leaders
    assert orders.partitions == 6 and set(orders.leaders) == {1, 2, 3}
    assert kafka_cluster.state.config.auto_create_topics_enable is False
    other = kafka_cluster_factory(configs={"log.segment.bytes": 1 << 20})
    assert other.state.config.log_segment_bytes == 1 << 20
    assert len(other.servers) == 1
    assert other.bootstrap_servers != kafka_cluster.bootstrap_servers
