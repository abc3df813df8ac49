"""The optional codec accelerators (the ``speed`` extra) against the standard path.

``records/_codecs.py`` uses ISA-L (gzip), python-lz4 and zstandard when installed and
falls back to zlib and cramjam for anything they reject; with or without them every
payload must give the same bytes or the same DecodeError (message included). These
tests run each case both ways (the accelerators switched off by monkeypatching the
module's handles) on intact, mutated, truncated, concatenated and oversized payloads.
"""

from __future__ import annotations

import gzip
import os
import random
from collections.abc import Callable, Iterator
from typing import Any

import cramjam
import pytest

from kproto.exceptions import DecodeError
from kproto.records import Compression, _codecs, _lz4, decode_batches, encode_batch
from kproto.records._codecs import compress, decompress

ACCELERATORS = ("_isal_zlib", "_lz4_frame", "_zstandard")
CODECS = [c for c in Compression if c != Compression.NONE]
PAYLOAD = b"".join(b"record %d " % i + os.urandom(8) for i in range(3000))


def _home(name: str) -> Any:
    """The module that uses the accelerator ``name`` (lz4 has its own)."""
    return _lz4 if name == "_lz4_frame" else _codecs


@pytest.fixture(scope="module")
def plain() -> Iterator[Callable[[Callable[[], Any]], Any]]:
    """Run a callable with the accelerators switched off."""
    mp = pytest.MonkeyPatch()

    def run(fn: Callable[[], Any]) -> Any:
        saved = {name: getattr(_home(name), name) for name in ACCELERATORS}
        try:
            for name in ACCELERATORS:
                mp.setattr(_home(name), name, None)
            return fn()
        finally:
            for name, value in saved.items():
                mp.setattr(_home(name), name, value)

    yield run
    mp.undo()


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return ("ok", fn())
    except DecodeError as exc:
        return ("error", str(exc), exc.path, exc.offset)


def _both(plain: Callable[[Callable[[], Any]], Any], fn: Callable[[], Any]) -> Any:
    fast = _outcome(fn)
    assert fast == _outcome(lambda: plain(fn))
    return fast


def test_accelerators_installed_by_make_install() -> None:
    # `make install` installs the speed extra; a plain install runs without it.
    missing = [name for name in ACCELERATORS if getattr(_home(name), name) is None]
    if missing:
        pytest.skip(f"speed extra not installed: {missing}")


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_intact_payloads_alike(plain: Any, codec: Compression) -> None:
    for payload in (PAYLOAD, b"x", bytes(70_000), os.urandom(5000)):
        data = compress(codec, payload)
        assert _both(plain, lambda data=data: decompress(codec, data, 1 << 24)) == (
            "ok",
            payload,
        )


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_concatenated_and_trailing_alike(plain: Any, codec: Compression) -> None:
    one = compress(codec, PAYLOAD[:20_000])
    for data in (one + one, one + b"\x00" * 7, one + b"junk", one[:-3]):
        _both(plain, lambda data=data: decompress(codec, data, 1 << 24))


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_limits_alike(plain: Any, codec: Compression) -> None:
    data = compress(codec, bytes(1 << 20))
    for limit in (1 << 20, (1 << 20) - 1, 1000):
        _both(plain, lambda limit=limit: decompress(codec, data, limit))


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_mutated_payloads_alike(plain: Any, codec: Compression) -> None:
    rng = random.Random(int(codec))
    good = compress(codec, PAYLOAD[:30_000])
    for _ in range(300):
        bad = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        data = bytes(bad)
        _both(plain, lambda data=data: decompress(codec, data, 1 << 24))


def test_gzip_members_and_zstd_without_size_alike(plain: Any) -> None:
    members = gzip.compress(PAYLOAD[:1000]) + gzip.compress(PAYLOAD[1000:])
    assert _both(plain, lambda: decompress(Compression.GZIP, members, 1 << 24)) == (
        "ok",
        PAYLOAD,
    )
    zstandard = pytest.importorskip("zstandard")
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD)
    assert _both(plain, lambda: decompress(Compression.ZSTD, unsized, 1 << 24)) == (
        "ok",
        PAYLOAD,
    )
    frames = bytes(cramjam.zstd.compress(PAYLOAD)) * 2
    assert _both(plain, lambda: decompress(Compression.ZSTD, frames, 1 << 24)) == (
        "ok",
        PAYLOAD * 2,
    )


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_batches_decode_alike(plain: Any, codec: Compression) -> None:
    src = [(b"k%d" % i, os.urandom(i), [("h", b"v")], i) for i in range(200)]
    data = encode_batch(src, compression=codec)
    fast = _both(plain, lambda: list(decode_batches(data)))
    assert [r.key for r in fast[1][0].records] == [s[0] for s in src]


def test_lz4_frames_with_content_size_alike(plain: Any) -> None:
    # python-lz4 takes only a lone frame that declares its content size (it allocates
    # that size): the true size, a smaller or larger one than the blocks hold, an
    # absurd one; every case as cramjam reads it.
    lz4_frame = pytest.importorskip("lz4.frame")
    for payload in (PAYLOAD, b"x", bytes(70_000)):
        sized = bytearray(lz4_frame.compress(payload, store_size=True))
        assert sized[4] & 0x08
        for declared in (len(payload), len(payload) - 1, len(payload) + 1, 1 << 62):
            sized[6:14] = declared.to_bytes(8, "little")
            sized[14] = (_codecs.xxh32(bytes(sized[4:14])) >> 8) & 0xFF
            data = bytes(sized)
            outcome = _both(
                plain, lambda data=data: decompress(Compression.LZ4, data, 1 << 24)
            )
            if declared == len(payload):
                assert outcome == ("ok", payload)
