"""JSON Schema in Confluent's wire format: interop with confluent-kafka's
JSONSerializer / JSONDeserializer both ways, validation on both sides, references
through ``$ref``, subject names from ``title``, and every error path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJD
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto.registry.client import Schema, SchemaReference
from kproto.serde import (
    JSONDeserializer,
    JSONSerializer,
    MessageField,
    SerializationContext,
    ValueDeserializationError,
    ValueSerializationError,
)

from .conftest import C_VALUE, VALUE, Registry

TRADE = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Trade",
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "symbol": {"type": "string"},
            "price": {"type": "number"},
            "side": {"enum": ["BUY", "SELL"]},
            "note": {"type": ["string", "null"]},
        },
        "required": ["id", "symbol", "side"],
        "additionalProperties": False,
    }
)
VALUE_1 = {"id": 1, "symbol": "KPRO", "price": 9.5, "side": "BUY", "note": "ünïcode"}


def test_same_bytes_as_confluent(registry: Registry) -> None:
    ours = JSONSerializer(TRADE, registry.client)(VALUE_1, VALUE)
    theirs = CJS(TRADE, registry.confluent)(VALUE_1, C_VALUE)
    assert ours == theirs
    assert (
        ours[5:]
        == json.dumps(VALUE_1, separators=(",", ":"), ensure_ascii=False).encode()
    )


def test_both_ways(registry: Registry) -> None:
    ours = JSONSerializer(TRADE, registry.client)(VALUE_1, VALUE)
    assert (
        CJD(None, schema_registry_client=registry.confluent)(ours, C_VALUE) == VALUE_1
    )
    theirs = CJS(TRADE, registry.confluent)({**VALUE_1, "id": 2}, C_VALUE)
    assert (
        JSONDeserializer(schema_registry_client=registry.client)(theirs, VALUE)["id"]
        == 2
    )
    # with a schema of its own and no registry, as confluent-kafka allows
    assert JSONDeserializer(TRADE)(theirs, VALUE)["id"] == 2


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(JSON_VALUES.filter(lambda v: v is not None))
def test_any_json_value_roundtrips(registry: Registry, value: Any) -> None:
    data = JSONSerializer("{}", registry.client)(value, VALUE)
    assert (
        JSONDeserializer(schema_registry_client=registry.client)(data, VALUE) == value
    )
    assert CJD(None, schema_registry_client=registry.confluent)(data, C_VALUE) == value


def test_record_name_strategy_uses_the_title(registry: Registry) -> None:
    JSONSerializer(
        TRADE, registry.client, conf={"subject.name.strategy": "RecordNameStrategy"}
    )(VALUE_1, VALUE)
    assert list(registry.state.subjects) == ["Trade"]


def test_references(registry: Registry) -> None:
    money = {
        "type": "object",
        "properties": {"units": {"type": "integer"}},
        "required": ["units"],
    }
    registry.client.register_schema("money", Schema(json.dumps(money), "JSON"))
    order = {"type": "object", "properties": {"total": {"$ref": "money.json"}}}
    schema = Schema(
        json.dumps(order), "JSON", (SchemaReference("money.json", "money", 1),)
    )
    ser = JSONSerializer(schema, registry.client)
    data = ser({"total": {"units": 3}}, VALUE)
    assert JSONDeserializer(schema_registry_client=registry.client)(data, VALUE) == {
        "total": {"units": 3}
    }
    with pytest.raises(
        ValueSerializationError, match="'units' is a required property at /total"
    ):
        ser({"total": {}}, VALUE)


def test_invalid_values_are_refused_on_both_sides(registry: Registry) -> None:
    ser = JSONSerializer(TRADE, registry.client)
    with pytest.raises(ValueSerializationError, match="'HOLD' is not one of") as info:
        ser({**VALUE_1, "side": "HOLD"}, VALUE)
    assert info.value.schema_id == 1
    loose = JSONSerializer(TRADE, registry.client, conf={"validate": False})
    data = loose({**VALUE_1, "side": "HOLD"}, VALUE)
    ctx = SerializationContext("orders", MessageField.VALUE, [], 0, 12)
    with pytest.raises(ValueDeserializationError, match="at /side") as err:
        JSONDeserializer(schema_registry_client=registry.client)(data, ctx)
    assert (err.value.offset, err.value.schema_id) == (12, 1)
    off = JSONDeserializer(
        schema_registry_client=registry.client, conf={"validate": False}
    )
    assert off(data, ctx)["side"] == "HOLD"


@pytest.mark.parametrize(
    "payload, message",
    [
        (b"\xff\xfe", "cannot read the value"),
        (b'{"id": 1', "cannot read the value"),
        (b"", "cannot read the value"),
    ],
)
def test_bad_bytes(registry: Registry, payload: bytes, message: str) -> None:
    JSONSerializer(TRADE, registry.client)(VALUE_1, VALUE)
    with pytest.raises(ValueDeserializationError, match=message):
        JSONDeserializer(schema_registry_client=registry.client)(
            b"\x00\x00\x00\x00\x01" + payload, VALUE
        )


def test_unserializable_value(registry: Registry) -> None:
    with pytest.raises(ValueSerializationError, match="not serializable"):
        JSONSerializer("{}", registry.client)({"a": object()}, VALUE)


def test_invalid_schema_and_missing_source(registry: Registry) -> None:
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        JSONSerializer('{"type": 5}', registry.client)
    with pytest.raises(ValueError, match="schema_str or a schema_registry_client"):
        JSONDeserializer()


def test_deeply_nested_bytes_are_refused_not_crashed(registry: Registry) -> None:
    JSONSerializer("{}", registry.client)(1, VALUE)
    data = b"\x00\x00\x00\x00\x01" + b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(ValueDeserializationError, match="cannot read the value"):
        JSONDeserializer(schema_registry_client=registry.client)(data, VALUE)


def test_use_latest_version_validates_with_the_latest(registry: Registry) -> None:
    loose = JSONSerializer('{"type": "object"}', registry.client)
    data = loose({"a": 1}, VALUE)
    strict = '{"type": "object", "required": ["b"]}'
    registry.client.register_schema("orders-value", Schema(strict, "JSON"))
    assert JSONDeserializer(schema_registry_client=registry.client)(data, VALUE) == {
        "a": 1
    }
    latest = JSONDeserializer(
        schema_registry_client=registry.client, conf={"use.latest.version": True}
    )
    with pytest.raises(
        ValueDeserializationError, match="'b' is a required property"
    ) as info:
        latest(data, VALUE)
    assert info.value.schema_id == 1  # the record's own id is named


def test_confluent_contexts_work_too(registry: Registry) -> None:
    data = JSONSerializer(TRADE, registry.client)(VALUE_1, C_VALUE)
    assert (
        JSONDeserializer(schema_registry_client=registry.client)(data, C_VALUE)
        == VALUE_1
    )
    with pytest.raises(ValueDeserializationError, match="topic 'orders'"):
        JSONDeserializer(schema_registry_client=registry.client)(data[:6], C_VALUE)
