"""Compact JSON as Jackson writes it: Java's Double.toString for floats."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto.registry.schemas import InvalidSchemaError, parse_schema
from kproto.registry.schemas._json_text import dumps, java_double, loads


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.5, "0.5"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (1e7, "1.0E7"),
        (1234567.5, "1234567.5"),
        (12345678.0, "1.2345678E7"),
        (1e30, "1.0E30"),
        (-2.5e-7, "-2.5E-7"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
    ],
)
def test_java_double(value: float, text: str) -> None:
    assert java_double(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_reads_back(value: float) -> None:
    assert float(java_double(value)) == value or (
        value == 0 and math.copysign(1, value)
    )


def test_dumps_is_compact_and_keeps_order_and_non_ascii() -> None:
    assert (
        dumps({"b": [1, 2.0, None, True], "a": "é\n"})
        == '{"b":[1,2.0,null,true],"a":"é\\n"}'
    )


def test_numbers_inside_strings_are_left_alone() -> None:
    value = {'k"1.5e3': [1.5e3, 'x 1.5 \\" 2.0', 3, 1e-9]}
    assert dumps(value) == '{"k\\"1.5e3":[1500.0,"x 1.5 \\\\\\" 2.0",3,1.0E-9]}'


def test_nan_is_not_json() -> None:
    with pytest.raises(ValueError):
        loads('{"a": NaN}')
    with pytest.raises(InvalidSchemaError, match="not JSON"):
        parse_schema("JSON", '{"type": "number", "maximum": Infinity}')


def test_schemas_print_floats_as_confluent() -> None:
    parsed = parse_schema(
        "JSON", '{"type": "number", "minimum": 1e-7, "maximum": 1E30}'
    )
    assert parsed.canonical == '{"type":"number","minimum":1.0E-7,"maximum":1.0E30}'
    avro = parse_schema(
        "AVRO",
        '{"type":"record","name":"R","fields":[{"name":"x","type":"double","default":1e7}]}',
    )
    assert '"default":1.0E7' in avro.canonical
