"""Which implementation of kproto's hot loops runs: the C extension or pure Python.

``kproto._speedups`` (``src/kproto/_speedups.c``) is an optional C extension, built by
``pip install`` when a C compiler is present (``setup.py``); without one the install
prints a warning and everything runs in pure Python. It holds the magic 2 record loops
of :mod:`kproto.records._v2_loop` (``v2_columns_fast`` / ``v2_records_fast``) and the
records region writer of :mod:`kproto.records._encode` (``_v2_records_fast``), which stay
the reference implementation: the C loops accept exactly the batches the Python loops
accept and return equal values, and a rejected batch is re-read by the same Python
code on both paths, so every :class:`~kproto.serial.exceptions.DecodeError` (reason,
path, offset) is the same.

``kproto._entity_reader`` (``src/kproto/_entity_reader.c``) reads entities: a generic
reader driven by a description of each generated class built here from the same Wire
metadata :mod:`kproto.serial.compile` compiles. :func:`entity_reader` wraps a class's
compiled Python decoder (the reference): the C reader returns an equal entity, or calls
that decoder itself for any input it is not sure of, so errors come from Python.

Set ``KPROTO_NO_EXTENSIONS=1`` in the environment (before kproto is imported) to run
pure Python. Check with::

    python -c "import kproto.speedups as s; print(s.enabled(), s.reason())"
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from kproto.records._types import Record, _RecordSlots
from kproto.records._v2_loop import Bad, v2_columns_fast, v2_records_fast

__all__ = [
    "ENV_VAR",
    "available",
    "enabled",
    "reason",
    "using",
    "v2_encoder",
    "v2_loops",
    "v2_plain",
    "entity_reader",
]

ENV_VAR = "KPROTO_NO_EXTENSIONS"
"""Environment variable: any value but empty or ``0`` turns the extension off."""

Loop = Callable[[bytes, int, int, int, int, int], Any]
Encoder = Callable[[list[Any], int], Any]


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get(ENV_VAR, "") not in ("", "0"):
        return None, f"{ENV_VAR} is set"
    try:
        from kproto import _speedups  # type: ignore[attr-defined]
    except ImportError as exc:
        return None, f"the C extension is not built ({exc})"
    try:
        _speedups.setup(Record, _RecordSlots, Bad)
    except TypeError as exc:  # the Record layout changed without the C code
        return None, f"the C extension does not fit this Record class ({exc})"
    return _speedups, "the C extension kproto._speedups is in use"


_native, _reason = _load()


def _load_entity_reader() -> ModuleType | None:
    if _native is None:
        return None
    try:
        from kproto import _entity_reader  # type: ignore[attr-defined]

        _entity_reader.setup(uuid.UUID, uuid.SafeUUID.unknown)
    except (ImportError, TypeError):
        return None
    module: ModuleType = _entity_reader
    return module


_entity = _load_entity_reader()
_PYTHON_LOOPS: tuple[Loop, Loop] = (v2_columns_fast, v2_records_fast)
_NATIVE_LOOPS: tuple[Loop, Loop] | None = (
    (_native.v2_columns, _native.v2_records) if _native is not None else None
)
_loops: tuple[Loop, Loop] = _NATIVE_LOOPS or _PYTHON_LOOPS
_NATIVE_ENCODER: Encoder | None = (
    _native.v2_encode_records if _native is not None else None
)
_encoder: Encoder | None = _NATIVE_ENCODER
_NATIVE_PLAIN: Callable[[object], bool] | None = (
    _native.v2_plain if _native is not None else None
)


def enabled() -> bool:
    """True when the C loops run (the extension is built, loaded and not switched off)."""
    return _loops is not _PYTHON_LOOPS


def available() -> bool:
    """True when the extension is loaded (whether or not :func:`using` turned it off)."""
    return _NATIVE_LOOPS is not None


def reason() -> str:
    """Why the extension is or is not in use, in words."""
    if _NATIVE_LOOPS is not None and not enabled():
        return "switched off by kproto.speedups.using(False)"
    return _reason


def v2_loops() -> tuple[Loop, Loop]:
    """``(columns loop, records loop)`` for magic 2 records, with the signatures and
    contract of :func:`~kproto.records._v2_loop.v2_columns_fast` and
    :func:`~kproto.records._v2_loop.v2_records_fast`: C when enabled, else Python."""
    return _loops


def v2_encoder() -> Encoder | None:
    """The C records-region writer ``(items, base_ts) -> bytes | NotImplemented``
    when enabled, else ``None`` (use ``kproto.records._encode``'s Python writer)."""
    return _encoder


def v2_plain() -> Callable[[object], bool] | None:
    """When enabled, the C check ``(records) -> bool`` that ``records`` is a list of
    ``(bytes | None, bytes | None, list | tuple, int64)`` tuples, which
    ``records._encode._normalize`` would return unchanged; else ``None``."""
    return _NATIVE_PLAIN if _encoder is not None else None


@contextmanager
def using(native: bool) -> Iterator[None]:
    """Run the block with the C loops (``native=True``) or the Python ones.

    For tests and benchmarks that compare the two paths in one process; not
    thread-safe (it swaps a module global).

    Raises:
        RuntimeError: ``native=True`` but the extension is not available
            (:func:`reason` says why).
    """
    global _loops, _encoder
    if native and _NATIVE_LOOPS is None:
        raise RuntimeError(f"kproto's C extension is not available: {_reason}")
    saved = _loops, _encoder
    _loops = _NATIVE_LOOPS if native and _NATIVE_LOOPS else _PYTHON_LOOPS
    _encoder = _NATIVE_ENCODER if native else None
    was = _entity.set_enabled(native) if _entity is not None else None
    try:
        yield
    finally:
        _loops, _encoder = saved
        if _entity is not None:
            _entity.set_enabled(was)


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


_KINDS = frozenset(
    "int8 int16 uint16 int32 uint32 int64 float64 bool uuid string bytes struct array".split()
)


def _describe(cls: type) -> tuple[Any, ...] | None:
    """The C reader's description of ``cls``, or None if it cannot read it (a class
    without a slot-storage base, or a field of a kind it does not know)."""
    from kproto.meta import entity_info, wire_fields
    from kproto.serial.compile import _slots_base

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
    """``fallback`` (the compiled Python ``decode(buf, pos) -> (entity, pos)`` of
    ``cls``) wrapped by the C reader, or ``fallback`` itself when the extension is
    off or cannot describe ``cls``."""
    if _entity is None:
        return fallback
    desc = _describe(cls)
    if desc is None:
        return fallback
    return _entity.make_reader(desc, fallback)
