# TEMPORARY shim: the registry-schemas engineer's package replaces this file at merge.
"""A crude stand-in for :mod:`kproto.registry.schemas` (the interface of
``/work/briefs/registry-interface.md``), so the server can be built and tested:
AVRO and JSON are JSON-parsed and their canonical form is compact JSON; PROTOBUF text
is kept as it is (stripped); no compatibility checks (every schema is compatible)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from enum import StrEnum

import attrs

__all__ = [
    "CompatibilityLevel",
    "InvalidSchemaError",
    "ParsedSchema",
    "SchemaReference",
    "SchemaType",
    "check_compatibility",
    "parse_schema",
]


class SchemaType(StrEnum):
    AVRO = "AVRO"
    JSON = "JSON"
    PROTOBUF = "PROTOBUF"


class CompatibilityLevel(StrEnum):
    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"


@attrs.frozen
class SchemaReference:
    name: str
    subject: str
    version: int


class InvalidSchemaError(ValueError):
    pass


@attrs.frozen
class ParsedSchema:
    schema_type: SchemaType
    canonical: str
    references: tuple[SchemaReference, ...] = ()

    def normalize(self) -> ParsedSchema:
        return self

    def record_names(self) -> tuple[str, ...]:
        if self.schema_type is SchemaType.PROTOBUF:
            return tuple(re.findall(r"^\s*message\s+(\w+)", self.canonical, re.M))
        value = json.loads(self.canonical)
        if isinstance(value, dict):
            if self.schema_type is SchemaType.JSON:
                title = value.get("title")
                return (title,) if isinstance(title, str) else ()
            name = value.get("name")
            if isinstance(name, str):
                space = value.get("namespace")
                return (f"{space}.{name}" if space and "." not in name else name,)
        return ()

    def formatted(self, fmt: str) -> str:
        return self.canonical


def parse_schema(
    schema_type: SchemaType | str,
    schema: str,
    references: Sequence[SchemaReference] = (),
    resolved: Mapping[str, str] = {},
) -> ParsedSchema:
    try:
        kind = SchemaType(schema_type)
    except ValueError:
        raise InvalidSchemaError(f"unknown schema type {schema_type!r}") from None
    if kind is SchemaType.PROTOBUF:
        text = schema.strip()
        if not text:
            raise InvalidSchemaError("empty Protobuf schema")
        if "{" not in text and "syntax" not in text:
            try:
                base64.b64decode(text, validate=True)
            except ValueError:
                raise InvalidSchemaError("not a .proto text nor base64") from None
        return ParsedSchema(kind, text, tuple(references))
    try:
        value = json.loads(schema)
    except (ValueError, RecursionError) as exc:
        raise InvalidSchemaError(f"Invalid schema: {exc}") from None
    if kind is SchemaType.AVRO and not isinstance(value, (dict, list, str)):
        raise InvalidSchemaError(f"an Avro schema is not a JSON {type(value).__name__}")
    canonical = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return ParsedSchema(kind, canonical, tuple(references))


def check_compatibility(
    new: ParsedSchema,
    previous: Sequence[ParsedSchema],
    level: CompatibilityLevel | str,
) -> list[str]:
    CompatibilityLevel(level)
    return []
