"""JSON Schema in Confluent's wire format, on jsonschema: :class:`JSONSerializer` and
:class:`JSONDeserializer` (confluent-kafka's names, argument order and config).

The payload is the value as compact JSON in UTF-8 (``separators=(",", ":")``,
non-ASCII kept, as confluent-kafka writes it). Values are validated against the
schema on both sides unless ``validate`` is False (Confluent's option); ``$ref``s to
other registered schemas resolve through the schema's references (reference name =
the ``$ref`` URL).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kproto.registry.client import Schema, SchemaRegistryClient

from .context import FromDict, SerializationContext, ToDict
from .errors import in_context
from .registry_serde import (
    DeserializerConfig,
    ParsedSchemas,
    SerializerConfig,
    SubjectSchemas,
    WriterSchemas,
    given_schema,
    schema_id_of,
)
from .wire import SchemaId

__all__ = ["JSONSerializer", "JSONDeserializer", "json_validator"]


def json_validator(schema: Schema, named: Mapping[str, Schema] | None = None) -> Any:
    """A jsonschema validator for ``schema`` (its ``$schema`` draft, Draft 7 when
    none), with the referenced schemas of ``named`` (``$ref`` URL -> schema) in its
    registry.

    Raises:
        ValueError: not JSON, or not a valid JSON Schema.
    """
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT7

    try:
        contents = json.loads(schema.schema_str)
        resources = [
            (
                name,
                Resource.from_contents(
                    json.loads(s.schema_str), default_specification=DRAFT7
                ),
            )
            for name, s in (named or {}).items()
        ]
        cls = jsonschema.validators.validator_for(
            contents, default=jsonschema.Draft7Validator
        )
        cls.check_schema(contents)
    except (ValueError, jsonschema.SchemaError) as err:
        raise ValueError(f"invalid JSON Schema: {err}") from err
    return cls(contents, registry=Registry().with_resources(resources))


def _title(schema_str: str) -> str | None:
    try:
        title = json.loads(schema_str).get("title")
    except (ValueError, AttributeError):
        return None
    return title if isinstance(title, str) else None


def _validate(validator: Any, value: Any) -> str | None:
    import jsonschema
    from referencing.exceptions import Unresolvable

    try:
        if validator.is_valid(value):
            return None
        validator.validate(value)  # again, for the best error
    except RecursionError:
        return "JSON Schema: value nested too deeply to validate"
    except jsonschema.ValidationError as err:
        where = "/".join(str(p) for p in err.absolute_path)
        return f"JSON Schema: {err.message}" + (f" at /{where}" if where else "")
    except Unresolvable as err:
        return f"JSON Schema: unresolvable reference: {err}"
    return None


class JSONSerializer:
    """Values to Confluent-framed JSON (confluent-kafka's ``JSONSerializer``).

    Args:
        schema_str: the JSON Schema (text, or a :class:`Schema` with references).
        schema_registry_client: the registry.
        to_dict: ``to_dict(obj, ctx) -> dict``, for objects that are not JSON values.
        conf: Confluent's serializer config plus ``validate`` (True).

    Raises:
        ValueError: an invalid schema or an unknown config key (at construction).
        SerializationError: a value the schema rejects (naming the failing path) or
            that is not JSON-serializable, or the registry refusing the schema.
    """

    def __init__(
        self,
        schema_str: str | Schema,
        schema_registry_client: SchemaRegistryClient,
        to_dict: ToDict | None = None,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        conf = dict(conf or {})
        self.validate = bool(conf.pop("validate", True))
        self.subjects = SubjectSchemas(
            schema_registry_client, SerializerConfig.from_conf(conf)
        )
        self.schema, self.validator = given_schema(
            schema_registry_client,
            schema_str,
            "JSON",
            json_validator,
            deserializing=False,
        )
        self.record_name = _title(self.schema.schema_str)
        self.to_dict = to_dict

    def __call__(
        self, value: Any, ctx: SerializationContext | None = None
    ) -> bytes | None:
        if value is None:
            return None
        registered = self.subjects.writer(ctx, self.record_name, self.schema)
        sid = schema_id_of(registered)
        if self.to_dict is not None:
            value = self.to_dict(value, ctx)
        if self.validate:
            problem = _validate(self.validator, value)
            if problem is not None:
                raise in_context(problem, ctx, deserializing=False, schema_id=sid.label)
        try:
            payload = json.dumps(
                value, separators=(",", ":"), ensure_ascii=False
            ).encode()
        except (TypeError, ValueError) as err:
            raise in_context(
                f"JSON: value is not serializable: {err}",
                ctx,
                deserializing=False,
                schema_id=sid.label,
            ) from err
        return self.subjects.config.schema_id_serializer(payload, ctx, sid)


class JSONDeserializer:
    """Confluent-framed JSON to values (confluent-kafka's ``JSONDeserializer``).

    Args:
        schema_str: a schema to validate with instead of the writer's (None: the
            writer's, from the registry).
        from_dict: ``from_dict(value, ctx) -> obj`` applied to each value read.
        schema_registry_client: the registry (needed without ``schema_str``).
        conf: Confluent's deserializer config plus ``validate`` (True); with
            ``use.latest.version`` values are validated against the subject's latest
            version instead of the writer's schema.

    Raises:
        ValueError: neither ``schema_str`` nor a registry (at construction).
        SerializationError: (naming topic, partition, offset and schema id) bad
            framing, an unknown schema id, bytes that are not UTF-8 JSON, or a value
            the schema rejects.
    """

    def __init__(
        self,
        schema_str: str | Schema | None = None,
        from_dict: FromDict | None = None,
        schema_registry_client: SchemaRegistryClient | None = None,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        conf = dict(conf or {})
        self.validate = bool(conf.pop("validate", True))
        self.config = DeserializerConfig.from_conf(conf)
        if schema_str is None and schema_registry_client is None:
            raise ValueError(
                "JSONDeserializer needs schema_str or a schema_registry_client"
            )
        self.client = schema_registry_client
        self.writers = (
            WriterSchemas(schema_registry_client, self.config)
            if schema_registry_client is not None
            else None
        )
        self.validator: Any = None
        if schema_str is not None:
            _, self.validator = given_schema(
                schema_registry_client,
                schema_str,
                "JSON",
                json_validator,
                deserializing=True,
            )
        self.from_dict = from_dict
        self._validators = (
            ParsedSchemas(schema_registry_client, json_validator, deserializing=True)
            if schema_registry_client is not None
            else None
        )

    def _writer_validator(self, sid: SchemaId, ctx: SerializationContext | None) -> Any:
        label, writers = sid.label, self.writers
        assert (
            label is not None and writers is not None and self._validators is not None
        )
        return self._validators.get(label, lambda: writers.fetch(sid, ctx).schema, ctx)

    def _latest_validator(self, ctx: SerializationContext | None) -> Any:
        """With ``use.latest.version``: the validator of the subject's latest version
        (the record name is unknown before reading: TopicNameStrategy subjects)."""
        if self.writers is None or not self.config.use_latest_version:
            return None
        latest = self.writers.latest(ctx, None)
        if latest is None:
            return None
        return self._writer_validator(schema_id_of(latest), ctx)

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> Any:
        if data is None:
            return None
        sid, payload = self.config.schema_id_deserializer(data, ctx, False)
        validator = self.validator
        if validator is None and self.validate:
            latest = self._latest_validator(ctx)
            validator = (
                latest if latest is not None else self._writer_validator(sid, ctx)
            )
        try:
            value = json.loads(bytes(payload).decode())
        except (
            ValueError,
            RecursionError,
        ) as err:  # also UnicodeDecodeError, JSONDecodeError
            raise in_context(
                f"JSON: cannot read the value: {err}",
                ctx,
                deserializing=True,
                schema_id=sid.label,
            ) from err
        if self.validate and validator is not None:
            problem = _validate(validator, value)
            if problem is not None:
                raise in_context(problem, ctx, deserializing=True, schema_id=sid.label)
        if self.from_dict is not None:
            value = self.from_dict(value, ctx)
        return value
