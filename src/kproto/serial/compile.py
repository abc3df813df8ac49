"""Compile an entity class's :class:`~kproto.meta.Wire` metadata into straight-line
Python functions, once per class (as attrs does for ``__init__``).

A decoder is ``decode(buf, pos) -> (entity, pos)`` over bytes or a memoryview (bytes is
faster); an encoder is ``encode(entity, append) -> None`` appending bytes chunks. What
makes them fast, measured on MetadataResponse v12 (benchmarks/serial_bench.py):

* nested structs are generated inline, so arrays of structs cost no call per element;
* a run of fixed-width fields is one ``struct`` call, which also reads the first byte
  of the compact length (or the whole classic length, or the tagged-field count) that
  follows it;
* arrays of fixed-width numbers shorter than 32 use a prebuilt ``struct`` picked by
  indexing a tuple with the raw length byte (decode) or the count (encode, with the
  length prefix packed in the same call); longer ones a cached ``struct``;
* one-byte varints are read inline, and an empty tagged-field section is one compare;
* instances are built without ``__init__`` (slot descriptors set each field), and
  UUIDs without ``uuid.UUID.__init__`` (its two slots set directly).

Compiled code checks what it must to stay safe (lengths against the bytes left before
slicing or allocating, negative lengths, tag order) and otherwise lets Python fail
fast: any failure sends the same input through :mod:`kproto.serial.interpret`, which
names the field path and byte offset.
"""

from __future__ import annotations

import itertools
import linecache
import struct
import uuid
from collections.abc import Callable
from typing import Any

from kproto.meta import Wire, entity_info, wire_fields
from kproto.serial.primitives import (
    FIXED_FORMATS,
    FIXED_SIZES,
    SMALL_UVARINTS,
    Malformed,
    array_struct,
    read_uvarint,
    write_uvarint,
)

__all__ = ["Decoder", "Encoder", "decoder", "encoder"]

Decoder = Callable[[Any, int], tuple[Any, int]]
Encoder = Callable[[Any, Callable[[bytes], Any]], None]

_counter = itertools.count()
_decoders: dict[type, Decoder] = {}
_encoders: dict[type, Encoder] = {}

_INT_ARRAY = {"int8", "int16", "uint16", "int32", "uint32", "int64", "float64"}


def _first(pair: tuple[int, bytes]) -> int:
    return pair[0]


def _compile(source: str, name: str, namespace: dict[str, Any]) -> Any:
    filename = f"<kproto {name} {next(_counter)}>"
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(code, namespace)
    return namespace[name]


class _Gen:
    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.ns: dict[str, Any] = {
            "_Malformed": Malformed,
            "_uvarint": read_uvarint,
            "_wuv": write_uvarint,
            "_UUID": uuid.UUID,
            "_new": object.__new__,
            "_boolcls": bool,
            "_cls": cls,
            "_array_struct": array_struct,
            "_len": len,
            "_tuple": tuple,
            "_bytes": bytes,
            "_str": str,
            "_SMALL": SMALL_UVARINTS,
            "_first": _first,
            "_write_tags": _write_tags,
            "_as_bytes": _as_bytes,
            "_uuid_int": uuid.UUID.__dict__["int"].__set__,
            "_uuid_safe": uuid.UUID.__dict__["is_safe"].__set__,
            "_uuid_unknown": uuid.SafeUUID.unknown,
        }
        self.lines: list[str] = []
        self.n = 0

    def var(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value: Any, prefix: str = "c") -> str:
        name = f"_{prefix}{len(self.ns)}"
        self.ns[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


# ----------------------------------------------------------------------- decoding
# Nested structs are decoded and encoded inline (no call per element), so every local
# name comes from ``_Gen.var``.

#: Arrays of fixed-width values shorter than this use a prebuilt ``struct`` per count
#: (a tuple index instead of a cache lookup and a call).
_SMALL_ARRAY = 32


def _peek_format(w: Wire | None, flexible: bool) -> str | None:
    """The struct format of the leading bytes of ``w`` that a preceding fixed run may
    read along with it: the first byte of a compact length, or a whole classic length.
    ``None`` for the tagged-field count of a non-flexible struct (nothing follows)."""
    if w is None:
        return "B" if flexible else None
    if w.kind == "primitive" and w.type in ("string", "bytes", "records"):
        if w.compact:
            return "B"
        return "h" if w.type == "string" else "i"
    if w.kind == "array":
        return "B" if w.compact else "i"
    return None


def _small_unpackers(g: _Gen, fmt: str, compact: bool) -> str:
    """A tuple of ``unpack_from`` for 0..31 elements, indexed by the raw compact length
    byte (count + 1) or by the classic count."""
    key = f"_au_{fmt}_{int(compact)}"
    if key not in g.ns:
        table = tuple(
            struct.Struct(f">{n}{fmt}").unpack_from for n in range(_SMALL_ARRAY)
        )
        g.ns[key] = ((None,) + table) if compact else table
    return key


def _emit_uuid(g: _Gen, ind: int, target: str, hi: str, lo: str) -> None:
    # uuid.UUID(bytes=...) runs a long Python __init__; set its two slots directly.
    g.emit(ind, f"{target} = _new(_UUID)")
    g.emit(ind, f"_uuid_int({target}, ({hi} << 64) | {lo})")
    g.emit(ind, f"_uuid_safe({target}, _uuid_unknown)")


def _dec_count(
    g: _Gen, ind: int, w: Wire, n: str, classic: str, peek: str | None
) -> None:
    """Leave the length (-1 for null) in ``n``; checks it against the bytes left."""
    if w.compact:
        if peek is None:
            g.emit(ind, f"{n} = buf[pos]")
        else:
            g.emit(ind, f"{n} = {peek}")
        g.emit(ind, f"if {n} < 128:")
        g.emit(ind + 1, "pos += 1")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"{n}, pos = _uvarint(buf, pos)")
        g.emit(ind, f"{n} -= 1")
    else:
        if peek is None:
            s = g.const(struct.Struct(">" + FIXED_FORMATS[classic]).unpack_from, "u")
            g.emit(ind, f"({n},) = {s}(buf, pos)")
        else:
            g.emit(ind, f"{n} = {peek}")
        g.emit(ind, f"pos += {FIXED_SIZES[classic]}")
        g.emit(ind, f"if {n} < -1:")
        g.emit(ind + 1, "raise _Malformed('negative length')")
    g.emit(ind, f"if {n} > end - pos:")
    g.emit(ind + 1, "raise _Malformed('length beyond the input')")
    if not w.nullable:
        g.emit(ind, f"if {n} < 0:")
        g.emit(ind + 1, "raise _Malformed('null in a non-nullable field')")


def _dec_value(
    g: _Gen, ind: int, w: Wire, target: str, peek: str | None = None
) -> None:
    """Emit code that reads one value of ``w`` into local ``target``.

    ``peek``: a local already holding this value's leading bytes (see
    :func:`_peek_format`); ``pos`` still points at them.
    """
    if w.kind == "primitive":
        t = w.type
        if t == "uuid":
            hi, lo = g.var("hi"), g.var("lo")
            s = g.const(struct.Struct(">QQ").unpack_from, "u")
            g.emit(ind, f"{hi}, {lo} = {s}(buf, pos)")
            g.emit(ind, "pos += 16")
            _emit_uuid(g, ind, target, hi, lo)
            return
        if t in FIXED_FORMATS:
            s = g.const(struct.Struct(">" + FIXED_FORMATS[t]).unpack_from, "u")
            g.emit(ind, f"({target},) = {s}(buf, pos)")
            g.emit(ind, f"pos += {FIXED_SIZES[t]}")
            return
        n = g.var("n")
        _dec_count(g, ind, w, n, "int16" if t == "string" else "int32", peek)
        body = ind
        if w.nullable:
            g.emit(ind, f"if {n} < 0:")
            g.emit(ind + 1, f"{target} = None")
            g.emit(ind, "else:")
            body = ind + 1
        if t == "string":
            g.emit(body, f"{target} = _str(buf[pos:pos + {n}], 'utf-8')")
        else:
            g.emit(body, f"{target} = _bytes(buf[pos:pos + {n}])")
        g.emit(body, f"pos += {n}")
        return
    if w.kind == "struct":
        assert w.entity is not None
        if w.nullable:
            m = g.var("m")
            g.emit(ind, f"{m} = buf[pos]")
            g.emit(ind, "pos += 1")
            g.emit(ind, f"if {m} >= 128:")
            g.emit(ind + 1, f"{target} = None")
            g.emit(ind, f"elif {m} != 1:")
            g.emit(ind + 1, "raise _Malformed('bad struct presence byte')")
            g.emit(ind, "else:")
            _dec_entity(g, ind + 1, w.entity, target)
        else:
            _dec_entity(g, ind, w.entity, target)
        return
    assert w.kind == "array" and w.element is not None
    el = w.element
    n = g.var("n")
    slow = ind
    if el.kind == "primitive" and el.type in _INT_ARRAY:
        # Fast path: a short array is one prebuilt struct call (it checks the bounds).
        fmt, size = FIXED_FORMATS[el.type], FIXED_SIZES[el.type]
        table = _small_unpackers(g, fmt, w.compact)
        if w.compact:
            b = peek
            if b is None:
                b = g.var("b")
                g.emit(ind, f"{b} = buf[pos]")
            g.emit(ind, f"if 0 < {b} <= {_SMALL_ARRAY}:")
            g.emit(ind + 1, f"{target} = {table}[{b}](buf, pos + 1)")
            g.emit(ind + 1, f"pos += {size} * {b} - {size - 1}")
            peek = b
        else:
            if peek is None:
                s = g.const(struct.Struct(">i").unpack_from, "u")
                g.emit(ind, f"({n},) = {s}(buf, pos)")
            else:
                g.emit(ind, f"{n} = {peek}")
            g.emit(ind, f"if 0 <= {n} < {_SMALL_ARRAY}:")
            g.emit(ind + 1, f"{target} = {table}[{n}](buf, pos + 4)")
            g.emit(ind + 1, f"pos += {size} * {n} + 4")
            peek = n
        g.emit(ind, "else:")
        slow = ind + 1
    _dec_count(g, slow, w, n, "int32", peek)
    body = slow
    if w.nullable:
        g.emit(slow, f"if {n} < 0:")
        g.emit(slow + 1, f"{target} = None")
        g.emit(slow, "else:")
        body = slow + 1
    if el.kind == "primitive" and el.type in _INT_ARRAY:
        fmt, size = FIXED_FORMATS[el.type], FIXED_SIZES[el.type]
        g.emit(body, f"{target} = _array_struct({fmt!r}, {n}).unpack_from(buf, pos)")
        g.emit(body, f"pos += {size} * {n}")
        return
    lst, item = g.var("l"), g.var("i")
    g.emit(body, f"{lst} = []")
    g.emit(body, f"{lst}_append = {lst}.append")
    g.emit(body, f"for _ in range({n}):")
    _dec_value(g, body + 1, el, item)
    g.emit(body + 1, f"{lst}_append({item})")
    g.emit(body, f"{target} = _tuple({lst})")


def _is_fixed(w: Wire) -> bool:
    return w.kind == "primitive" and w.type in FIXED_FORMATS


def _fixed_runs(items: list[tuple[str, Wire]]) -> list[list[tuple[str, Wire]]]:
    """Group consecutive untagged fixed-width fields so each group is one struct call."""
    groups: list[list[tuple[str, Wire]]] = []
    for name, w in items:
        if _is_fixed(w) and groups and _is_fixed(groups[-1][0][1]):
            groups[-1].append((name, w))
        else:
            groups.append([(name, w)])
    return groups


def _dec_entity(g: _Gen, ind: int, cls: type, target: str) -> None:
    """Emit code that decodes one ``cls`` at ``pos`` into local ``target``."""
    info = entity_info(cls)
    fields = [(f.name, w) for f, w in wire_fields(cls)]
    plain = [(n, w) for n, w in fields if w.tag is None and w.kind != "unknown_tags"]
    tagged = [(n, w) for n, w in fields if w.tag is not None]
    local: dict[str, str] = {}
    groups = _fixed_runs(plain)
    peek: str | None = None
    for gi, group in enumerate(groups):
        if not _is_fixed(group[0][1]):
            name, w = group[0]
            var = g.var("f")
            _dec_value(g, ind, w, var, peek)
            peek = None
            local[name] = var
            continue
        # One struct call for the run, plus the leading bytes of what follows it.
        fmt, outs, uuids = ">", [], []
        for name, w in group:
            var = g.var("f")
            local[name] = var
            if w.type == "uuid":
                hi, lo = g.var("hi"), g.var("lo")
                fmt += "QQ"
                outs += [hi, lo]
                uuids.append((var, hi, lo))
            else:
                fmt += FIXED_FORMATS[w.type]
                outs.append(var)
        run_size = struct.calcsize(fmt)
        nxt = groups[gi + 1][0][1] if gi + 1 < len(groups) else None
        extra = _peek_format(nxt, info.flexible)
        if extra is not None:
            peek = g.var("b")
            outs.append(peek)
            fmt += extra
        g.emit(
            ind,
            f"{', '.join(outs)}, = {g.const(struct.Struct(fmt).unpack_from, 'u')}(buf, pos)",
        )
        g.emit(ind, f"pos += {run_size}")
        for var, hi, lo in uuids:
            _emit_uuid(g, ind, var, hi, lo)
    if info.flexible:
        for name, w in tagged:
            var = g.var("f")
            g.emit(ind, f"{var} = {g.const(w.default, 'dflt')}")
            local[name] = var
        unknown = g.var("unknown")
        local["unknown_tagged_fields"] = unknown
        g.emit(ind, f"{unknown} = ()")
        t = peek
        if t is None:
            t = g.var("t")
            g.emit(ind, f"{t} = buf[pos]")
        g.emit(ind, f"if {t} == 0:")
        g.emit(ind + 1, "pos += 1")
        g.emit(ind, "else:")
        i2 = ind + 1
        g.emit(i2, f"if {t} < 128:")
        g.emit(i2 + 1, "pos += 1")
        g.emit(i2, "else:")
        g.emit(i2 + 1, f"{t}, pos = _uvarint(buf, pos)")
        g.emit(i2, f"if {t} > end - pos:")
        g.emit(i2 + 1, "raise _Malformed('tag count beyond the input')")
        lst, last, tag, size, stop = (
            g.var(p) for p in ("uk", "last", "tag", "size", "stop")
        )
        g.emit(i2, f"{lst} = []")
        g.emit(i2, f"{last} = -1")
        g.emit(i2, f"for _ in range({t}):")
        i3 = i2 + 1
        for var in (tag, size):
            g.emit(i3, f"{var} = buf[pos]")
            g.emit(i3, f"if {var} < 128:")
            g.emit(i3 + 1, "pos += 1")
            g.emit(i3, "else:")
            g.emit(i3 + 1, f"{var}, pos = _uvarint(buf, pos)")
            if var == tag:
                g.emit(i3, f"if {tag} <= {last}:")
                g.emit(i3 + 1, "raise _Malformed('tags out of order')")
                g.emit(i3, f"{last} = {tag}")
        g.emit(i3, f"{stop} = pos + {size}")
        g.emit(i3, f"if {stop} > end:")
        g.emit(i3 + 1, "raise _Malformed('tagged field beyond the input')")
        keyword = "if"
        for name, w in tagged:
            g.emit(i3, f"{keyword} {tag} == {w.tag}:")
            _dec_value(g, i3 + 1, w, local[name])
            g.emit(i3 + 1, f"if pos != {stop}:")
            g.emit(i3 + 2, "raise _Malformed('tagged field size mismatch')")
            keyword = "elif"
        unk = i3
        if tagged:
            g.emit(i3, "else:")
            unk = i3 + 1
        g.emit(unk, f"{lst}.append(({tag}, _bytes(buf[pos:{stop}])))")
        g.emit(unk, f"pos = {stop}")
        g.emit(i2, f"{unknown} = _tuple({lst})")
    klass = g.const(cls, "cls")
    base = _slots_base(cls, [name for name, _ in fields])
    if base is not None:
        # Fill the slots of the layout-identical base (plain stores, which CPython
        # specializes), then make the instance a `cls`: 2.7x faster than setting
        # each slot through the frozen class's descriptors.
        storage = g.const(base, "base")
        g.emit(ind, f"{target} = _new({storage})")
        for name, _w in fields:
            g.emit(ind, f"{target}.{name} = {local[name]}")
        g.emit(ind, f"{target}.__class__ = {klass}")
        return
    g.emit(ind, f"{target} = _new({klass})")
    for name, _w in fields:
        setter = g.const(cls.__dict__[name].__set__, "set")
        g.emit(ind, f"{setter}({target}, {local[name]})")


def _slots_base(cls: type, names: list[str]) -> type | None:
    """The generated slot-storage base of ``cls``, if it has one with exactly the
    field slots (so the two classes share one layout); else ``None``."""
    bases = cls.__bases__
    if len(bases) != 1 or bases[0] is object:
        return None
    base = bases[0]
    slots = base.__dict__.get("__slots__")
    if slots is None or set(slots) - {"__weakref__"} != set(names):
        return None
    if getattr(cls, "__slots__", None) not in ((), []):
        return None
    if "__setattr__" in base.__dict__:
        return None
    return base


def _build_decoder(cls: type) -> Decoder:
    g = _Gen(cls)
    g.emit(0, "def decode(buf, pos):")
    g.emit(1, "end = _len(buf)")
    _dec_entity(g, 1, cls, "obj")
    g.emit(1, "return obj, pos")
    return _compile("\n".join(g.lines) + "\n", "decode", g.ns)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------- encoding


def _small_packers(g: _Gen, fmt: str, compact: bool) -> str:
    """A tuple of ``pack`` for 0..31 elements with their count in front (a one-byte
    compact length, count + 1, or a classic int32 count), indexed by the count."""
    key = f"_ap_{fmt}_{int(compact)}"
    if key not in g.ns:
        head = "B" if compact else "i"
        g.ns[key] = tuple(
            struct.Struct(f">{head}{n}{fmt}").pack for n in range(_SMALL_ARRAY)
        )
    return key


def _enc_length(g: _Gen, ind: int, w: Wire, n: str, classic: str) -> None:
    if w.compact:
        g.emit(ind, f"w(_wuv({n} + 1))")
    else:
        s = g.const(struct.Struct(">" + FIXED_FORMATS[classic]).pack, "p")
        g.emit(ind, f"w({s}({n}))")


def _enc_null(g: _Gen, ind: int, w: Wire, classic: str) -> None:
    if w.compact:
        g.emit(ind, "w(b'\\x00')")
    else:
        g.emit(
            ind, f"w({g.const(struct.pack('>' + FIXED_FORMATS[classic], -1), 'null')})"
        )


def _enc_value(g: _Gen, ind: int, w: Wire, expr: str) -> None:
    """Emit code that appends the encoding of ``expr`` (a local name) for ``w``."""
    if w.kind == "primitive":
        t = w.type
        if t in FIXED_FORMATS:
            if t == "uuid":
                g.emit(ind, f"w({expr}.bytes)")
            else:
                if t == "bool":
                    g.emit(ind, f"if {expr}.__class__ is not _boolcls:")
                    g.emit(ind + 1, "raise TypeError('bool field')")
                s = g.const(struct.Struct(">" + FIXED_FORMATS[t]).pack, "p")
                g.emit(ind, f"w({s}({expr}))")
            return
        classic = "int16" if t == "string" else "int32"
        body = ind
        if w.nullable:
            g.emit(ind, f"if {expr} is None:")
            _enc_null(g, ind + 1, w, classic)
            g.emit(ind, "else:")
            body = ind + 1
        raw = g.var("r")
        if t == "string":
            g.emit(body, f"{raw} = {expr}.encode('utf-8')")
        else:
            g.emit(
                body,
                f"{raw} = {expr} if {expr}.__class__ is bytes else _as_bytes({expr})",
            )
        if w.compact:
            n = g.var("n")
            g.emit(body, f"{n} = _len({raw})")
            g.emit(body, f"w(_SMALL[{n} + 1] if {n} < 127 else _wuv({n} + 1))")
        else:
            _enc_length(g, body, w, f"_len({raw})", classic)
        g.emit(body, f"w({raw})")
        return
    if w.kind == "struct":
        assert w.entity is not None
        if w.nullable:
            g.emit(ind, f"if {expr} is None:")
            g.emit(ind + 1, "w(b'\\xff')")
            g.emit(ind, "else:")
            g.emit(ind + 1, "w(b'\\x01')")
            _enc_entity(g, ind + 1, w.entity, expr)
        else:
            _enc_entity(g, ind, w.entity, expr)
        return
    assert w.kind == "array" and w.element is not None
    el = w.element
    body = ind
    if w.nullable:
        g.emit(ind, f"if {expr} is None:")
        _enc_null(g, ind + 1, w, "int32")
        g.emit(ind, "else:")
        body = ind + 1
    g.emit(body, f"if {expr}.__class__ is not _tuple and {expr}.__class__ is not list:")
    g.emit(body + 1, "raise TypeError('arrays are tuples')")
    if el.kind == "primitive" and el.type in _INT_ARRAY:
        fmt = FIXED_FORMATS[el.type]
        n = g.var("n")
        g.emit(body, f"{n} = _len({expr})")
        g.emit(body, f"if {n} < {_SMALL_ARRAY}:")
        head = f"{n} + 1" if w.compact else n
        g.emit(
            body + 1, f"w({_small_packers(g, fmt, w.compact)}[{n}]({head}, *{expr}))"
        )
        g.emit(body, "else:")
        _enc_length(g, body + 1, w, n, "int32")
        g.emit(body + 1, f"w(_array_struct({fmt!r}, {n}).pack(*{expr}))")
        return
    _enc_length(g, body, w, f"_len({expr})", "int32")
    item = g.var("i")
    g.emit(body, f"for {item} in {expr}:")
    _enc_value(g, body + 1, el, item)


def _enc_entity(g: _Gen, ind: int, cls: type, o: str) -> None:
    """Emit code that appends the encoding of the ``cls`` in local ``o``."""
    info = entity_info(cls)
    fields = [(f.name, w) for f, w in wire_fields(cls)]
    plain = [(n, w) for n, w in fields if w.tag is None and w.kind != "unknown_tags"]
    # Tags go out ascending; a schema may list tagged fields in another order.
    tagged = sorted(
        ((n, w) for n, w in fields if w.tag is not None), key=lambda nw: nw[1].tag or 0
    )
    for group in _fixed_runs(plain):
        if _is_fixed(group[0][1]):
            fmt = ">" + "".join(FIXED_FORMATS[w.type] for _, w in group)
            s = g.const(struct.Struct(fmt).pack, "p")
            for name, w in group:
                # struct's "?" accepts any object; a bool field takes only a bool.
                if w.type == "bool":
                    g.emit(ind, f"if {o}.{name}.__class__ is not _boolcls:")
                    g.emit(ind + 1, "raise TypeError('bool field')")
            args = ", ".join(
                f"{o}.{name}.bytes" if w.type == "uuid" else f"{o}.{name}"
                for name, w in group
            )
            g.emit(ind, f"w({s}({args}))")
        else:
            name, w = group[0]
            var = g.var("f")
            g.emit(ind, f"{var} = {o}.{name}")
            _enc_value(g, ind, w, var)
    if not info.flexible:
        return
    unknown, tags = g.var("unknown"), g.var("tags")
    g.emit(ind, f"{unknown} = {o}.unknown_tagged_fields")
    if not tagged:
        g.emit(ind, f"if not {unknown}:")
        g.emit(ind + 1, "w(b'\\x00')")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"_write_tags([], {unknown}, w)")
        return
    g.emit(ind, f"{tags} = []")
    for name, w in tagged:
        var, sub, w0 = g.var("f"), g.var("sub"), g.var("w")
        g.emit(ind, f"{var} = {o}.{name}")
        g.emit(ind, f"if {var} != {g.const(w.default, 'dflt')}:")
        g.emit(ind + 1, f"{sub} = []")
        g.emit(ind + 1, f"{w0} = w")
        g.emit(ind + 1, f"w = {sub}.append")
        _enc_value(g, ind + 1, w, var)
        g.emit(ind + 1, f"w = {w0}")
        g.emit(ind + 1, f"{tags}.append(({w.tag}, b''.join({sub})))")
    g.emit(ind, f"if {unknown}:")
    g.emit(ind + 1, f"_write_tags({tags}, {unknown}, w)")
    g.emit(ind, "else:")
    tag, data = g.var("tag"), g.var("data")
    g.emit(ind + 1, f"w(_wuv(_len({tags})))")
    g.emit(ind + 1, f"for {tag}, {data} in {tags}:")
    g.emit(ind + 2, f"w(_wuv({tag}))")
    g.emit(ind + 2, f"w(_wuv(_len({data})))")
    g.emit(ind + 2, f"w({data})")


def _as_bytes(value: Any) -> bytes:
    """bytes of a bytes-like value; anything else (``bytes(5)`` would be five zeros) is
    an error, as in the interpreter."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError("bytes needed")
    return bytes(value)


def _write_tags(
    known: list[tuple[int, bytes]], unknown: Any, w: Callable[[bytes], Any]
) -> None:
    """Write a tagged-field section that includes unknown tagged fields (the rare case):
    checks them as the interpreter does, merges them in tag order."""
    if not isinstance(unknown, (tuple, list)):
        raise TypeError("unknown_tagged_fields needs a tuple")
    tags = list(known)
    for pair in unknown:
        tag, data = pair
        if (
            not isinstance(tag, int)
            or not 0 <= tag <= 0xFFFFFFFF
            or not isinstance(data, (bytes, bytearray))
        ):
            raise TypeError("needs (tag, bytes) pairs")
        tags.append((tag, bytes(data)))
    tags.sort(key=_first)
    for i in range(1, len(tags)):
        if tags[i][0] == tags[i - 1][0]:
            raise ValueError("a tag appears twice")
    w(write_uvarint(len(tags)))
    for tag, data in tags:
        w(write_uvarint(tag))
        w(write_uvarint(len(data)))
        w(data)


def _build_encoder(cls: type) -> Encoder:
    g = _Gen(cls)
    g.emit(0, "def encode(obj, w):")
    _enc_entity(g, 1, cls, "obj")
    g.emit(1, "return None")
    return _compile("\n".join(g.lines) + "\n", "encode", g.ns)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------- caches
# Kafka's structs never contain themselves, so nested classes compile eagerly and are
# called directly (no indirection per element).


def decoder(cls: type) -> Decoder:
    """The compiled ``decode(buf, pos) -> (entity, pos)`` of ``cls`` (cached)."""
    fn = _decoders.get(cls)
    if fn is None:
        # The C reader when the extension is there (it calls this decoder for any
        # input it is not sure of); see kproto.speedups.
        from kproto.speedups import entity_reader

        fn = _decoders[cls] = entity_reader(cls, _build_decoder(cls))
    return fn


def encoder(cls: type) -> Encoder:
    """The compiled ``encode(entity, append) -> None`` of ``cls`` (cached)."""
    fn = _encoders.get(cls)
    if fn is None:
        fn = _encoders[cls] = _build_encoder(cls)
    return fn
