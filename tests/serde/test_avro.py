"""Avro in Confluent's wire format: hypothesis roundtrips of values of generated
schemas (read back by kproto and by confluent-kafka), golden bytes, interop with
confluent-kafka's AvroSerializer/AvroDeserializer both ways (prefix and header
framing), schema resolution, the serializer config, subject name strategies,
references and every error path."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import (
    header_schema_id_serializer as confluent_header_id,
)
from confluent_kafka.schema_registry import record_subject_name_strategy
from confluent_kafka.schema_registry.avro import (
    AvroDeserializer as ConfluentAvroDeserializer,
)
from confluent_kafka.schema_registry.avro import (
    AvroSerializer as ConfluentAvroSerializer,
)
from confluent_kafka.serialization import MessageField as CField
from confluent_kafka.serialization import SerializationContext as CContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto.registry.client import Schema, SchemaReference
from kproto.registry.errors import RegistryError, RegistryErrorCode
from kproto.serde import (
    AvroDeserializer,
    AvroSerializer,
    MessageField,
    SerializationContext,
    SerializationError,
    ValueDeserializationError,
    ValueSerializationError,
)
from kproto.serde.wire import header_schema_id_serializer

from .conftest import C_VALUE, VALUE, Registry

USER_V1 = {
    "type": "record",
    "name": "User",
    "namespace": "example",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}
USER_V2 = {
    **USER_V1,
    "fields": [
        *USER_V1["fields"],
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "age", "type": "int", "default": -1},
    ],
}

TEN = {
    "type": "record",
    "name": "Trade",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "symbol", "type": "string"},
        {"name": "price", "type": "double"},
        {
            "name": "side",
            "type": {"type": "enum", "name": "Side", "symbols": ["BUY", "SELL"]},
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "quantity", "type": "int"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "active", "type": "boolean"},
        {"name": "venue", "type": "string"},
        {"name": "fee", "type": "float"},
    ],
}
TEN_VALUE = {
    "id": 1234567890123,
    "symbol": "KPRO",
    "price": 101.25,
    "side": "SELL",
    "at": dt.datetime(2026, 11, 28, 12, 0, 0, 123000, tzinfo=dt.UTC),
    "quantity": 300,
    "note": None,
    "active": True,
    "venue": "XNAS",
    "fee": 0.5,
}


# ------------------------------------------------------------------ generated schemas

PRIMITIVES: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False),
    "double": st.floats(allow_nan=False),
    "bytes": st.binary(max_size=20),
    "string": st.text(max_size=20),
}


@st.composite
def avro_type(draw: st.DrawFn, names: list[str], depth: int = 0) -> tuple[Any, Any]:
    """(schema, a value strategy) for a random Avro type."""
    kinds = ["primitive", "enum", "fixed", "union"]
    if depth < 3:
        kinds += ["record", "array", "map"]
    kind = draw(st.sampled_from(kinds))
    if kind == "primitive":
        name = draw(st.sampled_from(sorted(PRIMITIVES)))
        return name, PRIMITIVES[name]
    if kind == "enum":
        names.append(f"E{len(names)}")
        symbols = draw(
            st.lists(
                st.from_regex(r"[A-Z][A-Z0-9_]{0,5}", fullmatch=True),
                min_size=1,
                max_size=4,
                unique=True,
            )
        )
        return {"type": "enum", "name": names[-1], "symbols": symbols}, st.sampled_from(
            symbols
        )
    if kind == "fixed":
        names.append(f"F{len(names)}")
        size = draw(st.integers(0, 8))
        return {"type": "fixed", "name": names[-1], "size": size}, st.binary(
            min_size=size, max_size=size
        )
    if kind == "union":
        members = draw(
            st.lists(
                st.sampled_from(sorted(PRIMITIVES)), min_size=1, max_size=4, unique=True
            )
        )
        if "float" in members and "double" in members:
            members.remove("float")  # a double would be written as the float branch
        return members, st.one_of([PRIMITIVES[m] for m in members])
    if kind == "array":
        items, values = draw(avro_type(names, depth + 1))
        return {"type": "array", "items": items}, st.lists(values, max_size=3)
    if kind == "map":
        items, values = draw(avro_type(names, depth + 1))
        return {"type": "map", "values": items}, st.dictionaries(
            st.text(max_size=5), values, max_size=3
        )
    names.append(f"R{len(names)}")
    record_name = names[-1]
    count = draw(st.integers(0, 4))
    fields, strategies = [], {}
    for i in range(count):
        schema, values = draw(avro_type(names, depth + 1))
        fields.append({"name": f"f{i}", "type": schema})
        strategies[f"f{i}"] = values
    return {
        "type": "record",
        "name": record_name,
        "fields": fields,
    }, st.fixed_dictionaries(strategies)


@st.composite
def schema_and_value(draw: st.DrawFn) -> tuple[Any, Any]:
    schema, values = draw(avro_type([]))
    return schema, draw(values)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(schema_and_value())
def test_generated_schemas_roundtrip_both_ways_with_confluent(
    registry: Registry, case: tuple[Any, Any]
) -> None:
    schema, value = case
    text = json.dumps(schema)
    data = AvroSerializer(registry.client, text)(value, VALUE)
    if value is None:  # None serializes to None (a null key or tombstone)
        assert data is None
        return
    assert data is not None and data[0] == 0
    assert AvroDeserializer(registry.client)(data, VALUE) == value
    if len(data) > 5:  # confluent-kafka refuses an empty Avro payload (null, {} ...)
        assert ConfluentAvroDeserializer(registry.confluent)(data, C_VALUE) == value
    theirs = ConfluentAvroSerializer(registry.confluent, text)(value, C_VALUE)
    assert theirs[5:] == data[5:]
    assert AvroDeserializer(registry.client)(theirs, VALUE) == value


# ------------------------------------------------------------------ golden bytes


def test_top_level_bytes_are_raw_as_confluent_writes_them(registry: Registry) -> None:
    ours = AvroSerializer(registry.client, '"bytes"')(b"\x01\x02", VALUE)
    theirs = ConfluentAvroSerializer(registry.confluent, '"bytes"')(
        b"\x01\x02", C_VALUE
    )
    assert ours == b"\x00\x00\x00\x00\x01\x01\x02" and theirs[5:] == b"\x01\x02"
    assert AvroDeserializer(registry.client)(theirs, VALUE) == b"\x01\x02"


def test_golden_bytes(registry: Registry) -> None:
    data = AvroSerializer(registry.client, json.dumps(USER_V1))(
        {"id": -2, "name": "ab"}, VALUE
    )
    # magic 0, schema id 1, zigzag long -2 = 3, string length 2 (zigzag 4), "ab"
    assert data == b"\x00\x00\x00\x00\x01" + b"\x03" + b"\x04ab"


# ------------------------------------------------------------------ interop


def test_confluent_reads_kproto_and_kproto_reads_confluent(registry: Registry) -> None:
    text = json.dumps(TEN)
    ours = AvroSerializer(registry.client, text)(TEN_VALUE, VALUE)
    theirs = ConfluentAvroSerializer(registry.confluent, text)(TEN_VALUE, C_VALUE)
    assert ours == theirs
    assert ConfluentAvroDeserializer(registry.confluent)(ours, C_VALUE) == TEN_VALUE
    assert AvroDeserializer(registry.client)(theirs, VALUE) == TEN_VALUE


def test_header_framing_both_ways(registry: Registry) -> None:
    text = json.dumps(USER_V1)
    # (confluent-kafka refuses payloads under 6 bytes even with the id in a header)
    value = {"id": 1, "name": "a longer name"}
    headers: list[tuple[str, bytes | None]] = []
    theirs = ConfluentAvroSerializer(
        registry.confluent, text, conf={"schema.id.serializer": confluent_header_id}
    )(value, CContext("orders", CField.VALUE, headers))
    assert theirs[:1] != b"\x00" and headers[0][0] == "__value_schema_id"
    ctx = SerializationContext("orders", MessageField.VALUE, list(headers))
    assert AvroDeserializer(registry.client)(theirs, ctx) == value

    ours_headers: list[tuple[str, bytes | None]] = []
    ours = AvroSerializer(
        registry.client,
        text,
        conf={"schema.id.serializer": header_schema_id_serializer},
    )(value, SerializationContext("orders", MessageField.VALUE, ours_headers))
    assert ours == theirs and ours_headers == headers
    back = ConfluentAvroDeserializer(registry.confluent)(
        ours, CContext("orders", CField.VALUE, ours_headers)
    )
    assert back == value


# ------------------------------------------------------------------ schema resolution


def test_old_records_read_into_the_new_shape(registry: Registry) -> None:
    old = AvroSerializer(registry.client, json.dumps(USER_V1))(
        {"id": 7, "name": "n"}, VALUE
    )
    expected = {"id": 7, "name": "n", "email": None, "age": -1}
    assert (
        AvroDeserializer(registry.client, json.dumps(USER_V2))(old, VALUE) == expected
    )
    # with use.latest.version the reader schema is the subject's latest version
    AvroSerializer(registry.client, json.dumps(USER_V2))({**expected, "age": 3}, VALUE)
    latest = AvroDeserializer(registry.client, conf={"use.latest.version": True})
    assert latest(old, VALUE) == expected
    assert AvroDeserializer(registry.client)(old, VALUE) == {"id": 7, "name": "n"}


def test_unresolvable_reader_schema(registry: Registry) -> None:
    old = AvroSerializer(registry.client, json.dumps(USER_V1))(
        {"id": 7, "name": "n"}, VALUE
    )
    reader = {
        **USER_V1,
        "fields": [*USER_V1["fields"], {"name": "must", "type": "int"}],
    }
    with pytest.raises(ValueDeserializationError, match="must") as info:
        AvroDeserializer(registry.client, json.dumps(reader))(old, VALUE)
    assert info.value.schema_id == 1


# ------------------------------------------------------------------ config


def test_auto_register_off_looks_up(registry: Registry) -> None:
    ser = AvroSerializer(
        registry.client, json.dumps(USER_V1), conf={"auto.register.schemas": False}
    )
    with pytest.raises(ValueSerializationError) as info:
        ser({"id": 1, "name": "x"}, VALUE)
    cause = info.value.__cause__
    assert (
        isinstance(cause, RegistryError)
        and cause.error_code == RegistryErrorCode.SUBJECT_NOT_FOUND
    )
    registry.client.register_schema("orders-value", Schema(json.dumps(USER_V1)))
    assert ser({"id": 1, "name": "x"}, VALUE)[:5] == b"\x00\x00\x00\x00\x01"
    assert (
        registry.state.requests.count(("POST", "/subjects/orders-value/versions")) == 1
    )


def test_use_latest_version_writes_with_the_latest(registry: Registry) -> None:
    registry.client.register_schema("orders-value", Schema(json.dumps(USER_V1)))
    registry.client.register_schema("orders-value", Schema(json.dumps(USER_V2)))
    ser = AvroSerializer(
        registry.client,
        json.dumps(USER_V1),
        conf={"auto.register.schemas": False, "use.latest.version": True},
    )
    data = ser({"id": 1, "name": "x", "email": "e", "age": 2}, VALUE)
    assert data[:5] == b"\x00\x00\x00\x00\x02"
    assert AvroDeserializer(registry.client)(data, VALUE)["email"] == "e"


def test_use_schema_id(registry: Registry) -> None:
    registry.client.register_schema("elsewhere", Schema(json.dumps(USER_V1)))
    ser = AvroSerializer(
        registry.client,
        json.dumps(USER_V1),
        conf={"use.schema.id": 1, "auto.register.schemas": False},
    )
    assert ser({"id": 1, "name": "x"}, VALUE)[:5] == b"\x00\x00\x00\x00\x01"
    assert "orders-value" not in registry.state.subjects


def test_normalize_is_sent(registry: Registry) -> None:
    AvroSerializer(
        registry.client, json.dumps(USER_V1), conf={"normalize.schemas": True}
    )({"id": 1, "name": "x"}, VALUE)
    assert registry.state.subjects["orders-value"]


def test_config_is_checked(registry: Registry) -> None:
    with pytest.raises(ValueError, match="unknown serializer config: auto.register"):
        AvroSerializer(
            registry.client, json.dumps(USER_V1), conf={"auto.register": True}
        )
    with pytest.raises(
        ValueError, match="both use.latest.version and auto.register.schemas"
    ):
        AvroSerializer(
            registry.client, json.dumps(USER_V1), conf={"use.latest.version": True}
        )
    with pytest.raises(ValueError, match="unknown subject.name.strategy"):
        AvroSerializer(
            registry.client, json.dumps(USER_V1), conf={"subject.name.strategy": "Nope"}
        )
    with pytest.raises(ValueError, match="invalid Avro schema"):
        AvroSerializer(
            registry.client,
            '{"type":"record","name":"X","fields":[{"name":"a","type":"nope"}]}',
        )


@pytest.mark.parametrize(
    "strategy, subject",
    [
        ("TopicNameStrategy", "orders-value"),
        ("RecordNameStrategy", "example.User"),
        (
            "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
            "orders-example.User",
        ),
    ],
)
def test_subject_name_strategies(
    registry: Registry, strategy: str, subject: str
) -> None:
    ser = AvroSerializer(
        registry.client, json.dumps(USER_V1), conf={"subject.name.strategy": strategy}
    )
    ser({"id": 1, "name": "x"}, VALUE)
    assert list(registry.state.subjects) == [subject]


def test_record_name_strategy_matches_confluent(registry: Registry) -> None:
    ConfluentAvroSerializer(
        registry.confluent,
        json.dumps(USER_V1),
        conf={"subject.name.strategy": record_subject_name_strategy},
    )({"id": 1, "name": "x"}, C_VALUE)
    AvroSerializer(
        registry.client,
        json.dumps(USER_V1),
        conf={"subject.name.strategy": "RecordNameStrategy"},
    )({"id": 1, "name": "x"}, VALUE)
    assert list(registry.state.subjects) == ["example.User"]
    assert [e.version for e in registry.state.subjects["example.User"]] == [1]


def test_record_name_strategy_needs_a_record(registry: Registry) -> None:
    ser = AvroSerializer(
        registry.client,
        '"string"',
        conf={"subject.name.strategy": "RecordNameStrategy"},
    )
    with pytest.raises(ValueSerializationError, match="needs a named record"):
        ser("x", VALUE)
    with pytest.raises(SerializationError, match="needs a SerializationContext"):
        AvroSerializer(registry.client, '"string"')("x")


# ------------------------------------------------------------------ references


def test_references(registry: Registry) -> None:
    address = {
        "type": "record",
        "name": "Address",
        "namespace": "example",
        "fields": [{"name": "city", "type": "string"}],
    }
    registry.client.register_schema("address", Schema(json.dumps(address)))
    person = {
        "type": "record",
        "name": "Person",
        "namespace": "example",
        "fields": [{"name": "home", "type": "example.Address"}],
    }
    schema = Schema(
        json.dumps(person), "AVRO", (SchemaReference("example.Address", "address", 1),)
    )
    value = {"home": {"city": "Oslo"}}
    data = AvroSerializer(registry.client, schema)(value, VALUE)
    assert registry.state.schemas[1]["references"] == [
        {"name": "example.Address", "subject": "address", "version": 1}
    ]
    assert AvroDeserializer(registry.client)(data, VALUE) == value
    assert ConfluentAvroDeserializer(registry.confluent)(data, C_VALUE) == value


# ------------------------------------------------------------------ errors


@pytest.fixture
def written(registry: Registry) -> bytes:
    data = AvroSerializer(registry.client, json.dumps(USER_V1))(
        {"id": 1, "name": "abc"}, VALUE
    )
    assert data is not None
    return data


@pytest.mark.parametrize(
    "mangle, message",
    [
        (lambda d: d[:-1], "cannot read the value"),
        (lambda d: d + b"\x00", "1 bytes left after the value"),
        (lambda d: b"\x05" + d[1:], "Unknown magic byte 5"),
        (lambda d: d[:3], "truncated schema id"),
        (lambda d: b"", "no magic byte"),
        (lambda d: b"\x00\x00\x00\x00\x63" + d[5:], "writer schema"),
    ],
)
def test_bad_bytes(
    registry: Registry, written: bytes, mangle: Any, message: str
) -> None:
    ctx = SerializationContext("orders", MessageField.VALUE, [], partition=0, offset=9)
    with pytest.raises(ValueDeserializationError) as info:
        AvroDeserializer(registry.client)(mangle(written), ctx)
    err = info.value
    assert message in str(err)
    assert (err.topic, err.partition, err.offset) == ("orders", 0, 9)
    if message == "writer schema":
        assert err.schema_id == 99 and "schema id 99" in str(err)
        assert isinstance(err.__cause__, RegistryError)
        assert err.__cause__.error_code == RegistryErrorCode.SCHEMA_NOT_FOUND


def test_value_that_does_not_fit(registry: Registry) -> None:
    ser = AvroSerializer(registry.client, json.dumps(USER_V1))
    with pytest.raises(
        ValueSerializationError, match="does not fit the schema"
    ) as info:
        ser({"id": "one", "name": "x"}, VALUE)
    assert info.value.schema_id == 1 and info.value.topic == "orders"


def test_none_passes_through(registry: Registry) -> None:
    assert AvroSerializer(registry.client, json.dumps(USER_V1))(None, VALUE) is None
    assert AvroDeserializer(registry.client)(None, VALUE) is None


def test_to_dict_and_from_dict(registry: Registry) -> None:
    class User:
        def __init__(self, id: int, name: str) -> None:
            self.id, self.name = id, name

    ser = AvroSerializer(
        registry.client, json.dumps(USER_V1), to_dict=lambda u, ctx: vars(u)
    )
    de = AvroDeserializer(registry.client, from_dict=lambda d, ctx: User(**d))
    back = de(ser(User(3, "z"), VALUE), VALUE)
    assert isinstance(back, User) and (back.id, back.name) == (3, "z")
