"""The validator reading records in the scratch buffer (decompress_view, the C scan on
a view) against the reference (decompress into bytes): every codec, intact and
mutated batches, the same ValidBatch or the same error (code, message, record
errors), inline bound included."""

from __future__ import annotations

import os
import random
import struct
from collections.abc import Callable
from typing import Any

import crc32c
import pytest

from kproto.broker import log_validator
from kproto.broker.log_validator import (
    InlineBoundExceeded,
    LogPolicy,
    RecordValidationError,
    validate_inline,
)
from kproto.records import Compression, encode_batch
from kproto.records._codecs import decompress

POLICIES = [
    LogPolicy(one_batch=True, max_message_bytes=1 << 20),
    LogPolicy(compacted=True, now_ms=10_000, before_max_ms=5_000, after_max_ms=5_000),
]


def _outcome(records: bytes, policy: LogPolicy, bound: int | None) -> Any:
    try:
        return ("ok", validate_inline(records, policy, bound))
    except RecordValidationError as err:
        return ("error", err.error_code, str(err), err.record_errors)
    except InlineBoundExceeded:
        return ("inline bound",)


def _reference(codec: int, data: Any, limit: int) -> bytes:
    return decompress(codec, bytes(data), limit)


def _both(monkeypatch: pytest.MonkeyPatch, records: bytes) -> list[Any]:
    outcomes = []
    for policy in POLICIES:
        for bound in (None, 4096):
            fast = _outcome(records, policy, bound)
            with monkeypatch.context() as m:
                m.setattr(log_validator, "decompress_view", _reference)
                assert _outcome(records, policy, bound) == fast
            outcomes.append(fast)
    return outcomes


def _resealed(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def _recompressed(plain: bytes, codec: Compression, body: bytes) -> bytes:
    data = bytearray(plain[:61]) + body
    struct.pack_into(">i", data, 8, len(data) - 12)
    data[22] |= codec  # attributes (int16 at 21): the codec bits
    return _resealed(data)


def librdkafka_lz4(plain: bytes) -> bytes:
    """An uncompressed batch recompressed as librdkafka writes lz4: one frame of
    independent 64 KiB blocks, no checksums, no content size."""
    lz4_frame = pytest.importorskip("lz4.frame")
    frame = lz4_frame.compress(
        plain[61:], block_size=lz4_frame.BLOCKSIZE_MAX64KB, block_linked=False
    )
    return _recompressed(plain, Compression.LZ4, frame)


def librdkafka_zstd(plain: bytes) -> bytes:
    """As librdkafka writes zstd: a frame without a content size."""
    zstandard = pytest.importorskip("zstandard")
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(plain[61:])
    return _recompressed(plain, Compression.ZSTD, frame)


def _batches(codec: Compression) -> list[bytes]:
    rng = random.Random(codec)
    out = []
    for n in (1, 40, 1400):
        records = [
            (
                None if i % 7 == 3 else b"k%d" % i,
                os.urandom(rng.choice((0, 10, 100))),
                [("h", b"v")] * (i % 2),
                8_000 + i * rng.choice((1, 3)),
            )
            for i in range(n)
        ]
        out.append(encode_batch(records, compression=codec))
        if codec == Compression.LZ4:
            out.append(librdkafka_lz4(encode_batch(records)))
        if codec == Compression.ZSTD:
            out.append(librdkafka_zstd(encode_batch(records)))
    return out


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.label)
def test_intact_batches_alike(
    monkeypatch: pytest.MonkeyPatch, codec: Compression
) -> None:
    for data in _batches(codec):
        assert any(o[0] == "ok" for o in _both(monkeypatch, data))


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.label)
def test_mutated_batches_alike(
    monkeypatch: pytest.MonkeyPatch, codec: Compression
) -> None:
    rng = random.Random(1800 + codec)
    bases = _batches(codec)
    for i in range(int(os.environ.get("KPROTO_FUZZ_CASES", "150"))):
        data = bytearray(rng.choice(bases))
        # past the header, CRC made right again: the records (or codec frame) are hit
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(61, len(data))
            data[at] = (
                rng.randrange(256) if i % 2 else data[at] ^ (1 << rng.randrange(8))
            )
        _both(monkeypatch, _resealed(data))


def test_lz4_bomb_stops_at_the_inline_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [(b"k", bytes(60_000), [], 9_000 + i) for i in range(40)]
    for data in (
        encode_batch(records, compression=Compression.LZ4),
        librdkafka_lz4(encode_batch(records)),
    ):
        outcomes = _both(monkeypatch, data)
        assert ("inline bound",) in outcomes
        assert outcomes[0][0] == "ok"


def test_the_fast_path_is_the_one_measured() -> None:
    # the validator reads lz4, zstd and snappy records in the scratch buffer
    seen: list[type] = []
    real: Callable[..., Any] = log_validator.decompress_view

    def spy(codec: int, data: Any, limit: int) -> Any:
        out = real(codec, data, limit)
        seen.append(type(out))
        return out

    mp = pytest.MonkeyPatch()
    mp.setattr(log_validator, "decompress_view", spy)
    try:
        for codec in (Compression.LZ4, Compression.ZSTD, Compression.SNAPPY):
            log_validator.validate_batches(_batches(codec)[-1], LogPolicy())
    finally:
        mp.undo()
    assert seen == [memoryview] * 3
