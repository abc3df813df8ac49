"""Compact JSON text as Confluent writes it with Jackson: no whitespace, keys in the
order given, non-ASCII characters kept, and floating-point numbers as Java's
``Double.toString`` writes them (``1.0E30``, ``1.0E-7``, ``100.0``)."""

from __future__ import annotations

import json
import math
import re
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


# A JSON string (kept as it is) or a number with a fraction or an exponent (a float).
_TOKEN = re.compile(r'("(?:[^"\\]|\\.)*")|(-?\d+(?:\.\d+)?[eE][+-]?\d+|-?\d+\.\d+)')


def _token(match: re.Match[str]) -> str:
    return match.group(1) or java_double(float(match.group(2)))


def dumps(value: Any) -> str:
    """``value`` (JSON data: dict, list, str, int, float, bool, None) as compact text."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return _TOKEN.sub(_token, text)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads(text: str) -> Any:
    """Parse JSON text, rejecting ``NaN`` and ``Infinity`` as Jackson does."""
    return json.loads(text, parse_constant=_no_constants)
