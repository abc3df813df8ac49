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

Set ``KPROTO_NO_EXTENSIONS=1`` in the environment (before kproto is imported) to run
pure Python. Check with::

    python -c "import kproto.speedups as s; print(s.enabled(), s.reason())"
"""

from __future__ import annotations

import os
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
    try:
        yield
    finally:
        _loops, _encoder = saved
