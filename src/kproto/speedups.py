"""Which implementation of kproto's hot paths runs: the C extensions or pure Python.

Three optional C extensions, built by ``pip install`` when a C compiler is present
(``setup.py``; without one the install prints a warning and everything runs in pure
Python, with the same results):

* ``kproto._speedups`` (``src/kproto/_speedups.c``): the magic 2 record loops of
  :mod:`kproto.records._v2_loop` and the records-region writer of
  :mod:`kproto.records._encode`, bound in :mod:`kproto.records._native`. The Python
  code stays the reference: the C loops accept exactly the batches it accepts and
  return equal values, and a rejected batch is re-read by the same Python code on both
  paths, so every :class:`~kproto.exceptions.DecodeError` (reason, path, offset) is the
  same.
* ``kproto._entity_reader`` (``src/kproto/_entity_reader.c``): a generic entity reader
  driven by a description of each generated class built from the Wire metadata
  (:mod:`kproto.serial._native`). It wraps a class's compiled Python decoder (the
  reference) and calls it for any input it is not sure of, so errors come from Python.

This module only loads them and holds the switch; it imports neither
:mod:`kproto.records` nor :mod:`kproto.serial` (the layering contracts in
pyproject.toml). Set ``KPROTO_NO_EXTENSIONS=1`` in the environment (before kproto is
imported) to run pure Python. Check with::

    python -c "import kproto.speedups as s; print(s.enabled(), s.reason())"
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

__all__ = [
    "ENV_VAR",
    "available",
    "enabled",
    "entity_module",
    "entity_writer_module",
    "reason",
    "records_module",
    "using",
]

ENV_VAR = "KPROTO_NO_EXTENSIONS"
"""Environment variable: any value but empty or ``0`` turns the extensions off."""


_Modules = tuple[ModuleType | None, ModuleType | None, ModuleType | None, str]


def _load() -> _Modules:
    if os.environ.get(ENV_VAR, "") not in ("", "0"):
        return None, None, None, f"{ENV_VAR} is set"
    try:
        from kproto import (  # type: ignore[attr-defined]
            _entity_reader,
            _entity_writer,
            _speedups,
        )
    except ImportError as exc:
        return None, None, None, f"the C extensions are not built ({exc})"
    records: ModuleType = _speedups
    reader: ModuleType = _entity_reader
    writer: ModuleType = _entity_writer
    return (
        records,
        reader,
        writer,
        "the C extensions kproto._speedups, _entity_reader and _entity_writer are in use",
    )


_records, _entities, _entity_writer, _reason = _load()
_on = _records is not None


def available() -> bool:
    """True when the extensions are loaded (whether or not :func:`using` turned them off)."""
    return _records is not None


def enabled() -> bool:
    """True when the C code runs (built, loaded and not switched off)."""
    return _on


def reason() -> str:
    """Why the extensions are or are not in use, in words."""
    if _records is not None and not _on:
        return "switched off by kproto.speedups.using(False)"
    return _reason


def records_module() -> ModuleType | None:
    """``kproto._speedups`` when enabled, else None (for :mod:`kproto.records._native`)."""
    return _records if _on else None


def entity_module() -> ModuleType | None:
    """``kproto._entity_reader`` when loaded, else None (for :mod:`kproto.serial._native`;
    its readers check the switch themselves)."""
    return _entities


def entity_writer_module() -> ModuleType | None:
    """``kproto._entity_writer`` when loaded, else None (for :mod:`kproto.serial._native`;
    its writers check the switch themselves)."""
    return _entity_writer


@contextmanager
def using(native: bool) -> Iterator[None]:
    """Run the block with the C code (``native=True``) or the pure-Python code.

    For tests and benchmarks that compare the two paths in one process; not
    thread-safe (it swaps module state).

    Raises:
        RuntimeError: ``native=True`` but the extensions are not available
            (:func:`reason` says why).
    """
    global _on
    if native and _records is None:
        raise RuntimeError(f"kproto's C extensions are not available: {_reason}")
    saved = _on
    _on = native
    entity_modules = [m for m in (_entities, _entity_writer) if m is not None]
    were = [m.set_enabled(native) for m in entity_modules]
    try:
        yield
    finally:
        _on = saved
        for module, was in zip(entity_modules, were, strict=True):
            module.set_enabled(was)
