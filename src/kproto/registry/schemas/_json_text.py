"""Compact JSON text as Confluent writes it with Jackson: no whitespace, keys in the
order given, non-ASCII characters kept, and floating-point numbers as Java's
``Double.toString`` writes them (``1.0E30``, ``1.0E-7``, ``100.0``)."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

__all__ = ["dumps", "loads", "java_double"]


def java_double(value: float) -> str:
    """``Double.toString``: positional for 1e-3 <= |x| < 1e7, else ``d.dddE<n>``; the
    shortest digits that read back as ``value``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    exact = Decimal(repr(magnitude)).normalize()
    digits = "".join(str(d) for d in exact.as_tuple().digits)
    mantissa = digits[0] + "." + (digits[1:] or "0")
    sign = "-" if value < 0 else ""
    return f"{sign}{mantissa}E{exact.adjusted()}"


def dumps(value: Any) -> str:
    """``value`` (JSON data: dict, list, str, int, float, bool, None) as compact text."""
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(java_double(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
            out.append(json.dumps(str(key), ensure_ascii=False))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"not JSON data: {type(value).__name__}")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads(text: str) -> Any:
    """Parse JSON text, rejecting ``NaN`` and ``Infinity`` as Jackson does."""
    return json.loads(text, parse_constant=_no_constants)
