"""The source builder shared by the compiled decoders and encoders
(:mod:`kproto.serial._decode_gen`, :mod:`kproto.serial._encode_gen`).

It hands out readable, unique local names derived from field names, constants for the
function's namespace, and one ``# Class.field (type)`` comment per field, and
compiles the result under a ``linecache`` file name that names the class, so a
traceback through compiled code shows the generated line:
``<kproto decode kproto.schema.metadata.v12.response.MetadataResponse>``.
"""

from __future__ import annotations

import linecache
import re
from typing import Any

from kproto.meta import Wire
from kproto.serial.primitives import FIXED_FORMATS

#: Element types of arrays read and written with one ``struct`` call.
INT_ARRAY = frozenset(
    {"int8", "int16", "uint16", "int32", "uint32", "int64", "float64"}
)

#: Arrays of fixed-width values shorter than this use a prebuilt ``struct`` per count
#: (a tuple index instead of a cache lookup and a call).
SMALL_ARRAY = 32

#: Local names the generated functions use for themselves (and builtins they call).
_RESERVED = frozenset({"buf", "pos", "end", "obj", "w", "range", "_"})
_NOT_IDENT = re.compile(r"\W")


def filename(kind: str, cls: type) -> str:
    """The ``linecache`` name of the compiled ``kind`` ("decode"/"encode") of ``cls``."""
    return f"<kproto {kind} {cls.__module__}.{cls.__qualname__}>"


class Gen:
    """Lines, local names and namespace constants of one generated function."""

    def __init__(self, cls: type, namespace: dict[str, Any]) -> None:
        self.cls = cls
        self.ns = dict(namespace)
        self.lines: list[str] = []
        self.used: set[str] = set(_RESERVED)

    def var(self, base: str) -> str:
        """A local name not used yet in this function: ``base``, else ``base_2``..."""
        base = _NOT_IDENT.sub("_", base).strip("_") or "v"
        name, k = base, 1
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def const(self, value: Any, kind: str, hint: str = "") -> str:
        """A namespace name bound to ``value`` (``_kind_hint``, unique)."""
        base = "_" + _NOT_IDENT.sub("_", f"{kind}_{hint}" if hint else kind)
        name, k = base, 1
        while name in self.ns and self.ns[name] is not value:
            k += 1
            name = f"{base}_{k}"
        self.ns[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def comment(self, indent: int, cls: type, name: str, w: Wire) -> None:
        """``# Class.field (type[, nullable][, tag N])``."""
        notes = [w.type]
        if w.nullable:
            notes.append("nullable")
        if w.tag is not None:
            notes.append(f"tag {w.tag}")
        self.emit(indent, f"# {cls.__name__}.{name} ({', '.join(notes)})")

    def compile(self, kind: str, func: str) -> tuple[Any, str]:
        """Compile the lines; returns ``(function named func, source)``."""
        source = "\n".join(self.lines) + "\n"
        fname = filename(kind, self.cls)
        code = compile(source, fname, "exec")
        linecache.cache[fname] = (len(source), None, source.splitlines(True), fname)
        exec(code, self.ns)
        return self.ns[func], source


def is_fixed(w: Wire) -> bool:
    return w.kind == "primitive" and w.type in FIXED_FORMATS


def fixed_runs(items: list[tuple[str, Wire]]) -> list[list[tuple[str, Wire]]]:
    """Group consecutive untagged fixed-width fields so each group is one struct call."""
    groups: list[list[tuple[str, Wire]]] = []
    for name, w in items:
        if is_fixed(w) and groups and is_fixed(groups[-1][0][1]):
            groups[-1].append((name, w))
        else:
            groups.append([(name, w)])
    return groups


def run_name(group: list[tuple[str, Wire]]) -> str:
    """A name hint for a run of fixed-width fields: ``first`` or ``first_to_last``."""
    first, last = group[0][0], group[-1][0]
    return first if first == last else f"{first}_to_{last}"
