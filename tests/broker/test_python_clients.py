"""kafka-python and aiokafka against the broker, and the pytest plugin's fixture."""

from __future__ import annotations

import asyncio

import pytest

from kproto.broker import Cluster
from tests.consuming import read_values

kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")


def test_kafka_python_producer_and_admin(kafka_cluster: Cluster) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    admin.create_topics([NewTopic("kp", 2, 1, topic_configs={"retention.ms": "60000"})])
    admin.create_partitions({"kp": NewPartitions(3)})
    assert kafka_cluster.state.topic_partitions("kp") == 3
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "kp", ["retention.ms"])]
    )
    config = described["topic"]["kp"]["retention.ms"]
    assert (config["value"], config["config_source"]) == (
        "60000",
        "DYNAMIC_TOPIC_CONFIG",
    )
    producer = KafkaProducer(
        bootstrap_servers=kafka_cluster.bootstrap_servers, compression_type="gzip"
    )
    for i in range(30):
        producer.send("kp", value=b"kp%d" % i, partition=i % 3)
    producer.flush(30)
    producer.close()
    stored = sorted(r.value for p in range(3) for r in kafka_cluster.records("kp", p))
    assert stored == sorted(b"kp%d" % i for i in range(30))
    consumer = KafkaConsumer(bootstrap_servers=kafka_cluster.bootstrap_servers)
    consumer.assign([TopicPartition("kp", p) for p in range(3)])
    consumer.seek_to_beginning()
    got = read_values(consumer, 30)
    consumer.close()
    assert sorted(got) == stored
    admin.delete_topics(["kp"])
    assert kafka_cluster.state.topic_partitions("kp") is None
    admin.close()


def test_aiokafka_producer_and_consumer(kafka_cluster: Cluster) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    kafka_cluster.create_topic("ak", 2)

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(
            bootstrap_servers=kafka_cluster.bootstrap_servers,
            enable_idempotence=True,
            compression_type="gzip",
        )
        await producer.start()
        try:
            for i in range(20):
                await producer.send_and_wait("ak", b"ak%d" % i, partition=i % 2)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=kafka_cluster.bootstrap_servers,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            consumer.assign([TopicPartition("ak", 0), TopicPartition("ak", 1)])
            got: list[bytes] = []
            while len(got) < 20:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 30)
                got.extend(m.value for msgs in batch.values() for m in msgs)
            return got
        finally:
            await consumer.stop()

    got = asyncio.run(run())
    assert sorted(got) == sorted(b"ak%d" % i for i in range(20))
    assert [r.value for r in kafka_cluster.records("ak", 0)] == [
        b"ak%d" % i for i in range(0, 20, 2)
    ]


def test_async_with_cluster() -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        async with Cluster(nodes=2) as cluster:
            producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
            await producer.start()
            try:
                await producer.send_and_wait("auto", b"v")
            finally:
                await producer.stop()
            assert [r.value for r in cluster.records("auto", 0)] == [b"v"]
            assert not cluster.data_dir.exists() or cluster.data_dir.is_dir()
        assert not cluster.data_dir.exists()  # the temporary directory is removed

    asyncio.run(run())


def test_kafka_python_consumer_group_commits(kafka_cluster: Cluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    kafka_cluster.create_topic("kg", 2)
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers)
    for i in range(10):
        producer.send("kg", b"kg%d" % i, partition=i % 2)
    producer.flush(30)
    producer.close()

    def group_member() -> KafkaConsumer:
        return KafkaConsumer(
            "kg",
            bootstrap_servers=kafka_cluster.bootstrap_servers,
            group_id="kgroup",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )

    consumer = group_member()
    got = read_values(consumer, 10)
    consumer.commit()
    committed = {p: consumer.committed(TopicPartition("kg", p)) for p in range(2)}
    consumer.close()
    assert sorted(got) == sorted(b"kg%d" % i for i in range(10))
    assert committed == {0: 5, 1: 5}
