"""Test entities for any generated class, derived only from the public field metadata
(:mod:`kproto.meta`): Hypothesis strategies (:func:`entities`) and a deterministic,
non-default builder (:func:`sample_entity`). The library itself registers no
strategies."""

from __future__ import annotations

import uuid
from functools import cache
from typing import Any

from hypothesis import strategies as st

from kproto.meta import Wire, wire_fields
from kproto.serial.primitives import INT_RANGES

_TEXT = st.text(max_size=12)
_BYTES = st.binary(max_size=16)


def _primitive(t: str) -> st.SearchStrategy[Any]:
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        return st.integers(lo, hi)
    return {
        "bool": st.booleans(),
        "float64": st.floats(allow_nan=False),
        "string": _TEXT,
        "bytes": _BYTES,
        "records": _BYTES,
        "uuid": st.uuids(),
    }[t]


def values(w: Wire) -> st.SearchStrategy[Any]:
    """A strategy for valid values of one field."""
    if w.kind == "primitive":
        base = _primitive(w.type)
    elif w.kind == "struct":
        assert w.entity is not None
        base = st.deferred(lambda: entities(w.entity))  # type: ignore[arg-type]
    elif w.kind == "array":
        assert w.element is not None
        base = st.lists(values(w.element), max_size=3).map(tuple)
    else:
        raise AssertionError(w.kind)
    return st.one_of(st.none(), base) if w.nullable else base


def _unknown_tags(
    known: frozenset[int],
) -> st.SearchStrategy[tuple[tuple[int, bytes], ...]]:
    tags = st.integers(0, 2**31).filter(lambda t: t not in known)
    return st.lists(st.tuples(tags, _BYTES), max_size=2, unique_by=lambda p: p[0]).map(
        lambda pairs: tuple(sorted(pairs))
    )


@cache
def entities(cls: type) -> st.SearchStrategy[Any]:
    """A strategy for valid instances of a generated entity class."""
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    known = frozenset(w.tag for _, w in wire_fields(cls) if w.tag is not None)
    for field, w in wire_fields(cls):
        if w.kind == "unknown_tags":
            kwargs[field.name] = _unknown_tags(known)
        else:
            kwargs[field.name] = values(w)
    return st.builds(cls, **kwargs)


# ------------------------------------------------------------ deterministic entities

#: Base values of the integer types; ``seed`` moves them (see :func:`sample_value`).
_INTS = {
    "int8": 0x35,
    "int16": 0x1234,
    "uint16": 0xBEEF,
    "int32": 0x12345678,
    "uint32": 0xDEADBEEF,
    "int64": 0x123456789ABCDEF0,
}
_INT_BITS = {"int8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32}


def sample_value(w: Wire, seed: int, *, null: bool = False) -> Any:
    """A deterministic value of field ``w`` that differs from its default (``seed``
    varies it): numbers in range, strings with a non-ASCII character, two-element
    arrays, nested structs. With ``null``, nullable fields (nested too) are ``None``."""
    if null and w.nullable:
        return None
    if w.kind == "array":
        assert w.element is not None
        return tuple(
            sample_value(w.element, seed * 7 + i + 1, null=null) for i in range(2)
        )
    if w.kind == "struct":
        assert w.entity is not None
        return sample_entity(w.entity, seed, null=null)
    t = w.type
    if t in _INTS:
        # Positive and below the signed maximum, so it fits signed and unsigned types.
        value = (_INTS[t] + seed * 37) % 2 ** (_INT_BITS.get(t, 64) - 1) or 1
        return value if value != w.default else value + 1
    if t == "bool":
        return not bool(w.default)
    if t == "float64":
        return 1.5 + seed
    if t == "uuid":
        return uuid.UUID(int=(0xC0FFEE << 100) | (seed + 1))
    if t == "string":
        return f"{w.name}-{seed}-é"
    if t in ("bytes", "records"):
        return bytes([seed & 0xFF, 1, 2, 0xFF])
    raise AssertionError(f"unexpected type {t}")


def sample_entity(
    cls: type, seed: int = 0, *, null: bool = False, unknown_tags: bool = False
) -> Any:
    """A deterministic instance of ``cls`` with every field set to a non-default value
    (tagged fields too, so they are written), the same for the same ``seed``.

    ``null``: nullable fields are ``None`` instead. ``unknown_tags``: flexible entities
    also carry one unknown tagged field (a tag above every known one).
    """
    values: dict[str, Any] = {}
    known = [w.tag for _, w in wire_fields(cls) if w.tag is not None]
    for i, (field, w) in enumerate(wire_fields(cls)):
        if w.kind == "unknown_tags":
            if unknown_tags:
                tag = max(known, default=-1) + 1000 + seed
                values[field.name] = ((tag, bytes([seed & 0xFF, 0xAB])),)
            continue
        values[field.name] = sample_value(w, seed * 31 + i + 1, null=null)
    return cls(**values)
