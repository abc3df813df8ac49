"""Typed ``key`` / ``value`` columns in the data sources' Arrow batches.

The sources read Kafka records into batches with binary ``key`` and ``value``
(:func:`raw_schema`); :class:`BatchDecoder` replaces them with the columns of
their formats (:mod:`kproto.spark._value_formats`) and, in PERMISSIVE mode, adds
``_key_error`` / ``_value_error`` (the reason a row's key or value is null; null
when it decoded). In FAILFAST mode the first bad record fails the task with
:class:`~kproto.spark._value_formats.RecordDecodeError` naming its topic,
partition, offset and schema id. :class:`BatchEncoder` does the reverse for the
sink: struct (or primitive) ``key`` / ``value`` columns become bytes.
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import struct
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.pandas.types import from_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from kproto.spark._value_formats import (
    FieldFormat,
    Formats,
    RecordDecodeError,
    registry_client,
    uuid_text,
)

__all__ = [
    "BatchDecoder",
    "BatchEncoder",
    "avro_schema_of",
    "raw_schema",
    "spark_type",
    "typed_schema",
    "write_type_error",
]

ERROR_COLUMNS = {"key": "_key_error", "value": "_value_error"}


def spark_type(fmt: FieldFormat) -> DataType:
    """The Spark type of ``fmt``'s decoded column."""
    return from_arrow_type(fmt.arrow_type())


def typed_schema(base: StructType, formats: Formats) -> StructType:
    """``base`` with ``key`` / ``value`` typed by ``formats``, plus their error
    columns in PERMISSIVE mode."""
    by_name = {f.field: f for f in formats.typed}
    fields = [
        StructField(f.name, spark_type(by_name[f.name])) if f.name in by_name else f
        for f in base.fields
    ]
    if formats.permissive:
        fields += [
            StructField(ERROR_COLUMNS[f.field], StringType()) for f in formats.typed
        ]
    return StructType(fields)


def raw_schema(schema: StructType) -> StructType:
    """``schema`` (a typed one) as the source reads it: binary ``key`` / ``value``,
    no error columns."""
    errors = set(ERROR_COLUMNS.values())
    return StructType(
        [
            StructField(f.name, BinaryType()) if f.name in ERROR_COLUMNS else f
            for f in schema.fields
            if f.name not in errors
        ]
    )


class BatchDecoder:
    """Decode the typed columns of the source's batches (one per task).

    ``target`` is the Arrow schema Spark expects (of :func:`typed_schema`); the
    batches given have its columns with binary ``key`` / ``value`` and no error
    columns, and must have ``topic``, ``partition`` and ``offset`` (named in
    errors).
    """

    def __init__(self, formats: Formats, target: pa.Schema) -> None:
        self.formats = formats
        self.target = target
        self.decoders = {f.field: f.decoder() for f in formats.typed}

    def close(self) -> None:
        for d in self.decoders.values():
            d.close()

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        columns = {name: batch.column(name) for name in batch.schema.names}
        for field, decoder in self.decoders.items():
            typed, bad = decoder.decode(columns[field])
            texts: list[str | None] = [None] * batch.num_rows if bad else []
            for row, schema_id, reason in bad:
                text = self._where(batch, row, schema_id, field) + reason
                if not self.formats.permissive:
                    raise RecordDecodeError(text)
                texts[row] = text
            columns[field] = typed
            if self.formats.permissive:
                columns[ERROR_COLUMNS[field]] = (
                    pa.array(texts, pa.string())
                    if bad
                    else pa.nulls(batch.num_rows, pa.string())
                )
        arrays = []
        for f in self.target:
            a = columns[f.name]
            if a.type != f.type:
                a = a.cast(f.type)
            arrays.append(a)
        return pa.RecordBatch.from_arrays(arrays, schema=self.target)

    @staticmethod
    def _where(
        batch: pa.RecordBatch, row: int, schema_id: int | None, field: str
    ) -> str:
        names = batch.schema.names
        topic = batch.column("topic")[row].as_py() if "topic" in names else None
        partition = (
            batch.column("partition")[row].as_py() if "partition" in names else None
        )
        offset = batch.column("offset")[row].as_py() if "offset" in names else None
        sid = "" if schema_id is None else f", schema id {schema_id}"
        return f"{field} of {topic}-{partition} offset {offset}{sid}: "


def avro_schema_of(data_type: DataType) -> str:
    """The Avro schema (JSON text) of values of a Spark type, as spark-avro's
    ``SchemaConverters.toAvroType`` derives it for ``to_avro``: the top record
    ``topLevelRecord``, nested records named by their field (namespaced by their
    path), a nullable type as the union ``[T, "null"]``, timestamps as
    ``timestamp-micros`` (``local-`` for ``timestamp_ntz``), dates as ``date``,
    decimals as ``bytes`` with the ``decimal`` logical type.

    Raises:
        ValueError: a type without an Avro form (a map whose keys are not strings,
            intervals, ...).
    """
    return json.dumps(_avro_type(data_type, "topLevelRecord", ""))


_AVRO_PRIMITIVES: dict[str, Any] = {
    "boolean": "boolean",
    "tinyint": "int",
    "smallint": "int",
    "int": "int",
    "bigint": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "binary": "bytes",
    "date": {"type": "int", "logicalType": "date"},
    "timestamp": {"type": "long", "logicalType": "timestamp-micros"},
    "timestamp_ntz": {"type": "long", "logicalType": "local-timestamp-micros"},
}


def _nullable(avro: Any, nullable: bool) -> Any:
    return [avro, "null"] if nullable else avro


def _avro_type(t: DataType, name: str, namespace: str) -> Any:
    simple = t.simpleString()
    if simple in _AVRO_PRIMITIVES:
        return _AVRO_PRIMITIVES[simple]
    if isinstance(t, DecimalType):
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if isinstance(t, ArrayType):
        item = _avro_type(t.elementType, name, namespace)
        return {"type": "array", "items": _nullable(item, t.containsNull)}
    if isinstance(t, MapType):
        if not isinstance(t.keyType, StringType):
            raise ValueError(
                f"Avro maps have string keys, not {t.keyType.simpleString()}"
            )
        value = _avro_type(t.valueType, name, namespace)
        return {"type": "map", "values": _nullable(value, t.valueContainsNull)}
    if isinstance(t, StructType):
        inner = f"{namespace}.{name}" if namespace else name
        record: dict[str, Any] = {"type": "record", "name": name}
        if namespace:
            record["namespace"] = namespace
        record["fields"] = [
            {
                "name": f.name,
                "type": _nullable(_avro_type(f.dataType, f.name, inner), f.nullable),
            }
            for f in t.fields
        ]
        return record
    raise ValueError(f"no Avro type for Spark's {simple}")


def write_type_error(fmt: FieldFormat, data_type: DataType) -> str | None:
    """Why a ``key`` / ``value`` column of ``data_type`` cannot be written in
    ``fmt``, or None when it can."""
    wanted: dict[str, tuple[type, ...]] = {
        "binary": (BinaryType, StringType),
        "string": (StringType,),
        "uuid": (StringType,),
        "int": (IntegerType,),
        "long": (LongType, IntegerType),
        "double": (DoubleType,),
        "avro": (DataType,),  # the schema decides
        "json": (StructType,),
        "protobuf": (StructType,),
    }
    if isinstance(data_type, wanted[fmt.format]):
        return None
    names = " or ".join(t.__name__ for t in wanted[fmt.format])
    return f"column {fmt.field!r} must be {names} for {fmt.field}Format={fmt.format}, not {data_type}"


_PACK = {
    "int": struct.Struct(">i"),
    "long": struct.Struct(">q"),
    "double": struct.Struct(">d"),
}


class BatchEncoder:
    """Encode the typed ``key`` / ``value`` columns of the sink's batches into
    bytes (one per task). Avro values go through :class:`kproto.serde.AvroSerializer`
    and JSON values through :class:`kproto.serde.JSONSerializer` (Confluent's wire
    format, the schema registered under the subject name strategy or, with
    ``use.latest.version``, the subject's latest), or fastavro's
    ``schemaless_writer`` / :func:`json.dumps` without a registry; one Python dict
    per record."""

    def __init__(self, formats: Formats) -> None:
        self.formats = formats
        self._serializers: dict[str, Any] = {}
        self._clients: list[Any] = []
        self._classes: dict[str, type[Any]] = {}

    def close(self) -> None:
        for c in self._clients:
            c.close()

    def __call__(
        self, batch: pa.RecordBatch, topics: list[str | None]
    ) -> pa.RecordBatch:
        names = {n.lower(): i for i, n in enumerate(batch.schema.names)}
        arrays = list(batch.columns)
        fields = list(batch.schema)
        for fmt in self.formats.typed:
            i = names.get(fmt.field)
            if i is None:
                continue
            arrays[i] = pa.array(self._encode(fmt, arrays[i], topics), pa.binary())
            fields[i] = pa.field(fields[i].name, pa.binary())
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def _encode(
        self, fmt: FieldFormat, column: pa.Array, topics: list[str | None]
    ) -> list[bytes | None]:
        values = column.to_pylist()
        if fmt.format in _PACK:
            pack = _PACK[fmt.format].pack
            return [None if v is None else pack(v) for v in values]
        if fmt.format == "string":
            return [None if v is None else v.encode() for v in values]
        if fmt.format == "uuid":
            return [None if v is None else uuid_text(v).encode() for v in values]
        assert fmt.schema is not None
        if fmt.format == "protobuf":
            from kproto.spark._protobuf_format import proto_message

            cls = self._message_class(fmt)
            messages = [None if v is None else proto_message(cls, v) for v in values]
            if not fmt.framed:
                return [None if m is None else m.SerializeToString() for m in messages]
            values = messages
        elif fmt.format == "json":
            values = [json_ready(v) for v in values]
            if not fmt.framed:
                return [None if v is None else json.dumps(v).encode() for v in values]
        elif not fmt.framed:
            return self._bare_avro(fmt, values)
        from kproto.serde import MessageField, SerializationContext

        serializer = self._serializer(fmt)
        field = MessageField.KEY if fmt.field == "key" else MessageField.VALUE
        out: list[bytes | None] = []
        for v, topic in zip(values, topics, strict=True):
            ctx = SerializationContext(str(topic), field)
            out.append(serializer(v, ctx))
        return out

    def _serializer(self, fmt: FieldFormat) -> Any:
        serializer = self._serializers.get(fmt.field)
        if serializer is None:
            from kproto.serde import AvroSerializer, JSONSerializer, ProtobufSerializer

            assert fmt.registry is not None and fmt.schema is not None
            client = registry_client(fmt.registry)
            self._clients.append(client)
            conf: dict[str, Any] = {
                "auto.register.schemas": fmt.auto_register,
                "use.latest.version": fmt.use_latest_version,
            }
            if fmt.strategy is not None:
                conf["subject.name.strategy"] = fmt.strategy
            if fmt.format == "json":
                serializer = JSONSerializer(fmt.schema, client, conf=conf)
            elif fmt.format == "protobuf":
                serializer = ProtobufSerializer(
                    self._message_class(fmt), client, conf=conf
                )
            else:
                serializer = AvroSerializer(client, fmt.schema, conf=conf)
            self._serializers[fmt.field] = serializer
        return serializer

    def _message_class(self, fmt: FieldFormat) -> type[Any]:
        cls = self._classes.get(fmt.field)
        if cls is None:
            cls = self._classes[fmt.field] = fmt.message_class()
        return cls

    @staticmethod
    def _bare_avro(fmt: FieldFormat, values: list[Any]) -> list[bytes | None]:
        import fastavro

        assert fmt.schema is not None
        parsed = fastavro.parse_schema(json.loads(fmt.schema))
        out: list[bytes | None] = []
        for v in values:
            if v is None:
                out.append(None)
                continue
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, v)
            out.append(buf.getvalue())
        return out


def json_ready(value: Any) -> Any:
    """An Arrow ``to_pylist`` value as JSON: maps (lists of pairs) as objects,
    dates and times as ISO 8601 text, bytes as Latin-1 text."""
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(p, tuple) and len(p) == 2 for p in value):
            return {str(k): json_ready(v) for k, v in value}
        return [json_ready(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value
