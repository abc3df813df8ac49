"""The C Avro decoder ``kproto._avro`` (``src/kproto/_avro.c``), when it runs.

It is loaded like the other extensions of :mod:`kproto.speedups`: off when
``KPROTO_NO_EXTENSIONS`` is set or the module is not built, and following
:func:`kproto.speedups.using` (the switch tests and benchmarks flip).
"""

from __future__ import annotations

import os
import weakref
from types import ModuleType
from typing import Any

from kproto import speedups

__all__ = ["available", "avro_module", "compile_plan"]


def _load() -> ModuleType | None:
    if os.environ.get(speedups.ENV_VAR, "") not in ("", "0"):
        return None
    try:
        from kproto import _avro  # type: ignore[attr-defined]
    except ImportError:
        return None
    module: ModuleType = _avro
    return module


_module = _load()


def avro_module() -> ModuleType | None:
    """``kproto._avro`` when built and switched on, else None."""
    if _module is None or not speedups.enabled():
        return None
    return _module


#: Each plan's compiled program, or False when the C decoder does not take it.
_programs: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def compile_plan(plan: Any) -> Any:
    """The C program of ``plan`` (an :class:`~kproto.avro.AvroPlan`), compiled once
    per plan; None without the extension, or when the C decoder does not
    take the plan (ops nested more than 200 deep): the Python path decodes it, with
    the same result."""
    if _module is None:
        return None
    program = _programs.get(plan)
    if program is None:
        try:
            program = _module.Program(
                plan.root.to_tuple(), tuple(c.to_tuple() for c in plan.columns)
            )
        except (ValueError, RecursionError):
            program = False
        _programs[plan] = program
    return program or None


def available() -> bool:
    """True when ``kproto._avro`` is built and loaded (whatever the switch says)."""
    return _module is not None
