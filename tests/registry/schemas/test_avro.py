"""Avro: Confluent's canonical text (Avro Java's ``Schema.toString()``), normalization,
references, invalid schemas, and the compatibility table from the Avro specification's
schema-resolution rules (as Avro Java's ``SchemaCompatibility`` applies them)."""

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

from .compat import check_table_case, table_cases


def avro(schema: Any, **kwargs: Any) -> Any:
    raw = isinstance(schema, str) and (
        schema[:1] in ('"', "{", "[") or schema[:1].isdigit()
    )
    text = schema if raw else json.dumps(schema)
    return parse_schema("AVRO", text, **kwargs)


# ----------------------------------------------------------------------------- canonical text

CANONICAL = [
    pytest.param(
        # Confluent's schema-registry tutorial (Payment): registered and returned as is.
        '{"type":"record","name":"Payment","namespace":"io.confluent.examples.clients.basicavro",'
        '"fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}',
        '{"type":"record","name":"Payment","namespace":"io.confluent.examples.clients.basicavro",'
        '"fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}',
        id="confluent-payment",
    ),
    pytest.param('"string"', '"string"', id="primitive"),
    pytest.param('{"type": "string"}', '"string"', id="primitive-object-collapses"),
    pytest.param(
        '{"type": "long", "logicalType": "timestamp-millis"}',
        '{"type":"long","logicalType":"timestamp-millis"}',
        id="logical-type-kept-as-property",
    ),
    pytest.param(
        '{ "fields" : [ {"type": "int", "name": "a"} ], "name" : "R", "type" : "record" }',
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}',
        id="attribute-order-and-whitespace",
    ),
    pytest.param(
        '{"type":"record","name":"a.b.R","fields":[{"name":"x","type":'
        '{"type":"record","name":"S","fields":[]}}]}',
        '{"type":"record","name":"R","namespace":"a.b","fields":[{"name":"x","type":'
        '{"type":"record","name":"S","fields":[]}}]}',
        id="dotted-name-splits-and-nested-inherits-namespace",
    ),
    pytest.param(
        '{"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":'
        '{"type":"enum","name":"E","namespace":"b","symbols":["X","Y"],"default":"X"}},'
        '{"name":"y","type":"b.E"}]}',
        '{"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":'
        '{"type":"enum","name":"E","namespace":"b","symbols":["X","Y"],"default":"X"}},'
        '{"name":"y","type":"b.E"}]}',
        id="other-namespace-printed-and-second-use-by-full-name",
    ),
    pytest.param(
        '{"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":'
        '{"type":"fixed","name":"F","size":4}},{"name":"y","type":"a.F"}]}',
        '{"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":'
        '{"type":"fixed","name":"F","size":4}},{"name":"y","type":"F"}]}',
        id="same-namespace-reference-by-short-name",
    ),
    pytest.param(
        '{"type":"record","name":"R","doc":"d","aliases":["Old"],"x-prop":1,"fields":'
        '[{"name":"f","type":"int","default":1,"doc":"fd","order":"descending",'
        '"aliases":["g"],"p":true}]}',
        '{"type":"record","name":"R","doc":"d","fields":[{"name":"f","type":"int","doc":"fd",'
        '"default":1,"order":"descending","aliases":["g"],"p":true}],"x-prop":1,"aliases":["Old"]}',
        id="doc-default-order-aliases-properties",
    ),
    pytest.param(
        '{"type":"array","items":{"type":"map","values":["null","string"]}}',
        '{"type":"array","items":{"type":"map","values":["null","string"]}}',
        id="array-map-union",
    ),
    pytest.param(
        '{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"],'
        '"default":null},{"name":"s","type":"string","default":"\\u00e9"}]}',
        '{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"],'
        '"default":null},{"name":"s","type":"string","default":"é"}]}',
        id="recursive-and-non-ascii-kept",
    ),
    pytest.param(
        '{"type":"record","name":"R","fields":[{"name":"x","type":"int","order":"ascending"}]}',
        '{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}',
        id="ascending-order-is-the-default",
    ),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_text_is_avro_java_to_string(text: str, canonical: str) -> None:
    parsed = avro(text)
    assert parsed.canonical == canonical
    assert avro(parsed.canonical) == parsed


def test_normalize_is_confluents_and_idempotent() -> None:
    # Confluent's AvroSchema.normalize(): properties sorted (a logical type's first),
    # aliases sorted, empty named-type docs dropped, float defaults as floats; the result
    # printed by Avro Java again.
    a = avro(
        '{"type":"record","name":"R","namespace":"a","doc":"","z":1,"b":2,"aliases":["Z","Y"],'
        '"fields":[{"name":"x","type":{"type":"fixed","name":"F","size":4}},{"name":"y","type":"F"},'
        '{"name":"d","type":"double","default":1,"q":1,"p":2},'
        '{"name":"t","type":{"type":"bytes","x":1,"scale":2,"precision":4,"logicalType":"decimal"}}]}'
    )
    b = avro(
        '{"namespace":"a","name":"a.R","b":2,"z":1,"aliases":["a.Y","a.Z"],"type":"record",'
        '"fields":[{"name":"x","type":{"type":"fixed","name":"a.F","size":4}},{"name":"y","type":"a.F"},'
        '{"name":"d","type":"double","default":1.0,"p":2,"q":1},'
        '{"name":"t","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2,"x":1}}]}'
    )
    assert a.canonical != b.canonical
    assert a.normalize() == b.normalize()
    assert a.normalize().canonical == (
        '{"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":{"type":"fixed",'
        '"name":"F","size":4}},{"name":"y","type":"F"},{"name":"d","type":"double","default":1.0,'
        '"p":2,"q":1},{"name":"t","type":{"type":"bytes","logicalType":"decimal","precision":4,'
        '"scale":2,"x":1}}],"b":2,"z":1,"aliases":["Y","Z"]}'
    )
    assert a.normalize().normalize() == a.normalize()
    assert avro(a.normalize().canonical).normalize() == a.normalize()


def test_normalize_sorts_references() -> None:
    one, two = SchemaReference("com.acme.B", "b", 1), SchemaReference(
        "com.acme.A", "a", 2
    )
    resolved = {
        "com.acme.A": '{"type":"fixed","name":"A","namespace":"com.acme","size":1}',
        "com.acme.B": '{"type":"fixed","name":"B","namespace":"com.acme","size":1}',
    }
    text = (
        '{"type":"record","name":"R","namespace":"com.acme","fields":'
        '[{"name":"a","type":"A"},{"name":"b","type":"B"}]}'
    )
    parsed = avro(text, references=[one, two, one], resolved=resolved)
    assert parsed.references == (one, two, one)
    assert parsed.normalize().references == (two, one)


def test_resolved_format_writes_referenced_types_in_place() -> None:
    parsed = avro(
        '{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"a","type":"Address"}]}',
        references=[SchemaReference("com.acme.Address", "address-value", 1)],
        resolved={"com.acme.Address": ADDRESS},
    )
    assert parsed.formatted("resolved") == (
        '{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"a","type":'
        '{"type":"record","name":"Address","fields":[{"name":"city","type":"string"}]}}]}'
    )
    assert parsed.formatted("RESOLVED") == parsed.formatted("resolved")
    assert parsed.formatted("default") == parsed.canonical


def test_java_accepts_what_we_accept() -> None:
    unicode_name = avro(
        '{"type":"record","name":"Stra\u00dfe","fields":[{"name":"\u00e9t\u00e9","type":"int"}]}'
    )
    assert (
        unicode_name.canonical
        == '{"type":"record","name":"Straße","fields":[{"name":"été","type":"int"}]}'
    )
    long_default = avro(
        '{"type":"record","name":"R","fields":[{"name":"a","type":"long","default":2147483648}]}'
    )
    assert '"default":2147483648' in long_default.canonical
    assert avro(
        '{"type":"record","name":"R","fields":[{"name":"a","type":["null","int"],"default":null}]}'
    )


def test_record_names() -> None:
    assert avro(
        '{"type":"record","name":"R","namespace":"a.b","fields":[]}'
    ).record_names() == ("a.b.R",)
    assert avro('{"type":"enum","name":"E","symbols":["A"]}').record_names() == ()
    assert avro('"string"').record_names() == ()


# ----------------------------------------------------------------------------- references


ADDRESS = '{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"city","type":"string"}]}'
COUNTRY = (
    '{"type":"enum","name":"Country","namespace":"com.acme","symbols":["NL","DE"]}'
)
ADDRESS_WITH_COUNTRY = (
    '{"type":"record","name":"Address","namespace":"com.acme","fields":'
    '[{"name":"city","type":"string"},{"name":"country","type":"Country"}]}'
)


def test_references_name_full_type_names_and_print_by_name() -> None:
    refs = [SchemaReference("com.acme.Address", "address-value", 1)]
    parsed = avro(
        '{"type":"record","name":"User","namespace":"com.acme","fields":'
        '[{"name":"home","type":"Address"},{"name":"work","type":"com.acme.Address"}]}',
        references=refs,
        resolved={"com.acme.Address": ADDRESS},
    )
    assert parsed.references == tuple(refs)
    assert parsed.canonical == (
        '{"type":"record","name":"User","namespace":"com.acme","fields":'
        '[{"name":"home","type":"Address"},{"name":"work","type":"Address"}]}'
    )


def test_transitive_references_in_any_order() -> None:
    parsed = avro(
        '{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"a","type":"Address"}]}',
        references=[SchemaReference("com.acme.Address", "address-value", 1)],
        resolved={
            "com.acme.Address": ADDRESS_WITH_COUNTRY,
            "com.acme.Country": COUNTRY,
        },
    )
    assert parsed.record_names() == ("com.acme.User",)


def test_compatibility_follows_references() -> None:
    def user(address: str) -> Any:
        return avro(
            '{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"a","type":"Address"}]}',
            references=[SchemaReference("com.acme.Address", "address-value", 1)],
            resolved={"com.acme.Address": address},
        )

    old = user(ADDRESS)
    new = user(
        '{"type":"record","name":"Address","namespace":"com.acme","fields":'
        '[{"name":"city","type":"string"},{"name":"zip","type":"string"}]}'
    )
    errors = check_compatibility(new, [old], "BACKWARD")
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in errors[0]
    assert "'/fields/0/type/fields/1'" in errors[0]


def test_unresolved_reference_is_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="undefined name"):
        avro(
            '{"type":"record","name":"User","fields":[{"name":"a","type":"com.acme.Address"}]}'
        )


# ----------------------------------------------------------------------------- invalid schemas

INVALID = [
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":["int","null"],"default":null}]}',
        "invalid default",
    ),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":2147483648}]}',
        "invalid default",
    ),
    ("{", "not JSON"),
    ("42", "must be a string, object or array"),
    ('"strin"', "undefined name"),
    ('{"type":"record","name":"R"}', "no 'fields'"),
    ('{"type":"record","fields":[]}', "no 'name'"),
    ('{"type":"record","name":"1R","fields":[]}', "illegal name"),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}',
        "duplicate field",
    ),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}',
        "invalid default",
    ),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":["null","int"],"default":"x"}]}',
        "invalid default",
    ),
    ('{"type":"enum","name":"E","symbols":["A","A"]}', "duplicate enum symbol"),
    ('{"type":"enum","name":"E","symbols":["A"],"default":"B"}', "not a symbol"),
    ('{"type":"fixed","name":"F"}', "size"),
    ('{"type":"array"}', "no 'items'"),
    ('{"type":"map"}', "no 'values'"),
    ('["int","int"]', "duplicate in union"),
    ('[["int"]]', "union may not immediately contain"),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"fixed","name":"R","size":1}}]}',
        "can't redefine",
    ),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","order":"up"}]}',
        "order",
    ),
    ("[" * 5000 + "]" * 5000, "nested too deeply"),
    (
        '{"type":"array","items":' * 300 + '"int"' + "}" * 300,
        "nested deeper than 256 levels",
    ),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_schemas_raise_with_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError, match=re.escape(message)):
        avro(text)


# ----------------------------------------------------------------------------- compatibility


def rec(*fields: Any, name: str = "R", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def f(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def enum(*symbols: str, **extra: Any) -> dict[str, Any]:
    return {"type": "enum", "name": "E", "symbols": list(symbols), **extra}


NODE = rec(f("v", "int"), f("next", ["null", "Node"], default=None), name="Node")
NODE2 = rec(
    f("v", "int"),
    f("next", ["null", "Node"], default=None),
    f("w", "int", default=0),
    name="Node",
)

# (old, new, level, expected error types in order; empty when compatible)
TABLE = [
    ("identical", rec(f("a", "int")), rec(f("a", "int")), "BACKWARD", []),
    (
        "add-field-with-default",
        rec(f("a", "int")),
        rec(f("a", "int"), f("b", "string", default="")),
        "BACKWARD",
        [],
    ),
    (
        "add-field-without-default",
        rec(f("a", "int")),
        rec(f("a", "int"), f("b", "string")),
        "BACKWARD",
        ["READER_FIELD_MISSING_DEFAULT_VALUE"],
    ),
    (
        "add-field-without-default-forward",
        rec(f("a", "int")),
        rec(f("a", "int"), f("b", "string")),
        "FORWARD",
        [],
    ),
    (
        "remove-field",
        rec(f("a", "int"), f("b", "int")),
        rec(f("a", "int")),
        "BACKWARD",
        [],
    ),
    (
        "remove-field-without-default-forward",
        rec(f("a", "int"), f("b", "int")),
        rec(f("a", "int")),
        "FORWARD",
        ["READER_FIELD_MISSING_DEFAULT_VALUE"],
    ),
    (
        "remove-field-with-default-forward",
        rec(f("a", "int"), f("b", "int", default=0)),
        rec(f("a", "int")),
        "FORWARD",
        [],
    ),
    (
        "add-field-with-default-full",
        rec(f("a", "int")),
        rec(f("a", "int"), f("b", "int", default=1)),
        "FULL",
        [],
    ),
    (
        "add-field-without-default-full",
        rec(f("a", "int")),
        rec(f("a", "int"), f("b", "int")),
        "FULL",
        ["READER_FIELD_MISSING_DEFAULT_VALUE"],
    ),
    ("int-to-long", "int", "long", "BACKWARD", []),
    ("int-to-float", "int", "float", "BACKWARD", []),
    ("int-to-double", "int", "double", "BACKWARD", []),
    ("long-to-float", "long", "float", "BACKWARD", []),
    ("long-to-double", "long", "double", "BACKWARD", []),
    ("float-to-double", "float", "double", "BACKWARD", []),
    ("long-to-int", "long", "int", "BACKWARD", ["TYPE_MISMATCH"]),
    ("double-to-float", "double", "float", "BACKWARD", ["TYPE_MISMATCH"]),
    ("int-to-long-forward", "int", "long", "FORWARD", ["TYPE_MISMATCH"]),
    ("int-to-long-full", "int", "long", "FULL", ["TYPE_MISMATCH"]),
    ("string-to-bytes", "string", "bytes", "BACKWARD", []),
    ("bytes-to-string", "bytes", "string", "FULL", []),
    ("string-to-int", "string", "int", "BACKWARD", ["TYPE_MISMATCH"]),
    ("boolean-to-int", "boolean", "int", "BACKWARD", ["TYPE_MISMATCH"]),
    ("null-to-null", "null", "null", "FULL", []),
    ("record-to-string", rec(f("a", "int")), "string", "BACKWARD", ["TYPE_MISMATCH"]),
    ("field-int-to-long", rec(f("a", "int")), rec(f("a", "long")), "BACKWARD", []),
    (
        "field-long-to-int",
        rec(f("a", "long")),
        rec(f("a", "int")),
        "BACKWARD",
        ["TYPE_MISMATCH"],
    ),
    ("enum-symbol-added", enum("A", "B"), enum("A", "B", "C"), "BACKWARD", []),
    (
        "enum-symbol-removed",
        enum("A", "B", "C"),
        enum("A", "B"),
        "BACKWARD",
        ["MISSING_ENUM_SYMBOLS"],
    ),
    (
        "enum-symbol-removed-with-default",
        enum("A", "B", "C"),
        enum("A", "B", default="A"),
        "BACKWARD",
        [],
    ),
    (
        "enum-symbol-added-forward",
        enum("A", "B"),
        enum("A", "B", "C"),
        "FORWARD",
        ["MISSING_ENUM_SYMBOLS"],
    ),
    (
        "enum-symbol-added-forward-old-default",
        enum("A", "B", default="A"),
        enum("A", "B", "C"),
        "FORWARD",
        [],
    ),
    (
        "enum-renamed",
        enum("A"),
        {**enum("A"), "name": "F"},
        "BACKWARD",
        ["NAME_MISMATCH"],
    ),
    (
        "union-branch-added",
        ["null", "string"],
        ["null", "string", "int"],
        "BACKWARD",
        [],
    ),
    (
        "union-branch-removed",
        ["null", "string", "int"],
        ["null", "string"],
        "BACKWARD",
        ["MISSING_UNION_BRANCH"],
    ),
    ("type-to-union-containing-it", "string", ["null", "string"], "BACKWARD", []),
    (
        "union-to-one-of-its-types",
        ["null", "string"],
        "string",
        "BACKWARD",
        ["TYPE_MISMATCH"],
    ),
    ("type-to-union-with-promotion", "int", ["null", "long"], "BACKWARD", []),
    (
        "union-to-union-with-promotion",
        ["null", "int"],
        ["null", "long"],
        "BACKWARD",
        [],
    ),
    (
        "fixed-same",
        {"type": "fixed", "name": "F", "size": 4},
        {"type": "fixed", "name": "F", "size": 4},
        "FULL",
        [],
    ),
    (
        "fixed-size-changed",
        {"type": "fixed", "name": "F", "size": 4},
        {"type": "fixed", "name": "F", "size": 8},
        "BACKWARD",
        ["FIXED_SIZE_MISMATCH"],
    ),
    (
        "record-renamed",
        rec(f("a", "int")),
        rec(f("a", "int"), name="S"),
        "BACKWARD",
        ["NAME_MISMATCH"],
    ),
    (
        "record-renamed-with-alias",
        rec(f("a", "int")),
        rec(f("a", "int"), name="S", aliases=["R"]),
        "BACKWARD",
        [],
    ),
    (
        "namespace-changed",
        rec(f("a", "int"), namespace="x"),
        rec(f("a", "int"), namespace="y"),
        "FULL",
        [],
    ),
    (
        "field-renamed-with-alias",
        rec(f("a", "int")),
        rec(f("b", "int", aliases=["a"])),
        "BACKWARD",
        [],
    ),
    (
        "field-renamed-without-alias",
        rec(f("a", "int")),
        rec(f("b", "int")),
        "BACKWARD",
        ["READER_FIELD_MISSING_DEFAULT_VALUE"],
    ),
    (
        "array-items-promoted",
        {"type": "array", "items": "int"},
        {"type": "array", "items": "long"},
        "BACKWARD",
        [],
    ),
    (
        "array-items-narrowed",
        {"type": "array", "items": "long"},
        {"type": "array", "items": "int"},
        "BACKWARD",
        ["TYPE_MISMATCH"],
    ),
    (
        "map-values-string-to-bytes",
        {"type": "map", "values": "string"},
        {"type": "map", "values": "bytes"},
        "FULL",
        [],
    ),
    (
        "map-values-changed",
        {"type": "map", "values": "string"},
        {"type": "map", "values": "int"},
        "BACKWARD",
        ["TYPE_MISMATCH"],
    ),
    (
        "array-to-map",
        {"type": "array", "items": "int"},
        {"type": "map", "values": "int"},
        "BACKWARD",
        ["TYPE_MISMATCH"],
    ),
    (
        "nested-field-without-default",
        rec(f("n", rec(f("a", "int"), name="N"))),
        rec(f("n", rec(f("a", "int"), f("b", "int"), name="N"))),
        "BACKWARD",
        ["READER_FIELD_MISSING_DEFAULT_VALUE"],
    ),
    (
        "nested-field-with-default",
        rec(f("n", rec(f("a", "int"), name="N"))),
        rec(f("n", rec(f("a", "int"), f("b", "int", default=0), name="N"))),
        "FULL",
        [],
    ),
    ("recursive-identical", NODE, NODE, "FULL", []),
    ("recursive-field-with-default", NODE, NODE2, "FULL", []),
    (
        "logical-type-dropped",
        {"type": "long", "logicalType": "timestamp-millis"},
        "long",
        "FULL",
        [],
    ),
    (
        "doc-and-default-changed",
        rec(f("a", "int", doc="x", default=1)),
        rec(f("a", "int", doc="y", default=2)),
        "FULL",
        [],
    ),
    (
        "two-problems-both-named",
        rec(f("a", "int")),
        rec(f("a", "string"), f("b", "int")),
        "BACKWARD",
        ["TYPE_MISMATCH", "READER_FIELD_MISSING_DEFAULT_VALUE"],
    ),
    ("none-accepts-anything", "int", "string", "NONE", []),
]


@table_cases(TABLE)
def test_compatibility_table(
    old: Any, new: Any, level: str, expected: list[str]
) -> None:
    errors = check_table_case(avro, old, new, level, expected)
    if expected and not level.startswith("FULL"):
        assert errors[-2] == f"{{oldSchema: '{avro(old).canonical}'}}"


def test_messages_name_path_and_field() -> None:
    old = avro(rec(f("a", "int")))
    new = avro(rec(f("a", "int"), f("b", "int"), f("x", "string")))
    errors = check_compatibility(new, [old], "BACKWARD")
    assert errors[1] == (
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'x' at path "
        "'/fields/2' in the new schema has no default value and is missing in the old schema', "
        "additionalInfo:'x'}"
    )
    mismatch = check_compatibility(
        avro(rec(f("a", "int"))), [avro(rec(f("a", "long")))], "BACKWARD"
    )
    assert mismatch[0] == (
        "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field in "
        "the new schema does not match with the old schema', additionalInfo:'reader type: INT not "
        "compatible with writer type: LONG'}"
    )
    symbols = check_compatibility(
        avro(enum("A")), [avro(enum("A", "C", "B"))], "BACKWARD"
    )
    assert "additionalInfo:'[B, C]'" in symbols[0]
    forward = check_compatibility(
        avro(rec(f("a", "int"))), [avro(rec(f("a", "int"), f("b", "int")))], "FORWARD"
    )
    assert (
        "in the old schema has no default value and is missing in the new schema"
        in forward[0]
    )


# ----------------------------------------------------------------------------- hypothesis

_names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_primitives = st.sampled_from(
    ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
)


def _type_of(schema: Any) -> Any:
    return schema.get("type") if isinstance(schema, dict) else schema


@st.composite
def schemas(draw: st.DrawFn) -> Any:
    counter = iter(range(1000))

    def named(kind: str) -> str:
        return f"T{kind}{next(counter)}"

    def node(depth: int) -> st.SearchStrategy[Any]:
        leaves = st.one_of(
            _primitives,
            st.builds(
                lambda s: {
                    "type": "enum",
                    "name": named("e"),
                    "symbols": sorted(set(s)),
                },
                st.lists(
                    st.from_regex(r"[A-Z]{1,3}", fullmatch=True), min_size=1, max_size=4
                ),
            ),
            st.builds(
                lambda n: {"type": "fixed", "name": named("f"), "size": n},
                st.integers(0, 32),
            ),
            st.builds(lambda t: {"type": t, "logicalType": "x-custom"}, _primitives),
        )
        if depth >= 2:
            return leaves
        inner = node(depth + 1)
        return st.one_of(
            leaves,
            st.builds(lambda t: {"type": "array", "items": t}, inner),
            st.builds(lambda t: {"type": "map", "values": t}, inner),
            st.builds(
                lambda t: ["null", t] if _type_of(t) != "null" else ["null"],
                inner.filter(lambda t: not isinstance(t, list)),
            ),
            st.builds(
                lambda fields, ns: {
                    "type": "record",
                    "name": named("r"),
                    **({"namespace": ns} if ns else {}),
                    "fields": [{"name": n, "type": t} for n, t in fields.items()],
                },
                st.dictionaries(_names, inner, max_size=4),
                st.sampled_from([None, "a.b", "c"]),
            ),
        )

    return draw(node(0))


@given(schemas())
def test_canonical_text_parses_to_the_same_schema(schema: Any) -> None:
    parsed = avro(schema)
    assert avro(parsed.canonical) == parsed
    normalized = parsed.normalize()
    assert normalized.normalize() == normalized
    assert avro(normalized.canonical).normalize() == normalized
    assert (
        check_compatibility(parsed, [avro(parsed.canonical)], "FULL_TRANSITIVE") == []
    )


def test_locations_follow_avro_java() -> None:
    # A writer union branch the reader union cannot read: one MISSING_UNION_BRANCH at
    # the branch's index.
    old = avro(rec(f("u", ["null", "string", "int"])))
    new = avro(rec(f("u", ["null", "string"])))
    errors = check_compatibility(new, [old], "BACKWARD")
    assert errors[0] == (
        "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type "
        "inside a union field at path '/fields/0/type/2' in the old schema', "
        "additionalInfo:'reader union lacking writer type: INT'}"
    )
    # A reader that is not a union reads each writer branch at the same location.
    errors = check_compatibility(avro(rec(f("u", "string"))), [old], "BACKWARD")
    assert [e.split("path '")[1].split("'")[0] for e in errors[:2]] == [
        "/fields/0/type",
        "/fields/0/type",
    ]
    # A renamed record reports its name and its fields.
    renamed = avro(rec(f("a", "int"), f("b", "int"), name="S"))
    errors = check_compatibility(renamed, [avro(rec(f("a", "int")))], "BACKWARD")
    assert [e.split("'")[1] for e in errors[:2]] == [
        "NAME_MISMATCH",
        "READER_FIELD_MISSING_DEFAULT_VALUE",
    ]
    assert "(path '/name')" in errors[0]
