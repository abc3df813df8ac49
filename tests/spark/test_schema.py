"""spark_schema: the Wire -> Spark type mapping."""

from __future__ import annotations

import pytest
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
from spark_entities import AllTypes, Leaf

from kproto.meta import Wire, wire_fields
from kproto.spark import UNKNOWN_TAGS_TYPE, WIRE_SPARK_TYPES, spark_schema
from kproto.spark._schema import arrow_type

LEAF = StructType(
    [
        StructField("name", StringType(), False),
        StructField("ids", ArrayType(IntegerType(), False), False),
    ]
)


def test_all_types_schema() -> None:
    assert spark_schema(AllTypes) == StructType(
        [
            StructField("b", BooleanType(), False),
            StructField("i8", ByteType(), False),
            StructField("i16", ShortType(), False),
            StructField("u16", IntegerType(), False),
            StructField("i32", IntegerType(), False),
            StructField("u32", LongType(), False),
            StructField("i64", LongType(), False),
            StructField("f64", DoubleType(), False),
            StructField("s", StringType(), True),
            StructField("raw", BinaryType(), False),
            StructField("recs", BinaryType(), True),
            StructField("u", StringType(), False),
            StructField("leaf", LEAF, True),
            StructField("leaves", ArrayType(LEAF, False), False),
            StructField("names", ArrayType(StringType(), False), True),
            StructField(
                "unknown_tagged_fields",
                ArrayType(
                    StructType(
                        [
                            StructField("tag", IntegerType(), False),
                            StructField("data", BinaryType(), False),
                        ]
                    ),
                    False,
                ),
                False,
            ),
        ]
    )
    assert spark_schema(Leaf) == LEAF
    assert spark_schema(AllTypes) is spark_schema(AllTypes)  # cached


def test_one_table() -> None:
    assert set(WIRE_SPARK_TYPES) == {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "string",
        "bytes",
        "records",
        "uuid",
    }
    assert spark_schema(AllTypes)["unknown_tagged_fields"].dataType == UNKNOWN_TAGS_TYPE


def test_unknown_type_raises() -> None:
    import attrs

    from kproto.meta import WIRE

    @attrs.frozen
    class Bad:
        x: int = attrs.field(metadata={WIRE: Wire(type="int128")})

    with pytest.raises(ValueError, match="int128"):
        spark_schema(Bad)


def _check(dt: DataType, w: Wire) -> None:
    if w.kind == "primitive":
        assert dt == WIRE_SPARK_TYPES[w.type]
    elif w.kind == "array":
        assert (
            isinstance(dt, ArrayType) and not dt.containsNull and w.element is not None
        )
        _check(dt.elementType, w.element)
    elif w.kind == "struct":
        assert w.entity is not None and dt == spark_schema(w.entity)
    else:
        assert dt == UNKNOWN_TAGS_TYPE


def test_every_generated_entity() -> None:
    index = pytest.importorskip("kproto.index")
    n = 0
    for cls in index.all_entity_types():
        schema = spark_schema(cls)
        fields = list(wire_fields(cls))
        assert [f.name for f in schema.fields] == [a.name for a, _ in fields]
        for sf, (_, w) in zip(schema.fields, fields, strict=True):
            assert sf.nullable == w.nullable
            _check(sf.dataType, w)
        arrow_type(cls)  # convertible to Arrow for mapInArrow
        n += 1
    assert n > 1000
