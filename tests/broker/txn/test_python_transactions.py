"""kafka-python and aiokafka transactional producers and read_committed consumers
against the broker's transaction coordinator."""

from __future__ import annotations

import asyncio
import time

import pytest

from kproto.broker import Cluster
from kproto.records import ControlRecordType
from tests.eventually import eventually

kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")


def _markers(cluster: Cluster, topic: str, partition: int) -> list[int]:
    return [
        r.control.type
        for r in cluster.records(topic, partition)
        if r.control is not None
    ]


def _assert_committed_then_aborted(
    cluster: Cluster, topic: str, group: str, source: str, offset: int
) -> None:
    """``topic``-0 holds a committed then an aborted transaction, and the first
    committed ``group``'s ``offset`` of ``source``-0 with it."""
    assert _markers(cluster, topic, 0) == [
        ControlRecordType.COMMIT,
        ControlRecordType.ABORT,
    ]
    committed = cluster.groups.fetch_offsets(group, [(source, 0)])[(source, 0)]
    assert committed is not None
    assert committed.offset == offset


def test_kafka_python_transactions(kafka_cluster: Cluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    kafka_cluster.create_topic("kpt", 2)
    kafka_cluster.create_topic("kpt-in", 1)
    producer = KafkaProducer(
        bootstrap_servers=kafka_cluster.bootstrap_servers,
        transactional_id="kp-app",
        enable_idempotence=True,
    )
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(10):
        producer.send("kpt", value=b"c%d" % i, partition=i % 2)
    producer.send_offsets_to_transaction(
        {TopicPartition("kpt-in", 0): kafka.structs.OffsetAndMetadata(7, "", -1)},
        "kp-group",
    )
    producer.commit_transaction()
    producer.begin_transaction()
    for i in range(5):
        producer.send("kpt", value=b"a%d" % i, partition=i % 2)
    producer.flush()
    producer.abort_transaction()
    producer.close()
    _assert_committed_then_aborted(kafka_cluster, "kpt", "kp-group", "kpt-in", 7)

    def read(isolation: str, n: int) -> list[bytes]:
        consumer = KafkaConsumer(
            bootstrap_servers=kafka_cluster.bootstrap_servers,
            isolation_level=isolation,
        )
        consumer.assign([TopicPartition("kpt", p) for p in range(2)])
        consumer.seek_to_beginning()
        got: list[bytes] = []
        last = time.monotonic()

        def settled() -> bool:  # ``n`` read, then nothing more for 1 s
            nonlocal last
            batch = consumer.poll(300)
            got.extend(r.value for records in batch.values() for r in records)
            if batch:
                last = time.monotonic()
            return len(got) >= n and time.monotonic() - last > 1

        eventually(settled, 20, interval_s=0, retry_on=())
        consumer.close()
        return sorted(got)

    assert read("read_committed", 10) == sorted(b"c%d" % i for i in range(10))
    assert read("read_uncommitted", 15) == sorted(
        [b"c%d" % i for i in range(10)] + [b"a%d" % i for i in range(5)]
    )


def test_aiokafka_transactions(kafka_cluster: Cluster) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    kafka_cluster.create_topic("akt", 1)
    kafka_cluster.create_topic("akt-in", 1)

    async def run() -> tuple[list[bytes], list[bytes]]:
        producer = AIOKafkaProducer(
            bootstrap_servers=kafka_cluster.bootstrap_servers,
            transactional_id="ak-app",
        )
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(6):
                    await producer.send("akt", b"c%d" % i)
                await producer.send_offsets_to_transaction(
                    {TopicPartition("akt-in", 0): OffsetAndMetadata(3, "")}, "ak-group"
                )
            await producer.begin_transaction()
            await producer.send_and_wait("akt", b"aborted")
            await producer.abort_transaction()
        finally:
            await producer.stop()

        async def read(isolation: str, n: int) -> list[bytes]:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=kafka_cluster.bootstrap_servers,
                isolation_level=isolation,
                auto_offset_reset="earliest",
            )
            await consumer.start()
            try:
                consumer.assign([TopicPartition("akt", 0)])
                await consumer.seek_to_beginning()
                got: list[bytes] = []
                quiet = 0
                for _ in range(60):
                    batch = await consumer.getmany(timeout_ms=300)
                    got.extend(r.value for records in batch.values() for r in records)
                    quiet = quiet + 1 if (len(got) >= n and not batch) else 0
                    if quiet >= 3:
                        break
                return sorted(got)
            finally:
                await consumer.stop()

        return await read("read_committed", 6), await read("read_uncommitted", 7)

    committed, uncommitted = asyncio.run(run())
    assert committed == sorted(b"c%d" % i for i in range(6))
    assert uncommitted == sorted([b"c%d" % i for i in range(6)] + [b"aborted"])
    _assert_committed_then_aborted(kafka_cluster, "akt", "ak-group", "akt-in", 3)


def test_kafka_python_second_producer_fences_the_first(kafka_cluster: Cluster) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError, ProducerFencedError

    kafka_cluster.create_topic("kpf", 1)

    def in_transaction(value: bytes) -> KafkaProducer:
        """A producer of transactional id "same" whose open transaction holds
        ``value`` (InitProducerId bumps the epoch and fences the one before)."""
        producer = KafkaProducer(
            bootstrap_servers=kafka_cluster.bootstrap_servers, transactional_id="same"
        )
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("kpf", value)
        return producer

    first = in_transaction(b"zombie")
    first.flush()
    second = in_transaction(b"new")
    second.commit_transaction()
    try:
        future = first.send("kpf", b"zombie-2")
        with pytest.raises(KafkaError):  # the partition refuses the old epoch
            future.get(timeout=10)
        # kafka-python then tries to bump its epoch (KIP-360), which the
        # coordinator refuses: the producer ends fenced, a fatal error (raised
        # as such, or named by "in an error state"); while the bump is in flight
        # commit_transaction reports an invalid transition instead

        def fenced() -> Exception | None:
            try:
                first.commit_transaction()
            except ProducerFencedError as exc:
                return exc
            except KafkaError as exc:
                if "error state" in str(exc) and "ProducerFenced" in str(exc):
                    return exc
            return None

        assert eventually(fenced, 10, interval_s=0.1, retry_on=())
    finally:
        first.close(timeout=2)
        second.close(timeout=2)
    assert _markers(kafka_cluster, "kpf", 0) == [
        ControlRecordType.ABORT,
        ControlRecordType.COMMIT,
    ]


def test_aiokafka_second_producer_fences_the_first(kafka_cluster: Cluster) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    kafka_cluster.create_topic("akf", 1)

    async def run() -> KafkaError:
        servers = kafka_cluster.bootstrap_servers
        first = AIOKafkaProducer(bootstrap_servers=servers, transactional_id="twin")
        second = AIOKafkaProducer(bootstrap_servers=servers, transactional_id="twin")
        await first.start()
        try:
            await first.begin_transaction()
            await first.send_and_wait("akf", b"zombie")
            await second.start()
            async with second.transaction():
                await second.send_and_wait("akf", b"new")
            try:
                await first.send_and_wait("akf", b"zombie-2")
                await first.commit_transaction()
            except KafkaError as exc:
                return exc
            raise AssertionError("the fenced producer committed")
        finally:
            await first.stop()
            await second.stop()

    error = asyncio.run(run())
    assert type(error).__name__ == "ProducerFenced"
    assert _markers(kafka_cluster, "akf", 0) == [
        ControlRecordType.ABORT,
        ControlRecordType.COMMIT,
    ]
