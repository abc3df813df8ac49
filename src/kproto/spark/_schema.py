"""Spark and Arrow types of generated kproto entities, derived from Wire metadata.

One table, :data:`WIRE_SPARK_TYPES`, maps each Kafka primitive type to its Spark
type; arrays, nested structs and the ``unknown_tagged_fields`` catch-all are built
from it. The Arrow types used on the Python side are always derived from the Spark
types with :func:`pyspark.sql.pandas.types.to_arrow_type`, so the two cannot drift.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from kproto.meta import Wire, wire_fields

__all__ = [
    "WIRE_SPARK_TYPES",
    "UNKNOWN_TAGS_TYPE",
    "spark_schema",
    "spark_type",
    "arrow_type",
    "entities_to_arrow",
]

#: Kafka primitive wire type -> Spark SQL type. The only place this mapping lives.
WIRE_SPARK_TYPES: Final[Mapping[str, DataType]] = {
    "bool": BooleanType(),
    "int8": ByteType(),
    "int16": ShortType(),
    "uint16": IntegerType(),
    "int32": IntegerType(),
    "uint32": LongType(),
    "int64": LongType(),
    "float64": DoubleType(),
    "string": StringType(),
    "bytes": BinaryType(),
    "records": BinaryType(),
    "uuid": StringType(),
}

#: Spark type of every entity's ``unknown_tagged_fields``: the raw tagged fields the
#: schema does not know, as ``array<struct<tag:int,data:binary>>``.
UNKNOWN_TAGS_TYPE: Final = ArrayType(
    StructType(
        [
            StructField("tag", IntegerType(), nullable=False),
            StructField("data", BinaryType(), nullable=False),
        ]
    ),
    containsNull=False,
)


def spark_type(w: Wire) -> DataType:
    """The Spark type of one field described by ``w`` (nullability not included).

    Raises:
        ValueError: ``w`` names a type or kind this mapping does not know.
    """
    if w.kind == "primitive":
        try:
            return WIRE_SPARK_TYPES[w.type]
        except KeyError:
            raise ValueError(f"no Spark type for Kafka type {w.type!r}") from None
    if w.kind == "array":
        if w.element is None:
            raise ValueError(f"array field {w.name or w.type!r} has no element Wire")
        return ArrayType(spark_type(w.element), containsNull=False)
    if w.kind == "struct":
        if w.entity is None:
            raise ValueError(f"struct field {w.name or w.type!r} has no entity class")
        return spark_schema(w.entity)
    if w.kind == "unknown_tags":
        return UNKNOWN_TAGS_TYPE
    raise ValueError(f"unknown Wire kind {w.kind!r}")


@functools.cache
def spark_schema(entity_cls: type) -> StructType:
    """The Spark schema of a generated entity class, from its Wire metadata only.

    One :class:`~pyspark.sql.types.StructField` per attrs field, in wire order, named
    like the attrs field (``throttle_time_ms``). Integers map to the Spark integer type
    of the same width (``uint16`` -> int, ``uint32`` -> bigint), ``float64`` -> double,
    ``string`` and ``uuid`` -> string (uuids in canonical 36-character form),
    ``bytes`` and ``records`` -> binary, ``[]T`` -> ``array<T>`` without null
    elements, nested structs -> nested ``struct``; a field is nullable exactly when
    its ``Wire.nullable`` says so. ``unknown_tagged_fields`` becomes
    ``array<struct<tag:int,data:binary>>`` (see :data:`UNKNOWN_TAGS_TYPE`).

    Args:
        entity_cls: a generated kproto entity class (an attrs class whose fields carry
            :class:`kproto.meta.Wire` metadata).

    Returns:
        The (cached, shared) :class:`~pyspark.sql.types.StructType`; do not mutate it.

    Raises:
        KeyError: a field carries no kproto metadata.
        ValueError: a field uses a Kafka type without a Spark mapping.
        attrs.exceptions.NotAnAttrsClassError: ``entity_cls`` is not an attrs class.
    """
    return StructType(
        [
            StructField(field.name, spark_type(w), nullable=w.nullable)
            for field, w in wire_fields(entity_cls)
        ]
    )


def arrow_type(entity_cls: type) -> pa.StructType:
    """The Arrow struct type Spark expects for :func:`spark_schema` of ``entity_cls``."""
    result = to_arrow_type(spark_schema(entity_cls), timezone="UTC")
    assert isinstance(result, pa.StructType)
    return result


# --- entities -> Arrow, column by column --------------------------------------------


def _uuid_text(value: Any) -> str:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return str(uuid.UUID(bytes=bytes(value)))
    return str(value)


def _binary(value: Any) -> Any:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"expected bytes, got {type(value).__name__}")


def _list_array(
    values: Sequence[Any], child: pa.DataType, build_child: Any
) -> tuple[pa.Array, pa.Array, pa.Array | None]:
    """Flatten a column of sequences (or None) into offsets, child array, null mask."""
    offsets = [0]
    flat: list[Any] = []
    nulls: list[bool] = []
    any_null = False
    for v in values:
        if v is None:
            any_null = True
            nulls.append(True)
        else:
            nulls.append(False)
            flat.extend(v)
        offsets.append(len(flat))
    mask = pa.array(nulls, pa.bool_()) if any_null else None
    return pa.array(offsets, pa.int32()), build_child(flat, child), mask


def _column(values: Sequence[Any], w: Wire, target: pa.DataType) -> pa.Array:
    """One Arrow array of type ``target`` from the Python values of one field."""
    if w.kind == "primitive":
        if w.type == "uuid":
            return pa.array(
                [None if v is None else _uuid_text(v) for v in values], target
            )
        if w.type in ("bytes", "records"):
            return pa.array([_binary(v) for v in values], target)
        return pa.array(values, target)
    if w.kind == "array":
        element = w.element
        assert element is not None and isinstance(target, pa.ListType)
        offsets, child, mask = _list_array(
            values,
            target.value_type,
            lambda flat, t: _column(flat, element, t),
        )
        return pa.ListArray.from_arrays(offsets, child, type=target, mask=mask)
    if w.kind == "struct":
        assert w.entity is not None and isinstance(target, pa.StructType)
        return entities_to_arrow(values, w.entity, target)
    if w.kind == "unknown_tags":
        assert isinstance(target, pa.ListType)
        tags: list[int] = []
        datas: list[bytes] = []
        offsets = [0]
        for v in values:
            for tag, data in v or ():
                tags.append(tag)
                datas.append(bytes(data))
            offsets.append(len(tags))
        struct_t = target.value_type
        assert isinstance(struct_t, pa.StructType)
        child = pa.StructArray.from_arrays(
            [pa.array(tags, pa.int32()), pa.array(datas, pa.binary())],
            fields=[struct_t.field(0), struct_t.field(1)],
        )
        return pa.ListArray.from_arrays(
            pa.array(offsets, pa.int32()), child, type=target
        )
    raise ValueError(f"unknown Wire kind {w.kind!r}")


def entities_to_arrow(
    entities: Sequence[Any], entity_cls: type, target: pa.StructType | None = None
) -> pa.StructArray:
    """Convert entities of one class (or ``None`` for null rows) to one Arrow array.

    Built column by column from the Wire metadata: one Python list per field, no
    per-row dicts. The result's type is ``target`` (default: :func:`arrow_type` of
    ``entity_cls``, which is what Spark expects for :func:`spark_schema`). Fields are
    matched by name, so ``target`` may be a wider struct (e.g. the union over
    versions); its fields that ``entity_cls`` lacks are null.

    Raises:
        TypeError, pyarrow.ArrowInvalid: a value does not fit its field's type.
    """
    if target is None:
        target = arrow_type(entity_cls)
    n = len(entities)
    has_null = any(e is None for e in entities)
    wires = {field.name: w for field, w in wire_fields(entity_cls)}
    children: list[pa.Array] = []
    fields = [target.field(i) for i in range(target.num_fields)]
    for tf in fields:
        name = tf.name
        w = wires.get(name)
        if w is None:
            children.append(pa.nulls(n, tf.type))
            continue
        if has_null:
            # Null rows still need a slot in every child; fill it with a value of the
            # right shape (masked by the struct's validity bitmap).
            column: list[Any] = [
                getattr(e, name) if e is not None else _placeholder(w) for e in entities
            ]
        else:
            column = [getattr(e, name) for e in entities]
        children.append(_column(column, w, tf.type))
    mask = pa.array([e is None for e in entities], pa.bool_()) if has_null else None
    if not fields:
        return pa.array([None if e is None else {} for e in entities], target)
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def _placeholder(w: Wire) -> Any:
    """A value of the right shape for a masked (null) parent row."""
    if w.nullable:
        return None
    if w.kind in ("array", "unknown_tags"):
        return ()
    if w.kind == "struct":
        return None
    return None
