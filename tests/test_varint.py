"""kproto._varint: the shared varint readers, against Kafka's encoding rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto._varint import (
    VarintError,
    read_uvarint,
    read_uvarlong,
    read_varint,
    read_varlong,
)
from kproto.serial.primitives import write_uvarint, write_varint, write_varlong


@given(st.integers(0, 2**32 - 1))
def test_uvarint_roundtrip(value: int) -> None:
    data = b"\xaa" + write_uvarint(value) + b"\xbb"
    assert read_uvarint(data, 1) == (value, len(data) - 1)


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1))
def test_signed_roundtrip(i32: int, i64: int) -> None:
    data = write_varint(i32) + write_varlong(i64)
    value, pos = read_varint(data, 0)
    assert value == i32
    assert read_varlong(data, pos) == (i64, len(data))


def test_golden_bytes() -> None:
    # ByteUtils: 300 = 0xAC 0x02; zigzag -1 = 1, 1 = 2, -64 = 127
    assert read_uvarint(b"\xac\x02", 0) == (300, 2)
    assert read_varint(b"\x01", 0) == (-1, 1)
    assert read_varint(b"\x7f", 0) == (-64, 1)
    assert read_uvarint(b"\xff\xff\xff\xff\x0f", 0) == (2**32 - 1, 5)
    assert read_uvarlong(b"\xff" * 9 + b"\x01", 0) == (2**64 - 1, 10)


def test_malformed() -> None:
    with pytest.raises(VarintError) as info:
        read_uvarint(b"\xff\xff\xff\xff\x10", 0)  # 2**32
    assert not info.value.too_long
    with pytest.raises(VarintError) as info:
        read_uvarint(b"\x80" * 5 + b"\x00", 0)
    assert info.value.too_long
    with pytest.raises(VarintError) as info:
        read_uvarlong(b"\x80" * 10 + b"\x00", 0)
    assert info.value.too_long
    with pytest.raises(VarintError) as info:
        read_uvarlong(b"\xff" * 9 + b"\x02", 0)  # 2**64
    assert not info.value.too_long
    with pytest.raises(IndexError):
        read_uvarint(b"\x80\x80", 0)
    with pytest.raises(IndexError):
        read_varlong(memoryview(b"\x80\x80\x01")[:2], 0)  # a cut view bounds it
