"""The ``keyFormat`` / ``valueFormat`` options and their column decoders, without
a SparkSession (the Spark reads and writes are in ``test_typed.py``)."""

from __future__ import annotations

import io
import json
import uuid

import fastavro
import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from kproto.serde import (
    DoubleSerializer,
    IntegerSerializer,
    LongSerializer,
    StringSerializer,
    UUIDSerializer,
)
from kproto.spark._segments import SEGMENT_SCHEMA
from kproto.spark._typed import BatchDecoder, raw_schema, typed_schema
from kproto.spark._value_formats import (
    FieldFormat,
    FormatOptionError,
    Formats,
    RecordDecodeError,
    parse_formats,
)

SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "Point",
        "fields": [
            {"name": "x", "type": "int"},
            {"name": "label", "type": ["null", "string"], "default": None},
        ],
    }
)


def _avro(record: dict[str, object]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(json.loads(SCHEMA)), record)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("fmt", "serializer", "values"),
    [
        ("string", StringSerializer(), ["a", "", "ünï"]),
        ("int", IntegerSerializer(), [0, -1, 2**31 - 1]),
        ("long", LongSerializer(), [0, -(2**63), 2**63 - 1]),
        ("double", DoubleSerializer(), [0.5, -1e300, float("inf")]),
        ("uuid", UUIDSerializer(), [str(uuid.UUID(int=i * 7919)) for i in range(3)]),
    ],
)
def test_primitives_read_what_kafka_serializers_wrote(
    fmt: str, serializer: object, values: list[object]
) -> None:
    as_given = [uuid.UUID(v) if fmt == "uuid" else v for v in values]  # type: ignore[arg-type]
    raw = [serializer(v) for v in as_given] + [None]  # type: ignore[operator]
    decoder = FieldFormat("value", fmt).decoder()
    array, bad = decoder.decode(pa.array(raw, pa.binary()).slice(0))
    assert bad == []
    assert array.to_pylist() == values + [None]
    # a slice that does not start at 0 (offsets and validity shifted)
    array, _ = decoder.decode(pa.array(raw, pa.binary()).slice(1))
    assert array.to_pylist() == values[1:] + [None]


@pytest.mark.parametrize(
    ("fmt", "raw", "reason"),
    [
        ("int", b"\x00\x01", "int value of 2 bytes, not 4"),
        ("long", b"\x00" * 9, "long value of 9 bytes, not 8"),
        ("string", b"\xff", "string not valid UTF-8"),
        ("uuid", b"not-a-uuid", "not a UUID in its 36-character text form"),
    ],
)
def test_bad_primitive_values_are_named_by_row(
    fmt: str, raw: bytes, reason: str
) -> None:
    good = {"int": b"\0\0\0\1", "long": b"\0" * 8, "string": b"ok"}.get(
        fmt, str(uuid.UUID(int=1)).encode()
    )
    array, bad = (
        FieldFormat("value", fmt)
        .decoder()
        .decode(pa.array([good, raw, None], pa.binary()))
    )
    assert [(row, sid) for row, sid, _ in bad] == [(1, None)]
    assert bad[0][2].startswith(reason)
    assert array.null_count == 2 and array[0].is_valid


def _batch(values: list[bytes | None]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict(
        {
            "key": pa.array([None] * n, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "topic": pa.array(["points"] * n),
            "partition": pa.array([3] * n, pa.int32()),
            "offset": pa.array(range(100, 100 + n), pa.int64()),
        }
    )


def test_avro_inline_bare_and_confluent_framed() -> None:
    records: list[dict[str, object]] = [
        {"x": 1, "label": None},
        {"x": -5, "label": "p"},
    ]
    bare = [_avro(r) for r in records]
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import (
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    base = StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
        ]
    )
    for wire, values in (
        ("bare", bare),
        ("confluent", [b"\0\0\0\0\x07" + v for v in bare]),
    ):
        formats = parse_formats(
            {"valueFormat": "avro", "valueSchema": SCHEMA, "valueWireFormat": wire}
        )
        schema = typed_schema(base, formats)
        assert raw_schema(schema) == base
        decode = BatchDecoder(formats, to_arrow_schema(schema, timezone="UTC"))
        out = decode(_batch([*values, None]))
        assert out.column("value").to_pylist() == [*records, None]


def test_failfast_names_topic_partition_offset_and_schema_id() -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    good = b"\0\0\0\0\x07" + _avro({"x": 1, "label": None})
    bad = b"\0\0\0\0\x07" + _avro({"x": 1, "label": "abc"})[:-1]
    options = {
        "valueFormat": "avro",
        "valueSchema": SCHEMA,
        "valueWireFormat": "confluent",
    }
    base = raw_schema(typed_schema(SEGMENT_SCHEMA, parse_formats(options)))
    n = 3
    batch = pa.RecordBatch.from_pydict(
        {
            f.name: pa.nulls(n, t)
            for f, t in zip(
                base.fields,
                to_arrow_schema(base, timezone="UTC").types,
                strict=True,
            )
        }
    )
    cols = {name: batch.column(name) for name in batch.schema.names}
    cols["value"] = pa.array([good, bad, None], pa.binary())
    cols["topic"] = pa.array(["t"] * n)
    cols["partition"] = pa.array([0] * n, pa.int32())
    cols["offset"] = pa.array([7, 8, 9], pa.int64())
    batch = pa.RecordBatch.from_pydict(cols)
    failfast = parse_formats(options)
    schema = typed_schema(SEGMENT_SCHEMA, failfast)
    with pytest.raises(RecordDecodeError) as err:
        BatchDecoder(failfast, to_arrow_schema(schema, timezone="UTC"))(batch)
    assert (
        str(err.value) == "value of t-0 offset 8, schema id 7: byte 7: value ends early"
    )
    permissive = parse_formats({**options, "mode": "PERMISSIVE"})
    schema = typed_schema(SEGMENT_SCHEMA, permissive)
    assert schema.fieldNames()[-1] == "_value_error"
    out = BatchDecoder(permissive, to_arrow_schema(schema, timezone="UTC"))(batch)
    assert out.column("value").to_pylist() == [{"x": 1, "label": None}, None, None]
    assert out.column("_value_error").to_pylist() == [
        None,
        "value of t-0 offset 8, schema id 7: byte 7: value ends early",
        None,
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"valueFormat": "yaml"}, "option 'valueFormat' must be one of"),
        ({"valueFormat": "avro"}, "valueFormat=avro needs 'valueSchema'"),
        (
            {"valueSchema": SCHEMA},
            "option 'valueSchema' needs a valueFormat with a schema",
        ),
        ({"valueFormat": "avro", "valueSchema": "{"}, "value schema:"),
        ({"mode": "DROPMALFORMED"}, "option 'mode' must be FAILFAST or PERMISSIVE"),
        (
            {"confluent.schema.registry.basic.auth.user.info": "a:b"},
            "need schemaRegistryUrl",
        ),
        (
            {"schemaRegistryUrl": "http://127.0.0.1:1", "valueFormat": "avro"},
            "'valueSubject' is needed",
        ),
        (
            {
                "schemaRegistryUrl": "http://127.0.0.1:1",
                "valueFormat": "avro",
                "value.subject.name.strategy": "RecordNameStrategy",
            },
            "needs 'valueSubject'",
        ),
    ],
)
def test_bad_options_are_named(options: dict[str, str], message: str) -> None:
    with pytest.raises(FormatOptionError, match=message.replace("(", r"\(")):
        parse_formats(options)


def test_defaults_are_binary() -> None:
    formats = parse_formats({})
    assert formats == Formats(FieldFormat("key"), FieldFormat("value"))
    assert formats.typed == ()


PROTO = 'syntax = "proto3"; package p; message M { int32 x = 1; string s = 2; }'


def test_protobuf_and_json_bad_values_are_named() -> None:
    from kproto.spark._protobuf_format import message_class

    fmt = parse_formats(
        {
            "valueFormat": "protobuf",
            "valueSchema": PROTO,
            "valueWireFormat": "confluent",
        }
    ).value
    good = (
        b"\0\0\0\0\x03\0" + message_class(PROTO, None)(x=7, s="a").SerializeToString()
    )
    other_message = b"\0\0\0\0\x03\x02\x02" + good[6:]  # message-index path [1]
    values = [good, good[:-1], other_message, b"\x01"]
    array, bad = fmt.decoder().decode(pa.array(values, pa.binary()))
    assert array.to_pylist() == [{"x": 7, "s": "a"}, None, None, None]
    assert [(row, sid) for row, sid, _ in bad] == [(1, 3), (2, 3), (3, None)]
    assert bad[0][2].startswith("not a p.M: ")
    assert bad[1][2] == "message index path [1] is not the reader's p.M [0]"
    assert bad[2][2] == "not in Confluent's wire format"

    fmt = parse_formats(
        {
            "valueFormat": "json",
            "valueSchema": '{"type": "object", "properties": '
            '{"n": {"type": "integer"}}}',
        }
    ).value
    array, bad = fmt.decoder().decode(pa.array([b'{"n": 1}', b"{", b'{"n": "x"}']))
    assert array.to_pylist() == [{"n": 1}, None, None]
    assert [row for row, _, _ in bad] == [1, 2]
    assert bad[1][2] == "$.n: str where the schema has int64"


def test_registry_client_options_pass_through() -> None:
    formats = parse_formats(
        {
            "valueFormat": "avro",
            "valueSchema": SCHEMA,
            "schemaRegistryAddress": "https://registry.example:8081",
            "confluent.schema.registry.basic.auth.user.info": "user:secret",
            "confluent.schema.registry.ssl.ca.location": "/etc/ca.pem",
        }
    )
    assert formats.value.registry == {
        "url": "https://registry.example:8081",
        "basic.auth.user.info": "user:secret",
        "ssl.ca.location": "/etc/ca.pem",
    }
    assert formats.value.framed  # a registry means Confluent's wire format
    with pytest.raises(FormatOptionError, match="unknown schema registry config"):
        parse_formats(
            {"schemaRegistryUrl": "http://h:1", "confluent.schema.registry.nope": "1"}
        )


def test_avro_schema_of_spark_types_as_to_avro() -> None:
    from pyspark.sql.types import (
        ArrayType,
        DecimalType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    from kproto.avro import avro_plan
    from kproto.avro.arrow import arrow_type
    from kproto.spark._typed import avro_schema_of

    t = StructType(
        [
            StructField("id", LongType(), nullable=False),
            StructField("at", TimestampType()),
            StructField("price", DecimalType(10, 2)),
            StructField(
                "lines",
                ArrayType(StructType([StructField("sku", StringType())]), False),
            ),
            StructField("attrs", MapType(StringType(), LongType())),
        ]
    )
    schema = json.loads(avro_schema_of(t))
    assert schema["name"] == "topLevelRecord"
    assert schema["fields"][0] == {"name": "id", "type": "long"}
    assert schema["fields"][1]["type"] == [
        {"type": "long", "logicalType": "timestamp-micros"},
        "null",
    ]
    line = schema["fields"][3]["type"][0]["items"]
    assert (line["name"], line["namespace"]) == ("lines", "topLevelRecord")
    # and back: the Arrow type of the derived schema is the Spark type's
    from pyspark.sql.pandas.types import from_arrow_type

    back = from_arrow_type(arrow_type(avro_plan(json.dumps(schema)).column))
    assert [f.dataType for f in back.fields] == [f.dataType for f in t.fields]
    with pytest.raises(ValueError, match="Avro maps have string keys"):
        avro_schema_of(MapType(LongType(), LongType()))
