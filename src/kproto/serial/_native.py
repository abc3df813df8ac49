"""The entity side of :mod:`kproto.speedups`: describe a class for the C reader and
writer.

``kproto._entity_reader`` and ``kproto._entity_writer`` read and write a class from a
description built here from the same Wire metadata :mod:`kproto.serial._decode_gen`
and :mod:`kproto.serial._encode_gen` compile: per field its kind, nullability, compact
encoding, tag and default, and for structs and arrays what they hold; tagged fields in
ascending tag order (the order they are written in). :func:`entity_reader` wraps a
class's compiled decoder (the reference) in the C reader, :func:`entity_writer` its
compiled encoder in the C writer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kproto import speedups
from kproto.meta import entity_info, wire_fields
from kproto.serial._decode_gen import _slots_base

__all__ = ["entity_reader", "entity_writer"]

_KINDS = frozenset(
    "int8 int16 uint16 int32 uint32 int64 float64 bool uuid string bytes struct array".split()
)
_ready: set[str] = set()  # the modules given uuid.UUID's slots


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
    tagged.sort(key=lambda op: op[4])  # (name, kind, nullable, compact, tag, ...)
    return (cls, base, flexible, tuple(plain), tuple(tagged), unknown)


def _ready_module(module: Any) -> Any:
    if module.__name__ not in _ready:
        module.setup(uuid.UUID, uuid.SafeUUID.unknown)
        _ready.add(module.__name__)
    return module


def _described(module: Any, cls: type) -> tuple[Any, Any] | None:
    """The ready C module and its description of ``cls``; None when the extension is
    not loaded or cannot describe ``cls``."""
    if module is None:
        return None
    desc = _describe(cls)
    if desc is None:
        return None
    return _ready_module(module), desc


def entity_reader(cls: type, fallback: Callable[[Any, int], Any]) -> Any:
    """``fallback`` (the compiled ``decode(buf, pos) -> (entity, pos)`` of ``cls``)
    wrapped by the C reader, or ``fallback`` itself when the extension is not loaded
    or cannot describe ``cls``. The reader calls ``fallback`` while
    ``kproto.speedups.using(False)`` is in effect."""
    found = _described(speedups.entity_module(), cls)
    if found is None:
        return fallback
    module, desc = found
    return module.make_reader(desc, fallback)


def entity_writer(cls: type, fallback: Callable[[Any, Any], None]) -> Any:
    """``fallback`` (the compiled ``encode(entity, append) -> None`` of ``cls``) wrapped
    by the C writer, or ``fallback`` itself when the extension is not loaded or cannot
    describe ``cls``. The writer appends the same bytes in one chunk, and calls
    ``fallback`` for any value it is not sure of and while
    ``kproto.speedups.using(False)`` is in effect; its ``to_bytes(entity) -> bytes``
    returns them."""
    found = _described(speedups.entity_writer_module(), cls)
    if found is None:
        return fallback
    module, desc = found
    return module.make_writer(desc, fallback)
