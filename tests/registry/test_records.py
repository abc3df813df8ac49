"""The ``_schemas`` record shapes: Confluent's bytes, both ways."""

from __future__ import annotations

import pytest

from kproto.registry.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    ModeKey,
    ModeValue,
    NoopKey,
    RecordError,
    SchemaKey,
    SchemaValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kproto.registry.schemas import SchemaReference

# Golden keys as Confluent's KafkaStore writes them (Jackson, @JsonPropertyOrder,
# Include.NON_EMPTY: the global CONFIG/MODE key has no subject).
GOLDEN_KEYS = [
    (
        SchemaKey("orders-value", 3),
        b'{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}',
    ),
    (ConfigKey(None), b'{"keytype":"CONFIG","magic":0}'),
    (
        ConfigKey("orders-value"),
        b'{"keytype":"CONFIG","subject":"orders-value","magic":0}',
    ),
    (ModeKey(None), b'{"keytype":"MODE","magic":0}'),
    (ModeKey("orders-value"), b'{"keytype":"MODE","subject":"orders-value","magic":0}'),
    (
        DeleteSubjectKey("orders-value"),
        b'{"keytype":"DELETE_SUBJECT","subject":"orders-value","magic":0}',
    ),
    (
        ClearSubjectKey("orders-value"),
        b'{"keytype":"CLEAR_SUBJECT","subject":"orders-value","magic":0}',
    ),
    (NoopKey(), b'{"keytype":"NOOP","magic":0}'),
]


@pytest.mark.parametrize(("key", "data"), GOLDEN_KEYS)
def test_keys_golden(key: object, data: bytes) -> None:
    assert encode_key(key) == data  # type: ignore[arg-type]
    assert decode_key(data) == key


def test_key_field_order_and_spacing_do_not_matter_on_read() -> None:
    assert decode_key(
        b'{"magic": 1, "version": 2, "subject": "s", "keytype": "SCHEMA"}'
    ) == (SchemaKey("s", 2))
    # Karapace writes the global config's subject as null
    assert decode_key(b'{"keytype":"CONFIG","subject":null,"magic":0}') == ConfigKey(
        None
    )
    # keytypes this registry does not keep are skipped, not errors
    assert (
        decode_key(b'{"keytype":"CONTEXT","tenant":"t","context":".","magic":0}')
        is None
    )


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[1]",
        b'{"magic":0}',
        b'{"keytype":"SCHEMA","subject":"s","magic":1}',
        b'{"keytype":"SCHEMA","subject":"s","version":true,"magic":1}',
        b'{"keytype":"DELETE_SUBJECT","magic":0}',
    ],
)
def test_bad_keys(data: bytes) -> None:
    with pytest.raises(RecordError):
        decode_key(data)


def test_schema_value_golden() -> None:
    data = (
        b'{"subject":"orders-value","version":2,"id":7,"schemaType":"PROTOBUF",'
        b'"references":[{"name":"common.proto","subject":"common","version":1}],'
        b'"schema":"syntax = \\"proto3\\";","deleted":false}'
    )
    value = SchemaValue(
        "orders-value",
        2,
        7,
        'syntax = "proto3";',
        "PROTOBUF",
        (SchemaReference("common.proto", "common", 1),),
    )
    assert encode_value(value) == data
    assert decode_value(SchemaKey("orders-value", 2), data) == value


def test_confluent_avro_value_without_schema_type() -> None:
    # Confluent leaves schemaType out for AVRO and newer versions add fields (md5,
    # metadata, ruleSet) that this registry ignores
    data = (
        b'{"subject":"a","version":1,"id":1,"md5":"xyz","schema":"\\"string\\"",'
        b'"deleted":true}'
    )
    value = decode_value(SchemaKey("a", 1), data)
    assert value == SchemaValue("a", 1, 1, '"string"', "AVRO", (), deleted=True)


@pytest.mark.parametrize(
    ("key", "value", "data"),
    [
        (ConfigKey(None), ConfigValue(None, "FULL"), b'{"compatibilityLevel":"FULL"}'),
        (
            ConfigKey("s"),
            ConfigValue("s", "NONE"),
            b'{"subject":"s","compatibilityLevel":"NONE"}',
        ),
        (ModeKey("s"), ModeValue("s", "IMPORT"), b'{"subject":"s","mode":"IMPORT"}'),
        (
            DeleteSubjectKey("s"),
            DeleteSubjectValue("s", 4),
            b'{"subject":"s","version":4}',
        ),
        (ClearSubjectKey("s"), ClearSubjectValue("s"), b'{"subject":"s"}'),
    ],
)
def test_other_values_golden(key: object, value: object, data: bytes) -> None:
    assert encode_value(value) == data  # type: ignore[arg-type]
    assert decode_value(key, data) == value  # type: ignore[arg-type]


def test_bad_values() -> None:
    with pytest.raises(RecordError, match="'id'"):
        decode_value(SchemaKey("s", 1), b'{"subject":"s","version":1,"schema":"x"}')
    with pytest.raises(RecordError, match="references"):
        decode_value(
            SchemaKey("s", 1),
            b'{"subject":"s","version":1,"id":1,"schema":"x","references":{}}',
        )
    with pytest.raises(RecordError, match="compatibilityLevel"):
        decode_value(ConfigKey(None), b"{}")


def test_unknown_levels_and_modes_are_refused() -> None:
    with pytest.raises(RecordError, match="SIDEWAYS"):
        decode_value(ConfigKey(None), b'{"compatibilityLevel":"SIDEWAYS"}')
    with pytest.raises(RecordError, match="LOCKED"):
        decode_value(ModeKey(None), b'{"mode":"LOCKED"}')
    # Confluent's names in any case
    assert decode_value(
        ConfigKey(None), b'{"compatibilityLevel":"full"}'
    ) == ConfigValue(None, "FULL")
