"""Hypothesis: random schemas and values; fastavro writes, kproto reads (both
decoders), and the Arrow result equals fastavro's own reading mapped to Arrow."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.avro.avro_testlib import decode_arrow, expected_arrow, read, write

UTC = datetime.UTC
Gen = tuple[Any, st.SearchStrategy[Any]]
_ms = st.integers(0, 999).map(lambda m: m * 1000)


def _dt(aware: bool, millis: bool) -> st.SearchStrategy[datetime.datetime]:
    s = st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1))
    if millis:
        s = st.builds(lambda d, us: d.replace(microsecond=us), s, _ms)
    return s.map(lambda d: d.replace(tzinfo=UTC)) if aware else s


def _timestamps() -> dict[str, Gen]:
    """The four timestamp logical types on a long: UTC (aware datetimes) or
    ``local-`` (naive), in millis or micros."""
    return {
        name: ({"type": "long", "logicalType": name}, _dt(aware, unit == "millis"))
        for aware, prefix in ((True, ""), (False, "local-"))
        for unit in ("millis", "micros")
        for name in [f"{prefix}timestamp-{unit}"]
    }


def _decimal(p: int, s: int) -> st.SearchStrategy[Decimal]:
    bound = 10**p - 1
    return st.integers(-bound, bound).map(lambda n: Decimal(n).scaleb(-s))


LEAVES: dict[str, Gen] = {
    "null": ("null", st.none()),
    "boolean": ("boolean", st.booleans()),
    "int": ("int", st.integers(-(2**31), 2**31 - 1)),
    "long": ("long", st.integers(-(2**63), 2**63 - 1)),
    "float": ("float", st.floats(width=32, allow_nan=False)),
    "double": ("double", st.floats(allow_nan=False)),
    "string": ("string", st.text(max_size=12)),
    "bytes": ("bytes", st.binary(max_size=12)),
    "date": ({"type": "int", "logicalType": "date"}, st.dates()),
    "time-millis": (
        {"type": "int", "logicalType": "time-millis"},
        st.builds(lambda t, us: t.replace(microsecond=us), st.times(), _ms),
    ),
    "time-micros": ({"type": "long", "logicalType": "time-micros"}, st.times()),
    **_timestamps(),
    "uuid": ({"type": "string", "logicalType": "uuid"}, st.uuids().map(str)),
    "decimal": (
        {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
        _decimal(12, 3),
    ),
}
# Union branches fastavro's writer tells apart by the value's Python type.
UNION_CLASSES = [
    ("null",),
    ("boolean",),
    ("int", "long"),
    ("float", "double"),
    ("string",),
    ("bytes",),
    ("array",),
    ("record",),
]


@st.composite
def schemas(draw: st.DrawFn, depth: int = 0, names: list[int] | None = None) -> Gen:
    names = [0] if names is None else names
    options = list(LEAVES) + ["fixed", "enum", "decimal-fixed"]
    if depth < 3:
        options += ["record", "array", "map", "union"] * 3
    kind = draw(st.sampled_from(options))
    if kind in LEAVES:
        return LEAVES[kind]
    names[0] += 1
    name = f"T{names[0]}"
    if kind == "fixed":
        size = draw(st.integers(0, 5))
        return {"type": "fixed", "name": name, "size": size}, st.binary(
            min_size=size, max_size=size
        )
    if kind == "decimal-fixed":
        schema = {
            "type": "fixed",
            "name": name,
            "size": 8,
            "logicalType": "decimal",
            "precision": 18,
            "scale": 2,
        }
        return schema, _decimal(18, 2)
    if kind == "enum":
        symbols = [f"S{i}" for i in range(draw(st.integers(1, 4)))]
        return {"type": "enum", "name": name, "symbols": symbols}, st.sampled_from(
            symbols
        )
    if kind == "record":
        count = draw(st.integers(0, 4))
        return _record(name, [draw(schemas(depth + 1, names)) for _ in range(count)])
    if kind == "array":
        items, values = draw(schemas(depth + 1, names))
        return {"type": "array", "items": items}, st.lists(values, max_size=4)
    if kind == "map":
        items, values = draw(schemas(depth + 1, names))
        return {"type": "map", "values": items}, st.dictionaries(
            st.text(max_size=5), values, max_size=3
        )
    classes = draw(
        st.lists(st.sampled_from(UNION_CLASSES), min_size=1, max_size=3, unique=True)
    )
    if ("boolean",) in classes and ("int", "long") in classes:
        classes.remove(("boolean",))
    branches: list[Gen] = []
    for cls in classes:
        k = draw(st.sampled_from(cls))
        if k == "array":
            items, values = draw(schemas(depth + 1, names))
            branches.append(
                ({"type": "array", "items": items}, st.lists(values, max_size=3))
            )
        elif k == "record":
            branches.append(_record_branch(draw, depth, names))
        else:
            branches.append(LEAVES[k])
    return [b for b, _ in branches], st.one_of([v for _, v in branches])


def _record_branch(draw: st.DrawFn, depth: int, names: list[int]) -> Gen:
    names[0] += 1
    name = f"T{names[0]}"
    count = draw(st.integers(1, 3))
    return _record(name, [draw(schemas(depth + 1, names)) for _ in range(count)])


def _record(name: str, fields: list[Gen]) -> Gen:
    """A record ``name`` of ``fields`` (f0, f1, ...) and its values' strategy."""
    schema = {
        "type": "record",
        "name": name,
        "fields": [{"name": f"f{i}", "type": s} for i, (s, _) in enumerate(fields)],
    }
    return schema, st.fixed_dictionaries(
        {f"f{i}": v for i, (_, v) in enumerate(fields)}
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, list[Any]]:
    schema, values = draw(schemas())
    return schema, draw(st.lists(values, min_size=1, max_size=5))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_schemas_and_values_equal_fastavro(case: tuple[Any, list[Any]]) -> None:
    schema, records = case
    schema = json.loads(json.dumps(schema))
    values = write(schema, records)
    got = decode_arrow(schema, list(values))
    got.validate(full=True)
    want = expected_arrow(schema, read(schema, values))
    assert got.type == want.type
    assert got.to_pylist() == want.to_pylist()
