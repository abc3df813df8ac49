"""Serializers through a broker: kproto's Client with key/value serializers and
deserializers, and confluent-kafka's SerializingProducer / DeserializingConsumer
reading what kproto wrote and the other way round (Cluster on 127.0.0.1; the registry
is the HTTP double until Cluster(schema_registry=True) is on this branch)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.schema_registry import (
    header_schema_id_serializer as confluent_header_id,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer as CAD
from confluent_kafka.schema_registry.avro import AvroSerializer as CAS
from confluent_kafka.serialization import IntegerDeserializer as CIntD
from confluent_kafka.serialization import StringDeserializer as CStrD
from confluent_kafka.serialization import StringSerializer as CStrS

from kproto.broker import Cluster
from kproto.client import Client
from kproto.serde import (
    AvroDeserializer,
    AvroSerializer,
    IntegerDeserializer,
    IntegerSerializer,
    KeyDeserializationError,
    StringDeserializer,
    StringSerializer,
    ValueSerializationError,
)
from tests.eventually import eventually
from tests.fresh_interpreter import run_python

from .conftest import Registry

USER = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "example",
        "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
    }
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1) as c:
        yield c


def consume_all(
    cluster: Cluster, topic: str, n: int, **deserializers: Any
) -> list[Any]:
    consumer = ck.DeserializingConsumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"g-{topic}",
            "log_level": 2,
            **deserializers,
        }
    )
    consumer.assign([ck.TopicPartition(topic, 0, 0)])
    got: list[Any] = []

    def read_all() -> bool:
        message = consumer.poll(0.2)
        if message is not None:
            assert message.error() is None, message.error()
            got.append(message)
        return len(got) >= n

    try:
        eventually(read_all, 30, message=lambda: f"{len(got)} of {n} records read")
    finally:
        consumer.close()
    return got


def test_kproto_writes_confluent_reads(cluster: Cluster, registry: Registry) -> None:
    with Client(cluster.bootstrap_servers) as client:
        client.produce(
            "users",
            [(7, {"id": 1, "name": "ann"}), (8, {"id": 2, "name": "bob"})],
            partition=0,
            key_serializer=IntegerSerializer(),
            value_serializer=AvroSerializer(registry.client, USER),
        )
    got = consume_all(
        cluster,
        "users",
        2,
        **{"key.deserializer": CIntD(), "value.deserializer": CAD(registry.confluent)},
    )
    assert [(m.key(), m.value()) for m in got] == [
        (7, {"id": 1, "name": "ann"}),
        (8, {"id": 2, "name": "bob"}),
    ]


def test_confluent_writes_kproto_reads(cluster: Cluster, registry: Registry) -> None:
    producer = ck.SerializingProducer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "log_level": 2,
            "key.serializer": CStrS(),
            "value.serializer": CAS(
                registry.confluent,
                USER,
                conf={"schema.id.serializer": confluent_header_id},
            ),
        }
    )
    for i in range(3):
        producer.produce(
            "people",
            key=f"k{i}",
            value={"id": i, "name": f"n{i}"},
            partition=0,
            headers=[],
        )
    assert producer.flush(30) == 0
    with Client(cluster.bootstrap_servers) as client:
        records = list(
            client.iter_records(
                "people",
                0,
                0,
                key_deserializer=StringDeserializer(),
                value_deserializer=AvroDeserializer(registry.client),
            )
        )
    assert [(r.key, r.value) for r in records] == [
        (f"k{i}", {"id": i, "name": f"n{i}"}) for i in range(3)
    ]
    # the schema id travelled in a header (the GUID framing)
    assert all(h[0] == "__value_schema_id" for r in records for h in r.headers)


def test_strings_and_a_bad_key(cluster: Cluster) -> None:
    with Client(cluster.bootstrap_servers) as client:
        client.produce(
            "strs",
            [("ключ", "значение")],
            partition=0,
            key_serializer=StringSerializer(),
            value_serializer=StringSerializer(),
        )
        client.produce("strs", [(b"\x01", b"v")], partition=0)
        got = consume_all(
            cluster,
            "strs",
            2,
            **{"key.deserializer": CStrD(), "value.deserializer": CStrD()},
        )
        assert (got[0].key(), got[0].value()) == ("ключ", "значение")
        result = client.fetch("strs", 0, 0, value_deserializer=StringDeserializer())
        assert [r.value for r in result.records] == ["значение", "v"]
        with pytest.raises(KeyDeserializationError) as info:
            list(
                client.iter_records(
                    "strs", 0, 0, key_deserializer=IntegerDeserializer()
                )
            )
        err = info.value
        assert (err.topic, err.partition, err.offset) == ("strs", 0, 0)
        assert "IntegerDeserializer is not 4" in str(err)


def test_a_value_the_serializer_refuses_sends_nothing(cluster: Cluster) -> None:
    with Client(cluster.bootstrap_servers) as client:
        with pytest.raises(ValueSerializationError, match="topic 'ints'"):
            client.produce(
                "ints",
                [(None, 1), (None, "two")],
                partition=0,
                value_serializer=IntegerSerializer(),
            )
        client.produce(
            "ints", [(None, 3)], partition=0, value_serializer=IntegerSerializer()
        )
        values = [
            r.value
            for r in client.iter_records(
                "ints", 0, 0, value_deserializer=IntegerDeserializer()
            )
        ]
    assert values == [3]


def test_the_client_does_not_import_serde_unless_used() -> None:
    code = (
        "import sys, kproto.client; "
        "assert not [m for m in sys.modules if m.startswith('kproto.serde')]"
    )
    run_python(code)


def test_async_client_takes_them_too(cluster: Cluster) -> None:
    import asyncio

    from kproto.client import AsyncClient

    async def main() -> list[tuple[Any, Any]]:
        async with AsyncClient(cluster.bootstrap_servers) as client:
            await client.produce(
                "async-ints",
                [("k", 7)],
                partition=0,
                key_serializer=StringSerializer(),
                value_serializer=IntegerSerializer(),
            )
            return [
                (r.key, r.value)
                async for r in client.iter_records(
                    "async-ints",
                    0,
                    0,
                    key_deserializer=StringDeserializer(),
                    value_deserializer=IntegerDeserializer(),
                )
            ]

    assert asyncio.run(main()) == [("k", 7)]


def test_kproto_serializers_drop_into_confluents_producer_and_consumer(
    cluster: Cluster, registry: Registry
) -> None:
    producer = ck.SerializingProducer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "log_level": 2,
            "key.serializer": StringSerializer(),
            "value.serializer": AvroSerializer(registry.client, USER),
        }
    )
    producer.produce("dropin", key="k", value={"id": 5, "name": "five"}, partition=0)
    assert producer.flush(30) == 0
    got = consume_all(
        cluster,
        "dropin",
        1,
        **{
            "key.deserializer": StringDeserializer(),
            "value.deserializer": AvroDeserializer(registry.client),
        },
    )
    assert (got[0].key(), got[0].value()) == ("k", {"id": 5, "name": "five"})
