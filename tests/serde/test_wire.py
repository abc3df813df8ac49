"""Confluent's wire format: golden framings (checked against confluent-kafka's own
``SchemaId``), the Protobuf message-index path, the header/GUID framing, and every
malformed framing."""

from __future__ import annotations

import io
import uuid

import pytest
from confluent_kafka.schema_registry.common.serde import SchemaId as ConfluentSchemaId
from hypothesis import given
from hypothesis import strategies as st

from kproto.serde import MessageField, SerializationContext, SerializationError
from kproto.serde.errors import ValueDeserializationError
from kproto.serde.wire import (
    SchemaId,
    decode_message_indexes,
    decode_schema_id,
    dual_schema_id_deserializer,
    encode_message_indexes,
    header_schema_id_serializer,
    prefix_schema_id_deserializer,
    prefix_schema_id_serializer,
)

GUID = uuid.UUID("0fc7cde8-64ec-4c4f-993e-505303fd1e73")


@pytest.mark.parametrize(
    "sid, wire",
    [
        (SchemaId(1), b"\x00\x00\x00\x00\x01"),
        (SchemaId(0x01020304), b"\x00\x01\x02\x03\x04"),
        (SchemaId(2**32 - 1), b"\x00\xff\xff\xff\xff"),
        (SchemaId(7, message_indexes=(0,)), b"\x00\x00\x00\x00\x07\x00"),
        (SchemaId(7, message_indexes=(1,)), b"\x00\x00\x00\x00\x07\x02\x02"),
        (SchemaId(7, message_indexes=(1, 0)), b"\x00\x00\x00\x00\x07\x04\x02\x00"),
        (
            SchemaId(7, message_indexes=(0, 2, 64)),
            b"\x00\x00\x00\x00\x07\x06\x00\x04\x80\x01",
        ),
    ],
)
def test_golden_prefix(sid: SchemaId, wire: bytes) -> None:
    assert sid.to_prefix() == wire
    back, end = decode_schema_id(wire, sid.message_indexes is not None)
    assert back == sid and end == len(wire)
    theirs = ConfluentSchemaId(
        "PROTOBUF" if sid.message_indexes else "AVRO",
        sid.schema_id,
        message_indexes=list(sid.message_indexes) if sid.message_indexes else None,
    )
    assert theirs.id_to_bytes() == wire


def test_golden_guid() -> None:
    sid = SchemaId(guid=GUID, message_indexes=(0,))
    wire = b"\x01" + GUID.bytes + b"\x00"
    assert sid.to_guid_bytes() == wire
    assert decode_schema_id(wire, True) == (sid, 18)
    theirs = ConfluentSchemaId("PROTOBUF", guid=str(GUID), message_indexes=[0])
    assert theirs.guid_to_bytes() == wire


@given(st.lists(st.integers(0, 2**31), min_size=1, max_size=20))
def test_message_indexes_roundtrip_and_match_confluent(indexes: list[int]) -> None:
    data = encode_message_indexes(indexes)
    back, end = decode_message_indexes(memoryview(data + b"rest"), 0)
    assert back == tuple(indexes) and end == len(data)
    buf = io.BytesIO()
    ConfluentSchemaId._encode_varints(buf, indexes, zigzag=True)
    assert buf.getvalue() == data


@given(st.integers(0, 2**32 - 1), st.binary(max_size=50))
def test_prefix_serializer_roundtrip(schema_id: int, payload: bytes) -> None:
    data = prefix_schema_id_serializer(payload, None, SchemaId(schema_id))
    sid, rest = prefix_schema_id_deserializer(data, None, False)
    assert sid.schema_id == schema_id and bytes(rest) == payload


def test_header_serializer_and_dual_deserializer() -> None:
    headers: list[tuple[str, bytes | None]] = []
    ctx = SerializationContext("t", MessageField.VALUE, headers)
    assert header_schema_id_serializer(b"payload", ctx, SchemaId(3, GUID)) == b"payload"
    assert headers == [("__value_schema_id", b"\x01" + GUID.bytes)]
    sid, rest = dual_schema_id_deserializer(b"payload", ctx, False)
    assert sid.guid == GUID and bytes(rest) == b"payload"
    key_ctx = SerializationContext("t", MessageField.KEY, headers)
    # the key has no header: the prefix is read
    sid, rest = dual_schema_id_deserializer(b"\x00\x00\x00\x00\x09k", key_ctx, False)
    assert sid.schema_id == 9 and bytes(rest) == b"k"


def test_header_serializer_needs_headers_and_a_guid() -> None:
    with pytest.raises(SerializationError, match="headers list"):
        header_schema_id_serializer(b"", None, SchemaId(1, GUID))
    ctx = SerializationContext("t", MessageField.VALUE, [])
    with pytest.raises(SerializationError, match="GUID is not set"):
        header_schema_id_serializer(b"", ctx, SchemaId(1))


BAD = [
    (b"", False, "no magic byte"),
    (b"\x02\x00\x00\x00\x01", False, "Unknown magic byte 2"),
    (b"\x00\x00\x00", False, "truncated schema id: 3 bytes"),
    (b"\x01" + b"\x00" * 10, False, "truncated schema GUID"),
    (b"\x00\x00\x00\x00\x01", True, "truncated varint"),
    (b"\x00\x00\x00\x00\x01\x80\x80", True, "truncated varint"),
    (b"\x00\x00\x00\x00\x01" + b"\xff" * 11, True, "longer than 10 bytes"),
    (b"\x00\x00\x00\x00\x01\x01", True, "invalid count -1"),
    (b"\x00\x00\x00\x00\x01\x14\x00", True, "invalid count 10"),
    (b"\x00\x00\x00\x00\x01\x02\x01", True, "negative index -1"),
]


@pytest.mark.parametrize("data, protobuf, message", BAD)
def test_bad_framing(data: bytes, protobuf: bool, message: str) -> None:
    ctx = SerializationContext("t", MessageField.VALUE, None, 2, 17)
    with pytest.raises(ValueDeserializationError) as info:
        dual_schema_id_deserializer(data, ctx, protobuf)
    assert message in str(info.value)
    assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 2, 17)


def test_bad_header_framing() -> None:
    ctx = SerializationContext(
        "t", MessageField.VALUE, [("__value_schema_id", b"\x01abc")]
    )
    with pytest.raises(ValueDeserializationError, match="header __value_schema_id"):
        dual_schema_id_deserializer(b"x", ctx, False)
    ctx.headers = [("__value_schema_id", b"\x00\x00\x00\x00\x01junk")]
    with pytest.raises(ValueDeserializationError, match="trailing bytes"):
        dual_schema_id_deserializer(b"x", ctx, False)


def test_encode_refuses_empty_or_negative_paths() -> None:
    with pytest.raises(ValueError):
        encode_message_indexes([])
    with pytest.raises(ValueError):
        encode_message_indexes([0, -1])
