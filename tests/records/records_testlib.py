"""The test toolkit of kproto.records and kproto.spark: reference encoders and readers.

One codec table and one kafka-python batch builder per format, used by the records
tests and by ``tests/spark/spark_data.py``.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

#: Kafka's compression codec ids (``CompressionType.java``) by their config names.
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODECS = list(CODEC_IDS)

T0 = 1_700_000_000_000


def sample_records(n: int = 20, *, headers: bool = True) -> list[tuple[Any, ...]]:
    """(key, value, headers, timestamp) tuples with nulls and varied sizes."""
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else f"key-{i}".encode()
        value = None if i % 11 == 5 else (b"v%d-" % i) * (i * 13 % 97)
        hdrs = (
            [
                ("trace", b"t%d" % i),
                ("empty", b""),
                ("nul", None),
                ("ünï", b"\x00\xff"),
            ][: i % 5]
            if headers
            else []
        )
        out.append((key, value, hdrs, T0 + i * 37 - (i % 3) * 1000))
    return out


def kp_v2(
    records: list[tuple[Any, ...]],
    codec: int = 0,
    *,
    is_transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    base_offset: int = 0,
    leader_epoch: int | None = None,
) -> bytes:
    """A magic 2 batch of ``(key, value, headers, timestamp)`` records built by
    kafka-python's DefaultRecordBatchBuilder; offsets ``base_offset + i``.

    ``base_offset`` and ``leader_epoch`` are patched in after building (the CRC does
    not cover them).
    """
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=is_transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i, (key, value, hdrs, ts) in enumerate(records):
        assert b.append(i, ts, key, value, list(hdrs)) is not None
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    if leader_epoch is not None:
        struct.pack_into(">i", buf, 12, leader_epoch)
    return bytes(buf)


def kp_legacy(
    records: list[tuple[Any, ...]], magic: int, codec: int = 0, base_offset: int = 0
) -> bytes:
    """Magic 0/1 messages of ``(key, value, headers, timestamp)`` records built by
    kafka-python's LegacyRecordBatchBuilder: one message per record, or one
    compressed wrapper (with magic 1, relative inner offsets and the wrapper at the
    last offset, KIP-31). Headers are dropped; magic 0 has no timestamp.
    """
    b = LegacyRecordBatchBuilder(
        magic=magic, compression_type=codec, batch_size=1 << 30
    )
    for i, (key, value, _hdrs, ts) in enumerate(records):
        offset = i if (codec and magic == 1) else base_offset + i
        assert b.append(offset, ts if magic else None, key, value) is not None
    buf = bytearray(b.build())
    if codec:
        struct.pack_into(">q", buf, 0, base_offset + len(records) - 1)
    return bytes(buf)


def kp_read(data: bytes) -> list[tuple[Any, list[Any]]]:
    """(batch, [record, ...]) pairs read by kafka-python's MemoryRecords."""
    mr = MemoryRecords(data)
    out = []
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        out.append((batch, list(batch)))
    return out


def with_region(batch: bytes, region: bytes, count: int | None = None) -> bytes:
    """A magic 2 batch with its records region (and optionally count) replaced, CRC fixed."""
    head = bytearray(batch[:61])
    struct.pack_into(">i", head, 8, 49 + len(region))
    if count is not None:
        struct.pack_into(">i", head, 57, count)
    body = bytes(head[21:]) + region
    struct.pack_into(">I", head, 17, crc32c.crc32c(body))
    return bytes(head) + region


def mutated(batch: bytes, rng: random.Random, start: int) -> bytes:
    """``batch`` with 1 to 4 random edits at or after byte ``start``: a byte replaced
    (6 in 10), one inserted (2 in 10) or one deleted (2 in 10)."""
    out = bytearray(batch)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(start, len(out))
        op = rng.random()
        if op < 0.6:
            out[at] = rng.randrange(256)
        elif op < 0.8:
            out.insert(at, rng.randrange(256))
        else:
            del out[at]
    return bytes(out)


def fix_crc(batch: bytes) -> bytes:
    b = bytearray(batch)
    struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    return bytes(b)
