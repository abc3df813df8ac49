"""Java's default partitioner: Kafka's murmur2 vectors, kafka-python parity, stickiness."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kproto.client import murmur2, partition_for_key
from kproto.client.partitioner import StickyPartitioner, to_positive


@pytest.mark.parametrize(
    ("key", "expected"),
    [  # Kafka's UtilsTest.testMurmur2 (signed Java ints)
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_kafka_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(key: bytes) -> None:
    # kafka-python returns the same 32 bits unsigned
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(bytearray(key))
    assert -(2**31) <= murmur2(key) < 2**31


@given(st.binary(max_size=32), st.integers(1, 1000))
def test_partition_is_to_positive_hash_mod_count(key: bytes, count: int) -> None:
    expected = (kafka_python_murmur2(bytearray(key)) & 0x7FFFFFFF) % count
    assert partition_for_key(key, count) == expected


def test_to_positive_masks_rather_than_negates() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    with pytest.raises(ValueError, match="num_partitions must be positive"):
        partition_for_key(b"k", 0)


def test_sticky_partitioner_changes_partition_between_batches() -> None:
    sticky = StickyPartitioner(random.Random(7))
    picks = [sticky.next("t", [0, 1, 2, 3]) for _ in range(50)]
    assert all(a != b for a, b in zip(picks, picks[1:], strict=False))
    assert set(picks) == {0, 1, 2, 3}
    assert {sticky.next("one", [2]) for _ in range(3)} == {2}
    with pytest.raises(ValueError, match="no partition with a leader"):
        sticky.next("t", [])
