"""Helpers of the avro tests: Avro bytes from fastavro, Arrow binary columns of
them, and the Arrow array fastavro's decoded values make under the type mapping."""

from __future__ import annotations

import datetime
import io
import json
import uuid
from array import array
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa

from kproto.avro import AvroColumns, avro_plan, decode_avro, parse_schema
from kproto.avro._plan import union_shape
from kproto.avro._schema import Schema
from kproto.avro.arrow import arrow_type, to_arrow


def write(schema: Any, records: list[Any]) -> list[bytes]:
    """Each record in Avro binary (fastavro's ``schemaless_writer``)."""
    parsed = fastavro.parse_schema(json.loads(json.dumps(schema)))
    out = []
    for r in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        out.append(buf.getvalue())
    return out


def read(writer: Any, values: list[bytes], reader: Any = None) -> list[Any]:
    """fastavro's ``schemaless_reader`` of each value."""
    w = fastavro.parse_schema(json.loads(json.dumps(writer)))
    r = (
        None
        if reader is None
        else fastavro.parse_schema(json.loads(json.dumps(reader)))
    )
    return [fastavro.schemaless_reader(io.BytesIO(v), w, r) for v in values]


def framed(schema_id: int, value: bytes) -> bytes:
    """``value`` in Confluent's wire format."""
    return b"\x00" + schema_id.to_bytes(4, "big", signed=True) + value


def column(values: list[bytes | None]) -> tuple[int, bytes, bytes | None, bytes]:
    """``(count, offsets, validity, data)`` of an Arrow binary column."""
    offsets = array("i", [0])
    for v in values:
        offsets.append(offsets[-1] + (0 if v is None else len(v)))
    validity = None
    if None in values:
        bits = sum(1 << i for i, v in enumerate(values) if v is not None)
        validity = bits.to_bytes((len(values) + 7) // 8, "little")
    return len(values), offsets.tobytes(), validity, b"".join(v for v in values if v)


def decode(
    plans: Any, values: list[bytes | None], mode: Any = "FAILFAST"
) -> AvroColumns:
    return decode_avro(plans, *column(values), mode=mode)


def decode_arrow(
    writer: Any, values: list[bytes | None], reader: Any = None
) -> pa.Array:
    return to_arrow(
        decode(
            avro_plan(
                json.dumps(writer), None if reader is None else json.dumps(reader)
            ),
            values,
        )
    )


def _matches(s: Schema, v: Any) -> bool:
    k = s.kind
    if k == "null":
        return v is None
    if k == "boolean":
        return isinstance(v, bool)
    if s.logical == "decimal":
        return isinstance(v, Decimal)
    if s.logical == "uuid":
        return isinstance(v, (uuid.UUID, str))
    if s.logical == "date":
        return isinstance(v, datetime.date) and not isinstance(v, datetime.datetime)
    if s.logical in ("time-millis", "time-micros"):
        return isinstance(v, datetime.time)
    if s.logical and "timestamp" in s.logical:
        return isinstance(v, datetime.datetime)
    if k in ("int", "long"):
        return isinstance(v, int) and not isinstance(v, bool)
    if k in ("float", "double"):
        return isinstance(v, float)
    if k in ("string", "enum"):
        return isinstance(v, str)
    if k in ("bytes", "fixed"):
        return isinstance(v, bytes)
    if k == "array":
        return isinstance(v, list)
    return isinstance(v, dict)


def _micros(t: datetime.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def to_expected(s: Schema, v: Any) -> Any:
    """fastavro's value ``v`` of reader schema ``s`` as pyarrow takes it for the
    mapped Arrow type."""
    if s.kind == "union":
        if v is None:
            return None
        shape, rest = union_shape(s)
        j = next(i for i, b in enumerate(rest) if _matches(b, v))
        if shape != "struct":
            return to_expected(rest[j], v)
        return {
            f"member{i}": to_expected(b, v) if i == j else None
            for i, b in enumerate(rest)
        }
    if s.kind in ("bytes", "fixed") and isinstance(v, str):
        # fastavro returns a bytes default as its JSON text (code points 0-255)
        raw = v.encode("latin-1")
        if s.logical != "decimal":
            return raw
        return Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-s.scale)
    if s.logical == "time-millis":
        return _micros(v) // 1000
    if s.logical == "time-micros":
        return _micros(v)
    if s.logical == "uuid":
        return str(v)
    if s.kind == "record":
        return {f.name: to_expected(f.schema, v[f.name]) for f in s.fields}
    if s.kind == "array":
        assert s.items is not None
        return [to_expected(s.items, x) for x in v]
    if s.kind == "map":
        assert s.values is not None
        return [(k, to_expected(s.values, x)) for k, x in v.items()]
    return v


def expected_arrow(reader: Any, decoded: list[Any]) -> pa.Array:
    """The Arrow array of fastavro's decoded values of ``reader``."""
    s = parse_schema(json.dumps(reader))
    t = arrow_type(avro_plan(s).column)
    return pa.array([to_expected(s, v) for v in decoded], type=t)
