"""Wrap :func:`~kproto.avro.decode_avro`'s buffers as pyarrow arrays, zero copy.

The one module of :mod:`kproto.avro` that imports pyarrow (for Spark and tests):
``pa.Array.from_buffers`` takes each column's buffers as they are.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from ._plan import BIN, BOOL, DEC, F32, F64, I32, I64, LIST, NULL, STRUCT, Column
from ._values import AvroColumns

__all__ = ["arrow_type", "error_array", "to_arrow"]

_SIMPLE: dict[str, Any] = {
    "null": pa.null(),
    "bool": pa.bool_(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "date32": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "local_timestamp": pa.timestamp("us"),
    "utf8": pa.string(),
    "binary": pa.binary(),
}


def arrow_type(column: Column) -> pa.DataType:
    """The Arrow type of ``column`` (spark-avro's Spark type, in Arrow terms)."""
    if column.arrow in _SIMPLE:
        return _SIMPLE[column.arrow]
    if column.arrow == "decimal":
        return pa.decimal128(column.precision, column.scale)
    if column.arrow == "struct":
        return pa.struct(
            [pa.field(n, arrow_type(c), nullable=z) for n, c, z in column.children]
        )
    if column.arrow == "list":
        name, item, nullable = column.children[0]
        return pa.list_(pa.field(name, arrow_type(item), nullable=nullable))
    entries = column.children[0][1]
    key = arrow_type(entries.children[0][1])
    _, value, nullable = entries.children[1]
    return pa.map_(key, pa.field("value", arrow_type(value), nullable=nullable))


def _buf(b: Any) -> pa.Buffer | None:
    return None if b is None else pa.py_buffer(b)


def _array(column: Column, buffers: tuple[tuple[Any, ...], ...]) -> pa.Array:
    n, nulls, validity, buf1, buf2 = buffers[column.index]
    t = arrow_type(column)
    k = column.kind
    if k == NULL:
        return pa.nulls(n)
    if k in (BOOL, I32, I64, F32, F64, DEC):
        return pa.Array.from_buffers(
            t, n, [_buf(validity), _buf(buf1)], null_count=nulls
        )
    if k == BIN:
        return pa.Array.from_buffers(
            t, n, [_buf(validity), _buf(buf1), _buf(buf2)], null_count=nulls
        )
    children = [_array(c, buffers) for _, c, _ in column.children]
    if k == STRUCT:
        return pa.Array.from_buffers(
            t, n, [_buf(validity)], null_count=nulls, children=children
        )
    assert k == LIST
    return pa.Array.from_buffers(
        t, n, [_buf(validity), _buf(buf1)], null_count=nulls, children=children
    )


def to_arrow(cols: AvroColumns) -> pa.Array:
    """The decoded values as one Arrow array (a ``StructArray`` for a record schema)
    over ``cols``' buffers; a null row for a null value or a PERMISSIVE error."""
    return _array(cols.column, cols.buffers)


def error_array(cols: AvroColumns) -> pa.Array:
    """Spark's ``_value_error`` column: the error text of each bad record, else null."""
    messages = cols.error_messages()
    return pa.array([messages.get(i) for i in range(cols.records)], pa.string())
