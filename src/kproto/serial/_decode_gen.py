"""Generate ``decode_<Class>(buf, pos) -> (entity, pos)`` for one entity class.

See :mod:`kproto.serial.compile` for what the generated code does and why it is fast.
Nested structs are decoded inline (no call per element), so every local name comes
from :meth:`Gen.var`, derived from the field's name.
"""

from __future__ import annotations

import struct
import uuid
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
    FIXED_SIZES,
    Malformed,
    Short,
    array_struct,
    read_uvarint,
)

_NAMESPACE: dict[str, Any] = {
    "_Malformed": Malformed,
    "_Short": Short,
    "_uvarint": read_uvarint,
    "_UUID": uuid.UUID,
    "_new": object.__new__,
    "_array_struct": array_struct,
    "_len": len,
    "_tuple": tuple,
    "_bytes": bytes,
    "_str": str,
    "_uuid_int": uuid.UUID.__dict__["int"].__set__,
    "_uuid_safe": uuid.UUID.__dict__["is_safe"].__set__,
    "_uuid_unknown": uuid.SafeUUID.unknown,
}


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


def _unpacker(g: Gen, fmt: str, hint: str) -> str:
    return g.const(struct.Struct(fmt).unpack_from, "unpack", hint)


def _small_unpackers(g: Gen, fmt: str, compact: bool) -> str:
    """A tuple of ``unpack_from`` for 0..31 elements, indexed by the raw compact length
    byte (count + 1) or by the classic count."""
    key = f"_unpack_small_{fmt}_{'compact' if compact else 'classic'}"
    if key not in g.ns:
        table = tuple(
            struct.Struct(f">{n}{fmt}").unpack_from for n in range(SMALL_ARRAY)
        )
        g.ns[key] = ((None,) + table) if compact else table
    return key


def _emit_uuid(g: Gen, ind: int, target: str, hi: str, lo: str) -> None:
    # uuid.UUID(bytes=...) runs a long Python __init__; set its two slots directly.
    g.emit(ind, f"{target} = _new(_UUID)")
    g.emit(ind, f"_uuid_int({target}, ({hi} << 64) | {lo})")
    g.emit(ind, f"_uuid_safe({target}, _uuid_unknown)")


def _dec_count(
    g: Gen, ind: int, w: Wire, n: str, classic: str, peek: str | None
) -> None:
    """Leave the length (-1 for null) in ``n``; checks it against the bytes left."""
    if w.compact:
        g.emit(ind, f"{n} = {peek if peek is not None else 'buf[pos]'}")
        g.emit(ind, f"if {n} < 128:")
        g.emit(ind + 1, "pos += 1")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"{n}, pos = _uvarint(buf, pos)")
        g.emit(ind, f"{n} -= 1")
    else:
        if peek is None:
            s = _unpacker(g, ">" + FIXED_FORMATS[classic], classic)
            g.emit(ind, f"({n},) = {s}(buf, pos)")
        else:
            g.emit(ind, f"{n} = {peek}")
        g.emit(ind, f"pos += {FIXED_SIZES[classic]}")
        g.emit(ind, f"if {n} < -1:")
        g.emit(ind + 1, "raise _Malformed('negative length')")
    g.emit(ind, f"if {n} > end - pos:")
    g.emit(ind + 1, f"raise _Short('length beyond the input', pos + {n})")
    if not w.nullable:
        g.emit(ind, f"if {n} < 0:")
        g.emit(ind + 1, "raise _Malformed('null in a non-nullable field')")


def _dec_null_branch(g: Gen, ind: int, w: Wire, n: str, target: str) -> int:
    """For a nullable ``w``, emit ``target = None`` when the length ``n`` is -1 and
    open the ``else:`` for the value; returns the indent of the value's code."""
    if not w.nullable:
        return ind
    g.emit(ind, f"if {n} < 0:")
    g.emit(ind + 1, f"{target} = None")
    g.emit(ind, "else:")
    return ind + 1


def _dec_value(g: Gen, ind: int, w: Wire, target: str, peek: str | None = None) -> None:
    """Emit code that reads one value of ``w`` into local ``target``.

    ``peek``: a local already holding this value's leading bytes (see
    :func:`_peek_format`); ``pos`` still points at them.
    """
    if w.kind == "primitive":
        t = w.type
        if t == "uuid":
            hi, lo = g.var(f"{target}_hi"), g.var(f"{target}_lo")
            g.emit(ind, f"{hi}, {lo} = {_unpacker(g, '>QQ', 'uuid')}(buf, pos)")
            g.emit(ind, "pos += 16")
            _emit_uuid(g, ind, target, hi, lo)
            return
        if t in FIXED_FORMATS:
            s = _unpacker(g, ">" + FIXED_FORMATS[t], t)
            g.emit(ind, f"({target},) = {s}(buf, pos)")
            g.emit(ind, f"pos += {FIXED_SIZES[t]}")
            return
        n = g.var(f"{target}_len")
        _dec_count(g, ind, w, n, "int16" if t == "string" else "int32", peek)
        body = _dec_null_branch(g, ind, w, n, target)
        if t == "string":
            g.emit(body, f"{target} = _str(buf[pos:pos + {n}], 'utf-8')")
        else:
            g.emit(body, f"{target} = _bytes(buf[pos:pos + {n}])")
        g.emit(body, f"pos += {n}")
        return
    if w.kind == "struct":
        assert w.entity is not None
        if w.nullable:
            m = g.var(f"{target}_present")
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
    n = g.var(f"{target}_count")
    slow = ind
    if el.kind == "primitive" and el.type in INT_ARRAY:
        # Fast path: a short array is one prebuilt struct call (it checks the bounds).
        fmt, size = FIXED_FORMATS[el.type], FIXED_SIZES[el.type]
        table = _small_unpackers(g, fmt, w.compact)
        if w.compact:
            b = peek
            if b is None:
                b = g.var(f"{target}_head")
                g.emit(ind, f"{b} = buf[pos]")
            g.emit(ind, f"if 0 < {b} <= {SMALL_ARRAY}:")
            g.emit(ind + 1, f"{target} = {table}[{b}](buf, pos + 1)")
            g.emit(ind + 1, f"pos += {size} * {b} - {size - 1}")
            peek = b
        else:
            if peek is None:
                g.emit(ind, f"({n},) = {_unpacker(g, '>i', 'int32')}(buf, pos)")
            else:
                g.emit(ind, f"{n} = {peek}")
            g.emit(ind, f"if 0 <= {n} < {SMALL_ARRAY}:")
            g.emit(ind + 1, f"{target} = {table}[{n}](buf, pos + 4)")
            g.emit(ind + 1, f"pos += {size} * {n} + 4")
            peek = n
        g.emit(ind, "else:")
        slow = ind + 1
    _dec_count(g, slow, w, n, "int32", peek)
    body = _dec_null_branch(g, slow, w, n, target)
    if el.kind == "primitive" and el.type in INT_ARRAY:
        fmt, size = FIXED_FORMATS[el.type], FIXED_SIZES[el.type]
        g.emit(body, f"{target} = _array_struct({fmt!r}, {n}).unpack_from(buf, pos)")
        g.emit(body, f"pos += {size} * {n}")
        return
    lst, item = g.var(f"{target}_list"), g.var(f"{target}_item")
    append = g.var(f"{lst}_append")
    g.emit(body, f"{lst} = []")
    g.emit(body, f"{append} = {lst}.append")
    g.emit(body, f"for _ in range({n}):")
    _dec_value(g, body + 1, el, item)
    g.emit(body + 1, f"{append}({item})")
    g.emit(body, f"{target} = _tuple({lst})")


def _dec_tagged(
    g: Gen,
    ind: int,
    cls: type,
    tagged: list[tuple[str, Wire]],
    local: dict[str, str],
    peek: str | None,
) -> None:
    """Emit the tagged-field section: defaults first, then known tags by number and
    unknown ones kept as ``(tag, bytes)``."""
    for name, w in tagged:
        var = g.var(name)
        g.comment(ind, cls, name, w)
        g.emit(ind, f"{var} = {g.const(w.default, 'default', name)}")
        local[name] = var
    unknown = g.var("unknown_tagged_fields")
    local["unknown_tagged_fields"] = unknown
    g.emit(ind, f"# {cls.__name__}.unknown_tagged_fields (the tagged-field section)")
    g.emit(ind, f"{unknown} = ()")
    t = peek
    if t is None:
        t = g.var("tag_count")
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
    g.emit(i2 + 1, f"raise _Short('tag count beyond the input', pos + {t})")
    lst, last, tag, size, stop = (
        g.var(p) for p in ("unknown_list", "last_tag", "tag", "tag_size", "tag_end")
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
    g.emit(i3 + 1, f"raise _Short('tagged field beyond the input', {stop})")
    keyword = "if"
    for name, w in tagged:
        g.comment(i3, cls, name, w)
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


def _dec_entity(g: Gen, ind: int, cls: type, target: str) -> None:
    """Emit code that decodes one ``cls`` at ``pos`` into local ``target``."""
    info = entity_info(cls)
    fields = [(f.name, w) for f, w in wire_fields(cls)]
    plain = [(n, w) for n, w in fields if w.tag is None and w.kind != "unknown_tags"]
    tagged = [(n, w) for n, w in fields if w.tag is not None]
    local: dict[str, str] = {}
    groups = fixed_runs(plain)
    peek: str | None = None
    for gi, group in enumerate(groups):
        if not is_fixed(group[0][1]):
            name, w = group[0]
            var = g.var(name)
            g.comment(ind, cls, name, w)
            _dec_value(g, ind, w, var, peek)
            peek = None
            local[name] = var
            continue
        # One struct call for the run, plus the leading bytes of what follows it.
        fmt, outs, uuids = ">", [], []
        for name, w in group:
            g.comment(ind, cls, name, w)
            var = g.var(name)
            local[name] = var
            if w.type == "uuid":
                hi, lo = g.var(f"{var}_hi"), g.var(f"{var}_lo")
                fmt += "QQ"
                outs += [hi, lo]
                uuids.append((var, hi, lo))
            else:
                fmt += FIXED_FORMATS[w.type]
                outs.append(var)
        run_size = struct.calcsize(fmt)
        nxt = groups[gi + 1][0] if gi + 1 < len(groups) else None
        extra = _peek_format(nxt[1] if nxt else None, info.flexible)
        if extra is not None:
            peek = g.var(f"{nxt[0]}_head" if nxt else "tag_count")
            outs.append(peek)
            fmt += extra
        s = _unpacker(g, fmt, run_name(group))
        g.emit(ind, f"{', '.join(outs)}, = {s}(buf, pos)")
        g.emit(ind, f"pos += {run_size}")
        for var, hi, lo in uuids:
            _emit_uuid(g, ind, var, hi, lo)
    if info.flexible:
        _dec_tagged(g, ind, cls, tagged, local, peek)
    klass = g.const(cls, "cls", cls.__name__)
    base = _slots_base(cls, [name for name, _ in fields])
    if base is not None:
        # Fill the slots of the layout-identical base (plain stores, which CPython
        # specializes), then make the instance a `cls`: 2.7x faster than setting
        # each slot through the frozen class's descriptors.
        storage = g.const(base, "slots", cls.__name__)
        g.emit(ind, f"{target} = _new({storage})")
        for name, _w in fields:
            g.emit(ind, f"{target}.{name} = {local[name]}")
        g.emit(ind, f"{target}.__class__ = {klass}")
        return
    g.emit(ind, f"{target} = _new({klass})")
    for name, _w in fields:
        setter = g.const(cls.__dict__[name].__set__, "set", f"{cls.__name__}_{name}")
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


def build_decoder(cls: type) -> tuple[Any, str]:
    """Compile ``decode_<Class>(buf, pos) -> (entity, pos)``; returns it and its source."""
    g = Gen(cls, _NAMESPACE)
    func = f"decode_{cls.__name__}"
    g.emit(0, f"def {func}(buf, pos):")
    g.emit(1, f'"""Decode one {cls.__module__}.{cls.__qualname__} at buf[pos:]."""')
    g.emit(1, "end = _len(buf)")
    _dec_entity(g, 1, cls, "obj")
    g.emit(1, "return obj, pos")
    return g.compile("decode", func)
