"""decompress_view (into the thread's scratch buffer) against decompress, the reference.

Every codec, intact and mutated payloads, every lz4 frame shape (content size,
checksums, linked blocks, stored blocks, block sizes, trailing bytes) and small
limits: the same bytes or the same DecodeError (message included). Also the C scan
reading a view of that buffer as it reads bytes.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import cramjam
import pytest

from kproto.exceptions import DecodeError
from kproto.records import Compression, encode_batch
from kproto.records._codecs import compress, decompress, xxh32
from kproto.records._decompress_view import _lz4_into, _zstd_into, decompress_view
from kproto.records._native import v2_scan
from kproto.records._v2_loop import Bad

CODECS = [c for c in Compression if c != Compression.NONE]
PAYLOADS = [
    b"".join(b"%05d" % i + b"x" * 100 for i in range(1400)),
    os.urandom(70_000),
    b"x",
    bytes(300_000),
]


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return ("ok", bytes(fn()))
    except DecodeError as exc:
        return ("error", type(exc), str(exc), exc.offset)


def _same(codec: int, data: bytes, limit: int = 1 << 24) -> Any:
    ref = _outcome(lambda: decompress(codec, data, limit))
    assert _outcome(lambda: decompress_view(codec, memoryview(data), limit)) == ref
    assert _outcome(lambda: decompress_view(codec, data, limit)) == ref
    return ref


def _lz4_frames() -> list[bytes]:
    """lz4 frames of every shape python-lz4 and cramjam write."""
    lz4_frame = pytest.importorskip("lz4.frame")
    out = []
    for payload in PAYLOADS[:2] + [PAYLOADS[3]]:
        out.append(compress(Compression.LZ4, payload))
        for block_size in (4, 5, 6, 7):
            for linked in (False, True):
                for content_size in (False, True):
                    for checksum in (False, True):
                        out.append(
                            lz4_frame.compress(
                                payload,
                                block_size=block_size,
                                block_linked=linked,
                                store_size=content_size,
                                content_checksum=checksum,
                                block_checksum=checksum and not linked,
                            )
                        )
        out.append(bytes(cramjam.lz4.compress(payload)))
    return out


def _zstd_frames() -> list[bytes]:
    """zstd frames with and without a declared content size (librdkafka's: none)."""
    zstandard = pytest.importorskip("zstandard")
    out = []
    for payload in PAYLOADS:
        out.append(compress(Compression.ZSTD, payload))
        for level in (1, 3, 19):
            for sized in (False, True):
                c = zstandard.ZstdCompressor(level=level, write_content_size=sized)
                out.append(c.compress(payload))
    return out


@pytest.mark.parametrize(
    ("codec", "frames", "into", "limits", "fast_at_least"),
    [
        # the one-call path takes most frames without a declared size
        (Compression.ZSTD, _zstd_frames, _zstd_into, (1000, 65_536, 200_000), 6),
        # the block-by-block path takes the plain frames
        (Compression.LZ4, _lz4_frames, _lz4_into, (), 20),
    ],
    ids=["zstd", "lz4"],
)
def test_every_frame_shape_alike(
    codec: Compression,
    frames: Callable[[], list[bytes]],
    into: Callable[[bytes, int], object],
    limits: tuple[int, ...],
    fast_at_least: int,
) -> None:
    fast = 0
    for frame in frames():
        fast += into(frame, 1 << 24) is not None
        assert _same(codec, frame)[0] == "ok"
        assert _same(codec, frame + b"\x00")  # trailing bytes
        assert _same(codec, frame + frame)  # two frames
        assert _same(codec, frame[: len(frame) // 2])  # truncated
        for limit in limits:
            _same(codec, frame, limit)
    assert fast >= fast_at_least


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_intact_payloads_alike(codec: Compression) -> None:
    for payload in PAYLOADS:
        assert _same(codec, compress(codec, payload)) == ("ok", payload)


def test_lz4_stored_blocks_and_wrong_content_size() -> None:
    lz4_frame = pytest.importorskip("lz4.frame")
    payload = os.urandom(100_000)  # incompressible: written as stored blocks
    frame = lz4_frame.compress(
        payload, block_size=4, block_linked=False, store_size=True
    )
    assert _same(Compression.LZ4, frame) == ("ok", payload)
    # a declared content size one off, header checksum made right again
    assert _lz4_into(frame, 1 << 24) is not None
    wrong = bytearray(frame)
    wrong[6:14] = (len(payload) + 1).to_bytes(8, "little")
    wrong[14] = (xxh32(bytes(wrong[4:14])) >> 8) & 0xFF
    assert _same(Compression.LZ4, bytes(wrong))[0] == "error"


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_mutated_payloads_alike(codec: Compression) -> None:
    rng = random.Random(18)
    frames = {Compression.LZ4: _lz4_frames()[:20], Compression.ZSTD: _zstd_frames()}
    frames = frames.get(codec, [])
    bases = [compress(codec, p) for p in PAYLOADS[:3]] + frames
    cases = int(os.environ.get("KPROTO_FUZZ_CASES", "400"))
    for i in range(cases):
        data = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            data[at] = (
                rng.randrange(256) if i % 2 else data[at] ^ (1 << rng.randrange(8))
            )
        _same(codec, bytes(data))


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_limits_alike(codec: Compression) -> None:
    data = compress(codec, PAYLOADS[0])
    for limit in (1, 1000, 65_536, len(PAYLOADS[0]) - 1, len(PAYLOADS[0])):
        _same(codec, data, limit)


def test_views_do_not_leak_between_calls_or_threads() -> None:
    import threading

    big = compress(Compression.LZ4, PAYLOADS[0])
    small = compress(Compression.LZ4, b"small" * 10)
    assert bytes(decompress_view(Compression.LZ4, big, 1 << 24)) == PAYLOADS[0]
    assert bytes(decompress_view(Compression.LZ4, small, 1 << 24)) == b"small" * 10
    errors: list[BaseException] = []

    def work(data: bytes, expect: bytes) -> None:
        try:
            for _ in range(50):
                assert bytes(decompress_view(Compression.LZ4, data, 1 << 24)) == expect
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=args)
        for args in [(big, PAYLOADS[0]), (small, b"small" * 10)] * 2
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _scan_outcome(scan: Any, buf: Any, end: int, count: int) -> Any:
    try:
        return scan(buf, 0, end, count, 0, 1000)
    except Bad:
        return "bad"


def test_scan_reads_views_as_bytes() -> None:
    scan = v2_scan()
    if scan is None:
        pytest.skip("C extension off")
    rng = random.Random(7)
    records = [
        (b"k%d" % i, b"v" * i, [("h", b"x")] * (i % 3), 1000 + i) for i in range(50)
    ]
    body = encode_batch(records)[61:]
    for i in range(500):
        data = bytearray(body)
        if i:
            data[rng.randrange(len(data))] = rng.randrange(256)
        raw = bytes(data)
        count = 50 - (i % 3 == 1)
        want = _scan_outcome(scan, raw, len(raw), count)
        assert _scan_outcome(scan, memoryview(raw), len(raw), count) == want
        assert _scan_outcome(scan, bytearray(raw), len(raw), count) == want
        # a view of a larger buffer, read up to `end` only
        assert (
            _scan_outcome(scan, memoryview(raw + b"\x00" * 9), len(raw), count) == want
        )
        if i == 0:
            assert want != "bad" and want is not None


def test_short_and_endless_frames_alike() -> None:
    # frame headers cut short, and frames of many empty blocks (past the fast
    # paths' block count): the reference decides, with the same result
    lz4_sized = b"\x04\x22\x4d\x18\x68\x40"
    for cut in range(len(lz4_sized) + 10):
        _same(Compression.LZ4, (lz4_sized + bytes(16))[:cut])
    plain = b"\x04\x22\x4d\x18\x60\x40" + bytes((_lz4_hc(0x60, 0x40),))
    stored_empty = (0x80000000).to_bytes(4, "little")
    for blocks in (1, 1023, 1024, 1025, 3000):
        frame = plain + stored_empty * blocks + bytes(4)
        assert _same(Compression.LZ4, frame) == ("ok", b"")
    zstd_head = b"\x28\xb5\x2f\xfd\x00\x50"  # FHD 0, window descriptor
    raw_empty, last_empty = b"\x00\x00\x00", b"\x01\x00\x00"
    for blocks in (0, 1023, 1024, 3000):
        assert _same(Compression.ZSTD, zstd_head + raw_empty * blocks + last_empty)


def _lz4_hc(flg: int, bd: int) -> int:
    return (xxh32(bytes((flg, bd))) >> 8) & 0xFF


def test_lz4_block_path_accepts_what_liblz4_accepts() -> None:
    """Whatever the block-by-block path (used by ``decompress`` too) returns, liblz4's
    frame decoder (cramjam's, and python-lz4's) returns as well, byte for byte, on
    every frame shape and on mutated frames; where liblz4 rejects, it declines."""
    lz4_frame = pytest.importorskip("lz4.frame")
    rng = random.Random(52)
    frames = _lz4_frames()
    cases = list(frames)
    for i in range(int(os.environ.get("KPROTO_FUZZ_CASES", "400"))):
        data = bytearray(rng.choice(frames[:20]))
        at = rng.randrange(len(data))
        data[at] = rng.randrange(256) if i % 2 else data[at] ^ (1 << rng.randrange(8))
        cases.append(bytes(data))
    taken = 0
    for frame in cases:
        view = _lz4_into(frame, 1 << 24)
        try:
            ref: bytes | None = bytes(cramjam.lz4.decompress(frame))
        except Exception:  # noqa: BLE001 - rejected
            ref = None
        if view is None:
            continue
        taken += 1
        assert ref == bytes(view)
        assert lz4_frame.decompress(frame) == ref
    assert taken >= 20
