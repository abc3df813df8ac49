"""kproto's serializers and confluent-kafka's reading each other's bytes through the
real registry of ``Cluster(schema_registry=True)`` (schemas stored, canonicalized and
checked by kproto's registry), for Avro, JSON Schema and Protobuf, both directions;
schema evolution under BACKWARD; SerializingProducer / DeserializingConsumer against
the same cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as CAD
from confluent_kafka.schema_registry.avro import AvroSerializer as CAS
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJD
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJS
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CPD
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CPS
from confluent_kafka.serialization import MessageField as CField
from confluent_kafka.serialization import SerializationContext as CContext

from kproto.broker import Cluster
from kproto.client import Client
from kproto.registry.client import Schema, SchemaRegistryClient
from kproto.registry.errors import RegistryError, RegistryErrorCode
from kproto.serde import (
    AvroDeserializer,
    AvroSerializer,
    JSONDeserializer,
    JSONSerializer,
    MessageField,
    ProtobufDeserializer,
    ProtobufSerializer,
    SerializationContext,
    ValueSerializationError,
)
from kproto.serde.protobuf import file_descriptor_proto
from tests.eventually import eventually

from .test_avro import TEN, TEN_VALUE, USER_V1, USER_V2
from .test_json_schema import TRADE, VALUE_1
from .test_protobuf import order


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1, schema_registry=True) as c:
        yield c


@pytest.fixture
def clients(cluster: Cluster) -> Iterator[tuple[SchemaRegistryClient, ConfluentClient]]:
    ours = SchemaRegistryClient.from_config(cluster.schema_registry_config())
    yield ours, ConfluentClient(cluster.schema_registry_config())
    ours.close()


def contexts(topic: str) -> tuple[SerializationContext, CContext]:
    return SerializationContext(topic, MessageField.VALUE), CContext(
        topic, CField.VALUE
    )


def test_avro_both_ways(clients: Any) -> None:
    ours, theirs = clients
    ctx, cctx = contexts("avro-both")
    text = json.dumps(TEN)
    mine = AvroSerializer(ours, text)(TEN_VALUE, ctx)
    other = CAS(theirs, text)(TEN_VALUE, cctx)
    assert mine == other  # same subject, same schema: the same id
    assert CAD(theirs)(mine, cctx) == TEN_VALUE
    assert AvroDeserializer(ours)(other, ctx) == TEN_VALUE


def test_avro_evolution_under_backward(clients: Any) -> None:
    ours, theirs = clients
    ctx, cctx = contexts("avro-evolve")
    old = CAS(theirs, json.dumps(USER_V1))({"id": 1, "name": "old"}, cctx)
    new = AvroSerializer(ours, json.dumps(USER_V2))(
        {"id": 2, "name": "new", "email": "e@x", "age": 30}, ctx
    )
    assert ours.get_versions("avro-evolve-value") == [1, 2]
    # old data read with the new schema, by kproto and by confluent-kafka
    expected = {"id": 1, "name": "old", "email": None, "age": -1}
    assert (
        AvroDeserializer(ours, conf={"use.latest.version": True})(old, ctx) == expected
    )
    assert CAD(theirs, json.dumps(USER_V2))(old, cctx) == expected
    assert CAD(theirs)(new, cctx)["email"] == "e@x"
    # a field without a default: the registry answers 409 and the serializer says so
    bad = {**USER_V2, "fields": [*USER_V2["fields"], {"name": "must", "type": "int"}]}
    with pytest.raises(ValueSerializationError, match="schema registry") as info:
        AvroSerializer(ours, json.dumps(bad))({"id": 3, "name": "x", "must": 1}, ctx)
    cause = info.value.__cause__
    assert isinstance(cause, RegistryError)
    assert cause.error_code == RegistryErrorCode.INCOMPATIBLE_SCHEMA
    verdict = ours.test_compatibility(
        "avro-evolve-value", Schema(json.dumps(bad)), verbose=True
    )
    assert not verdict.is_compatible and any("must" in m for m in verdict.messages)


def test_json_both_ways(clients: Any) -> None:
    ours, theirs = clients
    ctx, cctx = contexts("json-both")
    mine = JSONSerializer(TRADE, ours)(VALUE_1, ctx)
    other = CJS(TRADE, theirs)(VALUE_1, cctx)
    assert mine[5:] == other[5:]
    assert CJD(None, schema_registry_client=theirs)(mine, cctx) == VALUE_1
    assert JSONDeserializer(schema_registry_client=ours)(other, ctx) == VALUE_1


def test_protobuf_both_ways(clients: Any, orders_pb2: Any) -> None:
    ours, theirs = clients
    ctx, cctx = contexts("proto-both")
    msg = order(orders_pb2)
    mine = ProtobufSerializer(orders_pb2.Order, ours)(msg, ctx)
    other = CPS(orders_pb2.Order, theirs, {})(msg, cctx)
    assert mine == other
    assert CPD(orders_pb2.Order, {}, theirs)(mine, cctx) == msg
    fresh = SchemaRegistryClient(
        ours.urls[0]
    )  # nothing cached: the registry's own answer
    back = ProtobufDeserializer(schema_registry_client=fresh)(other, ctx)
    assert back.SerializeToString() == msg.SerializeToString()
    assert back.DESCRIPTOR.full_name == "kproto.test.Order"


def test_protobuf_text_from_the_registry_compiles(
    clients: Any, orders_pb2: Any
) -> None:
    ours, _ = clients
    ctx, _ = contexts("proto-text")
    data = ProtobufSerializer(orders_pb2.Order, ours)(order(orders_pb2), ctx)
    schema_id = int.from_bytes(data[1:5], "big")
    fresh = SchemaRegistryClient(ours.urls[0])
    text = fresh.get_schema(schema_id)  # the registry's canonical .proto text
    assert "message Order" in text.schema_str
    named = {
        r.name: fresh.get_version(r.subject, r.version).schema for r in text.references
    }
    proto = file_descriptor_proto("kproto_test_orders.proto", text, named)
    assert [m.name for m in proto.message_type] == ["Other", "Order"]


def test_serializing_producer_and_deserializing_consumer(
    cluster: Cluster, clients: Any
) -> None:
    ours, theirs = clients
    text = json.dumps(USER_V1)
    producer = ck.SerializingProducer(
        {
            **cluster.client_config(),
            "log_level": 2,
            "value.serializer": CAS(theirs, text),
        }
    )
    producer.produce("sp-users", value={"id": 1, "name": "from confluent"}, partition=0)
    assert producer.flush(30) == 0
    with Client(cluster.bootstrap_servers) as client:
        client.produce(
            "sp-users",
            [(None, {"id": 2, "name": "from kproto"})],
            partition=0,
            value_serializer=AvroSerializer(ours, text),
        )
        mine = [
            r.value
            for r in client.iter_records(
                "sp-users", 0, 0, value_deserializer=AvroDeserializer(ours)
            )
        ]
    consumer = ck.DeserializingConsumer(
        {
            **cluster.client_config(),
            "group.id": "sp",
            "log_level": 2,
            "value.deserializer": CAD(theirs),
        }
    )
    consumer.assign([ck.TopicPartition("sp-users", 0, 0)])
    got: list[Any] = []

    def read_both() -> bool:
        message = consumer.poll(0.2)
        if message is not None:
            got.append(message.value())
        return len(got) >= 2

    try:
        eventually(read_both, 30, message=lambda: f"read {got}")
    finally:
        consumer.close()
    expected = [{"id": 1, "name": "from confluent"}, {"id": 2, "name": "from kproto"}]
    assert mine == got == expected
