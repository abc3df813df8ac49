"""The shared interface of kproto.registry.schemas, for all three formats."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# Confluent's documentation shows this registered Protobuf schema (with a reference to
# other.proto) coming back as canonical text; ours has the same layout and writes the
# referenced type fully qualified, as Confluent's normalized form does.
CONFLUENT_DOC_PROTO = (
    'syntax = "proto3";\npackage com.acme;\n\nimport "other.proto";\n\n'
    "message MyRecord {\n  string f1 = 1;\n  OtherRecord f2 = 2;\n}\n"
)


def test_confluent_documented_protobuf_layout() -> None:
    other = 'syntax = "proto3";\npackage com.acme;\n\nmessage OtherRecord {\n  int32 an_id = 1;\n}\n'
    parsed = parse_schema(
        "PROTOBUF",
        CONFLUENT_DOC_PROTO,
        [SchemaReference("other.proto", "other.proto", 1)],
        {"other.proto": other},
    )
    assert parsed.canonical == CONFLUENT_DOC_PROTO.replace(
        "OtherRecord f2", ".com.acme.OtherRecord f2"
    )
    assert parse_schema("PROTOBUF", other).canonical == other


def test_confluent_documented_json_schema_comes_back_compact() -> None:
    registered = '{"type":"object","properties":{"f1":{"type":"string"}}}'
    spaced = '{ "type": "object", "properties": { "f1": { "type": "string" } } }'
    assert parse_schema("JSON", spaced).canonical == registered


_ANY_TEXT = st.one_of(
    st.text(max_size=60),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "name",
                    "fields",
                    "items",
                    "values",
                    "symbols",
                    "properties",
                    "$ref",
                    "anyOf",
                    "default",
                    "size",
                ]
            ),
            inner,
            max_size=4,
        ),
        max_leaves=12,
    ).map(json.dumps),
)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["AVRO", "JSON"]), _ANY_TEXT)
def test_any_text_parses_or_raises_invalid_schema_error(
    schema_type: str, text: str
) -> None:
    try:
        parsed = parse_schema(schema_type, text)
    except InvalidSchemaError:
        return
    assert parse_schema(schema_type, parsed.canonical) == parsed
    assert check_compatibility(parsed, [parsed], "FULL") == []


@settings(max_examples=10, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list('messagenum{}=;123 "syntaxproto3ifd.\n')),
        max_size=60,
    )
)
def test_any_proto_text_parses_or_raises_invalid_schema_error(text: str) -> None:
    try:
        parsed = parse_schema("PROTOBUF", text)
    except InvalidSchemaError:
        return
    assert parse_schema("PROTOBUF", parsed.canonical) == parsed


def test_already_registered_schemas_load_as_confluent_loads_them() -> None:
    # Confluent validates Avro defaults (and our JSON meta-schema check runs) only for a
    # new schema; one read back from _schemas loads as it was accepted.
    bad_default = '{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}'
    with pytest.raises(InvalidSchemaError, match="invalid default"):
        parse_schema("AVRO", bad_default)
    loaded = parse_schema("AVRO", bad_default, new=False)
    assert loaded.canonical == bad_default
    odd_json = '{"type":"object","minProperties":"two"}'
    with pytest.raises(InvalidSchemaError):
        parse_schema("JSON", odd_json)
    assert parse_schema("JSON", odd_json, new=False).canonical == odd_json
    with pytest.raises(InvalidSchemaError):
        parse_schema("PROTOBUF", "message {", new=False)


@pytest.mark.parametrize(
    ("schema_type", "text"),
    [
        ("AVRO", '{"type": "string"}'),
        ("JSON", '{"type": "string"}'),
        ("PROTOBUF", 'syntax = "proto3";\nmessage M {}\n'),
    ],
)
def test_a_reference_missing_from_resolved_is_invalid(
    schema_type: str, text: str
) -> None:
    ref = SchemaReference("other", "other-value", 1)
    with pytest.raises(InvalidSchemaError, match="reference 'other' is not resolved"):
        parse_schema(schema_type, text, [ref], {})
    assert parse_schema(schema_type, text, [ref], {"other": text}).references == (ref,)
