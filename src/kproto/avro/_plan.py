"""Decode plans: Avro's schema resolution, done once per (writer, reader) pair.

:func:`avro_plan` resolves a writer schema against a reader schema (Avro 1.11
specification, "Schema Resolution") into a tree of :class:`Op` nodes that both
decoders (the Python reference in :mod:`kproto.avro._decode` and the C one in
``src/kproto/_avro.c``) run unchanged, and the reader schema into a tree of
:class:`Column` nodes: the Arrow arrays the values land in, typed as spark-avro's
``SchemaConverters.toSqlType`` types them.

Resolution: ``int`` promotes to ``long``, ``float``, ``double``; ``long`` to
``float``, ``double``; ``float`` to ``double``; ``string`` and ``bytes`` to each
other. Record fields match by name or reader alias; writer fields the reader lacks
are skipped (an :class:`Op` with column -1 reads and discards); reader fields the
writer lacks take their default (its Avro encoding, decoded by a reader-only plan).
Named types match by unqualified name or alias. Enum symbols map by name, the
reader's default standing in for the missing ones. A writer union resolves branch
by branch (a branch with no match fails only when a value uses it); a reader union
takes the first branch of the writer's type, else the first it promotes to.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

import attrs

from ._defaults import encode_default
from ._schema import AvroSchemaError, Schema, parse_schema

__all__ = ["AvroPlan", "Column", "Op", "avro_plan", "reader_columns"]

# Column kinds: the physical Arrow layout (Columnar.rst) of each output array.
NULL, BOOL, I32, I64, F32, F64, BIN, DEC, STRUCT, LIST = range(10)

# Op codes (the same numbers in _avro.c).
OP_NULL = 0  # read nothing, append null (recursively) to col
OP_BOOL = 1
OP_INT = 2  # into I32, I64, F32 or F64
OP_LONG = 3  # into I64, F32 or F64
OP_LONG_MS = 4  # long (a = 1: int) milliseconds into I64 microseconds
OP_FLOAT = 5  # into F32 or F64
OP_DOUBLE = 6
OP_BLOB = 7  # bytes or string into BIN; a = 1: check UTF-8
OP_FIXED = 8  # a = size, into BIN
OP_DEC_BYTES = 9  # a = precision, into DEC
OP_DEC_FIXED = 10  # a = size, b = precision, into DEC
OP_ENUM = 11  # extra = reader symbol (bytes) or None per writer index, into BIN
OP_RECORD = 12  # kids = field ops in writer order, then default ops
OP_ARRAY = 13  # a = the item's least encoded size; kids = (item op,)
OP_MAP = 14  # a = key column; kids = (value op,)
OP_UNION = 15  # kids = one op per writer branch
OP_DEFAULT = 16  # extra = Avro bytes of the default; kids = (op reading them,)
OP_ERROR = 17  # a = error code (the writer branch has no reader match)
OP_MEMBER = 18  # col = the union's struct, a = member index; kids = (member op,)

E_UNRESOLVED: Final = 13  # the error code of OP_ERROR (see _decode.MESSAGES)


@attrs.frozen
class Column:
    """One output Arrow array (pre-order ``index`` in the plan's column list).

    ``kind`` is the physical layout; ``arrow`` the logical type's tag (``null``,
    ``bool``, ``int32``, ``int64``, ``float32``, ``float64``, ``date32``,
    ``timestamp`` (µs, UTC), ``local_timestamp`` (µs, no zone), ``utf8``,
    ``binary``, ``decimal`` (``precision``, ``scale``), ``struct``, ``list``,
    ``map``); ``children`` the (name, column, nullable) of a struct's fields, a
    list's item, a map's one ``entries`` struct (``key``, ``value``).
    """

    index: int
    kind: int
    arrow: str
    children: tuple[tuple[str, Column, bool], ...] = ()
    precision: int = 0
    scale: int = 0

    def walk(self) -> list[Column]:
        """This column and its descendants in pre-order (their ``index`` order)."""
        out = [self]
        for _, child, _ in self.children:
            out += child.walk()
        return out

    def to_tuple(self) -> tuple[Any, ...]:
        """``(kind, child indices)`` for the C decoder."""
        return (self.kind, tuple(c.index for _, c, _ in self.children))


@attrs.frozen
class Op:
    """One decoding step: read the writer's encoding of one value and append it to
    column ``col`` (-1: discard). ``a``, ``b``, ``extra`` and ``kids`` as the op
    codes above say."""

    code: int
    col: int = -1
    a: int = 0
    b: int = 0
    extra: Any = None
    kids: tuple[Op, ...] = ()

    def to_tuple(self) -> tuple[Any, ...]:
        """The nested tuple the C decoder compiles."""
        return (
            self.code,
            self.col,
            self.a,
            self.b,
            self.extra,
            tuple(k.to_tuple() for k in self.kids),
        )


@attrs.frozen(eq=False)
class AvroPlan:
    """How to decode values written with ``writer`` into ``reader``'s Arrow shape:
    ``root`` (the op of one value), ``column`` (the output tree), ``columns`` (its
    nodes in index order). Built by :func:`avro_plan`; immutable and reusable."""

    writer: Schema
    reader: Schema
    root: Op
    column: Column
    columns: tuple[Column, ...]


def _nullable_split(s: Schema) -> tuple[bool, list[Schema]]:
    if s.kind != "union":
        return False, [s]
    non_null = [b for b in s.branches if b.kind != "null"]
    return len(non_null) < len(s.branches), non_null


_PRIMITIVE_COLUMNS: Final = {
    "null": (NULL, "null"),
    "boolean": (BOOL, "bool"),
    "int": (I32, "int32"),
    "long": (I64, "int64"),
    "float": (F32, "float32"),
    "double": (F64, "float64"),
    "bytes": (BIN, "binary"),
    "string": (BIN, "utf8"),
    "fixed": (BIN, "binary"),
    "enum": (BIN, "utf8"),
}
#: The Arrow type of a logical type's column; its kind is its base type's (the
#: schema parser keeps a logical type only on its valid base: date on int, ...).
_LOGICAL_ARROW: Final = {
    "date": "date32",
    "timestamp-millis": "timestamp",
    "timestamp-micros": "timestamp",
    "local-timestamp-millis": "local_timestamp",
    "local-timestamp-micros": "local_timestamp",
}


class _Columns:
    """Builds the reader's column tree, remembering each union's shape."""

    def __init__(self) -> None:
        self.n = 0

    def build(self, s: Schema) -> Column:
        index = self.n
        self.n += 1
        if s.logical == "decimal":
            return Column(index, DEC, "decimal", precision=s.precision, scale=s.scale)
        if s.kind in _PRIMITIVE_COLUMNS:
            kind, arrow = _PRIMITIVE_COLUMNS[s.kind]
            if s.logical in _LOGICAL_ARROW:
                arrow = _LOGICAL_ARROW[s.logical]
            return Column(index, kind, arrow)
        if s.kind == "record":
            kids = []
            for f in s.fields:
                child = self.build(f.schema)
                kids.append((f.name, child, _nullable(f.schema)))
            return Column(index, STRUCT, "struct", tuple(kids))
        if s.kind == "array":
            assert s.items is not None
            item = self.build(s.items)
            return Column(index, LIST, "list", (("element", item, _nullable(s.items)),))
        if s.kind == "map":
            assert s.values is not None
            entries_index = self.n
            key = Column(entries_index + 1, BIN, "utf8")
            self.n += 2
            value = self.build(s.values)
            entries = Column(
                entries_index,
                STRUCT,
                "struct",
                (("key", key, False), ("value", value, _nullable(s.values))),
            )
            return Column(index, LIST, "map", (("entries", entries, False),))
        assert s.kind == "union"
        shape, rest = union_shape(s)
        if shape == "struct":
            members = tuple(
                (f"member{i}", self.build(b), True) for i, b in enumerate(rest)
            )
            return Column(index, STRUCT, "struct", members)
        if not rest:
            return Column(index, NULL, "null")
        self.n -= 1  # the union is its (widest) branch's column
        return self.build(rest[0] if shape == "nullable" else _widest(rest))


def union_shape(s: Schema) -> tuple[str, list[Schema]]:
    """How spark-avro shapes a union, and its non-null branches: ``nullable`` (one
    branch, or none: its column, nullable), ``widened`` (int and long, or float and
    double: the wider one's column) or ``struct`` (``member0..N``)."""
    _, rest = _nullable_split(s)
    kinds = {b.kind for b in rest}
    if len(rest) <= 1:
        return "nullable", rest
    if len(rest) == 2 and kinds in ({"int", "long"}, {"float", "double"}):
        return "widened", rest
    return "struct", rest


def _widest(branches: list[Schema]) -> Schema:
    return next(b for b in branches if b.kind in ("long", "double"))


def _nullable(s: Schema) -> bool:
    return s.kind == "null" or (s.kind == "union" and _nullable_split(s)[0])


def reader_columns(reader: Schema | str | Mapping[str, Any] | list[Any]) -> Column:
    """The output column tree of ``reader`` (spark-avro's types)."""
    return _Columns().build(parse_schema(reader))


def _min_size(s: Schema) -> int:
    """The fewest bytes a value of ``s`` encodes to."""
    if s.kind in ("null",):
        return 0
    if s.kind == "float":
        return 4
    if s.kind == "double":
        return 8
    if s.kind == "fixed":
        return s.size
    if s.kind == "record":
        return sum(_min_size(f.schema) for f in s.fields)
    return 1  # boolean, varints, lengths, block counts, union indexes


_PROMOTIONS: Final = {
    "int": ("long", "float", "double"),
    "long": ("float", "double"),
    "float": ("double",),
    "string": ("bytes",),
    "bytes": ("string",),
}


def _names_match(w: Schema, r: Schema) -> bool:
    return (
        w.short_name == r.short_name
        or w.name in r.aliases
        or any(a.rpartition(".")[2] == w.short_name for a in r.aliases)
    )


def _matches(w: Schema, r: Schema, promote: bool) -> bool:
    """Whether ``w`` resolves to ``r`` (exactly, or through a promotion)."""
    if w.kind != r.kind:
        return promote and r.kind in _PROMOTIONS.get(w.kind, ())
    if w.kind in ("record", "enum", "fixed"):
        return _names_match(w, r) and (w.kind != "fixed" or w.size == r.size)
    return True


class _Resolver:
    def resolve(self, w: Schema, r: Schema, col: Column, path: str) -> Op:
        """The op reading ``w`` into ``r``'s column ``col``."""
        if w.kind == "union":
            kids = []
            for i, b in enumerate(w.branches):
                try:
                    kids.append(self.resolve(b, r, col, f"{path}[{i}]"))
                except AvroSchemaError:
                    kids.append(Op(OP_ERROR, col.index, E_UNRESOLVED))
            return Op(OP_UNION, col.index, kids=tuple(kids))
        if r.kind == "union":
            return self._into_union(w, r, col, path)
        return self._value(w, r, col, path)

    def _into_union(self, w: Schema, r: Schema, col: Column, path: str) -> Op:
        shape, rest = union_shape(r)
        ucol = col
        if w.kind == "null" and any(b.kind == "null" for b in r.branches):
            return Op(OP_NULL, ucol.index)
        pick = next((b for b in rest if _matches(w, b, False)), None)
        if pick is None:
            pick = next((b for b in rest if _matches(w, b, True)), None)
        if pick is None:
            raise AvroSchemaError(
                f"{path}: writer's {_label(w)} matches no branch of the reader's union"
            )
        if shape != "struct":
            return self._value(w, pick, ucol, path)
        m = rest.index(pick)
        member = ucol.children[m][1]
        return Op(OP_MEMBER, ucol.index, m, kids=(self._value(w, pick, member, path),))

    def _value(self, w: Schema, r: Schema, col: Column, path: str) -> Op:
        c = col.index
        if not _matches(w, r, True):
            raise AvroSchemaError(
                f"{path}: writer's {_label(w)} does not resolve to the reader's {_label(r)}"
            )
        kind = w.kind
        if col.kind == DEC and kind in ("bytes", "fixed"):
            if kind == "fixed":
                return Op(OP_DEC_FIXED, c, w.size, r.precision)
            return Op(OP_DEC_BYTES, c, r.precision)
        if kind == "null":
            return Op(OP_NULL, c)
        if kind == "boolean":
            return Op(OP_BOOL, c)
        millis = col.kind == I64 and r.logical in (
            "timestamp-millis",
            "local-timestamp-millis",
        )
        if kind == "int":  # an int promoted to a long in milliseconds: a = 1
            return Op(OP_LONG_MS, c, 1) if millis else Op(OP_INT, c)
        if kind == "long":
            return Op(OP_LONG_MS if millis else OP_LONG, c)
        if kind == "float":
            return Op(OP_FLOAT, c)
        if kind == "double":
            return Op(OP_DOUBLE, c)
        if kind in ("bytes", "string"):
            return Op(OP_BLOB, c, int(col.arrow == "utf8"))
        if kind == "fixed":
            return Op(OP_FIXED, c, w.size)
        if kind == "enum":
            table = []
            for sym in w.symbols:
                if sym not in r.symbols:
                    sym = r.enum_default  # type: ignore[assignment]
                table.append(None if sym is None else sym.encode())
            return Op(OP_ENUM, c, extra=tuple(table))
        if kind == "array":
            assert w.items is not None and r.items is not None
            item = self.resolve(w.items, r.items, col.children[0][1], path + "[]")
            return Op(OP_ARRAY, c, _min_size(w.items), kids=(item,))
        if kind == "map":
            assert w.values is not None and r.values is not None
            entries = col.children[0][1]
            key, value = entries.children[0][1], entries.children[1][1]
            v = self.resolve(w.values, r.values, value, path + "{}")
            return Op(OP_MAP, c, key.index, kids=(v,))
        assert kind == "record"
        return self._record(w, r, col, path)

    def _record(self, w: Schema, r: Schema, col: Column, path: str) -> Op:
        by_name: dict[str, int] = {}
        for i, f in enumerate(r.fields):
            by_name.setdefault(f.name, i)
        for i, f in enumerate(r.fields):
            for a in f.aliases:
                by_name.setdefault(a, i)
        used: set[int] = set()
        kids = []
        for wf in w.fields:
            j = by_name.get(wf.name)
            if j is None or j in used:
                kids.append(_skip(wf.schema))
                continue
            used.add(j)
            rf = r.fields[j]
            kids.append(
                self.resolve(
                    wf.schema, rf.schema, col.children[j][1], f"{path}.{rf.name}"
                )
            )
        for i, rf in enumerate(r.fields):
            if i in used:
                continue
            if not rf.has_default:
                raise AvroSchemaError(
                    f"{path}.{rf.name}: reader field missing from the writer's "
                    "record and without a default"
                )
            fpath = f"{path}.{rf.name}"
            target = rf.schema.branches[0] if rf.schema.kind == "union" else rf.schema
            data = encode_default(target, rf.default, fpath)
            inner = self.resolve(target, rf.schema, col.children[i][1], fpath)
            kids.append(Op(OP_DEFAULT, col.index, extra=data, kids=(inner,)))
        # The struct's slots of fields filled by defaults are appended after the
        # writer's fields: the children are separate arrays, so order is free.
        return Op(OP_RECORD, col.index, kids=tuple(kids))


def _label(s: Schema) -> str:
    return f"{s.kind} {s.name!r}" if s.name else s.kind


def _skip(s: Schema) -> Op:
    """An op reading a value of ``s`` and keeping nothing (column -1)."""
    kind = s.kind
    simple = {
        "null": OP_NULL,
        "boolean": OP_BOOL,
        "int": OP_INT,
        "long": OP_LONG,
        "float": OP_FLOAT,
        "double": OP_DOUBLE,
    }
    if kind in simple:
        return Op(simple[kind])
    if kind in ("bytes", "string"):
        return Op(OP_BLOB)
    if kind == "fixed":
        return Op(OP_FIXED, -1, s.size)
    if kind == "enum":
        return Op(OP_ENUM, extra=(b"",) * len(s.symbols))
    if kind == "array":
        assert s.items is not None
        return Op(OP_ARRAY, -1, _min_size(s.items), kids=(_skip(s.items),))
    if kind == "map":
        assert s.values is not None
        return Op(OP_MAP, -1, -1, kids=(_skip(s.values),))
    if kind == "union":
        return Op(OP_UNION, kids=tuple(_skip(b) for b in s.branches))
    return Op(OP_RECORD, kids=tuple(_skip(f.schema) for f in s.fields))


def avro_plan(
    writer: Schema | str | Mapping[str, Any] | list[Any],
    reader: Schema | str | Mapping[str, Any] | list[Any] | None = None,
) -> AvroPlan:
    """The plan decoding values written with ``writer`` into ``reader`` (default: the
    writer schema itself); schemas as Avro JSON text, its parsed form or fastavro's.
    Plans of schemas given as text are cached (the 256 last pairs).

    Raises:
        AvroSchemaError: a schema is not valid Avro, has no Arrow shape, or
            ``writer`` does not resolve to ``reader`` (Avro's rules: the message
            names the path in the reader's schema and what did not match).
    """
    if isinstance(writer, str) and (reader is None or isinstance(reader, str)):
        return _plan_of_texts(writer, reader)
    return _build_plan(writer, reader)


@functools.lru_cache(maxsize=256)
def _plan_of_texts(writer: str, reader: str | None) -> AvroPlan:
    return _build_plan(writer, reader)


def _build_plan(
    writer: Schema | str | Mapping[str, Any] | list[Any],
    reader: Schema | str | Mapping[str, Any] | list[Any] | None,
) -> AvroPlan:
    w = parse_schema(writer)
    r = w if reader is None else parse_schema(reader)
    column = _Columns().build(r)
    root = _Resolver().resolve(w, r, column, "$")
    return AvroPlan(w, r, root, column, tuple(column.walk()))
