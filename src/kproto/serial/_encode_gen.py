"""Generate ``encode_<Class>(obj, w) -> None`` for one entity class: it calls ``w``
(a list's ``append``) with the encoding's bytes chunks.

See :mod:`kproto.serial.compile` for what the generated code does and why it is fast.
Nested structs are encoded inline, so every local name comes from :meth:`Gen.var`,
derived from the field's name.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from kproto.meta import Wire, entity_info, wire_fields
from kproto.serial._gen import (
    INT_ARRAY,
    SMALL_ARRAY,
    Gen,
    fixed_runs,
    is_fixed,
    run_name,
)
from kproto.serial.primitives import (
    FIXED_FORMATS,
    SMALL_UVARINTS,
    array_struct,
    write_uvarint,
)


def _first(pair: tuple[int, bytes]) -> int:
    return pair[0]


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


_NAMESPACE: dict[str, Any] = {
    "_wuv": write_uvarint,
    "_boolcls": bool,
    "_array_struct": array_struct,
    "_len": len,
    "_tuple": tuple,
    "_SMALL": SMALL_UVARINTS,
    "_write_tags": _write_tags,
    "_as_bytes": _as_bytes,
}


def _packer(g: Gen, fmt: str, hint: str) -> str:
    return g.const(struct.Struct(fmt).pack, "pack", hint)


def _small_packers(g: Gen, fmt: str, compact: bool) -> str:
    """A tuple of ``pack`` for 0..31 elements with their count in front (a one-byte
    compact length, count + 1, or a classic int32 count), indexed by the count."""
    key = f"_pack_small_{fmt}_{'compact' if compact else 'classic'}"
    if key not in g.ns:
        head = "B" if compact else "i"
        g.ns[key] = tuple(
            struct.Struct(f">{head}{n}{fmt}").pack for n in range(SMALL_ARRAY)
        )
    return key


def _enc_length(g: Gen, ind: int, w: Wire, n: str, classic: str) -> None:
    if w.compact:
        g.emit(ind, f"w(_wuv({n} + 1))")
    else:
        g.emit(ind, f"w({_packer(g, '>' + FIXED_FORMATS[classic], classic)}({n}))")


def _enc_null(g: Gen, ind: int, w: Wire, classic: str) -> None:
    if w.compact:
        g.emit(ind, "w(b'\\x00')")
    else:
        null = g.const(struct.pack(">" + FIXED_FORMATS[classic], -1), "null", classic)
        g.emit(ind, f"w({null})")


def _enc_value(g: Gen, ind: int, w: Wire, expr: str) -> None:
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
                g.emit(ind, f"w({_packer(g, '>' + FIXED_FORMATS[t], t)}({expr}))")
            return
        classic = "int16" if t == "string" else "int32"
        body = ind
        if w.nullable:
            g.emit(ind, f"if {expr} is None:")
            _enc_null(g, ind + 1, w, classic)
            g.emit(ind, "else:")
            body = ind + 1
        raw = g.var(f"{expr}_raw")
        if t == "string":
            g.emit(body, f"{raw} = {expr}.encode('utf-8')")
        else:
            g.emit(
                body,
                f"{raw} = {expr} if {expr}.__class__ is bytes else _as_bytes({expr})",
            )
        if w.compact:
            n = g.var(f"{expr}_len")
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
    if el.kind == "primitive" and el.type in INT_ARRAY:
        fmt = FIXED_FORMATS[el.type]
        n = g.var(f"{expr}_count")
        g.emit(body, f"{n} = _len({expr})")
        g.emit(body, f"if {n} < {SMALL_ARRAY}:")
        head = f"{n} + 1" if w.compact else n
        g.emit(
            body + 1, f"w({_small_packers(g, fmt, w.compact)}[{n}]({head}, *{expr}))"
        )
        g.emit(body, "else:")
        _enc_length(g, body + 1, w, n, "int32")
        g.emit(body + 1, f"w(_array_struct({fmt!r}, {n}).pack(*{expr}))")
        return
    _enc_length(g, body, w, f"_len({expr})", "int32")
    item = g.var(f"{expr}_item")
    g.emit(body, f"for {item} in {expr}:")
    _enc_value(g, body + 1, el, item)


def _enc_tagged(
    g: Gen, ind: int, cls: type, tagged: list[tuple[str, Wire]], o: str
) -> None:
    """Emit the tagged-field section: fields not equal to their default, merged with
    ``unknown_tagged_fields`` in tag order."""
    unknown, tags = g.var(f"{o}_unknown_tagged_fields"), g.var(f"{o}_tags")
    g.emit(ind, f"# {cls.__name__}.unknown_tagged_fields (the tagged-field section)")
    g.emit(ind, f"{unknown} = {o}.unknown_tagged_fields")
    if not tagged:
        g.emit(ind, f"if not {unknown}:")
        g.emit(ind + 1, "w(b'\\x00')")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"_write_tags([], {unknown}, w)")
        return
    g.emit(ind, f"{tags} = []")
    for name, w in tagged:
        var, sub, outer = g.var(name), g.var(f"{name}_parts"), g.var("w_outer")
        g.comment(ind, cls, name, w)
        g.emit(ind, f"{var} = {o}.{name}")
        g.emit(ind, f"if {var} != {g.const(w.default, 'default', name)}:")
        g.emit(ind + 1, f"{sub} = []")
        g.emit(ind + 1, f"{outer} = w")
        g.emit(ind + 1, f"w = {sub}.append")
        _enc_value(g, ind + 1, w, var)
        g.emit(ind + 1, f"w = {outer}")
        g.emit(ind + 1, f"{tags}.append(({w.tag}, b''.join({sub})))")
    g.emit(ind, f"if {unknown}:")
    g.emit(ind + 1, f"_write_tags({tags}, {unknown}, w)")
    g.emit(ind, "else:")
    tag, data = g.var("tag"), g.var("tag_data")
    g.emit(ind + 1, f"w(_wuv(_len({tags})))")
    g.emit(ind + 1, f"for {tag}, {data} in {tags}:")
    g.emit(ind + 2, f"w(_wuv({tag}))")
    g.emit(ind + 2, f"w(_wuv(_len({data})))")
    g.emit(ind + 2, f"w({data})")


def _enc_entity(g: Gen, ind: int, cls: type, o: str) -> None:
    """Emit code that appends the encoding of the ``cls`` in local ``o``."""
    info = entity_info(cls)
    fields = [(f.name, w) for f, w in wire_fields(cls)]
    plain = [(n, w) for n, w in fields if w.tag is None and w.kind != "unknown_tags"]
    # Tags go out ascending; a schema may list tagged fields in another order.
    tagged = sorted(
        ((n, w) for n, w in fields if w.tag is not None), key=lambda nw: nw[1].tag or 0
    )
    for group in fixed_runs(plain):
        if is_fixed(group[0][1]):
            fmt = ">" + "".join(FIXED_FORMATS[w.type] for _, w in group)
            s = _packer(g, fmt, run_name(group))
            for name, w in group:
                g.comment(ind, cls, name, w)
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
            var = g.var(name)
            g.comment(ind, cls, name, w)
            g.emit(ind, f"{var} = {o}.{name}")
            _enc_value(g, ind, w, var)
    if info.flexible:
        _enc_tagged(g, ind, cls, tagged, o)


def build_encoder(cls: type) -> tuple[Any, str]:
    """Compile ``encode_<Class>(obj, w) -> None``; returns it and its source."""
    g = Gen(cls, _NAMESPACE)
    func = f"encode_{cls.__name__}"
    g.emit(0, f"def {func}(obj, w):")
    g.emit(
        1, f'"""Encode one {cls.__module__}.{cls.__qualname__} by calling w(chunk)."""'
    )
    _enc_entity(g, 1, cls, "obj")
    g.emit(1, "return None")
    return g.compile("encode", func)
