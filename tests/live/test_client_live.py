"""kproto.client against librdkafka's mock cluster, cross-checked with confluent-kafka:
keyed records land where librdkafka's murmur2 partitioner puts them, records
produced by either side read back by the other, paging, offsets, group commits."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest

from kproto.client import EARLIEST, AsyncClient, Client, TopicPartition
from kproto.connection import KafkaConnectionError, NotNegotiatedError
from kproto.records import Compression
from tests.live.mock_cluster import MockCluster

pytestmark = pytest.mark.live


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture()
def client(cluster: MockCluster) -> Iterator[Client]:
    with Client(cluster.bootstrap, timeout_s=10.0) as c:
        yield c


def confluent_produce(
    cluster: MockCluster, topic: str, records: list[tuple[Any, ...]], **conf: Any
) -> dict[bytes | None, int]:
    """Produce with confluent-kafka; returns {key: partition} from the delivery reports."""
    placed: dict[bytes | None, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        placed[msg.key()] = msg.partition()

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.bootstrap, "log_level": 2, **conf}
    )
    for key, value, headers in records:
        producer.produce(topic, value, key, headers=headers, on_delivery=delivered)
    assert producer.flush(15) == 0
    return placed


def test_contract_example(client: Client) -> None:
    topic = fresh("orders")
    out = client.produce(topic, [(b"key", b"value"), (None, b"v2")])
    assert [r.offset >= 0 for r in out] == [True, True]
    seen = {}
    for p in range(4):
        for record in client.iter_records(topic, p, 0):
            seen[record.value] = (p, record.offset, record.key, record.headers)
    assert seen == {
        b"value": (out[0].partition, out[0].offset, b"key", ()),
        b"v2": (out[1].partition, out[1].offset, None, ()),
    }


def test_keyed_records_land_where_librdkafka_murmur2_puts_them(
    client: Client, cluster: MockCluster
) -> None:
    keys = [b"k%d" % i for i in range(40)] + [b"", b"\xff" * 7, "ключ".encode()]
    theirs_topic, ours_topic = fresh("c-keys"), fresh("k-keys")
    theirs = confluent_produce(
        cluster,
        theirs_topic,
        [(k, b"v", None) for k in keys],
        partitioner="murmur2_random",
    )
    ours = client.produce(ours_topic, [(k, b"v") for k in keys])
    assert {k: r.partition for k, r in zip(keys, ours, strict=True)} == theirs
    assert len(set(theirs.values())) == 4  # the keys spread over all partitions


def test_null_keys_stick_to_one_partition_per_call(client: Client) -> None:
    topic = fresh("sticky")
    out = client.produce(topic, [(None, b"%d" % i) for i in range(10)])
    assert len({r.partition for r in out}) == 1
    assert [r.offset for r in out] == list(range(out[0].offset, out[0].offset + 10))


def test_confluent_records_read_back_by_kproto_client(
    client: Client, cluster: MockCluster
) -> None:
    topic = fresh("from-c")
    records = [(b"key%d" % i, b"value%d" % i, [("h", b"%d" % i)]) for i in range(30)]
    placed = confluent_produce(
        cluster,
        topic,
        records,
        partitioner="murmur2_random",
        **{"compression.type": "lz4", "linger.ms": 5},
    )
    got = {}
    for p in sorted(set(placed.values())):
        for r in client.iter_records(topic, p, 0, max_bytes=200):  # many pages
            got[r.key] = (p, r.value, r.headers)
    assert got == {k: (placed[k], v, (("h", h[0][1]),)) for k, v, h in records}


@pytest.mark.parametrize("codec", list(Compression))
def test_fetch_from_inside_a_batch_and_confluent_consumer_reads(
    client: Client, cluster: MockCluster, consumer_conf: Any, codec: Compression
) -> None:
    topic = fresh(f"mid-{codec.label}")
    values = [b"v%d" % i for i in range(5)]
    client.produce(
        topic,
        [(b"k", v, [], 1000 + i) for i, v in enumerate(values)],
        partition=2,
        compression=codec,
    )
    result = client.fetch(topic, 2, 3)
    assert [(r.offset, r.value) for r in result.records] == [(3, b"v3"), (4, b"v4")]
    assert (result.next_offset, result.high_watermark) == (5, 5)
    assert client.fetch(topic, 2, 5).records == ()
    consumer = confluent_kafka.Consumer(consumer_conf())
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 2, 0)])
        got: list[Any] = []
        for _ in range(50):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append((msg.offset(), msg.value(), msg.timestamp()[1]))
            if len(got) == 5:
                break
        assert got == [(i, v, 1000 + i) for i, v in enumerate(values)]
    finally:
        consumer.close()


def test_iter_records_follow_sees_new_data(client: Client) -> None:
    topic = fresh("follow")
    client.produce(topic, [(None, b"a"), (None, b"b")], partition=0)
    got = []
    for record in client.iter_records(topic, 0, 0, follow=True, max_wait_ms=100):
        got.append(record.value)
        if len(got) == 2:
            client.produce(topic, [(None, b"c")], partition=0)
        if len(got) == 3:
            break
    assert got == [b"a", b"b", b"c"]


def test_list_offsets_and_group_offsets_seen_by_confluent(
    client: Client, cluster: MockCluster, consumer_conf: Any
) -> None:
    topic = fresh("offsets")
    client.produce(topic, [(None, b"x")] * 3, partition=1)
    latest = client.list_offsets(topic)
    assert sorted(latest) == [0, 1, 2, 3] and latest[1].offset == 3
    assert client.list_offsets(topic, [1], timestamp=EARLIEST)[1].offset == 0
    conf = consumer_conf()
    group = conf["group.id"]
    tp = TopicPartition(topic, 1)
    client.commit_offsets(group, {tp: 2})
    assert client.fetch_offsets(group, [tp, TopicPartition(topic, 0)]) == {
        tp: 2,
        TopicPartition(topic, 0): -1,
    }
    consumer = confluent_kafka.Consumer(conf)
    try:
        (committed,) = consumer.committed(
            [confluent_kafka.TopicPartition(topic, 1)], timeout=10
        )
        assert committed.offset == 2
    finally:
        consumer.close()


def test_admin_calls_meet_the_mocks_missing_apis(client: Client) -> None:
    # librdkafka's mock answers no CreateTopics/DeleteTopics: the client says so
    # instead of sending something the broker cannot parse
    with pytest.raises(NotNegotiatedError, match="no common version"):
        client.create_topics([fresh("admin")], num_partitions=1, replication_factor=1)
    with pytest.raises(NotNegotiatedError):
        client.delete_topics([fresh("admin")])


def test_async_client_same_results(cluster: MockCluster) -> None:
    topic = fresh("async")

    async def main() -> tuple[list[Any], list[Any], dict[TopicPartition, int]]:
        async with AsyncClient(cluster.bootstrap, timeout_s=10.0) as client:
            out = await client.produce(
                topic, [(b"k%d" % i, b"v%d" % i) for i in range(6)]
            )
            got = []
            for p in sorted({r.partition for r in out}):
                got += [
                    (p, r.offset, r.key, r.value)
                    async for r in client.iter_records(topic, p, 0)
                ]
            tp = TopicPartition(topic, out[0].partition)
            await client.commit_offsets("async-group", {tp: 1})
            return out, got, await client.fetch_offsets("async-group", [tp])

    out, got, committed = asyncio.run(asyncio.wait_for(main(), 60))
    assert sorted(got) == sorted(
        (r.partition, r.offset, b"k%d" % i, b"v%d" % i) for i, r in enumerate(out)
    )
    with Client(cluster.bootstrap) as sync:  # same partitioner, same placement
        again = sync.produce(fresh("async"), [(b"k%d" % i, b"v") for i in range(6)])
    assert [r.partition for r in again] == [r.partition for r in out]
    assert list(committed.values()) == [1]


def _dead_port() -> int:
    with socket.socket() as s:  # bound, never listening: connections are refused
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_bootstrap_skips_a_dead_server(cluster: MockCluster) -> None:
    with Client(f"127.0.0.1:{_dead_port()},{cluster.bootstrap}") as client:
        out = client.produce(fresh("boot"), [(b"k", b"v")])
        assert out[0].offset == 0
    with Client(f"127.0.0.1:{_dead_port()}", timeout_s=5.0) as client:
        with pytest.raises(KafkaConnectionError, match="cannot connect"):
            client.list_offsets("any")
