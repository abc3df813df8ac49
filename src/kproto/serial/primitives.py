"""Kafka's primitive wire forms: one small function per form, plus the fixed-width
``struct`` formats.

Source: Kafka's protocol guide ("Protocol Primitive Types") and
``org.apache.kafka.common.utils.ByteUtils`` for varints. Readers take a buffer (bytes or
memoryview) and a position and return ``(value, new position)``; writers return bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from kproto import _varint
from kproto._varint import SMALL_UVARINTS, write_uvarint

__all__ = [
    "FIXED_FORMATS",
    "FIXED_SIZES",
    "INT_RANGES",
    "Malformed",
    "Short",
    "read_uvarint",
    "read_uvarlong",
    "read_varint",
    "read_varlong",
    "write_uvarint",
    "write_varint",
    "write_varlong",
    "array_struct",
    "SMALL_UVARINTS",
]

#: ``struct`` format characters of the fixed-width types (big-endian on the wire).
FIXED_FORMATS: Final = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "uuid": "16s",
}
FIXED_SIZES: Final = {
    name: struct.calcsize(">" + fmt) for name, fmt in FIXED_FORMATS.items()
}
INT_RANGES: Final = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


class Malformed(Exception):
    """Internal signal from a primitive: the bytes are malformed (not just short).

    The public readers turn it into :class:`kproto.serial.DecodeError` with the field
    path and byte offset.
    """


class Short(Malformed):
    """Internal signal: a length, count or tagged-field size claims bytes past the end
    of the buffer, up to position ``need``. Malformed when the buffer holds the whole
    input; a reader over a read-ahead chunk of a longer stream reads up to ``need``
    instead, if the stream holds that many bytes."""

    def __init__(self, what: str, need: int) -> None:
        super().__init__(what)
        self.need = need


def _malformed_on_varint_error(
    read: Callable[[bytes | memoryview, int], tuple[int, int]],
) -> Callable[[bytes | memoryview, int], tuple[int, int]]:
    """``read`` (one of :mod:`kproto._varint`'s readers, the one home of varint
    reading) with its :class:`~kproto._varint.VarintError` raised as
    :class:`Malformed`."""

    def checked(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
        try:
            return read(buf, pos)
        except _varint.VarintError as err:
            raise Malformed(f"unsigned {err}") from None

    checked.__name__ = checked.__qualname__ = read.__name__
    checked.__doc__ = read.__doc__
    return checked


#: An unsigned varint of at most 5 bytes (32 bits), as Kafka's ``readUnsignedVarint``:
#: Malformed for more than 5 bytes or a value over 32 bits, IndexError when the input
#: ends inside it.
read_uvarint: Final = _malformed_on_varint_error(_varint.read_uvarint)
#: An unsigned varlong of at most 10 bytes (64 bits), as ``readUnsignedVarlong``:
#: Malformed and IndexError likewise.
read_uvarlong: Final = _malformed_on_varint_error(_varint.read_uvarlong)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed varint (32 bits)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed varlong (64 bits)."""
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(value: int) -> bytes:
    """A zigzag-encoded signed varint (32 bits)."""
    return write_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(value: int) -> bytes:
    """A zigzag-encoded signed varlong (64 bits)."""
    return write_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


_ARRAY_STRUCTS: dict[tuple[str, int], struct.Struct] = {}


def array_struct(fmt: str, count: int) -> struct.Struct:
    """A cached ``struct.Struct`` for ``count`` big-endian values of format ``fmt``."""
    key = (fmt, count)
    s = _ARRAY_STRUCTS.get(key)
    if s is None:
        s = struct.Struct(f">{count}{fmt}")
        if len(_ARRAY_STRUCTS) < 4096:
            _ARRAY_STRUCTS[key] = s
    return s
