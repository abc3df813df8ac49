"""Schema formats of the registry: Avro, JSON Schema and Protobuf: parsing, Confluent's
canonical forms, normalization, references, and compatibility levels.

>>> from kproto.registry.schemas import parse_schema, check_compatibility
>>> old = parse_schema("AVRO", '{"type": "record", "name": "User", "fields": []}')
>>> new = parse_schema("AVRO", '{"type": "record", "name": "User", '
...                    '"fields": [{"name": "age", "type": "int"}]}')
>>> new.canonical
'{"type":"record","name":"User","fields":[{"name":"age","type":"int"}]}'
>>> check_compatibility(new, [old], "BACKWARD")[0][:52]
"{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', des"

The interface follows Confluent Schema Registry's ``ParsedSchema`` and
``CompatibilityChecker``; see ``docs/guide/schema-formats.md`` for the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kproto.registry.schemas import _types
from kproto.registry.schemas._types import *  # noqa: F403 (the names of _types.__all__)
from kproto.registry.schemas._types import (
    InvalidSchemaError,
    ParsedSchema,
    SchemaModel,
    SchemaReference,
    SchemaType,
)
from kproto.registry.schemas.avro import parse_avro
from kproto.registry.schemas.compatibility import check_compatibility
from kproto.registry.schemas.json_schema import parse_json_schema
from kproto.registry.schemas.protobuf import (
    compile_proto,
    message_index_path,
    message_name_at,
    parse_protobuf,
)

__all__ = [
    "parse_schema",
    "check_compatibility",
    "compile_proto",
    "message_index_path",
    "message_name_at",
]
__all__ += _types.__all__

#: Each format's ``parse(text, resolved, *, new) -> SchemaModel``.
_PARSERS: dict[SchemaType, Callable[..., SchemaModel]] = {
    SchemaType.AVRO: parse_avro,
    SchemaType.JSON: parse_json_schema,
    SchemaType.PROTOBUF: parse_protobuf,
}


def parse_schema(
    schema_type: SchemaType | str,
    schema: str,
    references: Sequence[SchemaReference] = (),
    resolved: Mapping[str, str] = {},
    *,
    new: bool = True,
) -> ParsedSchema:
    """Parse and validate a schema of the given type (``"AVRO"``, ``"JSON"``,
    ``"PROTOBUF"``; the registry's default for an absent ``schemaType`` is AVRO).

    ``references`` are the schema's references as registered; ``resolved`` maps the name
    of every reference reachable from ``schema`` (transitively) to its schema text (a
    reference missing from it makes the schema invalid).
    PROTOBUF input may be ``.proto`` text or the base64 of a serialized
    ``FileDescriptorProto``. ``new=False`` is for a schema already registered (read back
    from ``_schemas``), as Confluent's ``isNew``: Avro field defaults are not validated
    and JSON Schema's meta-schema is not checked again, so that what Confluent accepted
    once loads. Raises :class:`InvalidSchemaError` naming what is wrong (an unknown
    schema type included).
    """
    try:
        kind = SchemaType(str(schema_type).upper())
    except ValueError:
        raise InvalidSchemaError(f"Unknown schema type: {schema_type!r}") from None
    if not isinstance(schema, str):
        raise InvalidSchemaError("The schema must be a string")
    references = tuple(references)
    for ref in references:
        if ref.name not in resolved:
            raise InvalidSchemaError(
                f"Invalid {kind.value} schema: reference {ref.name!r} is not resolved"
            )
    try:
        model = _PARSERS[kind](schema, dict(resolved), new=new)
        return ParsedSchema(kind, model.text(), references, model)
    except InvalidSchemaError:
        raise
    except RecursionError:
        raise InvalidSchemaError(
            f"Invalid {kind.value} schema: nested too deeply"
        ) from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvalidSchemaError(f"Invalid {kind.value} schema: {exc}") from None
