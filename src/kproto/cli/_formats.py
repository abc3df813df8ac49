"""Typed keys and values for ``kproto consume``, ``produce`` and ``dump-log``: the
``--key-format`` / ``--value-format`` names, the Schema Registry arguments, and the
readers and writers between record bytes and JSON.

Formats (Kafka's serializer names and Confluent's wire format):

========== ======================================= ==========================================
format     bytes                                   printed / read as
========== ======================================= ==========================================
binary     as they are                             base64 text
string     UTF-8 (Kafka's ``StringSerializer``)    the text
int, long  4 / 8 bytes big-endian                  a JSON number
double     8 bytes IEEE 754                        a JSON number
uuid       the 36-character text in UTF-8          the text
avro       Confluent-framed Avro                   Avro's JSON encoding (unions as
                                                   ``{"type": value}``), as
                                                   kafka-avro-console-consumer/-producer
protobuf   Confluent-framed Protobuf               Protobuf's JSON mapping (lowerCamelCase
                                                   names, fields at their default
                                                   printed), as kafka-protobuf-console-*
json       Confluent-framed JSON (JSON Schema)     the JSON value
========== ======================================= ==========================================

The registry-backed formats (their registry from :mod:`kproto.cli._registry`) import
:mod:`kproto.serde`'s Avro / Protobuf / JSON Schema modules only when used, so a plain
install (no ``kproto[serde]``) runs every other command. Errors a user can cause become
:class:`~kproto.cli._common.CliError`: a registry error with its ``error_code``, an
unreachable registry naming its URL, a schema file that does not parse naming the file.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import io
import json
import math
import struct
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kproto.cli._common import CliError
from kproto.cli._registry import (
    add_registry_arguments,
    one_line,
    registry_client,
    registry_error_text,
    registry_errors,
)

if TYPE_CHECKING:
    from kproto.registry.client import Schema, SchemaRegistryClient
    from kproto.serde.context import SerializationContext
    from kproto.serde.wire import SchemaId

__all__ = [
    "FORMATS",
    "add_typed_arguments",
    "REGISTRY_FORMATS",
    "RecordDecoder",
    "ValueReader",
    "ValueWriter",
    "LineError",
    "record_decoder",
    "read_schema_file",
    "value_text",
]

FORMATS = (
    "binary",
    "string",
    "int",
    "long",
    "double",
    "uuid",
    "avro",
    "protobuf",
    "json",
)
REGISTRY_FORMATS = frozenset({"avro", "protobuf", "json"})
_SCHEMA_TYPES = {"avro": "AVRO", "protobuf": "PROTOBUF", "json": "JSON"}
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_DOUBLE = struct.Struct(">d")


def add_typed_arguments(
    parser: argparse.ArgumentParser, option: str, help_text: Callable[[str], str]
) -> Any:
    """The "typed keys and values" options of consume, produce and dump-log:
    ``--key-{option}`` and ``--value-{option}`` (one of :data:`FORMATS`, default
    none; ``help_text(field)`` their help), then the Schema Registry's arguments.
    Returns the argument group, for a command's further per-field options."""
    group = parser.add_argument_group("typed keys and values")
    for field in ("key", "value"):
        group.add_argument(
            f"--{field}-{option}", choices=FORMATS, default=None, help=help_text(field)
        )
    add_registry_arguments(parser, required=False)
    return group


class LineError(ValueError):
    """One input line's key or value that does not fit its format or schema: the
    line is reported and not sent."""


def _needs_serde(fmt: str) -> None:
    try:
        import requests  # noqa: F401

        if fmt == "avro":
            import fastavro  # noqa: F401
        elif fmt == "json":
            import jsonschema  # noqa: F401
        elif fmt == "protobuf":
            import google.protobuf  # noqa: F401
    except ImportError as exc:
        raise CliError(
            f"format {fmt} needs kproto[serde] (pip install 'kproto[serde]'): {exc}"
        ) from None


def read_schema_file(path: str) -> str:
    """A schema file's text.

    Raises:
        CliError: it cannot be read or is not UTF-8 (naming the file).
    """
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not UTF-8 text: {exc.reason}") from None


# --------------------------------------------------------------------------- reading


def _context(
    topic: str,
    field: str,
    headers: list[tuple[str, bytes | None]] | None,
    partition: int | None,
    offset: int | None,
) -> SerializationContext:
    from kproto.serde.context import MessageField, SerializationContext

    return SerializationContext(
        topic,
        MessageField.KEY if field == "key" else MessageField.VALUE,
        headers=headers,
        partition=partition,
        offset=offset,
    )


def _primitive_value(fmt: str, data: bytes, field: str) -> Any:
    """A primitive key or value as a JSON value (Kafka's deserializers' checks)."""
    size = {"int": 4, "long": 8, "double": 8}.get(fmt)
    if size is not None and len(data) != size:
        raise ValueError(f"{field}: {len(data)} bytes are not {_a(fmt)} ({size} bytes)")
    if fmt == "binary":
        return base64.b64encode(data).decode("ascii")
    if fmt == "string":
        return data.decode("utf-8", "replace")
    if fmt == "int":
        return _INT.unpack(data)[0]
    if fmt == "long":
        return _LONG.unpack(data)[0]
    if fmt == "double":
        value = _DOUBLE.unpack(data)[0]
        return value if math.isfinite(value) else str(value)
    if fmt == "uuid":
        try:
            return str(uuid.UUID(data.decode("ascii")))
        except (UnicodeDecodeError, ValueError):
            raise ValueError(f"{field}: {data[:40]!r} is not a UUID") from None
    raise AssertionError(fmt)


@attrs.define(eq=False)
class ValueReader:
    """Record keys or values of one format as JSON values, for ``consume`` and
    ``dump-log``: ``reader(data, topic, headers, partition, offset) -> (value,
    schema id or None)``.

    Raises (calls):
        ValueError: bytes that are not of the format, or a schema id the registry
            does not know (the deserializer's message, naming topic, partition,
            offset and schema id).
        CliError: the registry unreachable or answering an error that is not
            about this record.
    """

    fmt: str
    field: str
    registry: SchemaRegistryClient | None
    _deserializer: Any = attrs.field(default=None, init=False)
    _writers: Any = attrs.field(default=None, init=False)
    #: the Avro writer schemas in fastavro's parsed form (serde's ParsedSchemas)
    _avro_writers: Any = attrs.field(default=None, init=False)
    _checked: set[int | str | None] = attrs.field(factory=set, init=False)

    def __attrs_post_init__(self) -> None:
        fmt, registry = self.fmt, self.registry
        if fmt in REGISTRY_FORMATS:
            _needs_serde(fmt)
            assert registry is not None
            self._deserializer = _deserializer(fmt, registry)
            from kproto.serde.registry_serde import (
                DeserializerConfig,
                ParsedSchemas,
                WriterSchemas,
            )

            self._writers = WriterSchemas(registry, DeserializerConfig())
            if fmt == "avro":
                from kproto.serde.avro import parse_avro

                self._avro_writers = ParsedSchemas(
                    registry, parse_avro, deserializing=True
                )

    def __call__(
        self,
        data: bytes | None,
        topic: str,
        headers: list[tuple[str, bytes | None]] | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> tuple[Any, int | str | None]:
        if data is None:
            return None, None
        if self.fmt not in REGISTRY_FORMATS:
            return _primitive_value(self.fmt, data, self.field), None
        from kproto.serde.errors import SerializationError
        from kproto.serde.wire import dual_schema_id_deserializer

        ctx = _context(topic, self.field, headers, partition, offset)
        with registry_errors():
            try:
                sid, _ = dual_schema_id_deserializer(data, ctx, self.fmt == "protobuf")
                self._check_type(sid, ctx)
                value = self._deserializer(data, ctx)
                if self.fmt == "avro":
                    return self._avro_json(sid, value, ctx), sid.label
                if self.fmt == "protobuf":
                    return _protobuf_json(value), sid.label
                return value, sid.label
            except SerializationError as exc:
                if _is_registry_failure(exc.__cause__):
                    raise
                raise ValueError(one_line(str(exc))) from None

    def _check_type(self, sid: SchemaId, ctx: SerializationContext) -> None:
        """A writer schema of another type than the format is named as such."""
        from kproto.serde.errors import in_context

        if sid.label in self._checked:
            return
        schema_type = self._writers.fetch(sid, ctx).schema.schema_type
        if schema_type != _SCHEMA_TYPES[self.fmt]:
            raise in_context(
                f"the writer schema is {schema_type}, not {_SCHEMA_TYPES[self.fmt]}"
                f" (--{self.field}-format {self.fmt})",
                ctx,
                deserializing=True,
                schema_id=sid.label,
            )
        self._checked.add(sid.label)

    def _avro_json(self, sid: SchemaId, value: Any, ctx: SerializationContext) -> Any:
        """Avro's JSON encoding of ``value`` with its writer's schema, as
        Confluent's ``AvroSchemaUtils.toJson`` prints it."""
        import fastavro

        label = sid.label
        assert label is not None
        parsed = self._avro_writers.get(
            label, lambda: self._writers.fetch(sid, ctx).schema, ctx
        )
        out = io.StringIO()
        fastavro.json_writer(out, parsed, [value])
        return json.loads(out.getvalue())


def _is_registry_failure(exc: BaseException | None) -> bool:
    """Whether a deserializer's error came from the registry failing (unreachable,
    refusing, erring) rather than from the record (an unknown schema id: 404)."""
    from kproto.registry.client import RegistryConnectionError
    from kproto.registry.errors import RegistryError

    if isinstance(exc, RegistryConnectionError):
        return True
    return isinstance(exc, RegistryError) and exc.http_status != 404


def _deserializer(fmt: str, registry: SchemaRegistryClient) -> Any:
    if fmt == "avro":
        from kproto.serde.avro import AvroDeserializer

        return AvroDeserializer(registry)
    if fmt == "protobuf":
        from kproto.serde.protobuf import ProtobufDeserializer

        return ProtobufDeserializer(None, None, registry)
    from kproto.serde.json_schema import JSONDeserializer

    return JSONDeserializer(schema_registry_client=registry)


def _protobuf_json(message: Any) -> Any:
    """Protobuf's JSON mapping of a message with its fields at their default
    printed, as Confluent's ``ProtobufSchemaUtils.toJson`` prints it."""
    from google.protobuf import json_format

    try:
        out = json_format.MessageToDict(
            message, always_print_fields_with_no_presence=True
        )
    except TypeError:  # protobuf < 5.26 names the option differently
        out = json_format.MessageToDict(  # type: ignore[call-arg,unused-ignore]
            message, including_default_value_fields=True
        )
    return _in_field_order(message, out)


def _in_field_order(message: Any, mapped: dict[str, Any]) -> dict[str, Any]:
    """``mapped`` (a message's JSON mapping) with its keys in the order of the
    message's fields, nested messages too, as Java's ``JsonFormat`` prints them
    (Python's prints set fields before defaulted ones)."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        key = field.json_name
        if key not in mapped:
            continue
        value = mapped[key]
        is_map = field.message_type is not None and (
            field.message_type.GetOptions().map_entry
        )
        if field.message_type is not None and not is_map:
            inner = getattr(message, field.name)
            if isinstance(value, dict):
                value = _in_field_order(inner, value)
            elif isinstance(value, list):
                value = [
                    _in_field_order(m, v) if isinstance(v, dict) else v
                    for m, v in zip(inner, value, strict=False)
                ]
        out[key] = value
    for key, value in mapped.items():  # extensions, anything not a plain field
        out.setdefault(key, value)
    return out


def value_text(fmt: str, value: Any) -> str:
    """A read value as ``consume`` prints it: ``string`` and ``uuid`` as their text
    (as kafka-console-consumer prints them), every other format as compact JSON."""
    if fmt in ("string", "uuid", "binary") and isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------- writing


class ValueWriter:
    """Text keys or values of one format to record bytes, for ``produce``:
    ``writer(text, topic, headers) -> bytes``.

    The schema for avro / protobuf / json is ``schema_file`` (registered under the
    topic's subject when new, as kafka-avro-console-producer does with
    ``auto.register``), ``schema_id`` (a registered schema, written with that id),
    or neither: the subject's latest version.

    Raises (construction):
        CliError: a schema file that does not parse (naming it), an unknown schema
            id or subject, a Protobuf message name not in the file, a registry error.
    Raises (calls):
        LineError: text that is not of the format or that the schema rejects.
        CliError: the registry refusing or not answering.
    """

    def __init__(
        self,
        fmt: str,
        field: str,
        topic: str,
        registry: SchemaRegistryClient | None,
        schema_file: str | None = None,
        schema_id: int | None = None,
        message_name: str | None = None,
    ) -> None:
        self.fmt = fmt
        self.field = field
        self._serializer: Any = None
        self._avro_schema: Any = None
        self._message_class: Any = None
        if fmt not in REGISTRY_FORMATS:
            if schema_file is not None or schema_id is not None:
                raise CliError(f"--{field}-format {fmt} takes no schema")
            return
        _needs_serde(fmt)
        assert registry is not None
        with registry_errors():
            self._build(topic, registry, schema_file, schema_id, message_name)

    def _build(
        self,
        topic: str,
        registry: SchemaRegistryClient,
        schema_file: str | None,
        schema_id: int | None,
        message_name: str | None,
    ) -> None:
        from kproto.registry.client import Schema

        conf: dict[str, Any] = {}
        where = f"--{self.field}-schema {schema_file}"
        if schema_file is not None and schema_id is not None:
            raise CliError(
                f"--{self.field}-schema and --{self.field}-schema-id are exclusive"
            )
        if schema_file is not None:
            schema = Schema(read_schema_file(schema_file), _SCHEMA_TYPES[self.fmt])
        else:
            if schema_id is None:
                subject = f"{topic}-{self.field}"
                schema_id = registry.get_latest_version(subject).schema_id
                where = f"the latest version of subject {subject}"
            else:
                where = f"schema id {schema_id}"
            fmt = "serialized" if self.fmt == "protobuf" else None
            schema = registry.get_schema(schema_id, fmt=fmt)
            if schema.schema_type != _SCHEMA_TYPES[self.fmt]:
                raise CliError(
                    f"{where} is {schema.schema_type}, not {_SCHEMA_TYPES[self.fmt]}"
                )
            conf = {"auto.register.schemas": False, "use.schema.id": schema_id}
        try:
            self._serializer = self._make_serializer(
                registry, schema, conf, message_name, schema_file
            )
        except (ValueError, TypeError, KeyError) as exc:
            if registry_error_text(exc) is not None:
                raise
            why = one_line(str(exc))
            if isinstance(exc, json.JSONDecodeError):
                why = f"not JSON: {why}"
            raise CliError(f"{where}: {why}") from None

    def _make_serializer(
        self,
        registry: SchemaRegistryClient,
        schema: Schema,
        conf: dict[str, Any],
        message_name: str | None,
        schema_file: str | None,
    ) -> Any:
        if self.fmt == "avro":
            from kproto.serde.avro import AvroSerializer

            serializer = AvroSerializer(registry, schema, conf=conf)
            self._avro_schema = serializer.parsed
            return serializer
        if self.fmt == "json":
            from kproto.serde.json_schema import JSONSerializer

            return JSONSerializer(schema, registry, conf=conf)
        from kproto.serde.protobuf import ProtobufSerializer

        self._message_class = _protobuf_class(
            registry, schema, schema_file, message_name
        )
        return ProtobufSerializer(self._message_class, registry, conf=conf)

    def __call__(
        self, text: str, topic: str, headers: list[tuple[str, bytes | None]]
    ) -> bytes:
        if self.fmt not in REGISTRY_FORMATS:
            return _primitive_bytes(self.fmt, text, self.field)
        from kproto.serde.errors import SerializationError

        value = self._parse(text)
        ctx = _context(topic, self.field, headers, None, None)
        with registry_errors():
            try:
                data = self._serializer(value, ctx)
            except SerializationError as exc:
                if exc.__cause__ is not None and (
                    registry_error_text(exc.__cause__) is not None
                ):
                    raise
                raise LineError(f"{self.field}: {exc}") from None
        assert data is not None
        return bytes(data)

    def _parse(self, text: str) -> Any:
        if self.fmt == "avro":
            import fastavro

            try:
                (value,) = fastavro.json_reader(io.StringIO(text), self._avro_schema)
            except Exception as exc:  # fastavro raises many types for a misfit
                raise LineError(
                    f"{self.field}: not Avro JSON of the schema: {_why(exc)}"
                ) from None
            return value
        if self.fmt == "protobuf":
            from google.protobuf import json_format

            try:
                return json_format.Parse(text, self._message_class())
            except json_format.ParseError as exc:
                raise LineError(
                    f"{self.field}: not JSON of "
                    f"{self._message_class.DESCRIPTOR.full_name}: {exc}"
                ) from None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise LineError(f"{self.field}: not JSON: {exc}") from None


def _why(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg}"
    if isinstance(exc, AttributeError | TypeError | KeyError):
        return f"a value does not match its type ({type(exc).__name__}: {exc})"
    return str(exc) or type(exc).__name__


def _primitive_bytes(fmt: str, text: str, field: str) -> bytes:
    try:
        if fmt == "binary":
            return base64.b64decode(text, validate=True)
        if fmt == "string":
            return text.encode()
        if fmt == "uuid":
            return str(uuid.UUID(text)).encode()
        try:
            number = json.loads(text)
        except json.JSONDecodeError:
            number = text
        if fmt == "double":
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise ValueError(f"{text!r} is not a number")
            return _DOUBLE.pack(number)
        if isinstance(number, bool) or not isinstance(number, int):
            raise ValueError(f"{text!r} is not an integer")
        return (_INT if fmt == "int" else _LONG).pack(number)
    except struct.error:
        raise LineError(f"{field}: {text} does not fit {_a(fmt)}") from None
    except (ValueError, binascii.Error) as exc:
        raise LineError(f"{field}: not {_a(fmt)}: {exc}") from None


def _a(fmt: str) -> str:
    return f"{'an' if fmt in ('int', 'avro') else 'a'} {fmt}"


def _protobuf_class(
    registry: SchemaRegistryClient,
    schema: Schema,
    schema_file: str | None,
    message_name: str | None,
) -> Any:
    """The message class of a ``.proto`` file (``schema_file``'s text, compiled
    with protoc) or of a registered schema (its descriptor): ``message_name`` (a
    full or simple name), else the file's first message (Confluent's default)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from kproto.serde.protobuf import file_descriptor_proto
    from kproto.serde.registry_serde import resolve_references

    pool = descriptor_pool.DescriptorPool()
    files: list[Any] = []
    if schema_file is not None:
        from kproto.registry.schemas.protobuf import compile_proto

        name = Path(schema_file).name
        try:
            files = list(compile_proto(name, schema.schema_str).file)
        except Exception as exc:  # protoc's InvalidSchemaError
            raise ValueError(str(exc).strip().splitlines()[-1]) from None
    else:
        refs = resolve_references(
            registry, schema, None, deserializing=False, fmt="serialized"
        )
        for ref_name, ref_schema in refs:
            proto = file_descriptor_proto(ref_name, ref_schema, dict(refs))
            proto.name = ref_name
            files.append(proto)
        files.append(file_descriptor_proto("", schema, dict(refs)))
    main = files[-1]
    for proto in files:
        for dep in proto.dependency:
            if dep not in {f.name for f in files}:
                known = descriptor_pool.Default().FindFileByName(dep)
                with contextlib.suppress(TypeError):
                    pool.Add(
                        descriptor_pb2.FileDescriptorProto.FromString(
                            known.serialized_pb
                        )
                    )
        with contextlib.suppress(TypeError):
            pool.Add(proto)
    file = pool.FindFileByName(main.name)
    messages = list(file.message_types_by_name.values())
    if not messages:
        raise ValueError("the file defines no message")
    chosen = messages[0]
    if message_name is not None:
        found = [
            m for m in _all_messages(messages) if message_name in (m.full_name, m.name)
        ]
        if not found:
            raise ValueError(f"no message {message_name!r} in {main.name}")
        chosen = found[0]
    return message_factory.GetMessageClass(chosen)


def _all_messages(messages: list[Any]) -> Iterator[Any]:
    for m in messages:
        yield m
        yield from _all_messages(list(m.nested_types))


# --------------------------------------------------------------------------- dump-log


@attrs.frozen
class RecordDecoder:
    """``dump-log --key-decoder`` / ``--value-decoder``: the typed parts of the
    records of one partition's segments (``topic`` from the directory name, or
    None). A record that does not decode is printed with its error, and the dump
    goes on (as ``kafka-dump-log.sh``'s decoders)."""

    readers: dict[str, ValueReader]
    topic: str | None = None
    partition: int | None = None

    def for_file(self, topic: str | None, partition: int | None) -> RecordDecoder:
        """This decoder for the records of ``topic``-``partition``."""
        return attrs.evolve(self, topic=topic, partition=partition)

    def json(self, r: Any) -> dict[str, Any]:
        """``{"key": ..., "key_schema_id": ..., "value": ..., ...}`` for the typed
        parts (``"<part>_error"``: why one did not decode, its value null)."""
        out: dict[str, Any] = {}
        for field, reader in self.readers.items():
            data = r.key if field == "key" else r.value
            try:
                value, schema_id = reader(
                    data, self.topic or "", list(r.headers), self.partition, r.offset
                )
            except ValueError as exc:
                out[field] = None
                out[f"{field}_error"] = str(exc)
                continue
            out[field] = value
            if reader.fmt in REGISTRY_FORMATS:
                out[f"{field}_schema_id"] = schema_id
        return out

    def texts(self, r: Any) -> tuple[str | None, str | None]:
        """The ``key`` and ``payload`` texts: a typed part as
        :func:`value_text` prints it (``Error at offset N: <why>`` when it does
        not decode), an untyped part as UTF-8 text; None when null."""
        decoded = self.json(r)
        out: list[str | None] = []
        for field in ("key", "value"):
            data = r.key if field == "key" else r.value
            if field not in self.readers:
                out.append(None if data is None else data.decode("utf-8", "replace"))
            elif f"{field}_error" in decoded:
                out.append(f"Error at offset {r.offset}: {decoded[field + '_error']}")
            elif data is None:
                out.append(None)
            else:
                out.append(value_text(self.readers[field].fmt, decoded[field]))
        return out[0], out[1]


def record_decoder(args: argparse.Namespace) -> RecordDecoder | None:
    """The :class:`RecordDecoder` of ``dump-log``'s ``--key-decoder`` /
    ``--value-decoder`` (None when neither is given)."""
    formats = {"key": args.key_decoder, "value": args.value_decoder}
    if not any(formats.values()):
        return None
    wanted = set(formats.values())
    registry = registry_client(args) if wanted & REGISTRY_FORMATS else None
    return RecordDecoder(
        {
            field: ValueReader(fmt, field, registry)
            for field, fmt in formats.items()
            if fmt is not None
        }
    )
