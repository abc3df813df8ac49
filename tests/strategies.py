"""Hypothesis strategies for any generated entity, derived only from the public field
metadata (:mod:`kproto.meta`). The library itself registers no strategies."""

from __future__ import annotations

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
