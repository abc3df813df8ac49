"""Shared helpers for the kproto.records tests: reference encoders/readers."""

from __future__ import annotations

import struct
from typing import Any

import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

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


def kp_v2(records: list[tuple[Any, ...]], codec: int = 0, **kw: Any) -> bytes:
    """A magic 2 batch built by kafka-python's DefaultRecordBatchBuilder."""
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=kw.get("is_transactional", False),
        producer_id=kw.get("producer_id", -1),
        producer_epoch=kw.get("producer_epoch", -1),
        base_sequence=kw.get("base_sequence", -1),
        batch_size=1 << 30,
    )
    for i, (key, value, hdrs, ts) in enumerate(records):
        assert b.append(i, ts, key, value, list(hdrs)) is not None
    return bytes(b.build())


def kp_legacy(records: list[tuple[Any, ...]], magic: int, codec: int = 0) -> bytes:
    """A magic 0/1 message set built by kafka-python's LegacyRecordBatchBuilder."""
    b = LegacyRecordBatchBuilder(
        magic=magic, compression_type=codec, batch_size=1 << 30
    )
    for i, (key, value, _hdrs, ts) in enumerate(records):
        assert b.append(i, ts, key, value) is not None
    return bytes(b.build())


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


def fix_crc(batch: bytes) -> bytes:
    b = bytearray(batch)
    struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    return bytes(b)
