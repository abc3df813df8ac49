"""JSON Schema: Confluent's canonical text (compact JSON), normalization, ``$ref``
references, meta-schema checks per draft, and the compatibility table from Confluent's
JSON Schema rules (``io.confluent.kafka.schemaregistry.json.diff``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto.registry.schemas import (
    InvalidSchemaError,
    SchemaReference,
    check_compatibility,
    parse_schema,
)

from .compat import error_types, table_test


def js(schema: Any, **kwargs: Any) -> Any:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return parse_schema("JSON", text, **kwargs)


# ----------------------------------------------------------------------------- canonical text


def test_canonical_text_is_compact_json_in_the_given_order() -> None:
    text = (
        '{\n  "$schema": "http://json-schema.org/draft-07/schema#",\n  "title": "Order",\n'
        '  "type": "object",\n  "properties": {\n    "name": {"type": "string", "description": "é"},\n'
        '    "id": {"type": "integer"}\n  },\n  "required": ["name"]\n}'
    )
    parsed = js(text)
    assert parsed.canonical == (
        '{"$schema":"http://json-schema.org/draft-07/schema#","title":"Order","type":"object",'
        '"properties":{"name":{"type":"string","description":"é"},"id":{"type":"integer"}},'
        '"required":["name"]}'
    )
    assert js(parsed.canonical) == parsed
    assert parsed.record_names() == ("Order",)


def test_boolean_schemas() -> None:
    assert js("true").canonical == "true"
    assert js("false").record_names() == ()


def test_normalize_sorts_keys_and_is_idempotent() -> None:
    a = js(
        '{"type":"object","properties":{"b":{"type":"string"},"a":{"minimum":1,"type":"integer"}}}'
    )
    b = js(
        '{"properties":{"a":{"type":"integer","minimum":1},"b":{"type":"string"}},"type":"object"}'
    )
    assert a != b
    assert a.normalize() == b.normalize()
    assert a.normalize().canonical == (
        '{"properties":{"a":{"minimum":1,"type":"integer"},"b":{"type":"string"}},"type":"object"}'
    )
    assert a.normalize().normalize() == a.normalize()


@pytest.mark.parametrize(
    "draft",
    [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ],
)
def test_every_supported_draft_is_checked_against_its_meta_schema(draft: str) -> None:
    assert js({"$schema": draft, "type": "string"}).canonical.startswith('{"$schema"')
    with pytest.raises(InvalidSchemaError, match="minLength"):
        js({"$schema": draft, "type": "string", "minLength": "three"})


INVALID = [
    ("{", "not JSON"),
    ("[]", "must be an object or a boolean"),
    ('"string"', "must be an object or a boolean"),
    ('{"type": "strin"}', "'strin' is not valid"),
    ('{"type": "object", "required": "a"}', "is not of type 'array'"),
    ('{"properties": {"a": {"type": 5}}}', "at '#/properties/a/type'"),
    ('{"$schema": "http://example.com/my-draft", "type": "string"}', "unknown $schema"),
    ('{"$ref": "other.json"}', "$ref 'other.json' does not resolve"),
    ('{"$ref": "#/definitions/missing"}', "does not resolve"),
    ('{"a":' * 5000 + "1" + "}" * 5000, "nested too deeply"),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_schemas_raise_with_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError, match=re.escape(message)):
        js(text)


# ----------------------------------------------------------------------------- references

ADDRESS = json.dumps(
    {
        "$id": "https://example.com/address.json",
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "definitions": {"Zip": {"type": "string", "maxLength": 10}},
    }
)


def test_refs_to_references_by_name_and_by_id() -> None:
    refs = [SchemaReference("address.json", "address-value", 1)]
    schema = {
        "type": "object",
        "properties": {
            "home": {"$ref": "address.json"},
            "zip": {"$ref": "https://example.com/address.json#/definitions/Zip"},
        },
    }
    parsed = js(schema, references=refs, resolved={"address.json": ADDRESS})
    assert parsed.references == tuple(refs)
    assert parsed.canonical == json.dumps(schema, separators=(",", ":"))


def test_compatibility_follows_refs_into_references() -> None:
    refs = [SchemaReference("address.json", "address-value", 1)]
    schema = {
        "type": "object",
        "properties": {"zip": {"$ref": "address.json#/definitions/Zip"}},
    }
    old = js(schema, references=refs, resolved={"address.json": ADDRESS})
    new = js(
        schema,
        references=refs,
        resolved={"address.json": ADDRESS.replace('"maxLength": 10', '"maxLength": 5')},
    )
    assert error_types(check_compatibility(new, [old], "BACKWARD")) == [
        "MAX_LENGTH_DECREASED"
    ]
    assert check_compatibility(new, [old], "FORWARD") == []


def test_recursive_refs_terminate() -> None:
    tree = {
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
    }
    parsed = js(tree)
    assert check_compatibility(parsed, [js(tree)], "FULL") == []
    wider = json.loads(json.dumps(tree))
    wider["properties"]["value"]["type"] = "number"
    assert check_compatibility(js(wider), [parsed], "BACKWARD") == []
    assert error_types(check_compatibility(js(wider), [parsed], "FORWARD")) == [
        "TYPE_NARROWED"
    ]


# ----------------------------------------------------------------------------- compatibility


def obj(
    props: dict[str, Any], required: tuple[str, ...] = (), **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required:
        out["required"] = list(required)
    return out


def closed(
    props: dict[str, Any], required: tuple[str, ...] = (), **extra: Any
) -> dict[str, Any]:
    return obj(props, required, additionalProperties=False, **extra)


STR, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}

# (old, new, level, expected incompatible difference types)
TABLE = [
    ("identical", obj({"a": STR}), obj({"a": STR}), "FULL", []),
    (
        "open-add-typed-property",
        obj({"a": STR}),
        obj({"a": STR, "b": INT}),
        "BACKWARD",
        ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"],
    ),
    (
        "open-add-required-property",
        obj({"a": STR}),
        obj({"a": STR, "b": INT}, ("b",)),
        "BACKWARD",
        ["REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"],
    ),
    (
        "open-add-empty-schema-property",
        obj({"a": STR}),
        obj({"a": STR, "b": {}}),
        "BACKWARD",
        [],
    ),
    (
        "open-remove-property",
        obj({"a": STR, "b": INT}),
        obj({"a": STR}),
        "BACKWARD",
        [],
    ),
    (
        "open-remove-property-forward",
        obj({"a": STR, "b": INT}),
        obj({"a": STR}),
        "FORWARD",
        ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"],
    ),
    (
        "closed-add-optional-property",
        closed({"a": STR}),
        closed({"a": STR, "b": INT}),
        "BACKWARD",
        [],
    ),
    (
        "closed-add-required-property",
        closed({"a": STR}),
        closed({"a": STR, "b": INT}, ("b",)),
        "BACKWARD",
        ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"],
    ),
    (
        "closed-add-required-property-with-default",
        closed({"a": STR}),
        closed({"a": STR, "b": {**INT, "default": 0}}, ("b",)),
        "BACKWARD",
        [],
    ),
    (
        "closed-remove-property",
        closed({"a": STR, "b": INT}),
        closed({"a": STR}),
        "BACKWARD",
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
    ),
    (
        "closed-remove-false-property",
        closed({"a": STR, "b": False}),
        closed({"a": STR}),
        "BACKWARD",
        [],
    ),
    (
        "closed-add-property-forward",
        closed({"a": STR}),
        closed({"a": STR, "b": INT}),
        "FORWARD",
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
    ),
    (
        "partial-remove-covered",
        obj({"a": STR, "b": STR}, additionalProperties=STR),
        obj({"a": STR}, additionalProperties=STR),
        "BACKWARD",
        [],
    ),
    (
        "partial-remove-not-covered",
        obj({"a": STR, "b": INT}, additionalProperties=STR),
        obj({"a": STR}, additionalProperties=STR),
        "BACKWARD",
        [
            "TYPE_CHANGED",
            "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        ],
    ),
    (
        "pattern-properties-cover-removal",
        obj({"a": STR, "x_b": INT}, patternProperties={"^x_": INT}),
        obj({"a": STR}, patternProperties={"^x_": INT}),
        "BACKWARD",
        [],
    ),
    (
        "make-required",
        obj({"a": STR}),
        obj({"a": STR}, ("a",)),
        "BACKWARD",
        ["REQUIRED_ATTRIBUTE_ADDED"],
    ),
    (
        "make-required-with-default",
        obj({"a": STR}),
        obj({"a": {**STR, "default": ""}}, ("a",)),
        "BACKWARD",
        [],
    ),
    ("drop-required", obj({"a": STR}, ("a",)), obj({"a": STR}), "BACKWARD", []),
    ("integer-to-number", obj({"a": INT}), obj({"a": NUM}), "BACKWARD", []),
    (
        "number-to-integer",
        obj({"a": NUM}),
        obj({"a": INT}),
        "BACKWARD",
        ["TYPE_NARROWED"],
    ),
    (
        "integer-to-number-full",
        obj({"a": INT}),
        obj({"a": NUM}),
        "FULL",
        ["TYPE_NARROWED"],
    ),
    (
        "string-to-integer",
        obj({"a": STR}),
        obj({"a": INT}),
        "BACKWARD",
        ["TYPE_CHANGED"],
    ),
    ("enum-extended", {"enum": ["A", "B"]}, {"enum": ["A", "B", "C"]}, "BACKWARD", []),
    (
        "enum-narrowed",
        {"enum": ["A", "B", "C"]},
        {"enum": ["A", "B"]},
        "BACKWARD",
        ["ENUM_ARRAY_NARROWED"],
    ),
    (
        "enum-changed",
        {"enum": ["A", "B"]},
        {"enum": ["A", "C"]},
        "BACKWARD",
        ["ENUM_ARRAY_CHANGED"],
    ),
    (
        "max-length-increased",
        {**STR, "maxLength": 5},
        {**STR, "maxLength": 10},
        "BACKWARD",
        [],
    ),
    (
        "max-length-decreased",
        {**STR, "maxLength": 10},
        {**STR, "maxLength": 5},
        "BACKWARD",
        ["MAX_LENGTH_DECREASED"],
    ),
    (
        "max-length-added",
        STR,
        {**STR, "maxLength": 5},
        "BACKWARD",
        ["MAX_LENGTH_ADDED"],
    ),
    ("max-length-removed", {**STR, "maxLength": 5}, STR, "BACKWARD", []),
    (
        "min-length-increased",
        {**STR, "minLength": 1},
        {**STR, "minLength": 2},
        "BACKWARD",
        ["MIN_LENGTH_INCREASED"],
    ),
    (
        "min-length-decreased",
        {**STR, "minLength": 2},
        {**STR, "minLength": 1},
        "BACKWARD",
        [],
    ),
    ("pattern-added", STR, {**STR, "pattern": "^a"}, "BACKWARD", ["PATTERN_ADDED"]),
    ("pattern-removed", {**STR, "pattern": "^a"}, STR, "BACKWARD", []),
    (
        "pattern-changed",
        {**STR, "pattern": "^a"},
        {**STR, "pattern": "^b"},
        "BACKWARD",
        ["PATTERN_CHANGED"],
    ),
    (
        "maximum-increased",
        {**NUM, "maximum": 10},
        {**NUM, "maximum": 20},
        "BACKWARD",
        [],
    ),
    (
        "maximum-decreased",
        {**NUM, "maximum": 20},
        {**NUM, "maximum": 10},
        "BACKWARD",
        ["MAXIMUM_DECREASED"],
    ),
    ("minimum-added", NUM, {**NUM, "minimum": 0}, "BACKWARD", ["MINIMUM_ADDED"]),
    ("minimum-decreased", {**NUM, "minimum": 5}, {**NUM, "minimum": 0}, "BACKWARD", []),
    (
        "exclusive-minimum-increased",
        {**NUM, "exclusiveMinimum": 0},
        {**NUM, "exclusiveMinimum": 1},
        "BACKWARD",
        ["EXCLUSIVE_MINIMUM_INCREASED"],
    ),
    (
        "multiple-of-expanded",
        {**INT, "multipleOf": 2},
        {**INT, "multipleOf": 4},
        "BACKWARD",
        ["MULTIPLE_OF_EXPANDED"],
    ),
    (
        "multiple-of-reduced",
        {**INT, "multipleOf": 4},
        {**INT, "multipleOf": 2},
        "BACKWARD",
        [],
    ),
    (
        "additional-properties-opened",
        closed({"a": STR}),
        obj({"a": STR}),
        "BACKWARD",
        [],
    ),
    (
        "additional-properties-closed",
        obj({"a": STR}),
        closed({"a": STR}),
        "BACKWARD",
        ["ADDITIONAL_PROPERTIES_REMOVED"],
    ),
    (
        "additional-properties-narrowed",
        obj({"a": STR}),
        obj({"a": STR}, additionalProperties=STR),
        "BACKWARD",
        ["ADDITIONAL_PROPERTIES_NARROWED"],
    ),
    (
        "max-properties-decreased",
        obj({}, maxProperties=5),
        obj({}, maxProperties=3),
        "BACKWARD",
        ["MAX_PROPERTIES_DECREASED"],
    ),
    (
        "min-properties-decreased",
        obj({}, minProperties=3),
        obj({}, minProperties=1),
        "BACKWARD",
        [],
    ),
    (
        "dependency-array-added",
        obj({"a": STR, "b": STR}),
        obj({"a": STR, "b": STR}, dependencies={"a": ["b"]}),
        "BACKWARD",
        ["DEPENDENCY_ARRAY_ADDED"],
    ),
    (
        "any-of-extended",
        {"anyOf": [STR, INT]},
        {"anyOf": [STR, INT, {"type": "boolean"}]},
        "BACKWARD",
        [],
    ),
    (
        "any-of-narrowed",
        {"anyOf": [STR, INT]},
        {"anyOf": [STR]},
        "BACKWARD",
        ["SUM_TYPE_NARROWED"],
    ),
    ("one-of-to-any-of", {"oneOf": [STR, INT]}, {"anyOf": [STR, INT]}, "BACKWARD", []),
    (
        "any-of-to-all-of",
        {"anyOf": [STR, INT]},
        {"allOf": [STR, INT]},
        "BACKWARD",
        ["COMBINED_TYPE_CHANGED"],
    ),
    (
        "all-of-narrowed",
        {"allOf": [obj({"a": STR}), obj({"b": STR})]},
        {"allOf": [obj({"a": STR})]},
        "BACKWARD",
        [],
    ),
    (
        "all-of-extended",
        {"allOf": [obj({"a": STR})]},
        {"allOf": [obj({"a": STR}), obj({"b": STR})]},
        "BACKWARD",
        ["PRODUCT_TYPE_EXTENDED"],
    ),
    (
        "any-of-subschema-changed",
        {"anyOf": [STR, INT]},
        {"anyOf": [STR, {"type": "boolean"}]},
        "BACKWARD",
        ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"],
    ),
    ("type-to-nullable-union", STR, {"type": ["string", "null"]}, "BACKWARD", []),
    (
        "nullable-union-to-type",
        {"type": ["string", "null"]},
        STR,
        "BACKWARD",
        ["TYPE_CHANGED"],
    ),
    ("type-into-one-of", STR, {"oneOf": [STR, INT]}, "BACKWARD", []),
    (
        "array-items-changed",
        {"type": "array", "items": STR},
        {"type": "array", "items": INT},
        "BACKWARD",
        ["TYPE_CHANGED"],
    ),
    (
        "array-items-widened",
        {"type": "array", "items": INT},
        {"type": "array", "items": NUM},
        "BACKWARD",
        [],
    ),
    (
        "max-items-decreased",
        {"type": "array", "maxItems": 5},
        {"type": "array", "maxItems": 2},
        "BACKWARD",
        ["MAX_ITEMS_DECREASED"],
    ),
    (
        "min-items-increased",
        {"type": "array", "minItems": 1},
        {"type": "array", "minItems": 2},
        "BACKWARD",
        ["MIN_ITEMS_INCREASED"],
    ),
    (
        "unique-items-added",
        {"type": "array"},
        {"type": "array", "uniqueItems": True},
        "BACKWARD",
        ["UNIQUE_ITEMS_ADDED"],
    ),
    (
        "unique-items-removed",
        {"type": "array", "uniqueItems": True},
        {"type": "array"},
        "BACKWARD",
        [],
    ),
    (
        "tuple-item-added-to-closed",
        {"type": "array", "items": [STR], "additionalItems": False},
        {"type": "array", "items": [STR, INT], "additionalItems": False},
        "BACKWARD",
        [],
    ),
    (
        "tuple-item-added-to-open",
        {"type": "array", "items": [STR]},
        {"type": "array", "items": [STR, INT]},
        "BACKWARD",
        ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL"],
    ),
    (
        "title-and-description-changed",
        {**STR, "title": "a", "description": "x"},
        {**STR, "title": "b", "description": "y"},
        "FULL",
        [],
    ),
    ("anything-to-empty-schema", obj({"a": STR}), {}, "BACKWARD", []),
    ("false-to-anything", False, obj({"a": STR}), "BACKWARD", []),
    (
        "nested-property-type-changed",
        obj({"o": obj({"x": STR})}),
        obj({"o": obj({"x": INT})}),
        "BACKWARD",
        ["TYPE_CHANGED"],
    ),
    # everit loads a schema with a type and an enum as allOf[typed, enum].
    (
        "typed-enum-extended",
        {**STR, "enum": ["a"]},
        {**STR, "enum": ["a", "b"]},
        "BACKWARD",
        [],
    ),
    (
        "typed-enum-type-changed",
        {**STR, "enum": ["a"]},
        {**INT, "enum": ["a"]},
        "BACKWARD",
        ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"],
    ),
    (
        "typed-enum-changed",
        {**STR, "enum": ["a"]},
        {**STR, "enum": ["b"]},
        "BACKWARD",
        ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"],
    ),
    ("none-accepts-anything", STR, INT, "NONE", []),
]


test_compatibility_table = table_test(TABLE, js)


def test_messages_are_confluents() -> None:
    errors = check_compatibility(
        js(closed({"a": STR}, ("a",))), [js(closed({}))], "BACKWARD"
    )
    assert errors[0] == (
        '{errorType:"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", description:"The new '
        "schema has an unopen content model and has a required property at path "
        "'#/properties/a' which is missing in the old schema\"}"
    )
    errors = check_compatibility(
        js({**STR, "maxLength": 10}), [js({**STR, "maxLength": 5})], "FORWARD"
    )
    assert errors[0] == (
        '{errorType:"MAX_LENGTH_DECREASED", description:"The value at path \'#/maxLength\' in '
        'the old schema is less than its value in the new schema"}'
    )


# ----------------------------------------------------------------------------- hypothesis

_leaf = st.sampled_from(
    [STR, INT, NUM, {"type": "boolean"}, {"type": "null"}, {}, {"enum": ["a", 1]}]
)
_json_schemas = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.builds(
            lambda p, closed_: {
                "type": "object",
                "properties": p,
                **({"additionalProperties": False} if closed_ else {}),
            },
            st.dictionaries(st.text(max_size=5), inner, max_size=4),
            st.booleans(),
        ),
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(
            lambda subs: {"anyOf": subs}, st.lists(inner, min_size=1, max_size=3)
        ),
    ),
    max_leaves=10,
)


@given(_json_schemas)
def test_canonical_text_parses_to_the_same_schema(schema: Any) -> None:
    parsed = js(schema)
    assert js(parsed.canonical) == parsed
    assert parsed.normalize().normalize() == parsed.normalize()
    assert check_compatibility(parsed, [js(parsed.canonical)], "FULL_TRANSITIVE") == []


def _ladder(depth: int, leaf: str) -> Any:
    """Definitions that each refer to the previous one twice: small text, but a naive
    comparison doubles its work at every step."""
    definitions: dict[str, Any] = {"d0": {"type": leaf}}
    for i in range(1, depth + 1):
        ref = {"$ref": f"#/definitions/d{i - 1}"}
        definitions[f"d{i}"] = {
            "anyOf": [ref, {"type": "object", "properties": {"a": ref, "b": ref}}]
        }
    return {"definitions": definitions, "$ref": f"#/definitions/d{depth}"}


def test_shared_definitions_are_compared_once() -> None:
    old, new = js(_ladder(40, "integer")), js(_ladder(40, "string"))
    assert check_compatibility(new, [old], "BACKWARD") != []
    assert check_compatibility(old, [js(_ladder(40, "integer"))], "FULL") == []


def test_a_comparison_past_its_budget_is_reported_not_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kproto.registry.schemas import json_schema_compatibility

    monkeypatch.setattr(json_schema_compatibility, "_BUDGET", 10)
    old, new = js(_ladder(40, "integer")), js(_ladder(40, "string"))
    errors = check_compatibility(new, [old], "BACKWARD")
    assert error_types(errors) == ["SCHEMA_TOO_COMPLEX"]


def test_refs_by_anchor() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"zip": {"$anchor": "zip", "type": "string", "maxLength": 10}},
        "type": "object",
        "properties": {"zip": {"$ref": "#zip"}},
    }
    old = js(schema)
    narrower = json.loads(json.dumps(schema))
    narrower["$defs"]["zip"]["maxLength"] = 5
    assert error_types(check_compatibility(js(narrower), [old], "BACKWARD")) == [
        "MAX_LENGTH_DECREASED"
    ]
    with pytest.raises(InvalidSchemaError, match="does not resolve"):
        js({"properties": {"zip": {"$ref": "#nowhere"}}})
