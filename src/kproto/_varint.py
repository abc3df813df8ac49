"""Kafka's base-128 varints, read and written: the one home for them below every
layer.

Source: ``org.apache.kafka.common.utils.ByteUtils`` (``readUnsignedVarint``,
``readUnsignedVarlong``, ``readVarint``, ``readVarlong``) and the protocol guide's
"Protocol Primitive Types". A varint is at most 5 bytes and 32 bits, a varlong at most
10 bytes and 64 bits; the signed forms are zigzag-encoded.

Readers take a buffer (``bytes`` or ``memoryview``) and a position and return
``(value, new position)``. They raise ``IndexError`` when the buffer ends inside the
number (pass a view cut at the end of the enclosing structure to bound it) and
:class:`VarintError` when the bytes cannot be a varint of that width. Callers turn both
into their own typed error with a field path and byte offset. The writer,
:func:`write_uvarint`, returns the bytes of an unsigned varint or varlong. The innermost record loop
of :mod:`kproto.records` reads one- and two-byte varints inline and calls these for the
rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

__all__ = [
    "SMALL_UVARINTS",
    "VarintError",
    "read_uvarint",
    "read_uvarlong",
    "read_varint",
    "read_varlong",
    "write_uvarint",
]


class VarintError(Exception):
    """Bytes that are not a varint of the expected width.

    Attributes:
        too_long: True if more bytes than the width allows have the continuation bit
            (5 for a varint, 10 for a varlong); False if the number ends in time but
            does not fit the width (32 or 64 bits).
    """

    def __init__(self, message: str, *, too_long: bool) -> None:
        super().__init__(message)
        self.too_long = too_long


def _unsigned_reader(
    bits: int, name: str
) -> Callable[[bytes | memoryview, int], tuple[int, int]]:
    """The reader of an unsigned ``name`` of ``bits`` bits (32: a varint of at most
    5 bytes; 64: a varlong of at most 10)."""
    too_long = f"{name} longer than {bits // 7 + 1} bytes"
    too_large = f"{name} larger than {bits} bits"

    def read(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
        result = buf[pos]
        if result < 0x80:
            return result, pos + 1
        result &= 0x7F
        shift = 7
        pos += 1
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                if result >> bits:
                    raise VarintError(too_large, too_long=False)
                return result, pos
            shift += 7
            if shift >= bits:
                raise VarintError(too_long, too_long=True)

    read.__name__ = read.__qualname__ = f"read_u{name}"
    read.__doc__ = f"An unsigned {name} of at most {bits} bits (see the module doc)."
    return read


#: An unsigned varint (at most 5 bytes, 32 bits) at ``buf[pos]``: ``(value, new
#: position)``; IndexError when the buffer ends inside it, VarintError for more than
#: 5 bytes or a value above 2**32 - 1.
read_uvarint: Final = _unsigned_reader(32, "varint")
#: An unsigned varlong (at most 10 bytes, 64 bits), as :data:`read_uvarint`.
read_uvarlong: Final = _unsigned_reader(64, "varlong")


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed varint (int32) at ``buf[pos]``.

    Raises:
        IndexError, VarintError: as :func:`read_uvarint`.
    """
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed varlong (int64) at ``buf[pos]``.

    Raises:
        IndexError, VarintError: as :func:`read_uvarlong`.
    """
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


#: The one-byte unsigned varints 0..127, indexed by value.
SMALL_UVARINTS: Final = tuple(bytes((i,)) for i in range(128))


def write_uvarint(value: int) -> bytes:
    """The bytes of ``value`` (>= 0) as an unsigned varint or varlong (the caller
    checks the width: 32 or 64 bits)."""
    if value < 0x80:
        return SMALL_UVARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
