"""The record-batch side of :mod:`kproto.speedups`: the C loops, or the Python ones.

``kproto._speedups`` restates :func:`~kproto.records._v2_loop.v2_columns_fast`,
:func:`~kproto.records._v2_loop.v2_records_fast` (the reference), the records-region
writer of :mod:`kproto.records._encode` and the Arrow buffer builder of
:mod:`kproto.records._arrow`; this module binds it to :class:`Record` and
hands out whichever path :mod:`kproto.speedups` has switched on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kproto import speedups

from ._types import Record, _RecordSlots
from ._v2_loop import Bad, v2_columns_fast, v2_records_fast

__all__ = ["arrow_builder", "v2_encoder", "v2_lazy", "v2_loops", "v2_plain", "v2_scan"]

Loop = Callable[[bytes, int, int, int, int, int], Any]
#: v2_scan reads any C-contiguous buffer (a view of a decompression buffer too).
Scan = Callable[[bytes | memoryview, int, int, int, int, int], Any]
Encoder = Callable[[list[Any], int], Any]

_PYTHON_LOOPS: tuple[Loop, Loop] = (v2_columns_fast, v2_records_fast)
_bound: Any = None


def _module() -> Any:
    """kproto._speedups bound to Record (once), when enabled; else None."""
    global _bound
    module = speedups.records_module()
    if module is not None and _bound is not module:
        module.setup(Record, _RecordSlots, Bad)  # TypeError if the layouts differ
        _bound = module
    return module


def v2_loops() -> tuple[Loop, Loop]:
    """``(columns loop, records loop)`` with the signatures and contract of
    :func:`~kproto.records._v2_loop.v2_columns_fast` and
    :func:`~kproto.records._v2_loop.v2_records_fast`: C when enabled, else Python."""
    module = _module()
    if module is None:
        return _PYTHON_LOOPS
    return module.v2_columns, module.v2_records


def v2_lazy() -> Loop | None:
    """When enabled, the C records loop that builds records as they are iterated:
    ``(data, pos, end, count, base_offset, base_ts) -> RecordSequence``, raising
    :class:`Bad` on exactly the input the records loop rejects (before any record is
    built) and otherwise returning a sequence equal to the records loop's tuple whose
    iterator builds one :class:`Record` per step (see ``_speedups.c``); ``None``
    when the C extension is off."""
    module = _module()
    if module is None:
        return None
    if not _registered:
        _register(module.RecordSequence)
    lazy: Loop = module.v2_lazy
    return lazy


_registered = False


def _register(cls: type) -> None:
    """Make the C RecordSequence a :class:`collections.abc.Sequence`."""
    global _registered
    Sequence.register(cls)
    _registered = True


def v2_encoder() -> Encoder | None:
    """The C records-region writer ``(items, base_ts) -> bytes | NotImplemented``
    when enabled, else ``None`` (use the Python writer)."""
    module = _module()
    return None if module is None else module.v2_encode_records


def v2_plain() -> Callable[[object], bool] | None:
    """When enabled, the C check ``(records) -> bool`` that ``records`` is a list of
    ``(bytes | None, bytes | None, list | tuple, int64)`` tuples, which
    ``_encode._normalize`` would return unchanged; else ``None``."""
    module = _module()
    return None if module is None else module.v2_plain


def v2_scan() -> Scan | None:
    """When enabled, the C walk ``(data, pos, end, count, base_offset, base_ts) ->
    (min_ts, max_ts, null_keys) | None`` (``data`` bytes or any C-contiguous buffer,
    read in place) that checks what the columns loop checks
    (raising :class:`Bad` on the same input) without building a per-record object;
    ``None`` from it means an offset is not ``base_offset + i`` or a timestamp
    leaves int64 (ask the columns loop). ``None`` when the C extension is off."""
    module = _module()
    return None if module is None else module.v2_scan


def arrow_builder() -> Any:
    """When enabled, a new C ``ArrowBuilder``, the twin of
    :class:`~kproto.records._arrow.PyArrowBuilder`; else ``None``."""
    module = _module()
    return None if module is None else module.ArrowBuilder()
