"""Avro schemas, parsed: :func:`parse_schema` turns Avro JSON text or its parsed form
(a dict / list / str, as ``json.loads`` or fastavro's ``parse_schema`` gives it) into
a tree of :class:`Schema` nodes with full names resolved.

Follows the Avro 1.11 specification ("Schema Declaration", "Names", "Logical
Types"): names resolve against the enclosing namespace, a named type is declared once
and then referenced by name, a logical type that is not valid for its base type (or
unknown) is ignored. Recursive types are refused: they have no Arrow or Spark shape
(spark-avro's ``SchemaConverters`` refuses them too).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import attrs

__all__ = ["AvroSchemaError", "Field", "Schema", "parse_schema"]

PRIMITIVES: Final = frozenset(
    ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
)
NAMED: Final = frozenset(("record", "error", "enum", "fixed"))
_LOGICAL_BASE: Final = {
    "date": ("int",),
    "time-millis": ("int",),
    "time-micros": ("long",),
    "timestamp-millis": ("long",),
    "timestamp-micros": ("long",),
    "local-timestamp-millis": ("long",),
    "local-timestamp-micros": ("long",),
    "uuid": ("string",),
    "decimal": ("bytes", "fixed"),
}


class AvroSchemaError(ValueError):
    """A schema that is not valid Avro, or that has no Arrow shape (a recursive type,
    a decimal wider than 38 digits), or a writer schema the reader cannot resolve
    (:func:`~kproto.avro.avro_plan`). The message names the path in the schema."""


@attrs.frozen(eq=False)
class Field:
    """A record field: its name, aliases, schema and (when it has one) default, as JSON."""

    name: str
    schema: Schema
    aliases: tuple[str, ...] = ()
    has_default: bool = False
    default: Any = None


@attrs.frozen(eq=False)
class Schema:
    """One Avro schema node.

    ``kind`` is the Avro type (``record`` for ``error`` too); ``name`` the full name
    of a named type (record, enum, fixed) and ``aliases`` its aliases as full names;
    ``logical`` the logical type when valid for the base type (``precision`` and
    ``scale`` for ``decimal``); ``size`` a fixed's byte count; ``symbols`` and
    ``enum_default`` an enum's; ``fields`` a record's; ``items`` an array's;
    ``values`` a map's; ``branches`` a union's.
    """

    kind: str
    name: str | None = None
    aliases: tuple[str, ...] = ()
    logical: str | None = None
    precision: int = 0
    scale: int = 0
    size: int = 0
    symbols: tuple[str, ...] = ()
    enum_default: str | None = None
    fields: tuple[Field, ...] = ()
    items: Schema | None = None
    values: Schema | None = None
    branches: tuple[Schema, ...] = ()

    @property
    def short_name(self) -> str | None:
        """The unqualified name of a named type (what resolution compares)."""
        return None if self.name is None else self.name.rpartition(".")[2]


def _full(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


class _Parser:
    def __init__(self) -> None:
        self.named: dict[str, Schema] = {}
        self.defining: set[str] = set()

    def parse(self, node: Any, namespace: str | None, path: str) -> Schema:
        if isinstance(node, str):
            return self._reference(node, namespace, path)
        if isinstance(node, list):
            return self._union(node, namespace, path)
        if not isinstance(node, Mapping):
            raise AvroSchemaError(f"{path}: expected a type, got {node!r:.80}")
        kind = node.get("type")
        if isinstance(kind, (list, Mapping)):  # {"type": {...}} wraps a schema
            return self.parse(kind, namespace, path)
        if not isinstance(kind, str):
            raise AvroSchemaError(f"{path}: 'type' missing or not a string")
        if kind in PRIMITIVES:
            return self._logical(kind, node, path)
        if kind in NAMED:
            return self._named(kind, node, namespace, path)
        if kind == "array":
            if "items" not in node:
                raise AvroSchemaError(f"{path}: array without 'items'")
            return Schema(
                "array", items=self.parse(node["items"], namespace, path + ".items")
            )
        if kind == "map":
            if "values" not in node:
                raise AvroSchemaError(f"{path}: map without 'values'")
            return Schema(
                "map", values=self.parse(node["values"], namespace, path + ".values")
            )
        return self._reference(kind, namespace, path)

    def _reference(self, name: str, namespace: str | None, path: str) -> Schema:
        if name in PRIMITIVES:
            return Schema(name)
        for full in (_full(name, namespace), name):
            if full in self.defining:
                raise AvroSchemaError(
                    f"{path}: recursive type {full!r} (no Arrow or Spark shape)"
                )
            if full in self.named:
                return self.named[full]
        raise AvroSchemaError(f"{path}: unknown type {name!r}")

    def _union(self, node: list[Any], namespace: str | None, path: str) -> Schema:
        branches = tuple(
            self.parse(b, namespace, f"{path}[{i}]") for i, b in enumerate(node)
        )
        seen: set[str] = set()
        for b in branches:
            if b.kind == "union":
                raise AvroSchemaError(f"{path}: a union inside a union")
            key = b.name or b.kind
            if key in seen:
                raise AvroSchemaError(f"{path}: two union branches of type {key!r}")
            seen.add(key)
        if not branches:
            raise AvroSchemaError(f"{path}: an empty union")
        return Schema("union", branches=branches)

    def _logical(self, kind: str, node: Mapping[str, Any], path: str) -> Schema:
        logical = node.get("logicalType")
        if not isinstance(logical, str) or kind not in _LOGICAL_BASE.get(logical, ()):
            return Schema(kind, size=node.get("size", 0) if kind == "fixed" else 0)
        if logical != "decimal":
            return Schema(kind, logical=logical)
        precision, scale = node.get("precision"), node.get("scale", 0)
        if (
            not isinstance(precision, int)
            or not isinstance(scale, int)
            or not 0 < precision
            or not 0 <= scale <= precision
        ):
            return Schema(kind)  # an invalid decimal is its base type (the spec)
        if precision > 38:
            raise AvroSchemaError(
                f"{path}: decimal precision {precision} above 38 (Arrow's decimal128, "
                "Spark's DecimalType)"
            )
        return Schema(kind, logical="decimal", precision=precision, scale=scale)

    def _named(
        self, kind: str, node: Mapping[str, Any], namespace: str | None, path: str
    ) -> Schema:
        name = node.get("name")
        if not isinstance(name, str) or not name:
            raise AvroSchemaError(f"{path}: {kind} without a name")
        ns = node.get("namespace")
        full = _full(name, ns if isinstance(ns, str) else namespace)
        space = full.rpartition(".")[0] or None
        if full in self.named or full in self.defining:
            raise AvroSchemaError(f"{path}: {full!r} defined twice")
        aliases = tuple(_full(a, space) for a in node.get("aliases", ()) or ())
        path = full
        if kind == "fixed":
            size = node.get("size")
            if not isinstance(size, int) or size < 0:
                raise AvroSchemaError(f"{path}: fixed without a size")
            base = self._logical("fixed", {**node, "size": size}, path)
            schema = attrs.evolve(base, name=full, aliases=aliases, size=size)
        elif kind == "enum":
            symbols = node.get("symbols")
            if not isinstance(symbols, list) or not all(
                isinstance(s, str) for s in symbols
            ):
                raise AvroSchemaError(f"{path}: enum without a list of symbols")
            if len(set(symbols)) != len(symbols):
                raise AvroSchemaError(f"{path}: enum symbols repeat")
            default = node.get("default")
            if default is not None and default not in symbols:
                raise AvroSchemaError(f"{path}: enum default {default!r} not a symbol")
            schema = Schema(
                "enum",
                name=full,
                aliases=aliases,
                symbols=tuple(symbols),
                enum_default=default,
            )
        else:
            self.defining.add(full)
            fields = []
            names: set[str] = set()
            for i, f in enumerate(node.get("fields") or ()):
                if not isinstance(f, Mapping) or not isinstance(f.get("name"), str):
                    raise AvroSchemaError(f"{path}.fields[{i}]: a field without a name")
                fname = f["name"]
                if fname in names:
                    raise AvroSchemaError(f"{path}: field {fname!r} repeats")
                names.add(fname)
                if "type" not in f:
                    raise AvroSchemaError(f"{path}.{fname}: field without a type")
                fields.append(
                    Field(
                        fname,
                        self.parse(f["type"], space, f"{path}.{fname}"),
                        tuple(f.get("aliases", ()) or ()),
                        "default" in f,
                        f.get("default"),
                    )
                )
            self.defining.discard(full)
            schema = Schema("record", name=full, aliases=aliases, fields=tuple(fields))
        self.named[full] = schema
        return schema


def parse_schema(schema: str | Mapping[str, Any] | list[Any] | Schema) -> Schema:
    """Parse an Avro schema: JSON text, or its parsed JSON form (fastavro's
    ``parse_schema`` output too); a :class:`Schema` is returned as is.

    Raises:
        AvroSchemaError: not valid Avro (the message names the path), or a
            recursive type or a decimal wider than 38 digits.
    """
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, str):
        try:
            node: Any = json.loads(schema)
        except ValueError:
            node = schema  # a bare name: "string", "long", ...
    else:
        node = schema
    return _Parser().parse(node, None, "$")
