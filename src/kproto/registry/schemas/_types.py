"""The shared types of :mod:`kproto.registry.schemas`: schema types, compatibility
levels, references, the parsed schema and the invalid-schema error.

Names follow Confluent Schema Registry (``io.confluent.kafka.schemaregistry``):
``ParsedSchema``, ``SchemaReference``, ``CompatibilityLevel``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar, Protocol

import attrs

__all__ = [
    "SchemaType",
    "CompatibilityLevel",
    "SchemaReference",
    "InvalidSchemaError",
    "ParsedSchema",
    "SchemaModel",
    "SchemaDifference",
]


class SchemaType(StrEnum):
    """A schema format, under the name the registry's ``schemaType`` field uses."""

    AVRO = "AVRO"
    JSON = "JSON"
    PROTOBUF = "PROTOBUF"


class CompatibilityLevel(StrEnum):
    """Confluent's compatibility levels (``io.confluent.kafka.schemaregistry.CompatibilityLevel``).

    BACKWARD: the new schema reads data written with the latest one; FORWARD: the latest
    reads data written with the new one; FULL: both. ``*_TRANSITIVE``: against every
    previous version rather than the latest only.
    """

    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @property
    def transitive(self) -> bool:
        """True for the levels that check every previous version."""
        return self.name.endswith("_TRANSITIVE")

    @property
    def backward(self) -> bool:
        """True when the new schema must read data written with the previous ones."""
        return self.name.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        """True when the previous schemas must read data written with the new one."""
        return self.name.startswith(("FORWARD", "FULL"))


def sorted_references(
    references: tuple[SchemaReference, ...],
) -> tuple[SchemaReference, ...]:
    """References sorted and without duplicates, as Confluent's ``normalize()`` keeps them."""
    return tuple(sorted(set(references), key=lambda r: (r.name, r.subject, r.version)))


@attrs.frozen
class SchemaReference:
    """A reference from a schema to another registered schema (Confluent's
    ``SchemaReference``): ``name`` is how the referring schema names it (an Avro full
    type name, a JSON Schema ``$ref`` URL, a Protobuf import path), ``subject`` and
    ``version`` where it is registered."""

    name: str
    subject: str
    version: int


class InvalidSchemaError(ValueError):
    """A schema that does not parse, does not validate against its format's rules, or
    refers to something it cannot resolve. The message names what is wrong and where;
    the registry answers it with error code 42201."""


class SchemaModel(Protocol):
    """What a format module keeps for one parsed schema (private to the package)."""

    def text(self, normalize: bool = False) -> str:
        """The canonical text (Confluent's ``canonicalString()``), or with
        ``normalize`` the normalized one."""
        ...

    def record_names(self) -> tuple[str, ...]: ...

    def formatted(self, fmt: str) -> str | None: ...


@attrs.frozen
class ParsedSchema:
    """A schema parsed and validated by :func:`kproto.registry.schemas.parse_schema`.

    ``canonical`` is the text the registry stores, returns and compares (Confluent's
    ``ParsedSchema.canonicalString()`` for the format); two schemas are equal when their
    type, canonical text and references are. ``model`` is the format module's parsed form
    (not compared).
    """

    schema_type: SchemaType
    canonical: str
    references: tuple[SchemaReference, ...]
    model: SchemaModel = attrs.field(eq=False, repr=False)

    def normalize(self) -> ParsedSchema:
        """The normalized form (the registry's ``?normalize=true``): equivalent schemas
        written differently normalize to the same canonical text. Idempotent."""
        return ParsedSchema(
            self.schema_type,
            self.model.text(normalize=True),
            sorted_references(self.references),
            self.model,
        )

    def record_names(self) -> tuple[str, ...]:
        """Fully qualified top-level record names, for RecordNameStrategy: the Avro
        record's full name (Confluent's ``AvroSchema.name()``), the Protobuf file's
        top-level messages in file order, the JSON Schema ``title``; empty when the
        schema has none."""
        return self.model.record_names()

    def formatted(self, fmt: str) -> str:
        """The text for ``GET /schemas/ids/{id}?format=fmt``: ``""`` or an unknown format
        gives ``canonical``; AVRO ``"resolved"`` writes referenced types in place
        (Confluent's ``Format.RESOLVED``); PROTOBUF ``"serialized"`` gives the base64 of
        the serialized ``FileDescriptorProto``."""
        text = self.model.formatted(fmt) if fmt else None
        return self.canonical if text is None else text


@attrs.frozen
class SchemaDifference:
    """One of Confluent's ``Difference``s between two schemas of a format (JSON
    Schema, Protobuf): a difference type and a path. Each format subclasses it with
    its compatible types and the descriptions of the others.
    """

    type: str
    path: str

    #: The format's difference types that keep the schemas compatible.
    COMPATIBLE_CHANGES: ClassVar[frozenset[str]] = frozenset()

    @property
    def compatible(self) -> bool:
        return self.type in self.COMPATIBLE_CHANGES

    def description(self, update: str, original: str) -> str:
        """Confluent's description of this type (empty where it has none)."""
        return ""

    def describe(self, update: str, original: str) -> str:
        """Confluent's ``{errorType:"...", description:"..."}``; ``update``/``original``
        name the roles ("new"/"old")."""
        text = self.description(update, original)
        return f'{{errorType:"{self.type}", description:"{text}"}}'
