"""What the registry-backed serializers share: their config (Confluent's property
names), finding the writer schema id for a subject, and fetching a writer schema (and
the schemas it references) by id or GUID.

Serializer config (confluent-kafka's ``AvroSerializer`` / ``JSONSerializer`` /
``ProtobufSerializer`` names and defaults):

- ``auto.register.schemas`` (True): register the schema under the subject on first use;
  False: look it up (the registry's 40401/40403 raised as a serialization error).
- ``normalize.schemas`` (False): register / look up with ``normalize=true``.
- ``use.schema.id`` (None): write this schema id, never registering.
- ``use.latest.version`` (False): write with the subject's latest version (its id, and
  for Avro its schema), never registering.
- ``subject.name.strategy`` (TopicNameStrategy): see :mod:`kproto.serde.strategies`.
- ``schema.id.serializer`` (:func:`~kproto.serde.wire.prefix_schema_id_serializer`).

Deserializer config: ``use.latest.version`` (read into the subject's latest version:
Avro's reader schema), ``subject.name.strategy``, ``schema.id.deserializer``
(:func:`~kproto.serde.wire.dual_schema_id_deserializer`).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, Self, TypeVar

import attrs

from kproto.registry.client import RegisteredSchema, Schema, SchemaRegistryClient
from kproto.registry.errors import RegistryError

from .context import SerializationContext
from .errors import in_context
from .strategies import SubjectNameStrategy, subject_name_strategy
from .wire import (
    SchemaId,
    SchemaIdDeserializer,
    SchemaIdSerializer,
    dual_schema_id_deserializer,
    prefix_schema_id_serializer,
)

__all__ = [
    "SerializerConfig",
    "DeserializerConfig",
    "SubjectSchemas",
    "WriterSchemas",
    "MAX_REFERENCE_DEPTH",
    "resolve_references",
    "ParsedSchemas",
    "given_schema",
    "schema_id_of",
]

MAX_REFERENCE_DEPTH = 32

T = TypeVar("T")


#: The metadata key of a config field: the Confluent property name it is set by.
_PROPERTY = "confluent.property"


def _property(name: str, default: Any, converter: Callable[[Any], Any]) -> Any:
    """A config field set by Confluent's property ``name``."""
    return attrs.field(default=default, converter=converter, metadata={_PROPERTY: name})


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _id_serializer(value: SchemaIdSerializer | None) -> SchemaIdSerializer:
    return value or prefix_schema_id_serializer


def _id_deserializer(value: SchemaIdDeserializer | None) -> SchemaIdDeserializer:
    return value or dual_schema_id_deserializer


@attrs.frozen
class _SchemaSerDeConfig:
    """What the serializer and deserializer configs both hold (as Confluent's
    ``AbstractKafkaSchemaSerDeConfig``), and reading a config from Confluent's
    property names (each field's ``_PROPERTY``)."""

    #: Names the config in the unknown-key error.
    _role: ClassVar[str] = ""

    use_latest_version: bool = _property("use.latest.version", False, bool)
    strategy: SubjectNameStrategy = _property(
        "subject.name.strategy", None, subject_name_strategy
    )

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None) -> Self:
        """From Confluent's property names.

        Raises:
            ValueError: an unknown key (naming it and the known ones).
        """
        names = {f.metadata[_PROPERTY]: f.name for f in attrs.fields(cls)}
        conf = dict(conf or {})
        unknown = sorted(set(conf) - set(names))
        if unknown:
            raise ValueError(
                f"unknown {cls._role} config: {', '.join(unknown)} (known: {', '.join(sorted(names))})"
            )
        return cls(**{names[key]: value for key, value in conf.items()})


@attrs.frozen
class SerializerConfig(_SchemaSerDeConfig):
    """A registry-backed serializer's config (see the module docs)."""

    _role: ClassVar[str] = "serializer"

    auto_register: bool = _property("auto.register.schemas", True, bool)
    normalize: bool = _property("normalize.schemas", False, bool)
    use_schema_id: int | None = _property("use.schema.id", None, _optional_int)
    schema_id_serializer: SchemaIdSerializer = _property(
        "schema.id.serializer", prefix_schema_id_serializer, _id_serializer
    )

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None) -> Self:
        """From Confluent's property names.

        Raises:
            ValueError: an unknown key, or ``use.latest.version`` with
                ``auto.register.schemas`` (Confluent refuses the pair too).
        """
        config = super().from_conf(conf)
        if config.auto_register and config.use_latest_version:
            raise ValueError(
                "cannot enable both use.latest.version and auto.register.schemas"
            )
        return config


@attrs.frozen
class DeserializerConfig(_SchemaSerDeConfig):
    """A registry-backed deserializer's config (see the module docs)."""

    _role: ClassVar[str] = "deserializer"

    schema_id_deserializer: SchemaIdDeserializer = _property(
        "schema.id.deserializer", dual_schema_id_deserializer, _id_deserializer
    )


class SubjectSchemas:
    """The writer side: which schema id a serializer writes under each subject
    (registered or looked up once per subject, as Confluent's serializers do)."""

    def __init__(self, client: SchemaRegistryClient, config: SerializerConfig) -> None:
        self.client = client
        self.config = config
        self._known: dict[str, RegisteredSchema] = {}
        self._lock = threading.Lock()

    def subject(self, ctx: SerializationContext | None, record_name: str | None) -> str:
        """The subject by the configured strategy.

        Raises:
            SerializationError: the strategy cannot name one (no context, no name).
        """
        try:
            return self.config.strategy(ctx, record_name)
        except ValueError as err:
            raise in_context(str(err), ctx, deserializing=False) from err

    def writer(
        self,
        ctx: SerializationContext | None,
        record_name: str | None,
        schema: Schema,
        fmt: str | None = None,
    ) -> RegisteredSchema:
        """The registered schema to write with: ``use.schema.id``'s, the latest
        version (``use.latest.version``), or ``schema`` registered (or looked up).

        Raises:
            SerializationError: the registry refused or lacks it (its
                :class:`~kproto.registry.errors.RegistryError` chained).
        """
        config = self.config
        try:
            if config.use_schema_id is not None:
                found = self.client.get_schema(config.use_schema_id, fmt=fmt)
                return RegisteredSchema(config.use_schema_id, found)
            subject = self.subject(ctx, record_name)
            if config.use_latest_version:
                return self.client.get_latest_version(subject, fmt=fmt)
            known = self._known.get(subject)
            if known is not None:
                return known
            with self._lock:  # one registration per subject, whatever the threads
                known = self._known.get(subject)
                if known is None:
                    if config.auto_register:
                        known = self.client.register_schema_full_response(
                            subject, schema, normalize=config.normalize
                        )
                    else:
                        known = self.client.lookup_schema(
                            subject, schema, normalize=config.normalize
                        )
                    self._known[subject] = known
                return known
        except RegistryError as err:
            raise in_context(
                f"schema registry: {err}",
                ctx,
                deserializing=False,
                schema_id=config.use_schema_id,
            ) from err


class WriterSchemas:
    """The reader side: writer schemas by id or GUID (the registry client caches
    them), and the subject's latest version for ``use.latest.version``."""

    def __init__(
        self, client: SchemaRegistryClient, config: DeserializerConfig
    ) -> None:
        self.client = client
        self.config = config

    def fetch(
        self, sid: SchemaId, ctx: SerializationContext | None, fmt: str | None = None
    ) -> RegisteredSchema:
        """The schema ``sid`` names.

        Raises:
            SerializationError: the registry has no such schema (40403 chained).
        """
        try:
            if sid.schema_id is not None:
                schema = self.client.get_schema(sid.schema_id, fmt=fmt)
                return RegisteredSchema(sid.schema_id, schema)
            assert sid.guid is not None
            return self.client.get_schema_by_guid(str(sid.guid), fmt=fmt)
        except RegistryError as err:
            raise in_context(
                f"writer schema: {err}", ctx, deserializing=True, schema_id=sid.label
            ) from err

    def latest(
        self,
        ctx: SerializationContext | None,
        record_name: str | None,
        fmt: str | None = None,
    ) -> RegisteredSchema | None:
        """The subject's latest version with ``use.latest.version``, else None."""
        if not self.config.use_latest_version:
            return None
        try:
            subject = self.config.strategy(ctx, record_name)
            return self.client.get_latest_version(subject, fmt=fmt)
        except (ValueError, RegistryError) as err:
            raise in_context(f"reader schema: {err}", ctx, deserializing=True) from err


def resolve_references(
    client: SchemaRegistryClient,
    schema: Schema,
    ctx: SerializationContext | None,
    *,
    deserializing: bool,
    fmt: str | None = None,
) -> list[tuple[str, Schema]]:
    """Every schema ``schema`` references, transitively, dependencies first, as
    ``(reference name, schema)`` (each once).

    Raises:
        SerializationError: a reference the registry lacks, or a chain deeper than 32.
    """
    out: list[tuple[str, Schema]] = []
    seen: set[tuple[str, int]] = set()

    def visit(s: Schema, depth: int) -> None:
        if depth > MAX_REFERENCE_DEPTH:
            raise in_context(
                f"schema references nested deeper than {MAX_REFERENCE_DEPTH}",
                ctx,
                deserializing=deserializing,
            )
        for ref in s.references:
            if (ref.subject, ref.version) in seen:
                continue
            seen.add((ref.subject, ref.version))
            try:
                found = client.get_version(ref.subject, ref.version, fmt=fmt).schema
            except RegistryError as err:
                raise in_context(
                    f"reference {ref.name!r} ({ref.subject} v{ref.version}): {err}",
                    ctx,
                    deserializing=deserializing,
                ) from err
            visit(found, depth + 1)
            out.append((ref.name, found))

    visit(schema, 0)
    return out


class ParsedSchemas(Generic[T]):
    """Schemas the registry gave (writer schemas, or the ones to write with), each
    parsed once: ``parse(schema, named)`` (fastavro's form, a jsonschema
    validator, ...), ``named`` being its references as :func:`resolve_references`
    finds them; kept by schema id (or GUID, or any key the caller names them by)."""

    def __init__(
        self,
        client: SchemaRegistryClient,
        parse: Callable[[Schema, Mapping[str, Schema]], T],
        *,
        deserializing: bool,
    ) -> None:
        self.client = client
        self.parse = parse
        self.deserializing = deserializing
        self._parsed: dict[int | str, T] = {}

    def get(
        self,
        key: int | str,
        schema: Callable[[], Schema],
        ctx: SerializationContext | None,
    ) -> T:
        """The parsed form of the schema ``key`` names; ``schema()`` gives the schema
        the first time.

        Raises:
            SerializationError: a reference the registry lacks, or the schema
                ``parse`` refused with ``ValueError`` (naming ``key``).
        """
        parsed = self._parsed.get(key)
        if parsed is None:
            found = schema()
            named = dict(
                resolve_references(
                    self.client, found, ctx, deserializing=self.deserializing
                )
            )
            try:
                parsed = self.parse(found, named)
            except ValueError as err:
                raise in_context(
                    str(err), ctx, deserializing=self.deserializing, schema_id=key
                ) from err
            self._parsed[key] = parsed
        return parsed


def given_schema(
    client: SchemaRegistryClient | None,
    schema: str | Schema,
    schema_type: str,
    parse: Callable[[Schema, Mapping[str, Schema]], T],
    *,
    deserializing: bool,
) -> tuple[Schema, T]:
    """The schema a serializer or deserializer is constructed with (text of
    ``schema_type``, or a :class:`Schema` with references) and ``parse(schema,
    named)`` of it, ``named`` being its references from ``client`` (none without
    a registry).

    Raises:
        ValueError: ``parse`` refuses the schema.
        SerializationError: a reference the registry lacks.
    """
    if not isinstance(schema, Schema):
        schema = Schema(schema, schema_type)
    named = (
        dict(resolve_references(client, schema, None, deserializing=deserializing))
        if client is not None
        else {}
    )
    return schema, parse(schema, named)


def schema_id_of(
    registered: RegisteredSchema, message_indexes: tuple[int, ...] | None = None
) -> SchemaId:
    """What a record written with ``registered`` is framed with: its schema id and
    GUID (a malformed or absent ``guid`` string: none), and for Protobuf the message
    indexes."""
    guid = None
    if registered.guid:
        try:
            guid = uuid.UUID(registered.guid)
        except ValueError:
            pass
    return SchemaId(registered.schema_id, guid, message_indexes)
