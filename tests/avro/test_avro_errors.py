"""Bad values: FAILFAST raises :class:`AvroDecodeError` naming the record, schema id,
byte and reason; PERMISSIVE gives a null row and an error per bad record; bounds
hold (no read past a value, no allocation a block count asks for without the bytes
to back it), on both decoders."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kproto.avro import AvroDecodeError, avro_plan, decode_avro
from kproto.avro._decode import (
    E_BLOCK,
    E_BOOL,
    E_DECIMAL,
    E_ENUM,
    E_INT,
    E_LONG,
    E_MAGIC,
    E_NEG_LENGTH,
    E_SCHEMA_ID,
    E_TIMESTAMP,
    E_TRAILING,
    E_TRUNCATED,
    E_UNION,
    E_UTF8,
)
from kproto.avro.arrow import error_array, to_arrow
from tests.avro.avro_testlib import column, decode, framed, write

SCHEMA = {
    "type": "record",
    "name": "R",
    "fields": [{"name": "a", "type": "long"}, {"name": "s", "type": "string"}],
}
PLAN = avro_plan(json.dumps(SCHEMA))
GOOD = write(SCHEMA, [{"a": 1, "s": "one"}, {"a": 2, "s": "two"}])


def plan_of(schema: Any) -> Any:
    return avro_plan(json.dumps(schema))


def test_failfast_names_record_schema_id_byte_and_reason() -> None:
    bad = framed(5, GOOD[0][:-1])  # the string ends one byte early
    values = [framed(5, GOOD[0]), bad]
    with pytest.raises(AvroDecodeError) as info:
        decode({5: PLAN}, values)
    e = info.value
    assert (e.index, e.schema_id, e.code, e.position) == (1, 5, E_TRUNCATED, 6)
    assert str(e) == "record 1 (schema id 5), byte 6: value ends early"
    assert isinstance(e, ValueError)


def test_permissive_null_rows_and_error_strings() -> None:
    values = [GOOD[0], GOOD[0] + b"\x00", GOOD[1][:1], None, GOOD[1]]
    cols = decode(PLAN, values, mode="PERMISSIVE")
    arr = to_arrow(cols)
    arr.validate(full=True)
    assert arr.to_pylist() == [
        {"a": 1, "s": "one"},
        None,
        None,
        None,
        {"a": 2, "s": "two"},
    ]
    assert [(e[0], e[2], e[3]) for e in cols.errors] == [
        (1, E_TRAILING, 5),
        (2, E_TRUNCATED, 1),
    ]
    assert error_array(cols).to_pylist() == [
        None,
        "record 1, byte 5: bytes left after the value",
        "record 2, byte 1: value ends early",
        None,
        None,
    ]


def test_failed_record_leaves_no_partial_rows_in_nested_columns() -> None:
    schema = {
        "type": "record",
        "name": "N",
        "fields": [
            {"name": "xs", "type": {"type": "array", "items": "string"}},
            {"name": "m", "type": {"type": "map", "values": ["null", "int", "string"]}},
            {"name": "tail", "type": "boolean"},
        ],
    }
    plan = plan_of(schema)
    ok = write(schema, [{"xs": ["a", "b"], "m": {"k": 1, "j": "s"}, "tail": True}])[0]
    cut = [ok[:n] for n in range(len(ok))]
    cols = decode(plan, [ok, *cut, ok], mode="PERMISSIVE")
    arr = to_arrow(cols)
    arr.validate(full=True)
    rows = arr.to_pylist()
    assert rows[0] == rows[-1] and rows[0] is not None
    assert rows[1:-1] == [None] * len(cut)
    assert len(cols.errors) == len(cut)


@pytest.mark.parametrize(
    "schema, value, code, position",
    [
        ("long", b"\xff" * 10 + b"\x01", E_LONG, 0),
        ("long", b"\x80" * 9 + b"\x02", E_LONG, 0),
        ("int", b"\xff\xff\xff\xff\x10", E_INT, 0),
        ("int", b"\x80", E_TRUNCATED, 0),
        ("string", b"\x01", E_NEG_LENGTH, 0),
        ("string", b"\x06ab", E_TRUNCATED, 0),
        ("string", b"\x02\xff", E_UTF8, 0),
        ("string", b"\x04\xed\xa0", E_UTF8, 0),  # a cut sequence
        ("string", b"\x06\xed\xa0\x80", E_UTF8, 0),  # a surrogate
        ("bytes", b"\x02\xff", None, None),
        ("boolean", b"\x02", E_BOOL, 0),
        ("double", b"\x00" * 7, E_TRUNCATED, 0),
        (["null", "int"], b"\x04", E_UNION, 0),
        (["null", "int"], b"\x01", E_UNION, 0),
        ({"type": "enum", "name": "E", "symbols": ["A"]}, b"\x02", E_ENUM, 0),
        (
            {"type": "array", "items": "long"},
            b"\x80\x80\x80\x80\x10\x01\x02\x03",
            E_BLOCK,
            0,
        ),
        ({"type": "array", "items": "long"}, b"\x06\x02\x04", E_BLOCK, 0),
        ({"type": "array", "items": "long"}, b"\x02\x80", E_TRUNCATED, 1),
        ({"type": "array", "items": "long"}, b"\x03\x7f\x02", E_NEG_LENGTH, 0),
        ({"type": "array", "items": "double"}, b"\x02" + b"\x00" * 7, E_BLOCK, 0),
        ({"type": "array", "items": "null"}, b"\x82\x80\x08\x00", E_BLOCK, 0),
        ({"type": "array", "items": "null"}, b"\x80\x80\x08\x00", None, None),
        (
            {"type": "map", "values": "null"},
            b"\x80\x80\x80\x80\x10\x00\x00\x00",
            E_BLOCK,
            0,
        ),
        ({"type": "map", "values": "int"}, b"\x02\x02\xc3\x00\x00", E_UTF8, 1),
        ({"type": "fixed", "name": "F", "size": 3}, b"\x00\x00", E_TRUNCATED, 0),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 0},
            b"\x02\x64",
            E_DECIMAL,
            0,
        ),  # 100 has 3 digits
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 0},
            b"\x02\x9d",
            None,
            None,
        ),  # -99
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0},
            b"\x22" + b"\x00" * 17,
            None,
            None,
        ),  # 17 bytes of zeros
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0},
            b"\x22\x01" + b"\x00" * 16,
            E_DECIMAL,
            0,
        ),
        (
            {"type": "long", "logicalType": "timestamp-millis"},
            b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01",
            E_TIMESTAMP,
            0,
        ),
    ],
)
def test_bad_values(
    schema: Any, value: bytes, code: int | None, position: int | None
) -> None:
    plan = plan_of(schema)
    cols = decode(plan, [value], mode="PERMISSIVE")
    if code is None:
        assert cols.errors == ()
        to_arrow(cols).validate(full=True)
    else:
        assert [(e[2], e[3]) for e in cols.errors] == [(code, position)]
        assert to_arrow(cols).to_pylist() == [None]


def test_block_count_of_2_31_with_3_bytes_left_is_an_error() -> None:
    plan = plan_of({"type": "array", "items": "int"})
    value = b"\x80\x80\x80\x80\x10" + b"\x02\x02\x02"  # 2**31 items, 3 bytes
    with pytest.raises(AvroDecodeError, match="block count past the value's end"):
        decode(plan, [value])


def test_wire_format_errors() -> None:
    raw = GOOD[0]
    values = [b"", b"\x01" + raw, b"\x00\x00\x00", framed(9, raw), framed(1, raw)]
    cols = decode({1: PLAN}, values, mode="PERMISSIVE")
    assert [(e[0], e[1], e[2], e[3]) for e in cols.errors] == [
        (0, None, E_TRUNCATED, 0),
        (1, None, E_MAGIC, 0),
        (2, None, E_TRUNCATED, 1),
        (3, 9, E_SCHEMA_ID, 1),
    ]
    assert to_arrow(cols).to_pylist()[4] == {"a": 1, "s": "one"}


def test_api_errors() -> None:
    n, offsets, validity, data = column(list(GOOD))
    with pytest.raises(ValueError, match="mode"):
        decode_avro(PLAN, n, offsets, validity, data, mode="DROPMALFORMED")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fewer than"):
        decode_avro(PLAN, n + 1, offsets, validity, data)
    with pytest.raises(ValueError, match="different reader"):
        decode_avro({1: PLAN, 2: plan_of("long")}, n, offsets, validity, data)
    with pytest.raises(ValueError, match="offsets"):
        decode_avro(PLAN, n, offsets, validity, data[:-1])
