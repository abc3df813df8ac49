"""Protobuf in Confluent's wire format, over a .proto compiled in the test with
grpc_tools.protoc: interop with confluent-kafka's ProtobufSerializer /
ProtobufDeserializer both ways, the message-index path (top-level and nested types),
imports registered as references, classes built from the registry's serialized
descriptor, and every error path."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from confluent_kafka.schema_registry import record_subject_name_strategy
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CPD
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CPS
from google.protobuf import descriptor_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto.serde import (
    MessageField,
    ProtobufDeserializer,
    ProtobufSerializer,
    SerializationContext,
    ValueDeserializationError,
    ValueSerializationError,
)
from kproto.serde.protobuf import message_indexes

from .conftest import C_VALUE, VALUE, Registry


def order(pb: Any, id: int = 5, name: str = "widgets") -> Any:
    msg = pb.Order(id=id, name=name, lines=[pb.Order.Line(sku="a-1", qty=2)])
    msg.at.seconds = 1_700_000_000
    msg.total.currency, msg.total.units = "EUR", 42
    return msg


def test_message_indexes(orders_pb2: Any) -> None:
    assert message_indexes(orders_pb2.Other.DESCRIPTOR) == (0,)
    assert message_indexes(orders_pb2.Order.DESCRIPTOR) == (1,)
    assert message_indexes(orders_pb2.Order.Line.DESCRIPTOR) == (1, 0)


def test_kproto_and_confluent_write_the_same_bytes(
    registry: Registry, orders_pb2: Any
) -> None:
    msg = order(orders_pb2)
    ours = ProtobufSerializer(orders_pb2.Order, registry.client)(msg, VALUE)
    theirs = CPS(orders_pb2.Order, registry.confluent, {})(msg, C_VALUE)
    assert ours == theirs
    # magic 0, id 2 (the import is id 1), message indexes [1], then the message
    assert ours[:7] == b"\x00\x00\x00\x00\x02\x02\x02"
    assert ours[7:] == msg.SerializeToString()


def test_imports_are_references(registry: Registry, orders_pb2: Any) -> None:
    ProtobufSerializer(orders_pb2.Order, registry.client)(order(orders_pb2), VALUE)
    assert set(registry.state.subjects) == {"kproto_test_common.proto", "orders-value"}
    main = registry.state.schemas[1]
    assert main["schemaType"] == "PROTOBUF"
    # the well-known timestamp.proto is skipped (skip.known.types)
    assert main["references"] == [
        {
            "name": "kproto_test_common.proto",
            "subject": "kproto_test_common.proto",
            "version": 1,
        }
    ]
    fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(main["schema"]))
    assert fd.name == "kproto_test_orders.proto"


def test_confluent_reads_kproto(registry: Registry, orders_pb2: Any) -> None:
    msg = order(orders_pb2)
    data = ProtobufSerializer(orders_pb2.Order, registry.client)(msg, VALUE)
    assert CPD(orders_pb2.Order, {}, registry.confluent)(data, C_VALUE) == msg


@pytest.mark.parametrize("with_class", [True, False])
def test_kproto_reads_confluent(
    registry: Registry, orders_pb2: Any, with_class: bool
) -> None:
    msg = order(orders_pb2)
    data = CPS(orders_pb2.Order, registry.confluent, {})(msg, C_VALUE)
    de = ProtobufDeserializer(
        orders_pb2.Order if with_class else None, None, registry.client
    )
    back = de(data, VALUE)
    assert back.SerializeToString() == msg.SerializeToString()
    assert back.DESCRIPTOR.full_name == "kproto.test.Order"
    assert back.total.currency == "EUR" and back.lines[0].qty == 2


def test_nested_message_index_path(registry: Registry, orders_pb2: Any) -> None:
    line = orders_pb2.Order.Line(sku="n", qty=9)
    conf = {"subject.name.strategy": record_subject_name_strategy}
    theirs = CPS(orders_pb2.Order.Line, registry.confluent, conf)(line, C_VALUE)
    ours = ProtobufSerializer(
        orders_pb2.Order.Line,
        registry.client,
        {"subject.name.strategy": "RecordNameStrategy"},
    )(line, VALUE)
    assert ours == theirs and ours[5:8] == b"\x04\x02\x00"
    assert "kproto.test.Order.Line" in registry.state.subjects
    back = ProtobufDeserializer(schema_registry_client=registry.client)(theirs, VALUE)
    assert back.DESCRIPTOR.full_name == "kproto.test.Order.Line" and back.qty == 9


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.integers(-(2**63), 2**63 - 1), st.text(max_size=30))
def test_roundtrip(registry: Registry, orders_pb2: Any, id: int, name: str) -> None:
    msg = order(orders_pb2, id, name)
    data = ProtobufSerializer(orders_pb2.Order, registry.client)(msg, VALUE)
    assert (
        ProtobufDeserializer(orders_pb2.Order, None, registry.client)(data, VALUE)
        == msg
    )
    assert CPD(orders_pb2.Order, {}, registry.confluent)(data, C_VALUE) == msg


def test_wrong_message_type(registry: Registry, orders_pb2: Any) -> None:
    ser = ProtobufSerializer(orders_pb2.Order, registry.client)
    with pytest.raises(ValueSerializationError, match="Order expected, got Other"):
        ser(orders_pb2.Other(x=1), VALUE)


@pytest.fixture
def written(registry: Registry, orders_pb2: Any) -> bytes:
    data = ProtobufSerializer(orders_pb2.Order, registry.client)(
        order(orders_pb2), VALUE
    )
    assert data is not None
    return data


@pytest.mark.parametrize(
    "mangle, message",
    [
        (lambda d: d[:7] + b"\x0a\xff", "cannot read a kproto.test.Order"),
        (lambda d: d[:5] + b"\x02\x0a" + d[7:], "name no message"),
        (lambda d: d[:5] + b"\x06", "invalid count 3"),
        (lambda d: d[:5], "truncated varint"),
        (lambda d: b"\x00\x00\x00\x00\x63\x00", "writer schema"),
    ],
)
def test_bad_bytes(
    registry: Registry, written: bytes, mangle: Any, message: str
) -> None:
    ctx = SerializationContext("orders", MessageField.VALUE, [], partition=1, offset=3)
    with pytest.raises(ValueDeserializationError) as info:
        ProtobufDeserializer(schema_registry_client=registry.client)(
            mangle(written), ctx
        )
    assert message in str(info.value)
    assert (info.value.topic, info.value.partition, info.value.offset) == (
        "orders",
        1,
        3,
    )


def test_unknown_schema_id_with_a_message_class(
    registry: Registry, orders_pb2: Any
) -> None:
    with pytest.raises(ValueDeserializationError, match="schema id 99"):
        ProtobufDeserializer(orders_pb2.Order, None, registry.client)(
            b"\x00\x00\x00\x00\x63\x00", VALUE
        )


def test_needs_a_class_or_a_registry() -> None:
    with pytest.raises(ValueError, match="message_type or a schema_registry_client"):
        ProtobufDeserializer()
