"""Readers of Kafka's base-128 varints: the one home for them below every layer.

Source: ``org.apache.kafka.common.utils.ByteUtils`` (``readUnsignedVarint``,
``readUnsignedVarlong``, ``readVarint``, ``readVarlong``) and the protocol guide's
"Protocol Primitive Types". A varint is at most 5 bytes and 32 bits, a varlong at most
10 bytes and 64 bits; the signed forms are zigzag-encoded.

Readers take a buffer (``bytes`` or ``memoryview``) and a position and return
``(value, new position)``. They raise ``IndexError`` when the buffer ends inside the
number (pass a view cut at the end of the enclosing structure to bound it) and
:class:`VarintError` when the bytes cannot be a varint of that width. Callers turn both
into their own typed error with a field path and byte offset. The innermost record loop
of :mod:`kproto.records` reads one- and two-byte varints inline and calls these for the
rest.
"""

from __future__ import annotations

__all__ = [
    "VarintError",
    "read_uvarint",
    "read_uvarlong",
    "read_varint",
    "read_varlong",
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


def read_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """An unsigned varint (at most 5 bytes, 32 bits) at ``buf[pos]``.

    Raises:
        IndexError: the buffer ends inside the varint.
        VarintError: more than 5 bytes, or a value above 2**32 - 1.
    """
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
            if result > 0xFFFFFFFF:
                raise VarintError("varint larger than 32 bits", too_long=False)
            return result, pos
        shift += 7
        if shift > 28:
            raise VarintError("varint longer than 5 bytes", too_long=True)


def read_uvarlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """An unsigned varlong (at most 10 bytes, 64 bits) at ``buf[pos]``.

    Raises:
        IndexError: the buffer ends inside the varlong.
        VarintError: more than 10 bytes, or a value above 2**64 - 1.
    """
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
            if result > 0xFFFFFFFFFFFFFFFF:
                raise VarintError("varlong larger than 64 bits", too_long=False)
            return result, pos
        shift += 7
        if shift > 63:
            raise VarintError("varlong longer than 10 bytes", too_long=True)


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
