"""Kafka's primitive serializers: golden bytes from Kafka's documented encodings (and
confluent-kafka's own serializers where it has them), hypothesis roundtrips, and every
error path with Kafka's messages."""

from __future__ import annotations

import math
import struct
import uuid

import pytest
from confluent_kafka import serialization as ck
from hypothesis import given
from hypothesis import strategies as st

from kproto.serde import (
    BooleanDeserializer,
    BooleanSerializer,
    ByteArrayDeserializer,
    ByteArraySerializer,
    DoubleDeserializer,
    DoubleSerializer,
    FloatDeserializer,
    FloatSerializer,
    IntegerDeserializer,
    IntegerSerializer,
    KeyDeserializationError,
    LongDeserializer,
    LongSerializer,
    MessageField,
    SerializationContext,
    SerializationError,
    ShortDeserializer,
    ShortSerializer,
    StringDeserializer,
    StringSerializer,
    UUIDDeserializer,
    UUIDSerializer,
    ValueSerializationError,
    VoidDeserializer,
    VoidSerializer,
)
from tests.fresh_interpreter import run_python

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
INT16 = st.integers(-(2**15), 2**15 - 1)


# ------------------------------------------------------------------ golden bytes

GOLDEN = [
    (IntegerSerializer(), IntegerDeserializer(), 1, b"\x00\x00\x00\x01"),
    (IntegerSerializer(), IntegerDeserializer(), -1, b"\xff\xff\xff\xff"),
    (IntegerSerializer(), IntegerDeserializer(), 2**31 - 1, b"\x7f\xff\xff\xff"),
    (IntegerSerializer(), IntegerDeserializer(), -(2**31), b"\x80\x00\x00\x00"),
    (LongSerializer(), LongDeserializer(), 258, b"\x00\x00\x00\x00\x00\x00\x01\x02"),
    (LongSerializer(), LongDeserializer(), -2, b"\xff" * 7 + b"\xfe"),
    (ShortSerializer(), ShortDeserializer(), 513, b"\x02\x01"),
    (ShortSerializer(), ShortDeserializer(), -32768, b"\x80\x00"),
    (FloatSerializer(), FloatDeserializer(), 1.0, b"\x3f\x80\x00\x00"),
    (FloatSerializer(), FloatDeserializer(), -2.5, b"\xc0\x20\x00\x00"),
    (
        DoubleSerializer(),
        DoubleDeserializer(),
        1.0,
        b"\x3f\xf0\x00\x00\x00\x00\x00\x00",
    ),
    (DoubleSerializer(), DoubleDeserializer(), 0.1, bytes.fromhex("3fb999999999999a")),
    (BooleanSerializer(), BooleanDeserializer(), True, b"\x01"),
    (BooleanSerializer(), BooleanDeserializer(), False, b"\x00"),
    (StringSerializer(), StringDeserializer(), "héllo", b"h\xc3\xa9llo"),
    (
        StringSerializer("utf-16-be"),
        StringDeserializer("utf-16-be"),
        "hi",
        b"\x00h\x00i",
    ),
    (
        UUIDSerializer(),
        UUIDDeserializer(),
        uuid.UUID("123e4567-e89b-12d3-a456-426614174000"),
        b"123e4567-e89b-12d3-a456-426614174000",
    ),
    (ByteArraySerializer(), ByteArrayDeserializer(), b"\x00\xff", b"\x00\xff"),
]


@pytest.mark.parametrize("ser, de, value, wire", GOLDEN)
def test_golden_bytes(ser, de, value, wire) -> None:
    assert ser(value) == wire
    assert de(wire) == value


@pytest.mark.parametrize(
    "ser, de",
    [
        (IntegerSerializer(), IntegerDeserializer()),
        (LongSerializer(), LongDeserializer()),
        (ShortSerializer(), ShortDeserializer()),
        (FloatSerializer(), FloatDeserializer()),
        (DoubleSerializer(), DoubleDeserializer()),
        (BooleanSerializer(), BooleanDeserializer()),
        (StringSerializer(), StringDeserializer()),
        (UUIDSerializer(), UUIDDeserializer()),
        (ByteArraySerializer(), ByteArrayDeserializer()),
        (VoidSerializer(), VoidDeserializer()),
    ],
)
def test_none_is_none(ser, de) -> None:
    assert ser(None) is None
    assert de(None) is None


# ------------------------------------------------------------------ confluent-kafka's bytes


@given(INT32)
def test_integer_matches_confluent(n: int) -> None:
    assert IntegerSerializer()(n) == ck.IntegerSerializer()(n)
    assert IntegerDeserializer()(ck.IntegerSerializer()(n)) == n


@given(st.floats(allow_nan=False))
def test_double_matches_confluent(x: float) -> None:
    assert DoubleSerializer()(x) == ck.DoubleSerializer()(x)
    assert DoubleDeserializer()(ck.DoubleSerializer()(x)) == x


@given(st.text())
def test_string_matches_confluent(s: str) -> None:
    assert StringSerializer()(s) == ck.StringSerializer()(s)
    assert StringDeserializer()(ck.StringSerializer()(s)) == s


# ------------------------------------------------------------------ roundtrips


@given(INT32)
def test_integer_roundtrip(n: int) -> None:
    assert IntegerDeserializer()(IntegerSerializer()(n)) == n


@given(INT64)
def test_long_roundtrip(n: int) -> None:
    data = LongSerializer()(n)
    assert data == struct.pack(">q", n) and LongDeserializer()(data) == n


@given(INT16)
def test_short_roundtrip(n: int) -> None:
    assert ShortDeserializer()(ShortSerializer()(n)) == n


@given(st.floats(width=32))
def test_float_roundtrip(x: float) -> None:
    back = FloatDeserializer()(FloatSerializer()(x))
    assert (math.isnan(x) and math.isnan(back)) or back == x


@given(st.floats())
def test_double_roundtrip(x: float) -> None:
    back = DoubleDeserializer()(DoubleSerializer()(x))
    assert (math.isnan(x) and math.isnan(back)) or back == x


@given(st.uuids())
def test_uuid_roundtrip(u: uuid.UUID) -> None:
    data = UUIDSerializer()(u)
    assert len(data) == 36 and data == str(u).encode()
    assert UUIDDeserializer()(data) == u


@given(st.text(), st.sampled_from(["utf-8", "utf-16", "utf-32"]))
def test_string_roundtrip(s: str, encoding: str) -> None:
    s = s.encode("utf-8", "surrogatepass").decode("utf-8", "ignore")
    assert StringDeserializer(encoding)(StringSerializer(encoding)(s)) == s


@given(st.binary())
def test_bytes_roundtrip(b: bytes) -> None:
    assert ByteArrayDeserializer()(ByteArraySerializer()(bytearray(b))) == b


# ------------------------------------------------------------------ errors

SIZE_ERRORS = [
    (
        IntegerDeserializer(),
        b"\x00" * 3,
        "Size of data received by IntegerDeserializer is not 4",
    ),
    (
        IntegerDeserializer(),
        b"\x00" * 5,
        "Size of data received by IntegerDeserializer is not 4",
    ),
    (
        LongDeserializer(),
        b"\x00" * 4,
        "Size of data received by LongDeserializer is not 8",
    ),
    (
        ShortDeserializer(),
        b"\x00",
        "Size of data received by ShortDeserializer is not 2",
    ),
    (
        FloatDeserializer(),
        b"\x00" * 8,
        "Size of data received by Deserializer is not 4",
    ),
    (
        DoubleDeserializer(),
        b"\x00" * 4,
        "Size of data received by Deserializer is not 8",
    ),
    (
        BooleanDeserializer(),
        b"",
        "Size of data received by BooleanDeserializer is not 1",
    ),
    (
        BooleanDeserializer(),
        b"\x02",
        "Unexpected byte received by BooleanDeserializer: 2",
    ),
    (UUIDDeserializer(), b"not-a-uuid", "Error parsing data into UUID"),
    (
        UUIDDeserializer(),
        b"123e4567e89b12d3a456426614174000",
        "Error parsing data into UUID",
    ),
    (VoidDeserializer(), b"", "Data should be null for a VoidDeserializer."),
    (StringDeserializer(), b"\xff\xfe", "Error when deserializing byte[] to string"),
]


@pytest.mark.parametrize("de, data, message", SIZE_ERRORS)
def test_deserializer_errors(de, data, message) -> None:
    with pytest.raises(SerializationError) as info:
        de(data)
    assert info.value.reason.startswith(message)
    assert type(info.value) is SerializationError


SERIALIZE_ERRORS = [
    (IntegerSerializer(), 2**31, "does not fit in 4 bytes"),
    (IntegerSerializer(), "1", "int expected, got str"),
    (IntegerSerializer(), True, "int expected, got bool"),
    (LongSerializer(), 2**63, "does not fit in 8 bytes"),
    (ShortSerializer(), -(2**15) - 1, "does not fit in 2 bytes"),
    (FloatSerializer(), 1e300, "does not fit in 4 bytes"),
    (DoubleSerializer(), "x", "float expected, got str"),
    (BooleanSerializer(), 1, "bool expected, got int"),
    (StringSerializer(), b"x", "str expected, got bytes"),
    (
        StringSerializer("ascii"),
        "é",
        "Error when serializing string to byte[] in ascii",
    ),
    (
        UUIDSerializer(),
        "123e4567-e89b-12d3-a456-426614174000",
        "uuid.UUID expected, got str",
    ),
    (ByteArraySerializer(), "x", "bytes expected, got str"),
    (VoidSerializer(), b"", "None expected, got bytes"),
]


@pytest.mark.parametrize("ser, value, message", SERIALIZE_ERRORS)
def test_serializer_errors(ser, value, message) -> None:
    with pytest.raises(SerializationError) as info:
        ser(value)
    assert message in str(info.value)


def test_errors_name_the_record_with_a_context() -> None:
    ctx = SerializationContext("orders", MessageField.KEY, [], partition=3, offset=42)
    with pytest.raises(KeyDeserializationError) as info:
        IntegerDeserializer()(b"\x00", ctx)
    err = info.value
    assert (err.topic, err.partition, err.offset) == ("orders", 3, 42)
    assert str(err) == (
        "Size of data received by IntegerDeserializer is not 4 "
        "(topic 'orders', partition 3, offset 42)"
    )
    with pytest.raises(ValueSerializationError, match="topic 'orders'"):
        LongSerializer()("x", SerializationContext("orders", MessageField.VALUE))


def test_unknown_encoding_is_refused() -> None:
    with pytest.raises(LookupError):
        StringSerializer("no-such-codec")


def test_primitives_do_not_import_the_schema_libraries() -> None:
    code = (
        "import sys; from kproto.serde import IntegerSerializer; IntegerSerializer()(1); "
        "bad = [m for m in ('fastavro', 'google.protobuf', 'jsonschema', 'requests') "
        "if m in sys.modules]; assert not bad, bad"
    )
    run_python(code)
