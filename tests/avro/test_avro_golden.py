"""Golden values: every Avro type and logical type, decoded by kproto into Arrow,
against fastavro's ``schemaless_reader`` of the same bytes (mapped to Arrow as
spark-avro's ``SchemaConverters`` maps the types), on both decoders."""

from __future__ import annotations

import datetime
import json
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from kproto.avro import avro_plan, decode_avro, decode_avro_values
from kproto.avro.arrow import arrow_type, to_arrow
from tests.avro.avro_testlib import (
    column,
    decode_arrow,
    expected_arrow,
    framed,
    read,
    write,
)

UTC = datetime.UTC
INNER = {
    "type": "record",
    "name": "Inner",
    "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": ["null", "string"]}],
}
EVERY: dict[str, Any] = {
    "type": "record",
    "name": "Every",
    "namespace": "golden",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "by", "type": "bytes"},
        {"name": "s", "type": "string"},
        {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {
            "name": "e",
            "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]},
        },
        {"name": "rec", "type": INNER},
        {"name": "arr", "type": {"type": "array", "items": "int"}},
        {"name": "mp", "type": {"type": "map", "values": "string"}},
        {"name": "opt", "type": ["null", "string"]},
        {"name": "u3", "type": ["int", "string", "null"]},
        {"name": "il", "type": ["int", "long"]},
        {"name": "fd", "type": ["float", "double"]},
        {"name": "date", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tus", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {
            "name": "lts_ms",
            "type": {"type": "long", "logicalType": "local-timestamp-millis"},
        },
        {
            "name": "lts_us",
            "type": {"type": "long", "logicalType": "local-timestamp-micros"},
        },
        {
            "name": "dec",
            "type": {
                "type": "bytes",
                "logicalType": "decimal",
                "precision": 10,
                "scale": 2,
            },
        },
        {
            "name": "decf",
            "type": {
                "type": "fixed",
                "name": "D8",
                "size": 8,
                "logicalType": "decimal",
                "precision": 18,
                "scale": 4,
            },
        },
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "recs", "type": {"type": "array", "items": "Inner"}},
        {
            "name": "marr",
            "type": {"type": "map", "values": {"type": "array", "items": "long"}},
        },
        {"name": "orec", "type": ["null", "Inner"]},
    ],
}


def every(i: int) -> dict[str, Any]:
    return {
        "n": None,
        "b": i % 2 == 0,
        "i": -(2**31) if i == 1 else i * 7 - 3,
        "l": 2**63 - 1 if i == 1 else -i * 10**12,
        "f": 1.5 * i,
        "d": -2.25 * i,
        "by": bytes(range(i)),
        "s": "héllo ✓ 𝄞" * (i % 3),
        "fx": bytes([i, 255, 0, 7]),
        "e": "ABC"[i % 3],
        "rec": {"x": i, "y": None if i % 2 else f"y{i}"},
        "arr": list(range(i)),
        "mp": {f"k{j}": "v" * j for j in range(i % 4)},
        "opt": None if i % 3 == 0 else "opt",
        "u3": [None, 5, "five"][i % 3],
        "il": i * 3,
        "fd": i / 4,
        "date": datetime.date(2024, 2, 29) + datetime.timedelta(days=i),
        "tms": datetime.time(12, 34, 56, 789000),
        "tus": datetime.time(23, 59, 59, 999999),
        "ts_ms": datetime.datetime(2026, 11, 28, 18, 0, 0, 123000, tzinfo=UTC)
        + datetime.timedelta(days=i),
        "ts_us": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "lts_ms": datetime.datetime(2000, 1, 1, 0, 0, 0, 1000),
        "lts_us": datetime.datetime(2000, 1, 1, 0, 0, 0, 1),
        "dec": Decimal("-12345678.90") if i == 1 else Decimal(i) / 100,
        "decf": Decimal("99999999999999.9999") if i == 2 else Decimal(-i),
        "uid": str(uuid.UUID(int=i)),
        "recs": [{"x": j, "y": str(j)} for j in range(i % 3)],
        "marr": {"a": [i, -i], "b": []},
        "orec": None if i % 2 else {"x": -i, "y": "o"},
    }


RECORDS = [every(i) for i in range(6)]


def test_every_type_equals_fastavro() -> None:
    values = write(EVERY, RECORDS)
    got = decode_arrow(EVERY, values)
    want = expected_arrow(EVERY, read(EVERY, values))
    assert got.type == want.type
    assert got.to_pylist() == want.to_pylist()
    assert got.equals(want)
    got.validate(full=True)


def test_type_mapping_is_spark_avros() -> None:
    t = arrow_type(avro_plan(json.dumps(EVERY)).column)
    inner = pa.struct([pa.field("x", pa.int32(), False), pa.field("y", pa.string())])
    want = {
        "n": pa.null(),
        "b": pa.bool_(),
        "i": pa.int32(),
        "l": pa.int64(),
        "f": pa.float32(),
        "d": pa.float64(),
        "by": pa.binary(),
        "s": pa.string(),
        "fx": pa.binary(),
        "e": pa.string(),
        "rec": inner,
        "arr": pa.list_(pa.field("element", pa.int32(), False)),
        "mp": pa.map_(pa.string(), pa.field("value", pa.string(), False)),
        "opt": pa.string(),
        "u3": pa.struct(
            [pa.field("member0", pa.int32()), pa.field("member1", pa.string())]
        ),
        "il": pa.int64(),
        "fd": pa.float64(),
        "date": pa.date32(),
        "tms": pa.int32(),
        "tus": pa.int64(),
        "ts_ms": pa.timestamp("us", tz="UTC"),
        "ts_us": pa.timestamp("us", tz="UTC"),
        "lts_ms": pa.timestamp("us"),
        "lts_us": pa.timestamp("us"),
        "dec": pa.decimal128(10, 2),
        "decf": pa.decimal128(18, 4),
        "uid": pa.string(),
        "recs": pa.list_(pa.field("element", inner, False)),
        "marr": pa.map_(
            pa.string(),
            pa.field("value", pa.list_(pa.field("element", pa.int64(), False)), False),
        ),
        "orec": inner,
    }
    assert [f.name for f in t] == list(want)
    for f in t:
        assert f.type == want[f.name], f.name
        assert f.nullable == (f.name in ("n", "opt", "u3", "orec")), f.name


@pytest.mark.parametrize(
    "schema, values",
    [
        ("string", ["", "a", "ünïcode"]),
        ("long", [0, -1, 2**63 - 1, -(2**63)]),
        ("int", [0, 2**31 - 1, -(2**31)]),
        ("double", [0.0, -1e308, float("inf")]),
        ("boolean", [True, False]),
        (["null", "long"], [None, 3]),
        ({"type": "array", "items": "string"}, [[], ["a", "b"]]),
        ({"type": "map", "values": "long"}, [{}, {"a": 1}]),
        ({"type": "enum", "name": "E", "symbols": ["X", "Y"]}, ["Y", "X"]),
    ],
)
def test_top_level_non_records(schema: Any, values: list[Any]) -> None:
    raw = write(schema, values)
    got = decode_arrow(schema, raw)
    assert got.equals(expected_arrow(schema, read(schema, raw)))


def test_null_values_are_null_rows() -> None:
    values = write(EVERY, RECORDS[:2])
    got = decode_arrow(EVERY, [values[0], None, values[1], None])
    assert got.is_null().to_pylist() == [False, True, False, True]
    want = expected_arrow(EVERY, read(EVERY, values)).to_pylist()
    assert got.to_pylist() == [want[0], None, want[1], None]
    got.validate(full=True)


def test_confluent_wire_format_with_plans_per_schema_id() -> None:
    old = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    new = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "a", "type": "long"},
            {"name": "b", "type": "string", "default": "dflt"},
        ],
    }
    plans = {
        7: avro_plan(json.dumps(old), json.dumps(new)),
        8: avro_plan(json.dumps(new)),
    }
    values = [
        framed(7, write(old, [{"a": 1}])[0]),
        framed(8, write(new, [{"a": 2, "b": "x"}])[0]),
        framed(7, write(old, [{"a": 3}])[0]),
    ]
    got = to_arrow(decode_avro(plans, *column(values)))
    assert got.to_pylist() == [
        {"a": 1, "b": "dflt"},
        {"a": 2, "b": "x"},
        {"a": 3, "b": "dflt"},
    ]


def test_fastavro_parsed_schema_is_accepted() -> None:
    import fastavro

    parsed = fastavro.parse_schema(json.loads(json.dumps(EVERY)))
    values = write(EVERY, RECORDS[:3])
    got = to_arrow(decode_avro(avro_plan(parsed), *column(list(values))))
    assert got.equals(decode_arrow(EVERY, list(values)))


def test_values_of_decoded_record_batches() -> None:
    from kproto.records import decode_arrow_columns, encode_batch

    values = write(EVERY, RECORDS)
    batch = encode_batch([(None, v) for v in values] + [(b"k", None)])
    cols = decode_arrow_columns(batch)
    got = to_arrow(decode_avro_values(cols, avro_plan(json.dumps(EVERY))))
    assert got.equals(decode_arrow(EVERY, [*values, None]))


def test_plans_of_schema_texts_are_cached() -> None:
    text = json.dumps(EVERY)
    assert avro_plan(text) is avro_plan(text)
    assert avro_plan(text, text) is not avro_plan(text)
