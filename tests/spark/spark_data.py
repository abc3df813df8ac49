"""Build Kafka segment files for the tests with kafka-python's batch builders."""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

Rec = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def make_records(n: int, seed: int = 0, *, t0: int = 1_700_000_000_000) -> list[Rec]:
    """``n`` compressible records: (timestamp ms, key, value, headers)."""
    rnd = random.Random(seed)
    out: list[Rec] = []
    for i in range(n):
        key = None if i % 7 == 3 else f"key-{rnd.randrange(50)}".encode()
        value = None if i % 11 == 5 else (f"value {i} " * rnd.randrange(1, 8)).encode()
        headers: list[tuple[str, bytes | None]] = []
        if i % 3 == 0:
            headers = [("h1", b"x" * (i % 5)), ("trace", None)]
        out.append((t0 + i * 17, key, value, headers))
    return out


def v2_batch(
    base_offset: int,
    records: Sequence[Rec],
    codec: str = "none",
    *,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    leader_epoch: int = 0,
) -> bytes:
    """One magic-2 batch; offsets base_offset .. base_offset + len - 1."""
    b = DefaultRecordBatchBuilder(
        2,
        CODECS[codec],
        transactional,
        producer_id,
        producer_epoch,
        base_sequence,
        1 << 30,
    )
    for i, (ts, key, value, headers) in enumerate(records):
        b.append(i, ts, key, value, headers)
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)  # not covered by the CRC
    struct.pack_into(">i", buf, 12, leader_epoch)  # neither
    return bytes(buf)


def legacy_batch(
    magic: int, base_offset: int, records: Sequence[Rec], codec: str = "none"
) -> bytes:
    """Magic 0/1 messages: one entry per record, or one compressed wrapper."""
    b = LegacyRecordBatchBuilder(magic, CODECS[codec], 1 << 30)
    n = len(records)
    for i, (ts, key, value, _) in enumerate(records):
        rel = i if (codec != "none" and magic == 1) else base_offset + i
        b.append(rel, ts if magic else None, key, value)
    buf = bytearray(b.build())
    if codec != "none":
        struct.pack_into(">q", buf, 0, base_offset + n - 1)  # wrapper: last offset
    return bytes(buf)


def write_segment(
    root: Path, topic: str, partition: int, batches: Sequence[bytes], base: int = 0
) -> Path:
    """Write ``<root>/<topic>-<partition>/<base:020d>.log`` and return its path."""
    d = root / f"{topic}-{partition}"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{base:020d}.log"
    p.write_bytes(b"".join(batches))
    return p
