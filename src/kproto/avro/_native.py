"""The C Avro decoder ``kproto._avro`` (``src/kproto/_avro.c``), when it runs.

It is loaded like the other extensions of :mod:`kproto.speedups`: off when
``KPROTO_NO_EXTENSIONS`` is set or the module is not built, and following
:func:`kproto.speedups.using` (the switch tests and benchmarks flip).
"""

from __future__ import annotations

import os
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


#: ``AvroPlan.native`` of a plan the C decoder does not take.
PYTHON_ONLY = False


def compile_plan(plan: Any) -> Any:
    """The C program of ``plan`` (an :class:`~kproto.avro.AvroPlan`), compiled once and
    kept on the plan; None without the extension, or when the C decoder does not
    take the plan (ops nested more than 200 deep): the Python path decodes it, with
    the same result."""
    if _module is None:
        return None
    if plan.native is None:
        try:
            program = _module.Program(
                plan.root.to_tuple(), tuple(c.to_tuple() for c in plan.columns)
            )
        except (ValueError, RecursionError):
            program = PYTHON_ONLY
        object.__setattr__(plan, "native", program)
    return plan.native or None


def available() -> bool:
    """True when ``kproto._avro`` is built and loaded (whatever the switch says)."""
    return _module is not None
