"""Build Kafka segment files for the Spark tests (batches from the records toolkit)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from tests.records.records_testlib import CODEC_IDS, kp_legacy, kp_v2

#: The codec table of the records toolkit (config name -> Kafka codec id).
CODECS = CODEC_IDS

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
    return kp_v2(
        [(key, value, headers, ts) for ts, key, value, headers in records],
        CODECS[codec],
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        base_offset=base_offset,
        leader_epoch=leader_epoch,
    )


def three_v2_batches(records: Sequence[Rec], codecs: Sequence[str]) -> bytes:
    """``records`` split into three magic-2 batches of equal size from offset 0,
    batch ``i`` compressed with ``codecs[i]``: the first non-idempotent, the second
    transactional (producer id 6, epoch 0), the third idempotent (producer id 13,
    epoch 1); batch ``i`` has base sequence and leader epoch ``i``."""
    size = len(records) // 3
    return b"".join(
        v2_batch(
            size * i,
            records[size * i : size * i + size],
            codec,
            transactional=i == 1,
            producer_id=7 * i - 1,
            producer_epoch=i - 1,
            base_sequence=i,
            leader_epoch=i,
        )
        for i, codec in enumerate(codecs)
    )


def legacy_batch(
    magic: int, base_offset: int, records: Sequence[Rec], codec: str = "none"
) -> bytes:
    """Magic 0/1 messages: one entry per record, or one compressed wrapper."""
    return kp_legacy(
        [(key, value, headers, ts) for ts, key, value, headers in records],
        magic,
        CODECS[codec],
        base_offset,
    )


def write_segment(
    root: Path, topic: str, partition: int, batches: Sequence[bytes], base: int = 0
) -> Path:
    """Write ``<root>/<topic>-<partition>/<base:020d>.log`` and return its path."""
    d = root / f"{topic}-{partition}"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{base:020d}.log"
    p.write_bytes(b"".join(batches))
    return p
