"""Avro schemas: parsing, Confluent's canonical text, normalization and named-type
references.

- Canonical text: ``AvroSchema.canonicalString()`` of Confluent Schema Registry, which is
  Avro Java's ``Schema.toString()``: compact JSON, attributes in Avro Java's order
  (``type``, ``name``, ``namespace`` when it differs from the enclosing one, ``doc``,
  ``fields`` / ``symbols`` / ``size`` / ``items`` / ``values``, ``default``, other
  properties in the order given, ``aliases``); a named type already printed, or defined
  by a reference, is printed as its name.
- Normalized text: Confluent's ``AvroSchema.normalize()`` as Avro Java prints it
  (sorted properties, sorted aliases, float defaults as floats, no empty named-type doc).
- Validation as Avro Java's parser (names, redefinitions, defaults for a new schema).
- Compatibility is :mod:`kproto.registry.schemas.avro_compatibility`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from kproto.registry.schemas import _json_text
from kproto.registry.schemas._types import (
    InvalidSchemaError,
)

__all__ = ["parse_avro", "AvroModel"]

PRIMITIVES = frozenset(
    ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
)


_NAME = re.compile(r"(?!\d)\w+\Z")


def _valid_name(name: str) -> bool:
    """Avro Java's ``validateName``: a letter or ``_``, then letters, digits or ``_``
    (Unicode letters and digits, as Java's ``Character.isLetter`` allows)."""
    return _NAME.match(name) is not None


_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
MAX_DEPTH = 256
_SCHEMA_RESERVED = frozenset(
    [
        "doc",
        "fields",
        "items",
        "name",
        "namespace",
        "size",
        "symbols",
        "values",
        "type",
        "aliases",
    ]
)
_FIELD_RESERVED = frozenset(["default", "doc", "name", "order", "type", "aliases"])
NO_DEFAULT = object()


# The parsed schema's nodes: plain holders, compared by identity (``eq=False``) as
# the compatibility check keys its memo by ``id()``.


@attrs.define(eq=False)
class Primitive:
    type: str
    props: dict[str, Any]


@attrs.define(eq=False)
class Array:
    items: Node
    props: dict[str, Any]
    type: str = attrs.field(default="array", init=False)


@attrs.define(eq=False)
class Map:
    values: Node
    props: dict[str, Any]
    type: str = attrs.field(default="map", init=False)


@attrs.define(eq=False)
class UnionSchema:
    branches: list[Node]
    type: str = attrs.field(default="union", init=False)


@attrs.define(eq=False)
class Field:
    name: str
    pos: int
    schema: Node = attrs.field(factory=lambda: Primitive("null", {}))
    doc: str | None = None
    default: Any = NO_DEFAULT
    order: str = "ascending"
    aliases: list[str] = attrs.field(factory=list)
    props: dict[str, Any] = attrs.field(factory=dict)


@attrs.define(eq=False)
class Named:
    """A record (or error), enum or fixed type."""

    type: str  # "record", "error", "enum", "fixed"
    name: str
    namespace: str | None
    doc: str | None = None
    aliases: list[str] = attrs.field(factory=list)  # full names
    props: dict[str, Any] = attrs.field(factory=dict)
    fields: list[Field] = attrs.field(factory=list)
    symbols: list[str] = attrs.field(factory=list)
    enum_default: str | None = None
    size: int = 0

    @property
    def fullname(self) -> str:
        return f"{self.namespace}.{self.name}" if self.namespace else self.name

    @property
    def kind(self) -> str:
        return "record" if self.type == "error" else self.type


Node = Primitive | Array | Map | UnionSchema | Named


def _split(fullname: str) -> tuple[str, str | None]:
    space, _, name = fullname.rpartition(".")
    return name, (space or None)


class _Parser:
    def __init__(self, names: dict[str, Named], validate_defaults: bool = True) -> None:
        self.names = names
        self.validate_defaults = validate_defaults
        self.defined: list[str] = []

    def fail(self, message: str) -> InvalidSchemaError:
        return InvalidSchemaError(f"Invalid Avro schema: {message}")

    def resolve_name(self, name: str, space: str | None) -> str:
        if "." in name or not space:
            return name
        return f"{space}.{name}"

    def parse(self, obj: Any, space: str | None, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(obj, str):
            return self.named_or_primitive(obj, space)
        if isinstance(obj, list):
            return self.parse_union(obj, space, depth)
        if not isinstance(obj, dict):
            raise self.fail(
                f"a schema must be a string, object or array, not {json.dumps(obj)}"
            )
        type_ = obj.get("type")
        if type_ is None:
            raise self.fail(f"no 'type' in {_short(obj)}")
        if isinstance(type_, (dict, list)):
            if len(obj) != 1:
                props = {k: v for k, v in obj.items() if k != "type"}
                inner = self.parse(type_, space, depth + 1)
                if isinstance(inner, (Primitive, Array, Map)) and not inner.props:
                    inner.props = props
                return inner
            return self.parse(type_, space, depth + 1)
        if not isinstance(type_, str):
            raise self.fail(
                f"'type' must be a string, object or array in {_short(obj)}"
            )
        props = {k: v for k, v in obj.items() if k not in _SCHEMA_RESERVED}
        if type_ in PRIMITIVES:
            return Primitive(type_, props)
        if type_ == "array":
            if "items" not in obj:
                raise self.fail(f"array has no 'items': {_short(obj)}")
            return Array(self.parse(obj["items"], space, depth + 1), props)
        if type_ == "map":
            if "values" not in obj:
                raise self.fail(f"map has no 'values': {_short(obj)}")
            return Map(self.parse(obj["values"], space, depth + 1), props)
        if type_ in ("record", "error", "enum", "fixed"):
            return self.parse_named(type_, obj, space, depth)
        return self.named_or_primitive(type_, space)

    def named_or_primitive(self, name: str, space: str | None) -> Node:
        if name in PRIMITIVES:
            return Primitive(name, {})
        full = self.resolve_name(name, space)
        found = self.names.get(full) or self.names.get(name)
        if found is None:
            raise self.fail(f"undefined name: {json.dumps(name)}")
        return found

    def parse_union(self, branches: list[Any], space: str | None, depth: int) -> Node:
        parsed: list[Node] = []
        seen: set[str] = set()
        for branch in branches:
            node = self.parse(branch, space, depth + 1)
            if isinstance(node, UnionSchema):
                raise self.fail("a union may not immediately contain another union")
            key = node.fullname if isinstance(node, Named) else node.type
            if key in seen:
                raise self.fail(f"duplicate in union: {key}")
            seen.add(key)
            parsed.append(node)
        return UnionSchema(parsed)

    def parse_named(
        self, type_: str, obj: dict[str, Any], space: str | None, depth: int
    ) -> Named:
        name = obj.get("name")
        if not isinstance(name, str):
            raise self.fail(f"{type_} has no 'name': {_short(obj)}")
        namespace = obj.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise self.fail(f"'namespace' of {name} must be a string")
        if "." in name:
            short, ns = _split(name)
        else:
            short, ns = name, (namespace if namespace is not None else space)
        ns = ns or None
        self.check_name(short, "name")
        if ns:
            for part in ns.split("."):
                self.check_name(part, "namespace")
        node = Named(type_, short, ns)
        full = node.fullname
        if full in PRIMITIVES:
            raise self.fail(f"a named type may not be called {full}")
        if full in self.names:
            raise self.fail(f"can't redefine: {full}")
        self.names[full] = node
        self.defined.append(full)
        doc = obj.get("doc")
        node.doc = doc if isinstance(doc, str) else None
        node.aliases = self.aliases(obj, ns, full)
        node.props = {k: v for k, v in obj.items() if k not in _SCHEMA_RESERVED}
        if type_ in ("record", "error"):
            self.parse_fields(node, obj, depth)
        elif type_ == "enum":
            node.props.pop("default", None)
            symbols = obj.get("symbols")
            if not isinstance(symbols, list):
                raise self.fail(f"enum {full} has no 'symbols' array")
            for symbol in symbols:
                if not isinstance(symbol, str) or not _valid_name(symbol):
                    raise self.fail(
                        f"invalid enum symbol in {full}: {json.dumps(symbol)}"
                    )
            if len(set(symbols)) != len(symbols):
                raise self.fail(f"duplicate enum symbol in {full}")
            node.symbols = list(symbols)
            default = obj.get("default")
            if default is not None:
                if default not in symbols:
                    raise self.fail(
                        f"the default {json.dumps(default)} of enum {full} is not a symbol"
                    )
                node.enum_default = default
        else:
            size = obj.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise self.fail(f"fixed {full} needs a non-negative integer 'size'")
            node.size = size
        return node

    def check_name(self, name: str, what: str) -> None:
        if not _valid_name(name):
            raise self.fail(f"illegal {what}: {json.dumps(name)}")

    def aliases(self, obj: dict[str, Any], space: str | None, where: str) -> list[str]:
        raw = obj.get("aliases")
        if raw is None:
            return []
        if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
            raise self.fail(f"'aliases' of {where} must be an array of strings")
        return [self.resolve_name(alias, space) for alias in raw]

    def parse_fields(self, node: Named, obj: dict[str, Any], depth: int) -> None:
        fields = obj.get("fields")
        if not isinstance(fields, list):
            raise self.fail(f"record {node.fullname} has no 'fields' array")
        seen: set[str] = set()
        for pos, raw in enumerate(fields):
            if not isinstance(raw, dict):
                raise self.fail(f"field {pos} of {node.fullname} is not an object")
            name = raw.get("name")
            if not isinstance(name, str):
                raise self.fail(f"field {pos} of {node.fullname} has no 'name'")
            self.check_name(name, f"field name in {node.fullname}")
            if name in seen:
                raise self.fail(f"duplicate field {name} in {node.fullname}")
            seen.add(name)
            if "type" not in raw:
                raise self.fail(f"field {name} of {node.fullname} has no 'type'")
            field = Field(name, pos)
            field.schema = self.parse(raw["type"], node.namespace, depth + 1)
            doc = raw.get("doc")
            field.doc = doc if isinstance(doc, str) else None
            order = raw.get("order", "ascending")
            if order not in ("ascending", "descending", "ignore"):
                raise self.fail(f"invalid 'order' of field {name} in {node.fullname}")
            field.order = order
            aliases = raw.get("aliases")
            if aliases is not None:
                if not isinstance(aliases, list) or not all(
                    isinstance(a, str) for a in aliases
                ):
                    raise self.fail(
                        f"'aliases' of field {name} must be an array of strings"
                    )
                field.aliases = list(aliases)
            field.props = {k: v for k, v in raw.items() if k not in _FIELD_RESERVED}
            if "default" in raw:
                field.default = raw["default"]
                if self.validate_defaults and not _valid_default(
                    field.schema, field.default, 0
                ):
                    raise self.fail(
                        f"invalid default for field {name} in {node.fullname}: "
                        f"{json.dumps(field.default)} is not a {_type_label(field.schema)}"
                    )
            node.fields.append(field)


def _short(obj: Any) -> str:
    text = json.dumps(obj)
    return text if len(text) <= 80 else text[:77] + "..."


def _type_label(node: Node) -> str:
    return node.fullname if isinstance(node, Named) else node.type


def _valid_default(node: Node, value: Any, depth: int) -> bool:
    if depth > MAX_DEPTH:
        return False
    kind = node.kind if isinstance(node, Named) else node.type
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("int", "long"):
        low, high = _INT_RANGE[kind]
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and low <= value <= high
        )
    if kind in ("float", "double"):
        return (
            isinstance(value, (int, float)) and not isinstance(value, bool)
        ) or value in (
            "NaN",
            "Infinity",
            "-Infinity",
        )
    if kind in ("bytes", "string", "fixed"):
        return isinstance(value, str)
    if isinstance(node, Named) and kind == "enum":
        return isinstance(value, str) and value in node.symbols
    if isinstance(node, Array):
        return isinstance(value, list) and all(
            _valid_default(node.items, v, depth + 1) for v in value
        )
    if isinstance(node, Map):
        return isinstance(value, dict) and all(
            _valid_default(node.values, v, depth + 1) for v in value.values()
        )
    if isinstance(node, UnionSchema):
        # Avro Java: a union's default is a value of its first branch.
        return bool(node.branches) and _valid_default(
            node.branches[0], value, depth + 1
        )
    if isinstance(node, Named):
        if not isinstance(value, dict):
            return False
        for field in node.fields:
            if field.name in value:
                if not _valid_default(field.schema, value[field.name], depth + 1):
                    return False
            elif field.default is NO_DEFAULT:
                return False
        return True
    return False


# ----------------------------------------------------------------------------- printing


def _qualified(fullname: str, space: str | None) -> str:
    name, ns = _split(fullname)
    return name if ns is None or ns == space else fullname


_LOGICAL_TYPES = {
    "decimal": ("bytes", "fixed"),
    "uuid": ("string", "fixed"),
    "date": ("int",),
    "time-millis": ("int",),
    "time-micros": ("long",),
    "timestamp-millis": ("long",),
    "timestamp-micros": ("long",),
    "timestamp-nanos": ("long",),
    "local-timestamp-millis": ("long",),
    "local-timestamp-micros": ("long",),
    "local-timestamp-nanos": ("long",),
    "duration": ("fixed",),
}


def _logical_type(kind: str, props: dict[str, Any]) -> str | None:
    """The logical type Avro Java recognizes in ``props`` (it ignores invalid ones)."""
    name = props.get("logicalType")
    if not isinstance(name, str) or kind not in _LOGICAL_TYPES.get(name, ()):
        return None
    if name == "decimal":
        precision, scale = props.get("precision"), props.get("scale", 0)
        if not isinstance(precision, int) or not isinstance(scale, int):
            return None
        if precision <= 0 or scale < 0 or scale > precision:
            return None
    return name


class _Printer:
    """Avro Java's ``Schema.toJson``; with ``normalize``, the schema that Confluent's
    ``AvroSchema.normalize()`` produces (``AvroSchemaUtils.toNormalizedString``) as Avro
    Java then prints it: properties sorted (a valid logical type's ``logicalType``,
    ``precision`` and ``scale`` first), aliases sorted by full name, empty named-type
    docs dropped, float and double defaults written as floats."""

    def __init__(self, known: set[str], normalize: bool) -> None:
        self.seen = set(known)
        self.normalize = normalize

    def props(self, props: dict[str, Any], kind: str = "") -> list[tuple[str, Any]]:
        items = list(props.items())
        if not self.normalize:
            return items
        first: list[str] = []
        logical = _logical_type(kind, props)
        if logical is not None:
            first = ["logicalType"]
            if logical == "decimal":
                first.append("precision")
                if props.get("scale", 0) != 0:
                    first.append("scale")
        head = [(key, props[key]) for key in first]
        return head + sorted(item for item in items if item[0] not in first)

    def node(self, node: Node, space: str | None) -> Any:
        if isinstance(node, Primitive):
            if not node.props:
                return node.type
            return dict([("type", node.type), *self.props(node.props, node.type)])
        if isinstance(node, Array):
            return dict(
                [("type", "array"), ("items", self.node(node.items, space))]
                + self.props(node.props)
            )
        if isinstance(node, Map):
            return dict(
                [("type", "map"), ("values", self.node(node.values, space))]
                + self.props(node.props)
            )
        if isinstance(node, UnionSchema):
            return [self.node(b, space) for b in node.branches]
        return self.named(node, space)

    def named(self, node: Named, space: str | None) -> Any:
        full = node.fullname
        if full in self.seen:
            return _qualified(full, space)
        self.seen.add(full)
        out: dict[str, Any] = {"type": node.type, "name": node.name}
        if node.namespace is not None:
            if node.namespace != space:
                out["namespace"] = node.namespace
        elif space is not None:
            out["namespace"] = ""
        if node.doc is not None and not (self.normalize and not node.doc):
            out["doc"] = node.doc
        if node.kind == "record":
            out["fields"] = [self.field(f, node.namespace) for f in node.fields]
        elif node.kind == "enum":
            out["symbols"] = list(node.symbols)
            if node.enum_default is not None:
                out["default"] = node.enum_default
        else:
            out["size"] = node.size
        out.update(self.props(node.props, node.kind))
        if node.aliases:
            aliases = sorted(node.aliases) if self.normalize else node.aliases
            out["aliases"] = [_qualified(a, node.namespace) for a in aliases]
        return out

    def field(self, field: Field, space: str | None) -> Any:
        out: dict[str, Any] = {
            "name": field.name,
            "type": self.node(field.schema, space),
        }
        if field.doc is not None:
            out["doc"] = field.doc
        if field.default is not NO_DEFAULT:
            out["default"] = (
                _as_float(field.schema, field.default)
                if self.normalize
                else field.default
            )
        if field.order != "ascending":
            out["order"] = field.order
        if field.aliases:
            out["aliases"] = (
                sorted(field.aliases) if self.normalize else list(field.aliases)
            )
        out.update(self.props(field.props))
        return out


def _as_float(node: Node, value: Any) -> Any:
    """A default as Avro Java holds it: a float or double default is a double."""
    if isinstance(node, UnionSchema) and node.branches:
        node = node.branches[0]
    kind = node.kind if isinstance(node, Named) else node.type
    if (
        kind in ("float", "double")
        and isinstance(value, int)
        and not isinstance(value, bool)
    ):
        return float(value)
    return value


def _dumps(value: Any) -> str:
    return _json_text.dumps(value)


# ----------------------------------------------------------------------------- the model


@attrs.frozen(eq=False)
class AvroModel:
    """A parsed Avro schema: its root node and the names its references define."""

    root: Node
    external: frozenset[str]

    def text(self, normalize: bool = False) -> str:
        return _dumps(_Printer(set(self.external), normalize).node(self.root, None))

    def record_names(self) -> tuple[str, ...]:
        # Confluent's AvroSchema.name(): a record's full name, else none.
        if isinstance(self.root, Named) and self.root.kind == "record":
            return (self.root.fullname,)
        return ()

    def formatted(self, fmt: str) -> str | None:
        if fmt.lower() == "resolved":
            # Confluent's Format.RESOLVED: referenced types written out in place.
            return _dumps(_Printer(set(), False).node(self.root, None))
        return None


def _load_json(text: str, what: str) -> Any:
    try:
        return _json_text.loads(text)
    except RecursionError:
        raise InvalidSchemaError(
            f"Invalid Avro schema: {what} is nested too deeply"
        ) from None
    except ValueError as exc:
        raise InvalidSchemaError(
            f"Invalid Avro schema: {what} is not JSON: {exc}"
        ) from None


def parse_avro(text: str, resolved: Mapping[str, str], *, new: bool) -> AvroModel:
    """Parse an Avro schema (JSON text) and the schemas its references name.

    ``resolved`` maps each reachable reference's name (a full type name) to its schema
    text; referenced named types are known to the schema and printed by name in the
    canonical text. ``new=False`` (a schema already registered, Confluent's
    ``isNew``) does not validate field defaults; referenced schemas never are.
    Raises :class:`InvalidSchemaError`.
    """
    names: dict[str, Named] = {}
    pending = {
        name: _load_json(ref_text, f"reference {name!r}")
        for name, ref_text in resolved.items()
    }
    while pending:
        progressed = False
        errors: list[str] = []
        for name, obj in list(pending.items()):
            parser = _Parser(names, validate_defaults=False)
            try:
                parser.parse(obj, None, 0)
            except InvalidSchemaError as exc:
                for defined in parser.defined:
                    names.pop(defined, None)
                errors.append(f"reference {name!r}: {exc}")
                continue
            del pending[name]
            progressed = True
        if not progressed:
            raise InvalidSchemaError("; ".join(errors))
    # Every type the references define prints by name. (Confluent's
    # Schema.toString(referencedSchemas) knows only each reference's own type and writes
    # a type nested in one out in full, which then cannot be parsed again beside it.)
    external = frozenset(names)
    root = _Parser(names, validate_defaults=new).parse(
        _load_json(text, "the schema"), None, 0
    )
    return AvroModel(root, external)
