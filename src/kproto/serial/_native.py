"""The entity side of :mod:`kproto.speedups`: describe a class for the C reader.

``kproto._entity_reader`` reads a class from a description built here from the same
Wire metadata :mod:`kproto.serial._decode_gen` compiles: per field its kind,
nullability, compact encoding, tag and default, and for structs and arrays what they
hold. :func:`entity_reader` wraps a class's compiled decoder (the reference) in it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kproto import speedups
from kproto.meta import entity_info, wire_fields
from kproto.serial._decode_gen import _slots_base

__all__ = ["entity_reader"]

_KINDS = frozenset(
    "int8 int16 uint16 int32 uint32 int64 float64 bool uuid string bytes struct array".split()
)
_ready: Any = None


def _op(name: str | None, w: Any) -> tuple[Any, ...] | None:
    """The C reader's description of one field (or array element) ``w``, or None."""
    if w.kind == "primitive":
        kind = "bytes" if w.type == "records" else w.type
        sub: Any = None
    elif w.kind == "struct":
        kind, sub = "struct", _describe(w.entity)
        if sub is None:
            return None
    elif w.kind == "array":
        kind, sub = "array", _op(None, w.element)
        if sub is None:
            return None
    else:
        return None
    if kind not in _KINDS:
        return None
    return (name, kind, w.nullable, w.compact, w.tag, w.default, sub)


def _describe(cls: type) -> tuple[Any, ...] | None:
    """The C reader's description of ``cls``, or None if it cannot read it (a class
    without a slot-storage base, or a field of a kind it does not know)."""
    fields = [(f.name, w) for f, w in wire_fields(cls)]
    base = _slots_base(cls, [name for name, _ in fields])
    if base is None:
        return None
    flexible = entity_info(cls).flexible
    plain: list[tuple[Any, ...]] = []
    tagged: list[tuple[Any, ...]] = []
    unknown = None
    for name, w in fields:
        if w.kind == "unknown_tags":
            if not flexible:
                return None
            unknown = name
            continue
        op = _op(name, w)
        if op is None or (w.tag is not None and not flexible):
            return None
        (tagged if w.tag is not None else plain).append(op)
    if flexible and unknown is None:
        return None
    return (cls, base, flexible, tuple(plain), tuple(tagged), unknown)


def entity_reader(cls: type, fallback: Callable[[Any, int], Any]) -> Any:
    """``fallback`` (the compiled ``decode(buf, pos) -> (entity, pos)`` of ``cls``)
    wrapped by the C reader, or ``fallback`` itself when the extension is not loaded
    or cannot describe ``cls``. The reader calls ``fallback`` while
    ``kproto.speedups.using(False)`` is in effect."""
    global _ready
    module = speedups.entity_module()
    if module is None:
        return fallback
    if _ready is not module:
        module.setup(uuid.UUID, uuid.SafeUUID.unknown)
        _ready = module
    desc = _describe(cls)
    if desc is None:
        return fallback
    return module.make_reader(desc, fallback)
