"""Protobuf in Confluent's wire format, on the protobuf runtime:
:class:`ProtobufSerializer` and :class:`ProtobufDeserializer` (confluent-kafka's names,
arguments and config).

After the schema id comes the message-index path of the message type in its
``.proto`` file (:mod:`kproto.serde.wire`), then the message's bytes. The serializer
registers the message's file as base64 of its serialized ``FileDescriptorProto`` (what
confluent-kafka registers), each imported file first under its own subject (the import
path; Confluent's ``reference.subject.name.strategy`` default), well-known
``google/protobuf/`` and ``confluent/`` files skipped (``skip.known.types``).

The deserializer reads into the user's message class when given one (as
confluent-kafka's does); without it, it builds the classes from the writer's schema
(``GET /schemas/ids/{id}?format=serialized``, its references likewise) with protobuf's
``message_factory``; a registry answering ``.proto`` text instead is compiled with
``kproto.registry.schemas.protobuf.compile_proto``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from kproto.registry.client import Schema, SchemaReference, SchemaRegistryClient
from kproto.registry.errors import RegistryError

from .context import SerializationContext
from .errors import in_context, wrong_type
from .registry_serde import (
    DeserializerConfig,
    SerializerConfig,
    SubjectSchemas,
    WriterSchemas,
    resolve_references,
    schema_id_of,
)
from .wire import SchemaId

__all__ = [
    "ProtobufSerializer",
    "ProtobufDeserializer",
    "message_indexes",
    "is_known_type",
]

ReferenceSubjectStrategy = Callable[[SerializationContext | None, Any], str]


def is_known_type(file_name: str) -> bool:
    """Whether an imported file ships with the runtimes (``google/protobuf/``,
    ``google/type/``, ``confluent/``) and is not registered."""
    return file_name.startswith(("google/protobuf/", "google/type/", "confluent/"))


def message_indexes(descriptor: Any) -> tuple[int, ...]:
    """The message-index path of a message descriptor: its index among its file's
    top-level messages, then among each enclosing message's nested types."""
    path: list[int] = []
    current = descriptor
    while current.containing_type is not None:
        parent = current.containing_type
        path.append(list(parent.nested_types).index(current))
        current = parent
    path.append(list(current.file.message_types_by_name).index(current.name))
    return tuple(reversed(path))


def _reference_subject(ctx: SerializationContext | None, file_descriptor: Any) -> str:
    return str(file_descriptor.name)


class ProtobufSerializer:
    """Protobuf messages to Confluent-framed bytes (confluent-kafka's
    ``ProtobufSerializer``).

    Args:
        msg_type: the generated message class.
        schema_registry_client: the registry.
        conf: Confluent's serializer config plus ``skip.known.types`` (True) and
            ``reference.subject.name.strategy`` (``(ctx, file_descriptor) ->
            subject``; default the import path).

    Raises:
        SerializationError: a message of another type, or the registry refusing the
            schema (chained).
    """

    def __init__(
        self,
        msg_type: type[Any],
        schema_registry_client: SchemaRegistryClient,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        conf = dict(conf or {})
        self.skip_known_types = bool(conf.pop("skip.known.types", True))
        self.reference_strategy: ReferenceSubjectStrategy = (
            conf.pop("reference.subject.name.strategy", None) or _reference_subject
        )
        conf.pop("use.deprecated.format", None)
        self.msg_type = msg_type
        self.client = schema_registry_client
        self.config = SerializerConfig.from_conf(conf)
        self.subjects = SubjectSchemas(schema_registry_client, self.config)
        descriptor = msg_type.DESCRIPTOR
        self.record_name = str(descriptor.full_name)
        self.indexes = message_indexes(descriptor)
        self._schema: Schema | None = None

    def _file_schema(
        self, file_descriptor: Any, ctx: SerializationContext | None
    ) -> Schema:
        references = []
        for dep in file_descriptor.dependencies:
            if self.skip_known_types and is_known_type(dep.name):
                continue
            dep_schema = self._file_schema(dep, ctx)
            subject = self.reference_strategy(ctx, dep)
            try:
                if self.config.auto_register:
                    self.client.register_schema(
                        subject, dep_schema, self.config.normalize
                    )
                found = self.client.lookup_schema(
                    subject, dep_schema, self.config.normalize
                )
            except RegistryError as err:
                raise in_context(
                    f"schema registry: reference {dep.name!r}: {err}",
                    ctx,
                    deserializing=False,
                ) from err
            assert found.version is not None
            references.append(SchemaReference(dep.name, subject, found.version))
        text = base64.standard_b64encode(file_descriptor.serialized_pb).decode("ascii")
        return Schema(text, "PROTOBUF", tuple(references))

    def __call__(
        self, value: Any, ctx: SerializationContext | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, self.msg_type):
            raise wrong_type("Protobuf", self.msg_type.__name__, value, ctx)
        if self._schema is None:
            self._schema = self._file_schema(self.msg_type.DESCRIPTOR.file, ctx)
        registered = self.subjects.writer(ctx, self.record_name, self._schema)
        sid = schema_id_of(registered, self.indexes)
        payload: bytes = value.SerializeToString()
        return self.config.schema_id_serializer(payload, ctx, sid)


class ProtobufDeserializer:
    """Confluent-framed Protobuf bytes to messages (confluent-kafka's
    ``ProtobufDeserializer``).

    Args:
        message_type: the generated class to read into; None: classes built from the
            writer's schema in the registry, by the record's message-index path.
        conf: Confluent's deserializer config (``use.latest.version`` is accepted
            and, as in confluent-kafka without rules, changes nothing: a message is
            read with the writer's descriptor or ``message_type``).
        schema_registry_client: the registry (needed without ``message_type``; with
            it, the record's schema id is checked to exist).

    Raises:
        ValueError: neither a message type nor a registry (at construction).
        SerializationError: (naming topic, partition, offset and schema id) bad
            framing or message indexes, an unknown schema id, indexes naming no
            message of the schema, or bytes that are not a message.
    """

    def __init__(
        self,
        message_type: type[Any] | None = None,
        conf: Mapping[str, Any] | None = None,
        schema_registry_client: SchemaRegistryClient | None = None,
    ) -> None:
        conf = dict(conf or {})
        conf.pop("use.deprecated.format", None)
        if message_type is None and schema_registry_client is None:
            raise ValueError(
                "ProtobufDeserializer needs a message_type or a schema_registry_client"
            )
        self.message_type = message_type
        self.client = schema_registry_client
        self.config = DeserializerConfig.from_conf(conf)
        self.writers = (
            WriterSchemas(schema_registry_client, self.config)
            if schema_registry_client is not None
            else None
        )
        self._files: dict[int | str, Any] = {}  # schema id -> FileDescriptor
        self._classes: dict[tuple[int | str, tuple[int, ...]], type[Any]] = {}
        self._checked: set[int | str | None] = (
            set()
        )  # ids known to exist (message_type given)

    def _file(self, sid: SchemaId, ctx: SerializationContext | None) -> Any:
        label = sid.label
        assert (
            label is not None and self.writers is not None and self.client is not None
        )
        found = self._files.get(label)
        if found is None:
            from google.protobuf import descriptor_pool

            schema = self.writers.fetch(sid, ctx, fmt="serialized").schema
            refs = resolve_references(
                self.client, schema, ctx, deserializing=True, fmt="serialized"
            )
            pool = descriptor_pool.DescriptorPool()
            try:
                main = file_descriptor_proto("", schema, dict(refs))
                for name, ref_schema in refs:
                    ref_proto = file_descriptor_proto(name, ref_schema, dict(refs))
                    ref_proto.name = name  # the import path the referring file uses
                    _add(pool, ref_proto)
                _add(pool, main)
                found = pool.FindFileByName(main.name)
            except (ValueError, TypeError, KeyError) as err:
                raise in_context(
                    f"Protobuf: writer schema: {err}",
                    ctx,
                    deserializing=True,
                    schema_id=label,
                ) from err
            self._files[label] = found
        return found

    def _class(self, sid: SchemaId, ctx: SerializationContext | None) -> type[Any]:
        label = sid.label
        assert label is not None
        indexes = sid.message_indexes or (0,)
        cls = self._classes.get((label, indexes))
        if cls is None:
            from google.protobuf import message_factory

            file = self._file(sid, ctx)
            try:
                desc = list(file.message_types_by_name.values())[indexes[0]]
                for index in indexes[1:]:
                    desc = desc.nested_types[index]
            except IndexError as err:
                raise in_context(
                    f"Protobuf: message indexes {list(indexes)} name no message of {file.name!r}",
                    ctx,
                    deserializing=True,
                    schema_id=label,
                ) from err
            cls = message_factory.GetMessageClass(desc)
            self._classes[(label, indexes)] = cls
        return cls

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> Any:
        if data is None:
            return None
        from google.protobuf.message import DecodeError

        sid, payload = self.config.schema_id_deserializer(data, ctx, True)
        if self.message_type is not None:
            cls = self.message_type
            if self.writers is not None and sid.label not in self._checked:
                self.writers.fetch(sid, ctx, fmt="serialized")
                self._checked.add(sid.label)
        else:
            cls = self._class(sid, ctx)
        try:
            return cls.FromString(bytes(payload))
        except DecodeError as err:
            raise in_context(
                f"Protobuf: cannot read a {cls.DESCRIPTOR.full_name}: {err}",
                ctx,
                deserializing=True,
                schema_id=sid.label,
            ) from err


def _add(pool: Any, file_proto: Any) -> None:
    """Add a FileDescriptorProto to a pool, with any well-known import it needs
    taken from the default pool first."""
    from google.protobuf import descriptor_pb2, descriptor_pool

    for dep in file_proto.dependency:
        try:
            pool.FindFileByName(dep)
        except KeyError:
            known = descriptor_pool.Default().FindFileByName(dep)
            _add(
                pool, descriptor_pb2.FileDescriptorProto.FromString(known.serialized_pb)
            )
    try:
        pool.FindFileByName(file_proto.name)
    except KeyError:
        pool.Add(file_proto)


def file_descriptor_proto(
    name: str, schema: Schema, named: Mapping[str, Schema]
) -> Any:
    """A registry schema as a FileDescriptorProto: base64 of a serialized one (the
    ``format=serialized`` answer), else ``.proto`` text compiled by
    ``kproto.registry.schemas.protobuf.compile_proto``.

    Raises:
        ValueError: neither form is readable.
    """
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    try:
        raw = base64.b64decode(schema.schema_str, validate=True)
        proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
        if proto.name or proto.message_type:
            if not proto.name:
                proto.name = name or "schema.proto"
            return proto
    except (binascii.Error, ValueError, DecodeError):
        pass
    try:
        from kproto.registry.schemas.protobuf import compile_proto  # type: ignore[import-not-found,unused-ignore]
    except ImportError as err:
        raise ValueError(
            "the registry answered .proto text, and kproto.registry.schemas is not installed to compile it"
        ) from err
    file_name = name or "schema.proto"
    files = compile_proto(
        file_name, schema.schema_str, {n: s.schema_str for n, s in named.items()}
    )
    for proto in files.file:
        if proto.name == file_name:
            return proto
    raise ValueError(f"compiling {file_name!r} gave no such file")
