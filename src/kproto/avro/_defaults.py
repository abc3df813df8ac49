"""Reader fields' defaults in Avro binary: :func:`encode_default`.

A reader field the writer lacks takes its default; the plan holds the default's
Avro encoding and decodes it with a reader-only op, so both decoders fill it like
any written value (:mod:`kproto.avro._plan`). Defaults follow the specification
("Complex Types / Records"): a union's default is a value of its first branch;
bytes and fixed defaults are JSON strings of code points 0-255.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ._schema import AvroSchemaError, Schema

__all__ = ["encode_default"]


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _blob(b: bytes) -> bytes:
    return _zigzag(len(b)) + b


def _decimal_bytes(value: Any, scale: int, size: int | None, path: str) -> bytes:
    if isinstance(value, str):  # Avro JSON: bytes as ISO-8859-1 code points
        return value.encode("latin-1")
    unscaled = int(Decimal(value).scaleb(scale))
    n = size or max(1, (unscaled.bit_length() + 8) // 8)
    try:
        return unscaled.to_bytes(n, "big", signed=True)
    except OverflowError:
        raise AvroSchemaError(f"{path}: default does not fit") from None


def encode_default(s: Schema, value: Any, path: str) -> bytes:
    """The Avro binary encoding of the JSON default ``value`` of schema ``s``
    (specification, "Complex Types / Records": a union's default is of its first
    branch; bytes and fixed defaults are strings of code points 0-255).

    Raises:
        AvroSchemaError: ``value`` is not a value of ``s``.
    """
    try:
        return _encode(s, value, path)
    except (TypeError, ValueError, OverflowError, struct.error, KeyError) as exc:
        if isinstance(exc, AvroSchemaError):
            raise
        raise AvroSchemaError(
            f"{path}: default {value!r:.80} is not a {s.kind}"
        ) from None


def _encode(s: Schema, v: Any, path: str) -> bytes:
    kind = s.kind
    if kind == "null":
        if v is not None:
            raise ValueError
        return b""
    if kind == "boolean":
        if not isinstance(v, bool):
            raise TypeError
        return b"\x01" if v else b"\x00"
    if kind in ("int", "long"):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError
        if (
            not -(2 ** (31 if kind == "int" else 63))
            <= v
            < 2 ** (31 if kind == "int" else 63)
        ):
            raise ValueError
        return _zigzag(v)
    if kind in ("float", "double"):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError
        f = float(v)
        if kind == "float" and math.isfinite(f) and abs(f) > 3.4028234663852886e38:
            raise ValueError
        return struct.pack("<f" if kind == "float" else "<d", f)
    if kind == "string":
        if not isinstance(v, str):
            raise TypeError
        return _blob(v.encode())
    if kind in ("bytes", "fixed"):
        if s.logical == "decimal" and not isinstance(v, str):
            raw = _decimal_bytes(v, s.scale, s.size if kind == "fixed" else None, path)
        elif isinstance(v, str):
            raw = v.encode("latin-1")
        else:
            raise TypeError
        if kind == "fixed":
            if len(raw) != s.size:
                raise ValueError
            return raw
        return _blob(raw)
    if kind == "enum":
        return _zigzag(s.symbols.index(v))
    if kind == "array":
        assert s.items is not None
        items = s.items
        if not isinstance(v, list):
            raise TypeError
        body = b"".join(_encode(items, x, path) for x in v)
        return (_zigzag(len(v)) + body + b"\x00") if v else b"\x00"
    if kind == "map":
        assert s.values is not None
        values = s.values
        if not isinstance(v, Mapping):
            raise TypeError
        body = b"".join(
            _blob(k.encode()) + _encode(values, x, path) for k, x in v.items()
        )
        return (_zigzag(len(v)) + body + b"\x00") if v else b"\x00"
    if kind == "union":
        return b"\x00" + _encode(s.branches[0], v, path)
    if not isinstance(v, Mapping):
        raise TypeError
    out = b""
    for fld in s.fields:
        if fld.name in v:
            out += _encode(fld.schema, v[fld.name], f"{path}.{fld.name}")
        elif fld.has_default:
            out += _encode(fld.schema, fld.default, path)
        else:
            raise KeyError(fld.name)
    return out
