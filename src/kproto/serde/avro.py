"""Avro in Confluent's wire format, on fastavro: :class:`AvroSerializer` and
:class:`AvroDeserializer` (confluent-kafka's names, arguments and config).

Values are what fastavro reads and writes (dicts for records, ``datetime`` for
``timestamp-millis``, ...); a top-level ``"bytes"`` schema's value is written raw, as
Confluent's serializers write it. The deserializer resolves the writer's schema (from the
registry, by the record's schema id) against a reader schema when one is given, or
the subject's latest version with ``use.latest.version``: records written with an older
schema read into the newer shape (the Avro specification's schema resolution: added
fields take their defaults, removed fields are skipped, ints widen).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

from kproto.registry.client import Schema, SchemaRegistryClient

from .avro_bounds import check_counts, zero_width_arrays
from .context import FromDict, SerializationContext, ToDict
from .errors import in_context, wrong_type
from .registry_serde import (
    DeserializerConfig,
    ParsedSchemas,
    SerializerConfig,
    SubjectSchemas,
    WriterSchemas,
    given_schema,
    schema_id_of,
)

__all__ = ["AvroSerializer", "AvroDeserializer", "parse_avro"]


def parse_avro(schema: Schema, named: Mapping[str, Schema] | None = None) -> Any:
    """The fastavro-parsed form of an Avro schema, with the named types of
    ``named`` (reference name -> schema, dependencies first) parsed before it.

    Raises:
        ValueError: not JSON, or not a valid Avro schema (fastavro's message).
    """
    import fastavro

    named_schemas: dict[str, Any] = {}
    for ref_schema in (named or {}).values():
        fastavro.parse_schema(
            json.loads(ref_schema.schema_str), named_schemas=named_schemas
        )
    try:
        return fastavro.parse_schema(
            json.loads(schema.schema_str), named_schemas=named_schemas
        )
    except (fastavro.schema.SchemaParseException, fastavro.schema.UnknownType) as err:
        raise ValueError(f"invalid Avro schema: {err}") from err


def _is_bytes(parsed: Any) -> bool:
    """A top-level ``"bytes"`` schema, whose values Confluent's serializers (Java's
    ``AbstractKafkaAvroSerializer``, confluent-kafka's) write raw, without Avro's
    length prefix."""
    return parsed == "bytes" or (
        isinstance(parsed, dict) and parsed.get("type") == "bytes"
    )


def _record_name(parsed: Any) -> str | None:
    if isinstance(parsed, dict) and parsed.get("type") in ("record", "error"):
        name = parsed.get("name")
        return str(name) if name else None
    return None


class AvroSerializer:
    """Values to Confluent-framed Avro (confluent-kafka's ``AvroSerializer``).

    Args:
        schema_registry_client: the registry.
        schema_str: the Avro schema (JSON text, or a :class:`Schema` with references).
        to_dict: ``to_dict(obj, ctx) -> dict``, for objects that are not dicts.
        conf: Confluent's serializer config (see :mod:`kproto.serde.registry_serde`).

    Raises:
        ValueError: an invalid schema or an unknown config key (at construction).
        SerializationError: (the key/value subclass with a context) a value the
            schema does not fit, or the registry refusing the schema (chained).
    """

    def __init__(
        self,
        schema_registry_client: SchemaRegistryClient,
        schema_str: str | Schema,
        to_dict: ToDict | None = None,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        self.client = schema_registry_client
        self.to_dict = to_dict
        self.subjects = SubjectSchemas(
            schema_registry_client, SerializerConfig.from_conf(conf)
        )
        self.schema, self.parsed = given_schema(
            schema_registry_client, schema_str, "AVRO", parse_avro, deserializing=False
        )
        self.record_name = _record_name(self.parsed)
        self._parsed = ParsedSchemas(
            schema_registry_client, parse_avro, deserializing=False
        )

    def __call__(
        self, value: Any, ctx: SerializationContext | None = None
    ) -> bytes | None:
        if value is None:
            return None
        import fastavro

        registered = self.subjects.writer(ctx, self.record_name, self.schema)
        parsed = self.parsed
        if (
            self.subjects.config.use_latest_version
            or self.subjects.config.use_schema_id is not None
        ):
            parsed = self._parsed.get(
                registered.schema_id, lambda: registered.schema, ctx
            )
        sid = schema_id_of(registered)
        if self.to_dict is not None:
            value = self.to_dict(value, ctx)
        if _is_bytes(parsed):
            if not isinstance(value, bytes | bytearray | memoryview):
                raise wrong_type("Avro", "bytes", value, ctx, schema_id=sid.label)
            return self.subjects.config.schema_id_serializer(bytes(value), ctx, sid)
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, parsed, value)
        # fastavro raises many exception types for a misfit value
        except Exception as err:
            raise in_context(
                f"Avro: value does not fit the schema: {type(err).__name__}: {err}",
                ctx,
                deserializing=False,
                schema_id=sid.label,
            ) from err
        return self.subjects.config.schema_id_serializer(out.getvalue(), ctx, sid)


class AvroDeserializer:
    """Confluent-framed Avro to values (confluent-kafka's ``AvroDeserializer``).

    Args:
        schema_registry_client: the registry the writer schemas come from.
        schema_str: a reader schema (JSON text or :class:`Schema`): records are
            resolved into it; None: read with the writer's schema (or, with
            ``use.latest.version``, the subject's latest).
        from_dict: ``from_dict(dict, ctx) -> obj`` applied to each value read.
        return_record_name: unions of records read as ``(name, record)`` (fastavro).
        conf: Confluent's deserializer config.

    Raises:
        SerializationError: (the key/value subclass with a context, naming topic,
            partition, offset and schema id) bad framing, an unknown schema id,
            bytes that are not a value of the writer's schema (or with bytes left
            over), an array of zero-width items (``null`` ...) claiming more than
            2**20 items (:mod:`kproto.serde.avro_bounds`), or a writer schema the
            reader schema cannot resolve.
    """

    def __init__(
        self,
        schema_registry_client: SchemaRegistryClient,
        schema_str: str | Schema | None = None,
        from_dict: FromDict | None = None,
        return_record_name: bool = False,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        self.client = schema_registry_client
        self.config = DeserializerConfig.from_conf(conf)
        self.writers = WriterSchemas(schema_registry_client, self.config)
        self.from_dict = from_dict
        self.return_record_name = return_record_name
        self.reader: Any = None
        if schema_str is not None:
            _, self.reader = given_schema(
                schema_registry_client,
                schema_str,
                "AVRO",
                parse_avro,
                deserializing=True,
            )
        self._parsed = ParsedSchemas(
            schema_registry_client, parse_avro, deserializing=True
        )
        # writer schemas with arrays of zero-width items: their counts checked first
        self._guarded: dict[int | str, bool] = {}

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> Any:
        if data is None:
            return None
        import fastavro

        sid, payload = self.config.schema_id_deserializer(data, ctx, False)
        label = sid.label
        assert label is not None
        writer = self._parsed.get(
            label, lambda: self.writers.fetch(sid, ctx).schema, ctx
        )
        guarded = self._guarded.get(label)
        if guarded is None:
            guarded = self._guarded[label] = zero_width_arrays(writer)
        reader = self.reader
        if reader is None and self.config.use_latest_version:
            latest = self.writers.latest(ctx, _record_name(writer))
            if latest is not None:
                latest_schema = latest.schema
                reader = self._parsed.get(
                    f"latest:{latest.schema_id}", lambda: latest_schema, ctx
                )
        if _is_bytes(writer):
            raw = bytes(payload)
            return raw if self.from_dict is None else self.from_dict(raw, ctx)
        if guarded:
            try:
                check_counts(writer, bytes(payload))
            except ValueError as err:
                raise in_context(
                    str(err), ctx, deserializing=True, schema_id=label
                ) from err
        buf = io.BytesIO(payload)
        try:
            value = fastavro.schemaless_reader(
                buf, writer, reader, return_record_name=self.return_record_name
            )
        # fastavro raises many exception types for bad bytes
        except Exception as err:
            raise in_context(
                f"Avro: cannot read the value: {type(err).__name__}: {err}",
                ctx,
                deserializing=True,
                schema_id=label,
            ) from err
        left = len(payload) - buf.tell()
        if left:
            raise in_context(
                f"Avro: {left} bytes left after the value",
                ctx,
                deserializing=True,
                schema_id=label,
            )
        if self.from_dict is not None:
            value = self.from_dict(value, ctx)
        return value
