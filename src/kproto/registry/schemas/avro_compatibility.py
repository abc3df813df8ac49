"""Avro compatibility: Avro Java's ``SchemaCompatibility`` reader/writer checker (the
Avro specification's schema resolution) with Confluent's messages
(``io.confluent.kafka.schemaregistry.avro.Difference``).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from kproto.registry.schemas._types import ParsedSchema
from kproto.registry.schemas.avro import (
    MAX_DEPTH,
    NO_DEFAULT,
    Array,
    AvroModel,
    Map,
    Named,
    Node,
    UnionSchema,
)

__all__ = ["Incompatibility", "avro_incompatibilities", "avro_compatibility_errors"]

_PROMOTIONS = {
    "long": ("int",),
    "float": ("int", "long"),
    "double": ("int", "long", "float"),
    "bytes": ("string",),
    "string": ("bytes",),
}


@attrs.frozen
class Incompatibility:
    """One of Avro Java's ``SchemaCompatibility.Incompatibility``."""

    error_type: str
    location: str
    message: str

    def describe(self, reader: str, writer: str) -> str:
        """Confluent's ``{errorType:..., description:..., additionalInfo:...}`` text;
        ``reader``/``writer`` name the roles ("new"/"old")."""
        path, info = self.location, self.message
        descriptions = {
            "FIXED_SIZE_MISMATCH": f"The size of FIXED type field at path '{path}' in the "
            f"{reader} schema does not match with the {writer} schema",
            "TYPE_MISMATCH": f"The type (path '{path}') of a field in the {reader} schema "
            f"does not match with the {writer} schema",
            "NAME_MISMATCH": f"The name of the schema has changed (path '{path}')",
            "MISSING_ENUM_SYMBOLS": f"The {reader} schema is missing enum symbols '{info}' "
            f"at path '{path}' in the {writer} schema",
            "MISSING_UNION_BRANCH": f"The {reader} schema is missing a type inside a union "
            f"field at path '{path}' in the {writer} schema",
            "READER_FIELD_MISSING_DEFAULT_VALUE": f"The field '{info}' at path '{path}' in "
            f"the {reader} schema has no default value and is missing in the {writer} schema",
        }
        return (
            f"{{errorType:'{self.error_type}', description:'{descriptions[self.error_type]}', "
            f"additionalInfo:'{info}'}}"
        )


class _Checker:
    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], list[Incompatibility]] = {}
        self.location: list[str] = []

    def where(self, *extra: str) -> str:
        return "/" + "/".join([*self.location, *extra])

    def check(self, reader: Node, writer: Node) -> list[Incompatibility]:
        key = (id(reader), id(writer))
        if key in self.memo:
            return self.memo[key]
        if len(self.location) > 4 * MAX_DEPTH:
            return []
        self.memo[key] = []  # in progress: a recursive pair is compatible
        result = self.compute(reader, writer)
        self.memo[key] = result
        return result

    def nested(
        self, step: Sequence[str], reader: Node, writer: Node
    ) -> list[Incompatibility]:
        self.location.extend(step)
        try:
            return self.check(reader, writer)
        finally:
            del self.location[len(self.location) - len(step) :]

    def mismatch(self, reader: Node, writer: Node) -> list[Incompatibility]:
        return [
            Incompatibility(
                "TYPE_MISMATCH",
                self.where(),
                f"reader type: {_java_type(reader)} not compatible with writer type: {_java_type(writer)}",
            )
        ]

    def compute(self, reader: Node, writer: Node) -> list[Incompatibility]:
        rkind = reader.kind if isinstance(reader, Named) else reader.type
        wkind = writer.kind if isinstance(writer, Named) else writer.type
        if rkind == wkind:
            if isinstance(reader, Array) and isinstance(writer, Array):
                return self.nested(["items"], reader.items, writer.items)
            if isinstance(reader, Map) and isinstance(writer, Map):
                return self.nested(["values"], reader.values, writer.values)
            if isinstance(reader, UnionSchema) and isinstance(writer, UnionSchema):
                # Each writer branch must be readable; a branch that is not is one
                # MISSING_UNION_BRANCH at the branch's index (Avro Java).
                out: list[Incompatibility] = []
                for i, branch in enumerate(writer.branches):
                    self.location.append(str(i))
                    try:
                        if self.check(reader, branch):
                            out.append(
                                Incompatibility(
                                    "MISSING_UNION_BRANCH",
                                    self.where(),
                                    f"reader union lacking writer type: {_java_type(branch)}",
                                )
                            )
                    finally:
                        self.location.pop()
                return out
            if isinstance(reader, Named) and isinstance(writer, Named):
                return self.named(reader, writer)
            return []
        if isinstance(writer, UnionSchema):
            # A reader that is not a union must read every writer branch.
            out = []
            for branch in writer.branches:
                out += self.check(reader, branch)
            return out
        if isinstance(reader, UnionSchema):
            for branch in reader.branches:
                if not self.check(branch, writer):
                    return []
            return [
                Incompatibility(
                    "MISSING_UNION_BRANCH",
                    self.where(),
                    f"reader union lacking writer type: {_java_type(writer)}",
                )
            ]
        if wkind in _PROMOTIONS.get(rkind, ()):
            return []
        return self.mismatch(reader, writer)

    def named(self, reader: Named, writer: Named) -> list[Incompatibility]:
        out: list[Incompatibility] = []
        if reader.name != writer.name and writer.fullname not in reader.aliases:
            out.append(
                Incompatibility(
                    "NAME_MISMATCH", self.where("name"), f"expected: {writer.fullname}"
                )
            )
        if reader.kind == "fixed":
            if reader.size != writer.size:
                out.append(
                    Incompatibility(
                        "FIXED_SIZE_MISMATCH",
                        self.where("size"),
                        f"expected: {writer.size}, found: {reader.size}",
                    )
                )
            return out
        if reader.kind == "enum":
            missing = sorted(set(writer.symbols) - set(reader.symbols))
            if missing and reader.enum_default is None:
                out.append(
                    Incompatibility(
                        "MISSING_ENUM_SYMBOLS",
                        self.where("symbols"),
                        "[" + ", ".join(missing) + "]",
                    )
                )
            return out
        by_name = {f.name: f for f in writer.fields}
        for field in reader.fields:
            written = by_name.get(field.name)
            if written is None:
                for alias in field.aliases:
                    written = by_name.get(alias)
                    if written is not None:
                        break
            where = ["fields", str(field.pos)]
            if written is not None:
                out += self.nested([*where, "type"], field.schema, written.schema)
            elif field.default is not NO_DEFAULT:
                continue
            elif (
                isinstance(field.schema, Named)
                and field.schema.enum_default is not None
            ):
                # Avro Java checks such a field's enum against the writer record itself.
                out += self.nested([*where, "type"], field.schema, writer)
            else:
                out.append(
                    Incompatibility(
                        "READER_FIELD_MISSING_DEFAULT_VALUE",
                        self.where(*where),
                        field.name,
                    )
                )
        return out


def _java_type(node: Node) -> str:
    return (node.kind if isinstance(node, Named) else node.type).upper()


def avro_incompatibilities(
    reader: ParsedSchema, writer: ParsedSchema
) -> list[Incompatibility]:
    """Why ``reader`` cannot read data written with ``writer`` (empty when it can)."""
    r, w = reader.model, writer.model
    assert isinstance(r, AvroModel) and isinstance(w, AvroModel)
    return _Checker().check(r.root, w.root)


def avro_compatibility_errors(
    reader: ParsedSchema, writer: ParsedSchema, reader_role: str, writer_role: str
) -> list[str]:
    """Confluent's messages for ``reader`` reading ``writer``'s data; the roles ("new",
    "old") fill the descriptions."""
    return [
        i.describe(reader_role, writer_role)
        for i in avro_incompatibilities(reader, writer)
    ]
