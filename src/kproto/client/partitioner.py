"""Java's default partitioner: murmur2 for keyed records, a sticky partition for null keys.

Source: ``org.apache.kafka.common.utils.Utils.murmur2`` / ``Utils.toPositive`` and
``BuiltInPartitioner.partitionForKey`` (Kafka 3.x+): a keyed record goes to
``toPositive(murmur2(key)) % numPartitions``, so the same key lands on the same
partition as with the Java client (and librdkafka's ``murmur2_random``). Records
with a null key go to one partition per batch, chosen at random among the
partitions that have a leader (KIP-480's sticky partitioner, KIP-794).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["StickyPartitioner", "murmur2", "partition_for_key", "to_positive"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """MurmurHash2 (32-bit) of ``data``, exactly as Kafka's ``Utils.murmur2``.

    Returns:
        the hash as a signed int32 (as Java's ``int``), e.g.
        ``murmur2(b"21") == -973932308``.
    """
    length = len(data)
    h = (_SEED ^ length) & _MASK
    end = length - length % 4
    for i in range(0, end, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[end + 2] << 16
    if tail >= 2:
        h ^= data[end + 1] << 8
    if tail >= 1:
        h ^= data[end]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """``number & 0x7fffffff``, as Kafka's ``Utils.toPositive`` (not ``abs``)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Java's default partitioner picks for ``key``.

    Raises:
        ValueError: ``num_partitions`` is not positive.
    """
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """The partition for null-key records: one per topic, changed for every batch.

    Each :meth:`next` call picks a partition at random among ``available``
    (partitions with a known leader), avoiding the previous choice for the topic
    when there is another, as Java's ``BuiltInPartitioner`` does when a batch is
    complete (here: after every :meth:`kproto.client.Client.produce` call).

    Args:
        rng: the random source (default: a fresh ``random.Random``).
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._last: dict[str, int] = {}

    def next(self, topic: str, available: Sequence[int]) -> int:
        """A partition of ``topic`` for the next batch of null-key records.

        Raises:
            ValueError: ``available`` is empty.
        """
        if not available:
            raise ValueError(f"topic {topic!r} has no partition with a leader")
        choices = [p for p in available if p != self._last.get(topic)] or list(
            available
        )
        chosen = self._rng.choice(choices)
        self._last[topic] = chosen
        return chosen
