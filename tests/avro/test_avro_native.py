"""The C decoder (kproto._avro) against the Python reference, byte for byte.

On golden values, resolution plans and a bounded mutation loop over encoded values
(``KPROTO_FUZZ_CASES`` sets its size), and hypothesis schemas with their values,
mutated values and arbitrary bytes, both decoders give the same buffers and the
same errors (record, schema id, code, byte position)."""

from __future__ import annotations

import json
import os
import random
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproto import speedups
from kproto.avro import AvroPlan, avro_plan, decode_avro
from kproto.avro import _native as avro_native
from tests.avro.avro_testlib import column, framed, write
from tests.avro.test_avro_golden import EVERY, RECORDS
from tests.avro.test_avro_properties import cases
from tests.avro.test_avro_resolution import rec

pytestmark = pytest.mark.skipif(
    not (avro_native.available() and speedups.available()), reason="no C extension"
)


@pytest.fixture(scope="module")
def avro_path() -> str:
    """Overrides the conftest's: these tests pick each path themselves."""
    return "both"


def both(plans: Any, values: list[bytes | None]) -> tuple[Any, Any]:
    args = column(values)
    out = []
    for native in (True, False):
        with speedups.using(native):
            cols = decode_avro(plans, *args, mode="PERMISSIVE")
        out.append((cols.buffers, cols.errors))
    return out[0], out[1]


def assert_same(plans: Any, values: list[bytes | None]) -> Any:
    c, py = both(plans, values)
    assert c[1] == py[1], (c[1], py[1])
    for i, (a, b) in enumerate(zip(c[0], py[0], strict=True)):
        assert a == b, (i, a, b)
    return c


def test_golden_values_byte_equal() -> None:
    values: list[bytes | None] = list(write(EVERY, RECORDS))
    c = assert_same(avro_plan(json.dumps(EVERY)), values + [None] + values)
    assert c[1] == ()


def test_float_bits_kept() -> None:
    nan = struct.pack("<f", float("nan"))
    odd_nan = b"\x01\x00\xc0\x7f"  # a NaN with a payload
    schema = rec({"name": "f", "type": "float"}, {"name": "d", "type": "double"})
    reader = rec({"name": "f", "type": "double"}, {"name": "d", "type": "double"})
    values: list[bytes | None] = [nan + bytes(8), odd_nan + b"\x00" * 7 + b"\xf0\x7f"]
    assert_same(avro_plan(json.dumps(schema)), values)
    assert_same(avro_plan(json.dumps(schema), json.dumps(reader)), values)


def test_long_to_float_rounding() -> None:
    writer = rec({"name": "v", "type": "long"})
    reader = rec({"name": "v", "type": "float"})
    values = write(
        writer, [{"v": v} for v in (2**53 + 1, 2**63 - 1, -(2**62) - 3, 16777217)]
    )
    assert_same(avro_plan(json.dumps(writer), json.dumps(reader)), list(values))


NESTED: dict[str, Any] = rec(
    {
        "name": "m",
        "type": {
            "type": "map",
            "values": ["null", "long", "string", {"type": "array", "items": "int"}],
        },
    },
    {
        "name": "arr",
        "type": {
            "type": "array",
            "items": rec(
                {"name": "b", "type": "boolean"},
                {
                    "name": "e",
                    "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]},
                },
                {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 2}},
                name="Item",
            ),
        },
    },
    {
        "name": "dec",
        "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 1},
    },
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "nulls", "type": {"type": "array", "items": "null"}},
    name="Nested",
)
NESTED_RECORDS = [
    {
        "m": {"a": None, "b": 5, "c": "s", "d": [1, 2]},
        "arr": [{"b": True, "e": "B", "fx": b"xy"}],
        "dec": 12345,
        "ts": 1700000000000,
        "nulls": [None, None],
    },
    {"m": {}, "arr": [], "dec": -1, "ts": -5, "nulls": []},
]
NESTED_READER: dict[str, Any] = rec(
    {
        "name": "arr",
        "type": {
            "type": "array",
            "items": rec(
                {
                    "name": "e",
                    "type": {
                        "type": "enum",
                        "name": "E",
                        "symbols": ["B"],
                        "default": "B",
                    },
                },
                {"name": "extra", "type": ["null", "string"], "default": None},
                name="Item",
            ),
        },
    },
    {
        "name": "m",
        "type": {
            "type": "map",
            "values": ["null", "double", "bytes", {"type": "array", "items": "long"}],
        },
    },
    {"name": "added", "type": {"type": "map", "values": "int"}, "default": {"x": 1}},
    {
        "name": "ts",
        "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}],
    },
    name="Nested",
)


def _plans() -> list[tuple[Any, list[bytes]]]:
    from decimal import Decimal

    nested = [dict(r, dec=Decimal(r["dec"]) / 10) for r in NESTED_RECORDS]
    every = list(write(EVERY, RECORDS))
    raw_nested = list(write(NESTED, nested))
    resolved = avro_plan(json.dumps(NESTED), json.dumps(NESTED_READER))
    plans: dict[int, AvroPlan] = {
        3: avro_plan(json.dumps(NESTED)),
        4: avro_plan(json.dumps(NESTED)),
    }
    return [
        (avro_plan(json.dumps(EVERY)), every),
        (avro_plan(json.dumps(NESTED)), raw_nested),
        (resolved, raw_nested),
        (plans, [framed(3, v) for v in raw_nested]),
    ]


def _mutate(rng: random.Random, value: bytes) -> bytes:
    b = bytearray(value)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[min(i, len(b) - 1)] = rng.choice(
                (0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC3, 0xED)
            )
        elif op == 2:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op == 3:
            del b[i : i + rng.randint(1, 4)]
        elif op == 4:
            del b[i:]
        else:
            b[i:i] = rng.choice(
                (b"\x80\x80\x80\x80\x10", b"\xff" * 10, b"\x01", b"\x7f")
            )
    return bytes(b)


def test_mutated_values_fuzz() -> None:
    rng = random.Random(26)
    cases = int(os.environ.get("KPROTO_FUZZ_CASES", "1500"))
    plans = _plans()
    decoded = failed = 0
    for n in range(cases):
        plan, values = plans[n % len(plans)]
        batch: list[bytes | None] = [
            (
                _mutate(rng, rng.choice(values))
                if rng.random() < 0.8
                else rng.choice(values)
            )
            for _ in range(rng.randint(1, 6))
        ]
        _, errors = assert_same(plan, batch)
        failed += len(errors)
        decoded += len(batch) - len(errors)
    assert decoded and failed  # the loop reaches both outcomes


def test_plans_too_deep_for_c_fall_back_to_python() -> None:
    schema: Any = "long"
    value = b"\x02"
    for _ in range(250):
        schema = {"type": "array", "items": schema}
        value = b"\x02" + value + b"\x00"
    plan = avro_plan(json.dumps(schema))
    args = column([value, value[:-1]])
    with speedups.using(True):
        fallback = decode_avro(plan, *args, mode="PERMISSIVE")
    assert avro_native.compile_plan(plan) is None
    assert fallback.errors == ((1, None, 1, len(value) - 1),)
    with speedups.using(False):
        python = decode_avro(plan, *args, mode="PERMISSIVE")
    assert fallback == python
    assert python.buffers[-1][3] == (1).to_bytes(8, "little")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.lists(st.binary(max_size=40), max_size=4), st.randoms())
def test_random_schemas_and_bytes_decode_alike(
    case: tuple[Any, list[Any]], noise: list[bytes], rng: random.Random
) -> None:
    schema, records = case
    good = list(write(json.loads(json.dumps(schema)), records))
    values: list[bytes | None] = [*good, *noise, *(_mutate(rng, v) for v in good if v)]
    assert_same(avro_plan(json.dumps(schema)), values)
