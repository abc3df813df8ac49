"""Avro's schema resolution (specification, "Schema Resolution"): values written
with one schema, read into another, against fastavro's resolution of the same
bytes, on both decoders; and the pairs that do not resolve."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from kproto.avro import AvroDecodeError, AvroSchemaError, avro_plan
from tests.avro.avro_testlib import decode, decode_arrow, expected_arrow, read, write


def rec(*fields: dict[str, Any], name: str = "R", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def check(writer: Any, reader: Any, records: list[Any]) -> list[Any]:
    """kproto's resolution of ``records`` equals fastavro's; returns the rows."""
    values = write(writer, records)
    got = decode_arrow(writer, values, reader)
    want = expected_arrow(reader, read(writer, values, reader))
    assert got.type == want.type
    assert got.to_pylist() == want.to_pylist()
    return list(got.to_pylist())


@pytest.mark.parametrize(
    "w, r, value",
    [
        ("int", "long", -5),
        ("int", "float", 16777217),
        ("int", "double", 2**31 - 1),
        ("long", "float", 2**40 + 1),
        ("long", "double", -(2**53) - 1),
        ("float", "double", 0.1),
        ("string", "bytes", "ü"),
        ("bytes", "string", b"ok"),
    ],
)
def test_promotions(w: str, r: str, value: Any) -> None:
    check(rec({"name": "v", "type": w}), rec({"name": "v", "type": r}), [{"v": value}])


def test_int_promoted_to_timestamp_millis_is_scaled() -> None:
    writer = rec({"name": "t", "type": "int"})
    reader = rec(
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}}
    )
    values = write(writer, [{"t": 1500}, {"t": -(2**31)}])
    # the reader's logical type reads the promoted long (Java's; fastavro skips it)
    got = decode_arrow(writer, values, reader).field("t").cast("int64").to_pylist()
    assert got == [1_500_000, -(2**31) * 1000]


def test_fields_added_with_defaults_and_removed_fields_skipped() -> None:
    inner = rec(
        {"name": "p", "type": "int"}, {"name": "q", "type": "string"}, name="In"
    )
    writer = rec(
        {"name": "keep", "type": "int"},
        {"name": "gone_rec", "type": inner},
        {"name": "gone_arr", "type": {"type": "array", "items": ["null", "string"]}},
        {"name": "gone_map", "type": {"type": "map", "values": "double"}},
        {"name": "gone_u", "type": ["null", "long", "string"]},
        {"name": "gone_fx", "type": {"type": "fixed", "name": "F", "size": 3}},
        {"name": "gone_e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}},
        {"name": "last", "type": "string"},
    )
    reader = rec(
        {"name": "last", "type": "string"},
        {"name": "new_s", "type": "string", "default": "d"},
        {"name": "new_opt", "type": ["null", "long"], "default": None},
        {
            "name": "new_arr",
            "type": {"type": "array", "items": "int"},
            "default": [1, 2],
        },
        {
            "name": "new_map",
            "type": {"type": "map", "values": "int"},
            "default": {"k": 3},
        },
        {
            "name": "new_rec",
            "type": rec({"name": "z", "type": "double"}, name="Z"),
            "default": {"z": 1.5},
        },
        {"name": "new_b", "type": "bytes", "default": "\u00ff\u0000"},
        {
            "name": "new_dec",
            "type": {
                "type": "bytes",
                "logicalType": "decimal",
                "precision": 5,
                "scale": 2,
            },
            "default": "\u0004\u00d2",
        },
        {
            "name": "new_e",
            "type": {"type": "enum", "name": "E2", "symbols": ["X", "Y"]},
            "default": "Y",
        },
        {"name": "new_u", "type": ["string", "null"], "default": "first"},
        {"name": "keep", "type": "long"},
    )
    rows = check(
        writer,
        reader,
        [
            {
                "keep": i,
                "gone_rec": {"p": 1, "q": "x"},
                "gone_arr": [None, "s"],
                "gone_map": {"m": 1.0},
                "gone_u": [None, 3, "u"][i % 3],
                "gone_fx": b"abc",
                "gone_e": "A",
                "last": f"last{i}",
            }
            for i in range(4)
        ],
    )
    assert rows[2]["keep"] == 2 and rows[2]["new_arr"] == [1, 2]
    assert rows[0]["new_b"] == b"\xff\x00" and rows[0]["new_dec"] == Decimal("12.34")
    assert rows[0]["new_u"] == "first"


def test_enum_symbols_map_by_name_with_the_readers_default() -> None:
    writer = rec(
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}}
    )
    reader = rec(
        {
            "name": "e",
            "type": {
                "type": "enum",
                "name": "E",
                "symbols": ["C", "A", "Z"],
                "default": "Z",
            },
        }
    )
    assert check(writer, reader, [{"e": s} for s in "ABC"]) == [
        {"e": "A"},
        {"e": "Z"},
        {"e": "C"},
    ]


def test_enum_symbol_without_a_default_fails_only_when_used() -> None:
    writer = rec(
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}}
    )
    reader = rec({"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}})
    plan = avro_plan(json.dumps(writer), json.dumps(reader))
    values = write(writer, [{"e": "A"}, {"e": "B"}])
    assert decode(plan, values[:1]).errors == ()
    with pytest.raises(AvroDecodeError, match="record 1, byte 0: enum symbol not in"):
        decode(plan, values)


def test_unions_resolve_by_branch() -> None:
    # writer union -> reader union of other order and promoted branches
    check(
        rec({"name": "u", "type": ["null", "int", "string"]}),
        rec({"name": "u", "type": ["string", "long", "null"]}),
        [{"u": None}, {"u": 5}, {"u": "s"}],
    )
    # writer non-union -> reader union: Java's choice (Spark's), the branch of the
    # writer's own type before the first it promotes to; fastavro takes the first.
    writer = rec({"name": "u", "type": "int"})
    reader = rec({"name": "u", "type": ["null", "double", "int"]})
    got = decode_arrow(writer, write(writer, [{"u": 7}]), reader).to_pylist()
    assert got == [{"u": {"member0": None, "member1": 7}}]
    check(
        rec({"name": "u", "type": "int"}),
        rec({"name": "u", "type": ["null", "double"]}),
        [{"u": 7}],
    )
    # writer union -> reader non-union: each branch resolved on its own
    check(
        rec({"name": "u", "type": ["int", "long"]}),
        rec({"name": "u", "type": "double"}),
        [{"u": 1}, {"u": 2**40}],
    )


def test_writer_branch_without_a_reader_match_fails_when_used() -> None:
    writer = rec({"name": "u", "type": ["null", "string"]})
    reader = rec({"name": "u", "type": "string"})
    plan = avro_plan(json.dumps(writer), json.dumps(reader))
    values = write(writer, [{"u": "x"}, {"u": None}])
    cols = decode(plan, values, mode="PERMISSIVE")
    assert [e[:3] for e in cols.errors] == [(1, None, 13)]
    assert "no match in the reader's schema" in cols.error_messages()[1]


def test_aliases_of_records_and_fields() -> None:
    writer = rec({"name": "old_name", "type": "int"}, name="OldRec", namespace="a.b")
    reader = rec(
        {"name": "new_name", "type": "long", "aliases": ["old_name"]},
        name="NewRec",
        aliases=["a.b.OldRec"],
    )
    values = write(writer, [{"old_name": 4}])
    assert decode_arrow(writer, values, reader).to_pylist() == [{"new_name": 4}]


@pytest.mark.parametrize(
    "writer, reader, match",
    [
        ("string", "int", "does not resolve"),
        (
            rec({"name": "a", "type": "int"}),
            rec({"name": "b", "type": "int"}),
            "without a default",
        ),
        (
            rec({"name": "a", "type": "int"}),
            rec({"name": "a", "type": "int"}, name="Other"),
            "does not resolve",
        ),
        (
            {"type": "fixed", "name": "F", "size": 2},
            {"type": "fixed", "name": "F", "size": 3},
            "does not resolve",
        ),
        ("long", ["null", "int"], "matches no branch"),
        ("double", "float", "does not resolve"),
    ],
)
def test_pairs_that_do_not_resolve(writer: Any, reader: Any, match: str) -> None:
    with pytest.raises(AvroSchemaError, match=match):
        avro_plan(json.dumps(writer), json.dumps(reader))


@pytest.mark.parametrize(
    "schema, match",
    [
        (rec({"name": "next", "type": ["null", "R"]}), "recursive"),
        ({"type": "bytes", "logicalType": "decimal", "precision": 39}, "above 38"),
        ({"type": "record", "fields": []}, "without a name"),
        (["int", "int"], "two union branches"),
        ("Nope", "unknown type"),
        (
            {"type": "enum", "name": "E", "symbols": ["A"], "default": "B"},
            "not a symbol",
        ),
    ],
)
def test_schemas_refused(schema: Any, match: str) -> None:
    with pytest.raises(AvroSchemaError, match=match):
        avro_plan(json.dumps(schema))


@pytest.mark.parametrize(
    "field_type, default",
    [
        ("int", "x"),
        ("int", 2**31),
        ("string", 1),
        (["null", "int"], 3),
        ("boolean", 0),
        ({"type": "fixed", "name": "F", "size": 2}, "abc"),
        ("float", 1e39),
    ],
)
def test_bad_defaults_are_schema_errors(field_type: Any, default: Any) -> None:
    writer = rec({"name": "a", "type": "int"})
    reader = rec(
        {"name": "a", "type": "int"},
        {"name": "b", "type": field_type, "default": default},
    )
    with pytest.raises(AvroSchemaError, match=r"\$\.b: default"):
        avro_plan(json.dumps(writer), json.dumps(reader))
