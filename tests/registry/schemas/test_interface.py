"""The shared interface of kproto.registry.schemas, for all three formats."""

from __future__ import annotations

import pytest

from kproto.registry.schemas import (
    CompatibilityLevel,
    InvalidSchemaError,
    ParsedSchema,
    SchemaReference,
    SchemaType,
    check_compatibility,
    parse_schema,
)

AVRO = '{"type": "record", "name": "User", "namespace": "com.acme", "fields": [{"name": "id", "type": "long"}]}'
JSON = '{"type": "object", "title": "com.acme.User", "properties": {"id": {"type": "integer"}}}'
PROTO = 'syntax = "proto3";\npackage com.acme;\nmessage User { int64 id = 1; }\n'


@pytest.mark.parametrize(
    ("schema_type", "text", "names"),
    [
        (SchemaType.AVRO, AVRO, ("com.acme.User",)),
        (SchemaType.JSON, JSON, ("com.acme.User",)),
        (SchemaType.PROTOBUF, PROTO, ("com.acme.User",)),
    ],
)
def test_parse_gives_a_parsed_schema(
    schema_type: SchemaType, text: str, names: tuple[str, ...]
) -> None:
    parsed = parse_schema(schema_type.value, text)
    assert isinstance(parsed, ParsedSchema)
    assert parsed.schema_type is schema_type
    assert parsed.record_names() == names
    assert parse_schema(schema_type, parsed.canonical) == parsed
    assert parsed.normalize() == parsed.normalize().normalize()
    assert parsed.formatted("") == parsed.canonical
    assert parsed.formatted("unknown") == parsed.canonical
    assert (
        check_compatibility(parsed, [parsed], CompatibilityLevel.FULL_TRANSITIVE) == []
    )


@pytest.mark.parametrize(
    ("schema_type", "text"),
    [
        ("AVRO", "{"),
        ("AVRO", '{"type": "record", "name": "X"}'),
        ("JSON", '{"type": 5}'),
        ("JSON", "[1]"),
        ("PROTOBUF", "message {"),
        ("XML", "<a/>"),
    ],
)
def test_bad_schemas_raise_invalid_schema_error(schema_type: str, text: str) -> None:
    with pytest.raises(InvalidSchemaError):
        parse_schema(schema_type, text)


def test_backward_names_the_missing_default() -> None:
    old = parse_schema("AVRO", AVRO)
    new = parse_schema(
        "AVRO",
        '{"type": "record", "name": "User", "namespace": "com.acme", "fields": '
        '[{"name": "id", "type": "long"}, {"name": "x", "type": "string"}]}',
    )
    messages = check_compatibility(new, [old], "BACKWARD", versions=[1])
    assert messages[0] == (
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'x' at path "
        "'/fields/1' in the new schema has no default value and is missing in the old schema', "
        "additionalInfo:'x'}"
    )
    assert messages[1:] == [
        "{oldSchemaVersion: 1}",
        f"{{oldSchema: '{old.canonical}'}}",
        "{validateFields: 'false', compatibility: 'BACKWARD'}",
    ]
    assert check_compatibility(new, [old], "FORWARD") == []


def test_reference_equality_includes_references() -> None:
    ref = SchemaReference("com.acme.Id", "id-value", 1)
    resolved = {
        "com.acme.Id": '{"type": "fixed", "name": "Id", "namespace": "com.acme", "size": 16}'
    }
    text = '{"type": "record", "name": "User", "namespace": "com.acme", "fields": [{"name": "id", "type": "Id"}]}'
    parsed = parse_schema("AVRO", text, [ref], resolved)
    assert parsed.references == (ref,)
    assert parsed.canonical == (
        '{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"id","type":"Id"}]}'
    )
    assert parsed != parse_schema("AVRO", parsed.canonical.replace('"Id"', '"string"'))
