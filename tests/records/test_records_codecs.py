"""Codec details: xerial snappy, KAFKA-3160 lz4, bounded decompression."""

from __future__ import annotations

import gzip
import os

import cramjam
import pytest
from kafka import codec as kcodec

from kproto.records import Compression, decode_batches, encode_batch
from kproto.records._codecs import compress, decompress, xxh32
from kproto.records._lz4 import _lz4_into
from kproto.serial.exceptions import DecodeError

PAYLOAD = b"".join(b"record %d " % i + os.urandom(8) for i in range(5000))  # ~80 KB


def test_snappy_xerial_and_raw_from_kafka_python() -> None:
    xerial = kcodec.snappy_encode(
        PAYLOAD, xerial_compatible=True, xerial_blocksize=4096
    )
    assert xerial.startswith(b"\x82SNAPPY\x00")
    assert decompress(Compression.SNAPPY, xerial, 1 << 20) == PAYLOAD
    raw = kcodec.snappy_encode(PAYLOAD, xerial_compatible=False)
    assert decompress(Compression.SNAPPY, raw, 1 << 20) == PAYLOAD


def test_snappy_xerial_little_endian_versions() -> None:
    # some writers (redpanda) put the version fields little-endian
    xerial = bytearray(kcodec.snappy_encode(PAYLOAD, xerial_compatible=True))
    xerial[8:16] = b"\x01\x00\x00\x00\x01\x00\x00\x00"
    assert decompress(Compression.SNAPPY, bytes(xerial), 1 << 20) == PAYLOAD


def test_snappy_encode_is_xerial_and_read_by_kafka_python() -> None:
    out = compress(Compression.SNAPPY, PAYLOAD)
    assert out.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    assert kcodec.snappy_decode(out) == PAYLOAD


def test_xxh32_matches_xxhash() -> None:
    xxhash = pytest.importorskip("xxhash")
    for n in (0, 1, 3, 4, 6, 7, 15, 16, 17, 31, 32, 100):
        data = os.urandom(n)
        assert xxh32(data) == xxhash.xxh32(data).intdigest()


def test_lz4_kafka_3160_from_kafka_python() -> None:
    pytest.importorskip("xxhash")
    broken = kcodec.lz4_encode_old_kafka(PAYLOAD)
    assert decompress(Compression.LZ4, broken, 1 << 20, magic=0) == PAYLOAD
    with pytest.raises(DecodeError, match="header checksum"):
        decompress(Compression.LZ4, broken, 1 << 20, magic=1)
    # a standard frame is accepted for magic 0 too
    assert (
        decompress(Compression.LZ4, kcodec.lz4_encode(PAYLOAD), 1 << 20, magic=0)
        == PAYLOAD
    )


def test_lz4_kafka_3160_encode_read_by_kafka_python() -> None:
    pytest.importorskip("xxhash")
    ours = compress(Compression.LZ4, PAYLOAD, magic=0)
    assert kcodec.lz4_decode_old_kafka(ours) == PAYLOAD
    fixed = compress(Compression.LZ4, PAYLOAD, magic=1)
    assert kcodec.lz4_decode(fixed) == PAYLOAD
    assert ours[6] != fixed[6] or ours[4] != fixed[4]


def test_gzip_concatenated_members() -> None:
    data = gzip.compress(PAYLOAD[:1000]) + gzip.compress(PAYLOAD[1000:])
    assert decompress(Compression.GZIP, data, 1 << 20) == PAYLOAD


def test_zstd_without_content_size_grows_buffer() -> None:
    zstandard = pytest.importorskip("zstandard")
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD * 4)
    assert decompress(Compression.ZSTD, frame, 1 << 22) == PAYLOAD * 4
    with pytest.raises(DecodeError, match="max_decompressed_size"):
        decompress(Compression.ZSTD, frame, len(PAYLOAD) * 4 - 1)
    assert decompress(Compression.ZSTD, frame, len(PAYLOAD) * 4) == PAYLOAD * 4


BOMB = bytes(8 << 20)  # 8 MiB of zeros


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_bomb_codec_level(codec: int) -> None:
    packed = compress(codec, BOMB)
    assert len(packed) < len(BOMB) // 20
    with pytest.raises(DecodeError, match="max_decompressed_size"):
        decompress(codec, packed, 1 << 20)
    assert decompress(codec, packed, len(BOMB)) == BOMB


def test_lz4_encode_is_kafkas_frame_shape() -> None:
    """KafkaLZ4BlockOutputStream's frame: FLG 0x60 (version 1, independent blocks,
    no checksums or size), BD 0x40 (64 KiB blocks), a stored block for data that does
    not shrink, an end mark and nothing after; liblz4 (python-lz4, cramjam) and
    kafka-python read it."""
    lz4_frame = pytest.importorskip("lz4.frame")
    noise = os.urandom(70_000)  # first block stored as is, the rest compressed
    for payload in (b"", b"x", PAYLOAD, noise, noise + bytes(100_000)):
        frame = compress(Compression.LZ4, payload)
        assert frame[:7] == b"\x04\x22\x4d\x18\x60\x40" + bytes(
            ((xxh32(b"\x60\x40") >> 8) & 0xFF,)
        )
        assert frame.endswith(b"\x00\x00\x00\x00")
        assert lz4_frame.decompress(frame) == payload
        assert bytes(cramjam.lz4.decompress(frame)) == payload
        assert kcodec.lz4_decode(frame) == payload
        assert decompress(Compression.LZ4, frame, 1 << 20) == payload
    stored = compress(Compression.LZ4, noise)
    assert int.from_bytes(stored[7:11], "little") == 0x80000000 | 65536
    assert stored[11 : 11 + 65536] == noise[:65536]


def test_lz4_fast_and_reference_paths_alike() -> None:
    """Kafka-shaped frames take the block-by-block path in ``decompress``; frames with
    block checksums (liblz4's defaults), linked blocks or a content checksum take
    cramjam's frame decoder: same bytes either way, for the shapes liblz4 writes."""
    lz4_frame = pytest.importorskip("lz4.frame")
    ours = compress(Compression.LZ4, PAYLOAD)
    assert _lz4_into(ours, 1 << 20) is not None
    for kw in (
        {"block_checksum": True},
        {"content_checksum": True},
        {"block_linked": True},
        {"store_size": True},
    ):
        frame = lz4_frame.compress(PAYLOAD, block_size=4, **kw)
        assert decompress(Compression.LZ4, frame, 1 << 20) == PAYLOAD
    checked = lz4_frame.compress(PAYLOAD, block_linked=False, block_checksum=True)
    assert _lz4_into(checked, 1 << 20) is None  # liblz4 checks the block checksums
    bad = bytearray(checked)
    bad[-6] ^= 1  # the last block's checksum (before the end mark)
    with pytest.raises(DecodeError, match="lz4"):
        decompress(Compression.LZ4, bytes(bad), 1 << 20)


def test_lz4_block_by_block_under_limit() -> None:
    # worst-case bound (64 KiB per block) above the limit, actual size below
    small = PAYLOAD[:3000]
    frame = compress(Compression.LZ4, small)
    assert frame[4] & 0x20  # independent blocks
    assert decompress(Compression.LZ4, frame, 5000) == small
    with pytest.raises(DecodeError, match="max_decompressed_size"):
        decompress(Compression.LZ4, frame, 2999)
    linked = bytes(cramjam.lz4.compress(small))  # cramjam's default: linked blocks
    assert not linked[4] & 0x20
    assert decompress(Compression.LZ4, linked, 1 << 20) == small
    with pytest.raises(DecodeError, match="linked blocks"):
        decompress(Compression.LZ4, linked, 5000)


@pytest.mark.parametrize("codec", list(Compression)[1:])
def test_decompression_bomb_in_batch(codec: Compression) -> None:
    data = encode_batch(
        [(None, bytes(4 << 20), [], 0)], compression=codec, base_offset=3
    )
    with pytest.raises(DecodeError) as info:
        list(decode_batches(data, max_decompressed_size=1 << 20))
    assert "max_decompressed_size" in info.value.reason
    assert info.value.path == "batch@0(base_offset=3).records"
    (batch,) = list(decode_batches(data))
    assert batch.records[0].value == bytes(4 << 20)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_is_decode_error(codec: int) -> None:
    with pytest.raises(DecodeError):
        decompress(codec, b"\x82SNAPPY\x00" + os.urandom(40), 1 << 20)
    with pytest.raises(DecodeError):
        decompress(codec, os.urandom(3), 1 << 20)
