"""Compile an entity class's :class:`~kproto.meta.Wire` metadata into straight-line
Python functions, once per class (as attrs does for ``__init__``).

A decoder is ``decode(buf, pos) -> (entity, pos)`` over bytes or a memoryview; an
encoder is ``encode(entity, append) -> None`` appending bytes chunks. Runs of
fixed-width fields become one ``struct`` call, arrays of integers one bulk ``struct``
call, and one-byte varints are read inline. Instances are built without ``__init__``
(slot descriptors set each field), which is what makes decoding cheap.

Compiled code checks what it must to stay safe (lengths against the bytes left before
slicing, negative lengths, tag order) and otherwise lets Python fail fast: any failure
sends the same input through :mod:`kproto.serial.interpret`, which names the field
path and byte offset.
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
            "_cls": cls,
            "_array_struct": array_struct,
            "_len": len,
            "_tuple": tuple,
            "_bytes": bytes,
            "_str": str,
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


def _dec_uvarint(g: _Gen, ind: int, target: str) -> None:
    g.emit(ind, f"{target} = buf[pos]")
    g.emit(ind, f"if {target} < 128:")
    g.emit(ind + 1, "pos += 1")
    g.emit(ind, "else:")
    g.emit(ind + 1, f"{target}, pos = _uvarint(buf, pos)")


def _dec_length(g: _Gen, ind: int, w: Wire, target: str, classic: str) -> None:
    """Leave the length (-1 for null) in ``target``; checks it against bytes left."""
    if w.compact:
        _dec_uvarint(g, ind, target)
        g.emit(ind, f"{target} -= 1")
    else:
        s = g.const(struct.Struct(">" + FIXED_FORMATS[classic]).unpack_from, "u")
        g.emit(ind, f"({target},) = {s}(buf, pos)")
        g.emit(ind, f"pos += {FIXED_SIZES[classic]}")
        g.emit(ind, f"if {target} < -1:")
        g.emit(ind + 1, f"raise _Malformed('negative length')")
    g.emit(ind, f"if {target} > end - pos:")
    g.emit(ind + 1, "raise _Malformed('length beyond the input')")
    if not w.nullable:
        g.emit(ind, f"if {target} < 0:")
        g.emit(ind + 1, "raise _Malformed('null in a non-nullable field')")


def _dec_value(g: _Gen, ind: int, w: Wire, target: str) -> None:
    """Emit code that reads one value of ``w`` into local ``target``."""
    if w.kind == "primitive":
        t = w.type
        if t in FIXED_FORMATS:
            s = g.const(struct.Struct(">" + FIXED_FORMATS[t]).unpack_from, "u")
            g.emit(ind, f"({target},) = {s}(buf, pos)")
            g.emit(ind, f"pos += {FIXED_SIZES[t]}")
            if t == "uuid":
                g.emit(ind, f"{target} = _UUID(bytes={target})")
            return
        n = g.var("n")
        _dec_length(g, ind, w, n, "int16" if t == "string" else "int32")
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
        fn = g.const(decoder(w.entity), "d")
        if w.nullable:
            m = g.var("m")
            g.emit(ind, f"{m} = buf[pos]")
            g.emit(ind, "pos += 1")
            g.emit(ind, f"if {m} >= 128:")
            g.emit(ind + 1, f"{target} = None")
            g.emit(ind, f"elif {m} != 1:")
            g.emit(ind + 1, "raise _Malformed('bad struct presence byte')")
            g.emit(ind, "else:")
            g.emit(ind + 1, f"{target}, pos = {fn}(buf, pos)")
        else:
            g.emit(ind, f"{target}, pos = {fn}(buf, pos)")
        return
    assert w.kind == "array" and w.element is not None
    el = w.element
    n = g.var("n")
    _dec_length(g, ind, w, n, "int32")
    body = ind
    if w.nullable:
        g.emit(ind, f"if {n} < 0:")
        g.emit(ind + 1, f"{target} = None")
        g.emit(ind, "else:")
        body = ind + 1
    if el.kind == "primitive" and el.type in _INT_ARRAY:
        fmt = FIXED_FORMATS[el.type]
        size = FIXED_SIZES[el.type]
        g.emit(body, f"{target} = _array_struct({fmt!r}, {n}).unpack_from(buf, pos)")
        g.emit(body, f"pos += {size} * {n}")
    elif el.kind == "struct":
        assert el.entity is not None
        fn = g.const(decoder(el.entity), "d")
        lst, item = g.var("l"), g.var("i")
        g.emit(body, f"{lst} = []")
        g.emit(body, f"{lst}_append = {lst}.append")
        g.emit(body, f"for _ in range({n}):")
        g.emit(body + 1, f"{item}, pos = {fn}(buf, pos)")
        g.emit(body + 1, f"{lst}_append({item})")
        g.emit(body, f"{target} = _tuple({lst})")
    else:
        lst, item = g.var("l"), g.var("i")
        g.emit(body, f"{lst} = []")
        g.emit(body, f"for _ in range({n}):")
        _dec_value(g, body + 1, el, item)
        g.emit(body + 1, f"{lst}.append({item})")
        g.emit(body, f"{target} = _tuple({lst})")


def _fixed_runs(items: list[tuple[str, Wire]]) -> list[list[tuple[str, Wire]]]:
    """Group consecutive untagged fixed-width fields so each group is one struct call."""
    groups: list[list[tuple[str, Wire]]] = []
    for name, w in items:
        fixed = w.kind == "primitive" and w.type in FIXED_FORMATS
        if fixed and groups and groups[-1][0][1].kind == "primitive" and (
            groups[-1][0][1].type in FIXED_FORMATS
        ):
            groups[-1].append((name, w))
        else:
            groups.append([(name, w)])
    return groups


def _build_decoder(cls: type) -> Decoder:
    g = _Gen(cls)
    info = entity_info(cls)
    fields = [(f.name, w) for f, w in wire_fields(cls)]
    plain = [(n, w) for n, w in fields if w.tag is None and w.kind != "unknown_tags"]
    tagged = [(n, w) for n, w in fields if w.tag is not None]
    g.emit(0, "def decode(buf, pos):")
    g.emit(1, "end = _len(buf)")
    local: dict[str, str] = {}
    for group in _fixed_runs(plain):
        first = group[0][1]
        if len(group) > 1 or (first.kind == "primitive" and first.type in FIXED_FORMATS):
            fmt = ">" + "".join(FIXED_FORMATS[w.type] for _, w in group)
            s = g.const(struct.Struct(fmt), "s")
            names = [g.var("f") for _ in group]
            g.emit(1, f"{', '.join(names)}, = {s}.unpack_from(buf, pos)")
            g.emit(1, f"pos += {struct.calcsize(fmt)}")
            for (name, w), var in zip(group, names):
                if w.type == "uuid":
                    g.emit(1, f"{var} = _UUID(bytes={var})")
                local[name] = var
        else:
            name, w = group[0]
            var = g.var("f")
            _dec_value(g, 1, w, var)
            local[name] = var
    if info.flexible:
        for name, w in tagged:
            var = g.var("f")
            g.emit(1, f"{var} = {g.const(w.default, 'dflt')}")
            local[name] = var
        g.emit(1, "unknown = ()")
        local["unknown_tagged_fields"] = "unknown"
        t = g.var("t")
        _dec_uvarint(g, 1, t)
        g.emit(1, f"if {t}:")
        g.emit(2, f"if {t} > end - pos:")
        g.emit(3, "raise _Malformed('tag count beyond the input')")
        g.emit(2, "unknown = []")
        g.emit(2, "last = -1")
        g.emit(2, f"for _ in range({t}):")
        _dec_uvarint(g, 3, "tag")
        g.emit(3, "if tag <= last:")
        g.emit(4, "raise _Malformed('tags out of order')")
        g.emit(3, "last = tag")
        _dec_uvarint(g, 3, "size")
        g.emit(3, "stop = pos + size")
        g.emit(3, "if stop > end:")
        g.emit(4, "raise _Malformed('tagged field beyond the input')")
        keyword = "if"
        for name, w in tagged:
            g.emit(3, f"{keyword} tag == {w.tag}:")
            _dec_value(g, 4, w, local[name])
            g.emit(4, "if pos != stop:")
            g.emit(5, "raise _Malformed('tagged field size mismatch')")
            keyword = "elif"
        if tagged:
            g.emit(3, "else:")
            g.emit(4, "unknown.append((tag, _bytes(buf[pos:stop])))")
            g.emit(4, "pos = stop")
        else:
            g.emit(3, "unknown.append((tag, _bytes(buf[pos:stop])))")
            g.emit(3, "pos = stop")
        g.emit(2, "unknown = _tuple(unknown)")
    g.emit(1, "obj = _new(_cls)")
    for name, _w in fields:
        setter = g.const(cls.__dict__[name].__set__, "set")
        g.emit(1, f"{setter}(obj, {local[name]})")
    g.emit(1, "return obj, pos")
    return _compile("\n".join(g.lines) + "\n", "decode", g.ns)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------- encoding


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
        g.emit(ind, f"w({g.const(struct.pack('>' + FIXED_FORMATS[classic], -1), 'null')})")


def _enc_value(g: _Gen, ind: int, w: Wire, expr: str) -> None:
    """Emit code that appends the encoding of ``expr`` (a local name) for ``w``."""
    if w.kind == "primitive":
        t = w.type
        if t in FIXED_FORMATS:
            if t == "uuid":
                g.emit(ind, f"w({expr}.bytes)")
            else:
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
            g.emit(body, f"{raw} = {expr} if {expr}.__class__ is bytes else _bytes({expr})")
        _enc_length(g, body, w, f"_len({raw})", classic)
        g.emit(body, f"w({raw})")
        return
    if w.kind == "struct":
        assert w.entity is not None
        fn = g.const(encoder(w.entity), "e")
        if w.nullable:
            g.emit(ind, f"if {expr} is None:")
            g.emit(ind + 1, "w(b'\\xff')")
            g.emit(ind, "else:")
            g.emit(ind + 1, "w(b'\\x01')")
            g.emit(ind + 1, f"{fn}({expr}, w)")
        else:
            g.emit(ind, f"{fn}({expr}, w)")
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
    _enc_length(g, body, w, f"_len({expr})", "int32")
    if el.kind == "primitive" and el.type in _INT_ARRAY:
        g.emit(body, f"w(_array_struct({FIXED_FORMATS[el.type]!r}, _len({expr})).pack(*{expr}))")
    elif el.kind == "struct":
        assert el.entity is not None
        fn = g.const(encoder(el.entity), "e")
        item = g.var("i")
        g.emit(body, f"for {item} in {expr}:")
        g.emit(body + 1, f"{fn}({item}, w)")
    else:
        item = g.var("i")
        g.emit(body, f"for {item} in {expr}:")
        _enc_value(g, body + 1, el, item)


def _build_encoder(cls: type) -> Encoder:
    g = _Gen(cls)
    info = entity_info(cls)
    fields = [(f.name, w) for f, w in wire_fields(cls)]
    plain = [(n, w) for n, w in fields if w.tag is None and w.kind != "unknown_tags"]
    tagged = [(n, w) for n, w in fields if w.tag is not None]
    g.emit(0, "def encode(obj, w):")
    for group in _fixed_runs(plain):
        first = group[0][1]
        if len(group) > 1 or (first.kind == "primitive" and first.type in FIXED_FORMATS):
            fmt = ">" + "".join(FIXED_FORMATS[w.type] for _, w in group)
            s = g.const(struct.Struct(fmt).pack, "p")
            args = ", ".join(
                f"obj.{name}.bytes" if w.type == "uuid" else f"obj.{name}" for name, w in group
            )
            g.emit(1, f"w({s}({args}))")
        else:
            name, w = group[0]
            var = g.var("f")
            g.emit(1, f"{var} = obj.{name}")
            _enc_value(g, 1, w, var)
    if info.flexible:
        g.emit(1, "unknown = obj.unknown_tagged_fields")
        if not tagged:
            g.emit(1, "if not unknown:")
            g.emit(2, "w(b'\\x00')")
            g.emit(2, "return")
            g.emit(1, "tags = sorted(unknown)")
        else:
            g.emit(1, "tags = []")
            for name, w in tagged:
                var = g.var("f")
                g.emit(1, f"{var} = obj.{name}")
                g.emit(1, f"if {var} != {g.const(w.default, 'dflt')}:")
                g.emit(2, "sub = []")
                g.emit(2, "w0 = w")
                g.emit(2, "w = sub.append")
                _enc_value(g, 2, w, var)
                g.emit(2, "w = w0")
                g.emit(2, f"tags.append(({w.tag}, b''.join(sub)))")
            g.emit(1, "if unknown:")
            g.emit(2, "tags.extend(unknown)")
            g.emit(2, "tags.sort(key=_first)")
            g.ns["_first"] = lambda pair: pair[0]
        g.emit(1, "w(_wuv(_len(tags)))")
        g.emit(1, "for tag, data in tags:")
        g.emit(2, "w(_wuv(tag))")
        g.emit(2, "w(_wuv(_len(data)))")
        g.emit(2, "w(data)")
    g.emit(1, "return None")
    return _compile("\n".join(g.lines) + "\n", "encode", g.ns)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------- caches
# Kafka's structs never contain themselves, so nested classes compile eagerly and are
# called directly (no indirection per element).


def decoder(cls: type) -> Decoder:
    """The compiled ``decode(buf, pos) -> (entity, pos)`` of ``cls`` (cached)."""
    fn = _decoders.get(cls)
    if fn is None:
        fn = _decoders[cls] = _build_decoder(cls)
    return fn


def encoder(cls: type) -> Encoder:
    """The compiled ``encode(entity, append) -> None`` of ``cls`` (cached)."""
    fn = _encoders.get(cls)
    if fn is None:
        fn = _encoders[cls] = _build_encoder(cls)
    return fn
