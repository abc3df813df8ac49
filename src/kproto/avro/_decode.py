"""The pure-Python Avro decoder: the reference the C one (``src/kproto/_avro.c``)
restates.

:func:`decode_py` runs an :class:`~kproto.avro._plan.AvroPlan`'s ops over each value
of an Arrow binary column and appends to the plan's columns (no per-record dict);
:func:`finish` packs the columns into Arrow buffers. The C decoder takes the same
input and gives byte-equal buffers and the same errors (code and byte position), so
``tests/avro/`` can hold the two to each other.

Binary encoding: Avro 1.11 specification, "Binary Encoding" (zigzag varints of at
most 5 bytes for int and 10 for long, blocks of arrays and maps with negative counts
followed by a byte size, unions as a branch index); Confluent's wire format (magic
byte 0, big-endian int32 schema id) from its ``AbstractKafkaSchemaSerDe``.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Mapping
from typing import Any, Final

from ._plan import (
    BIN,
    BOOL,
    DEC,
    F32,
    F64,
    I32,
    I64,
    LIST,
    NULL,
    OP_ARRAY,
    OP_BLOB,
    OP_BOOL,
    OP_DEC_BYTES,
    OP_DEC_FIXED,
    OP_DEFAULT,
    OP_DOUBLE,
    OP_ENUM,
    OP_ERROR,
    OP_FIXED,
    OP_FLOAT,
    OP_INT,
    OP_LONG,
    OP_LONG_MS,
    OP_MAP,
    OP_MEMBER,
    OP_NULL,
    OP_RECORD,
    OP_UNION,
    STRUCT,
    AvroPlan,
    Column,
    Op,
)

__all__ = ["MESSAGES", "decode_py", "finish"]

E_TRUNCATED = 1
E_INT = 2
E_LONG = 3
E_NEG_LENGTH = 4
E_BOOL = 5
E_UNION = 6
E_ENUM = 7
E_SYMBOL = 8
E_UTF8 = 9
E_BLOCK = 10
E_DECIMAL = 11
E_TIMESTAMP = 12
E_UNRESOLVED = 13
E_TRAILING = 14
E_MAGIC = 15
E_SCHEMA_ID = 16
E_FULL = 17

#: What each error code means (the same words on both paths).
MESSAGES: Final = {
    E_TRUNCATED: "value ends early",
    E_INT: "int varint outside 32 bits",
    E_LONG: "long varint outside 64 bits",
    E_NEG_LENGTH: "negative length",
    E_BOOL: "boolean byte not 0 or 1",
    E_UNION: "union branch index out of range",
    E_ENUM: "enum index out of range",
    E_SYMBOL: "enum symbol not in the reader's schema, which has no default",
    E_UTF8: "string not valid UTF-8",
    E_BLOCK: "block count past the value's end",
    E_DECIMAL: "decimal outside the reader's precision",
    E_TIMESTAMP: "timestamp-millis outside int64 microseconds",
    E_UNRESOLVED: "the writer's union branch has no match in the reader's schema",
    E_TRAILING: "bytes left after the value",
    E_MAGIC: "magic byte not 0 (not Confluent's wire format)",
    E_SCHEMA_ID: "no plan for this schema id",
    E_FULL: "a column passes 2**31 - 1 bytes or items (Arrow's int32 offsets)",
}

INT32_MAX: Final = 2**31 - 1
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
#: Items per block of an array whose items may encode to no bytes at all.
MAX_ZERO_SIZE_ITEMS: Final = 65536
_WIDTH: Final = {F32: 4, F64: 8, DEC: 16}
_POW10: Final = tuple(10**p for p in range(39))
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


class _Fail(Exception):
    def __init__(self, code: int, pos: int) -> None:
        self.code = code
        self.pos = pos


class _Builder:
    """One column's growing buffers (one validity byte per item until finish)."""

    __slots__ = ("kind", "kids", "valid", "vals", "offsets", "data")

    def __init__(self, col: Column) -> None:
        self.kind = col.kind
        self.kids = [c.index for _, c, _ in col.children]
        self.valid = bytearray()
        self.vals: Any = None
        self.offsets = array("i", [0])
        self.data = bytearray()
        if col.kind in (I32, I64):
            self.vals = array("i" if col.kind == I32 else "q")


class _Decoder:
    def __init__(self, columns: tuple[Column, ...]) -> None:
        self.cols = [_Builder(c) for c in columns]

    # Reading primitives: each returns (value, next position) or raises _Fail at
    # the position the item starts.
    @staticmethod
    def varint(
        d: bytes, pos: int, end: int, last: int, limit: int, code: int
    ) -> tuple[int, int]:
        start = pos
        u = 0
        shift = 0
        i = 0
        while True:
            if pos >= end:
                raise _Fail(E_TRUNCATED, start)
            b = d[pos]
            pos += 1
            if i == last and b > limit:
                raise _Fail(code, start)
            u |= (b & 0x7F) << shift
            if b < 0x80:
                return (u >> 1) ^ -(u & 1), pos
            shift += 7
            i += 1

    def read_int(self, d: bytes, pos: int, end: int) -> tuple[int, int]:
        return self.varint(d, pos, end, 4, 0x0F, E_INT)

    def read_long(self, d: bytes, pos: int, end: int) -> tuple[int, int]:
        return self.varint(d, pos, end, 9, 0x01, E_LONG)

    def read_blob(self, d: bytes, pos: int, end: int) -> tuple[int, int]:
        """(start of the bytes, their end) of a length-prefixed blob at ``pos``."""
        n, p = self.read_long(d, pos, end)
        if n < 0:
            raise _Fail(E_NEG_LENGTH, pos)
        if n > end - p:
            raise _Fail(E_TRUNCATED, pos)
        return p, p + n

    # Appending.
    def null(self, c: int) -> None:
        b = self.cols[c]
        b.valid.append(0)
        k = b.kind
        if k in (I32, I64):
            b.vals.append(0)
        elif k in (BIN, LIST):
            b.offsets.append(b.offsets[-1])
        elif k == BOOL:
            b.data.append(0)
        elif k in _WIDTH:
            b.data += bytes(_WIDTH[k])
        elif k == STRUCT:
            for kid in b.kids:
                self.null(kid)

    def blob(self, c: int, raw: bytes | memoryview, start: int) -> None:
        b = self.cols[c]
        if len(b.data) + len(raw) > INT32_MAX:
            raise _Fail(E_FULL, start)
        b.valid.append(1)
        b.data += raw
        b.offsets.append(len(b.data))

    def number(self, c: int, v: int | float, start: int) -> None:
        b = self.cols[c]
        b.valid.append(1)
        k = b.kind
        if k in (I32, I64):
            b.vals.append(v)
        elif k == F64:
            b.data += _F64.pack(v)
        else:
            b.data += _F32.pack(float(v))

    def truncate(self, c: int, n: int) -> None:
        """Back to ``n`` items (drop a failed record's partial appends)."""
        b = self.cols[c]
        del b.valid[n:]
        k = b.kind
        if k in (I32, I64):
            del b.vals[n:]
        elif k == BOOL:
            del b.data[n:]
        elif k in _WIDTH:
            del b.data[n * _WIDTH[k] :]
        elif k == BIN:
            del b.data[b.offsets[n] :]
            del b.offsets[n + 1 :]
        elif k == LIST:
            self.truncate(b.kids[0], b.offsets[n])
            del b.offsets[n + 1 :]
        elif k == STRUCT:
            for kid in b.kids:
                self.truncate(kid, n)

    def run(self, op: Op, d: bytes, pos: int, end: int) -> int:
        """Decode one value of ``op`` at ``d[pos:end]``; the position after it."""
        code = op.code
        c = op.col
        if code == OP_INT or code == OP_LONG or code == OP_LONG_MS:
            start = pos
            as_int = code == OP_INT or (code == OP_LONG_MS and op.a)
            v, pos = (self.read_int if as_int else self.read_long)(d, pos, end)
            if c >= 0:
                if code == OP_LONG_MS:
                    v *= 1000
                    if not INT64_MIN <= v <= INT64_MAX:
                        raise _Fail(E_TIMESTAMP, start)
                kind = self.cols[c].kind
                self.number(c, float(v) if kind in (F32, F64) else v, start)
            return pos
        if code == OP_BLOB:
            start = pos
            s, pos = self.read_blob(d, pos, end)
            if c >= 0:
                raw = d[s:pos]
                if op.a:
                    try:
                        bytes(raw).decode()
                    except UnicodeDecodeError:
                        raise _Fail(E_UTF8, start) from None
                self.blob(c, raw, start)
            return pos
        if code == OP_RECORD:
            if c >= 0:
                b = self.cols[c]
                b.valid.append(1)
            for kid in op.kids:
                pos = self.run(kid, d, pos, end)
            return pos
        if code == OP_FLOAT or code == OP_DOUBLE:
            width = 4 if code == OP_FLOAT else 8
            if width > end - pos:
                raise _Fail(E_TRUNCATED, pos)
            if c >= 0:
                b = self.cols[c]
                if b.kind == F32 or code == OP_DOUBLE:
                    b.valid.append(1)
                    b.data += d[pos : pos + width]
                else:
                    self.number(c, _F32.unpack_from(d, pos)[0], pos)
            return pos + width
        if code == OP_BOOL:
            if pos >= end:
                raise _Fail(E_TRUNCATED, pos)
            v = d[pos]
            if v > 1:
                raise _Fail(E_BOOL, pos)
            if c >= 0:
                b = self.cols[c]
                b.valid.append(1)
                b.data.append(v)
            return pos + 1
        if code == OP_NULL:
            if c >= 0:
                self.null(c)
            return pos
        if code == OP_UNION:
            start = pos
            i, pos = self.read_int(d, pos, end)
            if not 0 <= i < len(op.kids):
                raise _Fail(E_UNION, start)
            return self.run(op.kids[i], d, pos, end)
        if code == OP_MEMBER:
            b = self.cols[c]
            b.valid.append(1)
            for m, member in enumerate(b.kids):
                if m != op.a:
                    self.null(member)
            return self.run(op.kids[0], d, pos, end)
        if code == OP_ENUM:
            start = pos
            i, pos = self.read_int(d, pos, end)
            if not 0 <= i < len(op.extra):
                raise _Fail(E_ENUM, start)
            sym = op.extra[i]
            if sym is None:
                raise _Fail(E_SYMBOL, start)
            if c >= 0:
                self.blob(c, sym, start)
            return pos
        if code == OP_FIXED:
            if op.a > end - pos:
                raise _Fail(E_TRUNCATED, pos)
            if c >= 0:
                self.blob(c, d[pos : pos + op.a], pos)
            return pos + op.a
        if code == OP_DEC_BYTES or code == OP_DEC_FIXED:
            start = pos
            if code == OP_DEC_BYTES:
                s, pos = self.read_blob(d, pos, end)
                precision = op.a
            else:
                if op.a > end - pos:
                    raise _Fail(E_TRUNCATED, pos)
                s, pos = pos, pos + op.a
                precision = op.b
            v = int.from_bytes(d[s:pos], "big", signed=True)
            if abs(v) >= _POW10[precision]:
                raise _Fail(E_DECIMAL, start)
            b = self.cols[c]
            b.valid.append(1)
            b.data += v.to_bytes(16, "little", signed=True)
            return pos
        if code == OP_ARRAY or code == OP_MAP:
            return self.blocks(op, d, pos, end)
        if code == OP_DEFAULT:
            data: bytes = op.extra
            self.run(op.kids[0], data, 0, len(data))
            return pos
        assert code == OP_ERROR
        raise _Fail(op.a, pos)

    def blocks(self, op: Op, d: bytes, pos: int, end: int) -> int:
        c = op.col
        kid = op.kids[0]
        is_map = op.code == OP_MAP
        b = self.cols[c] if c >= 0 else None
        child = None
        if b is not None:
            child = self.cols[b.kids[0]]
            b.valid.append(1)
        while True:
            start = pos
            n, pos = self.read_long(d, pos, end)
            if n == 0:
                break
            if n < 0:
                if n == INT64_MIN:
                    raise _Fail(E_BLOCK, start)
                n = -n
                size, pos = self.read_long(d, pos, end)
                if size < 0:
                    raise _Fail(E_NEG_LENGTH, start)
            least = 1 if is_map else op.a
            if (n > MAX_ZERO_SIZE_ITEMS) if least == 0 else (n > (end - pos) // least):
                raise _Fail(E_BLOCK, start)
            for _ in range(n):
                if is_map:
                    kstart = pos
                    s, pos = self.read_blob(d, pos, end)
                    if child is not None:
                        raw = d[s:pos]
                        try:
                            bytes(raw).decode()
                        except UnicodeDecodeError:
                            raise _Fail(E_UTF8, kstart) from None
                        child.valid.append(1)
                        self.blob(op.a, raw, kstart)
                pos = self.run(kid, d, pos, end)
            if child is not None and len(child.valid) > INT32_MAX:
                raise _Fail(E_FULL, start)
        if b is not None:
            assert child is not None
            b.offsets.append(len(child.valid))
        return pos


def _bitmap(valid: bytearray) -> bytes:
    """Arrow's bitmap (LSB first) of one 0/1 byte per item."""
    n = len(valid)
    if n == 0:
        return b""
    digits = bytes(reversed(valid)).translate(_DIGITS)
    return int(digits, 2).to_bytes((n + 7) // 8, "little")


_DIGITS: Final = bytes([48, 49] + [0] * 254)


def finish(dec: _Decoder) -> tuple[tuple[Any, ...], ...]:
    """Per column, pre-order: ``(length, null_count, validity, buffer1, buffer2)``:
    validity None when nothing is null; buffer1 the values (a bitmap for booleans),
    the int32 offsets of binary, utf8, list and map columns; buffer2 the data of
    binary and utf8 ones; None where the layout has no such buffer."""
    out = []
    for b in dec.cols:
        n = len(b.valid)
        nulls = n - sum(b.valid) if b.kind != NULL else n
        validity = None if nulls == 0 or b.kind == NULL else _bitmap(b.valid)
        k = b.kind
        buf1: bytes | None = None
        buf2: bytes | None = None
        if k in (I32, I64):
            buf1 = b.vals.tobytes()
        elif k == BOOL:
            buf1 = _bitmap(b.data)
        elif k in _WIDTH:
            buf1 = bytes(b.data)
        elif k in (BIN, LIST):
            buf1 = b.offsets.tobytes()
            buf2 = bytes(b.data) if k == BIN else None
        out.append((n, nulls, validity, buf1, buf2))
    return tuple(out)


def decode_py(
    plans: AvroPlan | Mapping[int, AvroPlan],
    count: int,
    offsets: Any,
    validity: Any,
    data: Any,
    permissive: bool,
) -> tuple[tuple[tuple[Any, ...], ...], list[tuple[int, int | None, int, int]]]:
    """Decode ``count`` values of an Arrow binary column (int32 ``offsets``,
    ``validity`` bitmap or None, ``data``); Confluent-framed when ``plans`` is a
    mapping of schema id to plan. Returns (:func:`finish`'s buffers, errors as
    ``(index, schema id or None, code, byte position in the value)``); without
    ``permissive`` decoding stops at the first error."""
    framed = isinstance(plans, Mapping)
    first = next(iter(plans.values())) if isinstance(plans, Mapping) else plans
    dec = _Decoder(first.columns)
    top = first.column.index
    offs = memoryview(offsets).cast("B").cast("i")
    bits = None if validity is None else bytes(validity)
    d = bytes(data)
    errors: list[tuple[int, int | None, int, int]] = []
    for i in range(count):
        if bits is not None and not bits[i >> 3] >> (i & 7) & 1:
            dec.null(top)
            continue
        start, end = offs[i], offs[i + 1]
        if not 0 <= start <= end <= len(d):
            raise ValueError("offsets out of order or past the data")
        pos = start
        schema_id: int | None = None
        try:
            plan: AvroPlan | None = first
            if framed:
                assert isinstance(plans, Mapping)
                if end - start < 1:
                    raise _Fail(E_TRUNCATED, start)
                if d[start] != 0:
                    raise _Fail(E_MAGIC, start)
                if end - start < 5:
                    raise _Fail(E_TRUNCATED, start + 1)
                schema_id = int.from_bytes(d[start + 1 : start + 5], "big", signed=True)
                plan = plans.get(schema_id)
                if plan is None:
                    raise _Fail(E_SCHEMA_ID, start + 1)
                pos += 5
            assert plan is not None
            pos = dec.run(plan.root, d, pos, end)
            if pos != end:
                raise _Fail(E_TRAILING, pos)
        except _Fail as fail:
            dec.truncate(top, i)
            dec.null(top)
            errors.append((i, schema_id, fail.code, fail.pos - start))
            if not permissive:
                break
    return finish(dec), errors
