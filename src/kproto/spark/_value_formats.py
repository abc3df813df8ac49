"""Typed ``key`` / ``value`` columns: the ``keyFormat`` / ``valueFormat`` options.

A :class:`FieldFormat` says how one of a record's two byte columns is decoded (reads)
or encoded (writes); :func:`parse_formats` builds both from a data source's options
and resolves, on the driver at planning time, what the executors need: the reader
schema (inline, or a subject's version from the Schema Registry) and the Spark type
it maps to. The executors then decode column by column:

* Kafka's primitives (``string``, ``int``, ``long``, ``double``, ``uuid``; the
  byte layouts of Kafka's ``StringSerializer``, ``IntegerSerializer``,
  ``LongSerializer``, ``DoubleSerializer``, ``UUIDSerializer``) with pyarrow
  compute, no per-record Python object;
* ``avro`` through :mod:`kproto.avro`'s native decoder, batch by batch, one
  :class:`~kproto.avro.AvroPlan` per writer schema id (Avro schema resolution into
  the reader schema), typed as spark-avro's ``SchemaConverters``;
* ``protobuf`` (:mod:`kproto.spark._protobuf_format`, spark-protobuf's types) and
  ``json`` (JSON Schema, :mod:`kproto.spark._json_format`) one record at a time
  through the protobuf runtime and :func:`json.loads`, resolved by field.

Option names (case-insensitive, as Spark passes them; ``value`` may be ``key``
throughout): ``valueFormat``, ``valueSchema`` (inline), ``valueSubject``,
``valueSchemaVersion``, ``valueMessageName`` (Protobuf), ``valueWireFormat``
(``confluent`` | ``bare``),
``value.subject.name.strategy``, ``mode`` (``FAILFAST`` | ``PERMISSIVE``),
``schemaRegistryUrl`` (alias ``schemaRegistryAddress``, Databricks' name) and
``confluent.schema.registry.<client config>`` (``basic.auth.user.info``,
``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``,
``timeout``, ``max.retries``: :meth:`SchemaRegistryClient.from_config`'s keys), and
for writes ``auto.register.schemas`` / ``use.latest.version`` (Confluent's
serializer configs). See ``docs/guide/spark-typed.md``.
"""

from __future__ import annotations

import json
import struct
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from kproto.avro import MESSAGES, AvroPlan, AvroSchemaError, avro_plan, decode_avro
from kproto.avro.arrow import arrow_type as avro_arrow_type
from kproto.avro.arrow import to_arrow
from kproto.registry.errors import RegistryError, RegistryErrorCode
from kproto.serde.wire import decode_message_indexes
from kproto.spark._json_format import json_arrow_type, json_value
from kproto.spark._options import option_bool

if TYPE_CHECKING:  # requests and protobuf are imported when a format needs them
    from kproto.registry.client import SchemaRegistryClient

__all__ = [
    "FORMATS",
    "MODES",
    "FieldFormat",
    "FormatOptionError",
    "Formats",
    "RecordDecodeError",
    "parse_formats",
]

#: The values ``keyFormat`` / ``valueFormat`` take.
PRIMITIVES: Final = ("string", "int", "long", "double", "uuid")
#: Formats with a schema, and the registry's ``schemaType`` of each.
SCHEMA_FORMATS: Final = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}
FORMATS: Final = ("binary", *PRIMITIVES, *SCHEMA_FORMATS)
MODES: Final = ("FAILFAST", "PERMISSIVE")
_REGISTRY_PREFIX: Final = "confluent.schema.registry."
#: Most referenced schemas (all levels) fetched for one reader schema.
MAX_REFERENCES: Final = 100
_WIDTH: Final = {"int": 4, "long": 8, "double": 8}
_NUMPY: Final = {"int": ">i4", "long": ">i8", "double": ">f8"}
_ARROW: Final = {
    "string": pa.string(),
    "uuid": pa.string(),
    "int": pa.int32(),
    "long": pa.int64(),
    "double": pa.float64(),
    "binary": pa.binary(),
}
_UUID_PATTERN: Final = (
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)


class FormatOptionError(ValueError):
    """A ``keyFormat`` / ``valueFormat`` option is missing, unknown or malformed, or
    the reader schema cannot be had (named)."""


class RecordDecodeError(ValueError):
    """FAILFAST: a key or value that does not decode; the message names the topic,
    partition, offset and schema id (Spark's ``from_avro`` fails the same way,
    without the record's coordinates)."""


Row = tuple[int, int | None, str]  # (row index, schema id, reason)


@attrs.frozen
class FieldFormat:
    """How the ``key`` or ``value`` column is typed (picklable; built on the driver).

    ``schema`` is the reader schema's text for ``avro`` (None otherwise);
    ``framed`` whether values carry Confluent's wire format header (magic byte 0,
    big-endian int32 schema id); ``registry`` the Schema Registry client config
    (:meth:`SchemaRegistryClient.from_config`'s keys) writer schemas come from;
    ``schema_id`` the registry's id of the reader schema, when it came from there.
    """

    field: Literal["key", "value"]
    format: str = "binary"
    schema: str | None = None
    framed: bool = False
    registry: Mapping[str, Any] | None = None
    subject: str | None = None
    schema_id: int | None = None
    strategy: str | None = None
    auto_register: bool = True
    use_latest_version: bool = False
    message_name: str | None = None
    dependencies: tuple[tuple[str, str], ...] = ()

    def message_class(self) -> type[Any]:
        """The Protobuf message class of the reader schema."""
        from kproto.spark._protobuf_format import message_class

        assert self.schema is not None
        return message_class(self.schema, self.message_name, dict(self.dependencies))

    @property
    def typed(self) -> bool:
        return self.format != "binary"

    def arrow_type(self) -> pa.DataType:
        """The Arrow type of the decoded column (spark-avro's types for ``avro``)."""
        if self.format == "avro":
            assert self.schema is not None
            return avro_arrow_type(avro_plan(self.schema).column)
        if self.format == "json":
            assert self.schema is not None
            return json_arrow_type(json.loads(self.schema))
        if self.format == "protobuf":
            from kproto.spark._protobuf_format import proto_arrow_type

            return proto_arrow_type(self.message_class().DESCRIPTOR)
        return _ARROW[self.format]

    def decoder(self) -> Decoder:
        """A decoder for this field (one per task: it caches writer plans)."""
        return Decoder(self)


@attrs.frozen
class Formats:
    """Both fields' formats and the mode."""

    key: FieldFormat
    value: FieldFormat
    mode: Literal["FAILFAST", "PERMISSIVE"] = "FAILFAST"

    @property
    def typed(self) -> tuple[FieldFormat, ...]:
        return tuple(f for f in (self.key, self.value) if f.typed)

    @property
    def permissive(self) -> bool:
        return self.mode == "PERMISSIVE"


def _registry_config(options: Mapping[str, str]) -> dict[str, Any] | None:
    url = options.get("schemaregistryurl") or options.get("schemaregistryaddress")
    extra = {
        k[len(_REGISTRY_PREFIX) :]: v
        for k, v in options.items()
        if k.startswith(_REGISTRY_PREFIX)
    }
    if url is None:
        if extra:
            raise FormatOptionError(
                f"options {sorted(_REGISTRY_PREFIX + k for k in extra)} need "
                "schemaRegistryUrl"
            )
        return None
    conf: dict[str, Any] = {"url": url, **extra}
    try:
        registry_client(conf).close()
    except ValueError as err:
        raise FormatOptionError(f"schema registry options: {err}") from None
    return conf


def registry_client(conf: Mapping[str, Any]) -> SchemaRegistryClient:
    """A client for ``conf`` (the caller closes it).

    Raises:
        ValueError: an unknown or malformed config key.
    """
    from kproto.registry.client import SchemaRegistryClient

    return SchemaRegistryClient.from_config(conf)


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    return option_bool(options, name, default, FormatOptionError)


def parse_formats(
    options: Mapping[str, str],
    topics: tuple[str, ...] = (),
    *,
    sink: bool = False,
    column_schemas: Mapping[str, str] | None = None,
) -> Formats:
    """Parse and resolve the format options (keys in any case).

    ``topics`` are the topics read or written (the subject of
    ``TopicNameStrategy`` is ``<topic>-value``; with several topics ``valueSubject``
    must say which). For a read, a field with a schema format gets its reader
    schema here: ``valueSchema`` if given, else version ``valueSchemaVersion``
    (default: latest) of the subject from the registry. A write takes
    ``valueSchema``, else the subject's latest with ``use.latest.version``, else
    for ``avro`` ``column_schemas[field]`` (the Avro schema of the column's Spark
    type, as spark-avro's ``to_avro`` derives it).

    Raises:
        FormatOptionError: an unknown format or mode, a schema option without a
            schema format, ``avro`` with neither an inline schema nor a registry,
            no subject to take the schema from, a registry answer that is an
            error (chained), a schema that is not valid Avro.
    """
    lower = {k.lower(): v for k, v in options.items()}
    mode = lower.get("mode", "FAILFAST").upper()
    if mode not in MODES:
        raise FormatOptionError(
            f"option 'mode' must be FAILFAST or PERMISSIVE, not {mode!r}"
        )
    registry = _registry_config(lower)
    derived = column_schemas or {}
    fields = [
        _field(lower, name, registry, topics, sink, derived.get(name))
        for name in ("key", "value")
    ]
    return Formats(fields[0], fields[1], mode)  # type: ignore[arg-type]


def _field(
    options: Mapping[str, str],
    name: Literal["key", "value"],
    registry: Mapping[str, Any] | None,
    topics: tuple[str, ...],
    sink: bool,
    derived: str | None = None,
) -> FieldFormat:
    fmt = options.get(f"{name}format", "binary").strip().lower()
    if fmt not in FORMATS:
        raise FormatOptionError(
            f"option '{name}Format' must be one of {', '.join(FORMATS)}, not {fmt!r}"
        )
    schema = options.get(f"{name}schema")
    subject = options.get(f"{name}subject")
    version = options.get(f"{name}schemaversion")
    wire = options.get(f"{name}wireformat")
    strategy = options.get(f"{name}.subject.name.strategy")
    if fmt not in SCHEMA_FORMATS:
        given = [o for o, v in (("Schema", schema), ("Subject", subject)) if v]
        if given:
            raise FormatOptionError(
                f"option '{name}{given[0]}' needs a {name}Format with a schema "
                f"({', '.join(SCHEMA_FORMATS)}), not {fmt}"
            )
        return FieldFormat(name, fmt)
    if wire is not None and wire.lower() not in ("confluent", "bare"):
        raise FormatOptionError(
            f"option '{name}WireFormat' must be confluent or bare, not {wire!r}"
        )
    framed = registry is not None if wire is None else wire.lower() == "confluent"
    use_latest = _bool(options, "use.latest.version", False)
    if schema is None and sink and not use_latest and fmt == "avro":
        schema = derived
    if registry is None and schema is None:
        raise FormatOptionError(
            f"{name}Format={fmt} needs '{name}Schema' (an inline schema) or "
            "'schemaRegistryUrl'"
        )
    if sink and not framed and registry is not None:
        raise FormatOptionError("writes with a registry are in Confluent's wire format")
    auto = _bool(options, "auto.register.schemas", not use_latest)
    schema_id = None
    dependencies: tuple[tuple[str, str], ...] = ()
    if schema is None or (sink and use_latest):
        assert registry is not None
        subject = subject or _subject(name, strategy, topics)
        schema, schema_id, dependencies = _registry_schema(
            registry, subject, version, fmt
        )
    result = FieldFormat(
        name,
        fmt,
        schema,
        framed,
        registry,
        subject,
        schema_id,
        strategy,
        auto,
        use_latest,
        options.get(f"{name}messagename"),
        dependencies,
    )
    try:
        if fmt == "avro":
            avro_plan(schema)
        elif fmt == "json":
            json.loads(schema)
        else:
            result.arrow_type()
    except (AvroSchemaError, ValueError) as err:
        raise FormatOptionError(f"{name} schema: {err}") from None
    return result


def _subject(name: str, strategy: str | None, topics: tuple[str, ...]) -> str:
    short = (strategy or "TopicNameStrategy").rsplit(".", 1)[-1]
    if short != "TopicNameStrategy":
        raise FormatOptionError(
            f"{name}.subject.name.strategy={short} needs '{name}Subject' to say which "
            "subject's schema to read"
        )
    if len(topics) != 1:
        raise FormatOptionError(
            f"'{name}Subject' is needed: the subject cannot be taken from "
            f"{len(topics)} topics"
        )
    return f"{topics[0]}-{name}"


def _registry_schema(
    registry: Mapping[str, Any], subject: str, version: str | None, fmt: str
) -> tuple[str, int, tuple[tuple[str, str], ...]]:
    """The text, schema id and referenced schemas (import path -> text, all
    levels) of the subject's version."""
    with registry_client(registry) as client:
        try:
            if version is None or version.strip().lower() == "latest":
                registered = client.get_latest_version(subject)
            else:
                registered = client.get_version(subject, int(version))
        except ValueError:
            raise FormatOptionError(
                f"schema version must be an integer or 'latest', not {version!r}"
            ) from None
        except RegistryError as err:
            raise FormatOptionError(
                f"subject {subject!r} version {version or 'latest'}: {err}"
            ) from err
        if registered.schema.schema_type != SCHEMA_FORMATS[fmt]:
            raise FormatOptionError(
                f"subject {subject!r} holds a {registered.schema.schema_type} "
                f"schema, not {SCHEMA_FORMATS[fmt]}"
            )
        if registered.schema.references and fmt != "protobuf":
            raise FormatOptionError(
                f"subject {subject!r}: {fmt} schemas with references are not "
                "supported yet"
            )
        dependencies: dict[str, str] = {}
        todo = list(registered.schema.references)
        while todo and len(dependencies) < MAX_REFERENCES:
            ref = todo.pop()
            if ref.name in dependencies:
                continue
            try:
                target = client.get_version(ref.subject, ref.version).schema
            except RegistryError as err:
                raise FormatOptionError(
                    f"reference {ref.name!r} ({ref.subject} version {ref.version}): "
                    f"{err}"
                ) from err
            dependencies[ref.name] = target.schema_str
            todo.extend(target.references)
    return (
        registered.schema.schema_str,
        registered.schema_id,
        tuple(dependencies.items()),
    )


class Decoder:
    """Decodes one field's binary column, batch by batch (executor side).

    ``decode(values)`` returns the typed array (null where the value is null or
    bad) and the bad rows as ``(row, schema id, reason)``.
    """

    def __init__(self, fmt: FieldFormat) -> None:
        self.fmt = fmt
        self._type = fmt.arrow_type()
        self._plans: dict[int, AvroPlan] = {}
        self._missing: dict[int, str] = {}  # schema id -> why it has no plan
        self._client: SchemaRegistryClient | None = None
        self._parse = self._json
        if fmt.format == "protobuf":
            from kproto.serde.protobuf import message_indexes

            self._cls = fmt.message_class()
            self._indexes = message_indexes(self._cls.DESCRIPTOR)
            self._parse = self._protobuf

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def decode(self, values: pa.Array) -> tuple[pa.Array, list[Row]]:
        if values.type != pa.binary():
            values = values.cast(pa.binary())
        fmt = self.fmt.format
        if fmt == "avro":
            return self._avro(values)
        if fmt in ("json", "protobuf"):
            return self._records(values)
        if fmt in ("string", "uuid"):
            return self._text(values, fmt == "uuid")
        return self._number(values)

    # -- primitives ---------------------------------------------------------------

    def _text(self, values: pa.Array, is_uuid: bool) -> tuple[pa.Array, list[Row]]:
        bad: list[Row] = []
        try:
            text = values.cast(pa.string())
        except pa.ArrowInvalid:  # find the bad rows (rare): one by one
            rows = values.to_pylist()
            out: list[str | None] = []
            for i, v in enumerate(rows):
                try:
                    out.append(None if v is None else v.decode())
                except UnicodeDecodeError as err:
                    bad.append((i, None, f"string not valid UTF-8 ({err.reason})"))
                    out.append(None)
            text = pa.array(out, pa.string())
        if is_uuid:
            ok = pc.match_substring_regex(text, _UUID_PATTERN)
            wrong = pc.and_(pc.is_valid(text), pc.invert(ok.fill_null(True)))
            for i in pc.indices_nonzero(wrong).to_pylist():
                bad.append((i, None, "not a UUID in its 36-character text form"))
            text = pc.if_else(wrong, pa.scalar(None, pa.string()), text)
        return text, sorted(bad)

    def _number(self, values: pa.Array) -> tuple[pa.Array, list[Row]]:
        import numpy as np

        width = _WIDTH[self.fmt.format]
        lengths = pc.binary_length(values)
        wrong = pc.and_(pc.is_valid(values), pc.not_equal(lengths, width))
        wrong = wrong.fill_null(False)
        bad: list[Row] = [
            (
                i,
                None,
                f"{self.fmt.format} value of {lengths[i].as_py()} bytes, not {width}",
            )
            for i in pc.indices_nonzero(wrong).to_pylist()
        ]
        null = pc.or_(pc.is_null(values), wrong)
        zero = pa.scalar(b"\0" * width, pa.binary())
        filled = pc.if_else(null, zero, values).cast(pa.binary(width))
        raw = filled.buffers()[1]
        n = len(filled)
        start = filled.offset * width
        numbers = np.frombuffer(raw, _NUMPY[self.fmt.format], n, start)
        native = numbers.astype(numbers.dtype.newbyteorder("="))
        arr = pa.array(
            native, type=self._type, mask=null.to_numpy(zero_copy_only=False)
        )
        return arr, bad

    # -- per record: json, protobuf ---------------------------------------------

    def _records(self, values: pa.Array) -> tuple[pa.Array, list[Row]]:
        out: list[Any] = []
        bad: list[Row] = []
        framed = self.fmt.framed
        for i, raw in enumerate(values.to_pylist()):
            if raw is None:
                out.append(None)
                continue
            schema_id = None
            if framed:
                if len(raw) < 5 or raw[0] != 0:
                    bad.append((i, None, "not in Confluent's wire format"))
                    out.append(None)
                    continue
                schema_id = int.from_bytes(raw[1:5], "big")
                raw = raw[5:]
            try:
                out.append(self._parse(raw))
            except (ValueError, RecursionError) as err:  # protobuf's DecodeError too
                bad.append((i, schema_id, str(err) or type(err).__name__))
                out.append(None)
        return pa.array(out, self._type), bad

    def _json(self, raw: bytes) -> Any:
        return json_value(json.loads(raw), self._type)

    def _protobuf(self, raw: bytes) -> Any:
        pos = 0
        if self.fmt.framed:  # the message-index path must be the reader message's
            path, pos = decode_message_indexes(memoryview(raw), 0)
            if path != self._indexes:
                raise ValueError(
                    f"message index path {list(path)} is not the reader's "
                    f"{self._cls.DESCRIPTOR.full_name} {list(self._indexes)}"
                )
        from google.protobuf.message import DecodeError

        from kproto.spark._protobuf_format import proto_value

        message = self._cls()
        try:
            message.ParseFromString(raw[pos:])
        except DecodeError as err:
            raise ValueError(f"not a {self._cls.DESCRIPTOR.full_name}: {err}") from None
        return proto_value(message)

    # -- avro ---------------------------------------------------------------------

    def _avro(self, values: pa.Array) -> tuple[pa.Array, list[Row]]:
        assert self.fmt.schema is not None
        n = len(values)
        offsets = values.buffers()[1]
        data = values.buffers()[2]
        offsets = offsets.slice(values.offset * 4, (n + 1) * 4)
        validity = None
        if values.null_count:
            validity = pc.is_valid(values).buffers()[1]
        if data is None:
            data = b""
        plans: AvroPlan | dict[int, AvroPlan]
        if self.fmt.framed:
            plans = self._framed_plans(values)
            if not plans:  # no framed value (all null, short or unknown ids)
                plans = {-1: avro_plan(self.fmt.schema)}
        else:
            plans = avro_plan(self.fmt.schema)
        cols = decode_avro(plans, n, offsets, validity, data, mode="PERMISSIVE")
        array = to_arrow(cols)
        bad: list[Row] = []
        for index, schema_id, code, pos in cols.errors:
            if schema_id in self._missing:
                reason = self._missing[schema_id]
            else:
                reason = f"byte {pos}: {MESSAGES[code]}"
            bad.append((index, schema_id, reason))
        return array, bad

    def _framed_plans(self, values: pa.Array) -> dict[int, AvroPlan]:
        assert self.fmt.schema is not None
        heads = pc.unique(pc.binary_slice(values, 1, 5)).to_pylist()
        ids = [
            struct.unpack(">i", h)[0] for h in heads if h is not None and len(h) == 4
        ]
        for schema_id in ids:
            if schema_id in self._plans or schema_id in self._missing:
                continue
            if self.fmt.registry is None:  # inline schema: every id is that schema
                self._plans[schema_id] = avro_plan(self.fmt.schema)
                continue
            self._plan_for(schema_id)
        return {i: self._plans[i] for i in ids if i in self._plans}

    def _plan_for(self, schema_id: int) -> None:
        assert self.fmt.registry is not None and self.fmt.schema is not None
        if self._client is None:
            self._client = registry_client(self.fmt.registry)
        try:
            writer = self._client.get_schema(schema_id)
        except RegistryError as err:
            if err.error_code != RegistryErrorCode.SCHEMA_NOT_FOUND:
                raise
            self._missing[schema_id] = "schema id not found in the registry"
            return
        if writer.schema_type != "AVRO":
            self._missing[schema_id] = f"a {writer.schema_type} schema, not AVRO"
            return
        try:
            self._plans[schema_id] = avro_plan(writer.schema_str, self.fmt.schema)
        except (AvroSchemaError, ValueError) as err:
            self._missing[schema_id] = f"writer schema does not resolve: {err}"


def uuid_text(value: Any) -> str:
    """A UUID's canonical text (Kafka's ``UUIDSerializer`` writes ``toString()``)."""
    return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))
