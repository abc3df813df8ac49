"""Decompression whose output does not escape: into the calling thread's scratch buffer.

:func:`decompress_view` gives the same bytes as :func:`~kproto.records._codecs.decompress`
(it *is* that function for anything outside its fast paths, errors included), but
for the common shapes of a produced batch it writes them into the thread's reusable
buffer (``_codecs._scratch_view``, at most 8 MiB kept per thread; larger outputs
get a buffer of their own) and returns a memoryview of it, valid until the same
thread decompresses again. The broker's validator reads the records there once and
drops the view: no bytes object is allocated, zero-filled or copied per batch.

Fast paths (anything else, or any failure in them, goes to ``decompress``, which
names the error):

* lz4: one frame as Kafka's clients write it (KafkaLZ4BlockOutputStream, librdkafka's
  LZ4F with independent blocks): frame version 1, independent blocks, no block or
  content checksum, no dictionary id, a content size or none, nothing after the
  frame. Its header checksum is checked, then each block is decompressed with
  liblz4's ``LZ4_decompress_safe`` (cramjam) into its place, bounded by the frame's
  block maximum; a declared content size must match. These are the checks liblz4's
  frame decoder makes on such a frame, so the two accept the same frames.
* snappy: raw or xerial-framed blocks (``_codecs._snappy_into``).
* zstd: one frame that declares no content size (librdkafka's), in one call into
  room for what its block headers allow (``decompress`` starts smaller and
  decompresses again into a buffer four times larger each time it fills one).
"""

from __future__ import annotations

import struct

import cramjam

from ._codecs import (
    _LZ4_BLOCK_MAX,
    _SCRATCH_MAX,
    _scratch_view,
    _snappy_into,
    decompress,
    xxh32,
)
from ._types import Compression

__all__ = ["decompress_view"]

_U32 = struct.Struct("<I").unpack_from
#: The most blocks a fast path walks: Kafka's clients write 64 KiB to 4 MiB lz4
#: blocks and 128 KiB zstd blocks, so more than this is no batch within the limits
#: (or empty blocks, which only cost time): ``decompress`` takes it.
_MAX_BLOCKS = 1024

_LZ4_MAGIC_BYTES = b"\x04\x22\x4d\x18"
_ZSTD_MAGIC_BYTES = b"\x28\xb5\x2f\xfd"
#: FLG of a frame with independent blocks and no checksums (version 1), without
#: and with a content size.
_LZ4_FLG_PLAIN = 0x60
_LZ4_FLG_SIZED = 0x68
#: The header checksum of each descriptor without a content size, (FLG, BD) ->
#: second byte of XXH32 (computed once: the descriptor Kafka's clients write).
_LZ4_HC = {
    (_LZ4_FLG_PLAIN, bd): (xxh32(bytes((_LZ4_FLG_PLAIN, bd))) >> 8) & 0xFF
    for bd in (0x40, 0x50, 0x60, 0x70)
}


def decompress_view(
    codec: int, data: bytes | memoryview, limit: int
) -> bytes | memoryview:
    """``data`` of ``codec`` decompressed (at most ``limit`` bytes), as
    :func:`~kproto.records._codecs.decompress`: equal bytes, the same
    :class:`~kproto.exceptions.DecodeError`; a view of the thread's scratch buffer
    (valid until this thread's next decompression) or a bytes object."""
    if codec == Compression.LZ4:
        fast = _lz4_into(data, limit)
        if fast is not None:
            return fast
    elif codec == Compression.SNAPPY:
        view = _snappy_into(data, limit)
        if view is not None:
            return view
    elif codec == Compression.ZSTD:
        view = _zstd_into(data, limit)
        if view is not None:
            return view
    return decompress(codec, bytes(data), limit)


def _lz4_into(data: bytes | memoryview, limit: int) -> memoryview | None:
    """One plain lz4 frame (see the module doc) decompressed block by block into the
    scratch buffer; ``None`` for any other shape, or a failure (``decompress``
    then decides and names it)."""
    mv = memoryview(data)
    n = len(mv)
    if n < 11 or mv[:4] != _LZ4_MAGIC_BYTES:
        return None
    flg = mv[4]
    bd = mv[5]
    block_max = _LZ4_BLOCK_MAX.get(bd >> 4)
    if block_max is None or bd & 0x8F:
        return None
    if flg == _LZ4_FLG_PLAIN:
        declared = -1
        p = 6
        if mv[6] != _LZ4_HC[(flg, bd)]:
            return None
    elif flg == _LZ4_FLG_SIZED:
        if n < 19 or mv[14] != (xxh32(bytes(mv[4:14])) >> 8) & 0xFF:
            return None
        (declared,) = struct.unpack_from("<Q", mv, 6)
        p = 14
    else:
        return None
    p += 1
    blocks: list[tuple[int, int]] = []  # (start, size); size < 0: stored as is
    bound = 0
    u32 = _U32
    for _ in range(_MAX_BLOCKS):
        if p + 4 > n:
            return None
        (size,) = u32(mv, p)
        p += 4
        if size == 0:
            break
        stored = size & 0x80000000
        size &= 0x7FFFFFFF
        if size > block_max or p + size > n:
            return None
        if stored:
            blocks.append((p, -size))
            bound += size
        else:
            blocks.append((p, size))
            bound += block_max
        p += size
    else:
        return None  # more blocks than a batch within the limits holds
    if p != n or not 0 < bound <= min(limit, _SCRATCH_MAX):
        return None
    view = _scratch_view(bound)
    at = 0
    decompress_block_into = cramjam.lz4.decompress_block_into
    try:
        for start, size in blocks:
            if size < 0:
                view[at : at - size] = mv[start : start - size]
                at -= size
            else:
                at += decompress_block_into(
                    mv[start : start + size], view[at : at + block_max]
                )
    except Exception:  # noqa: BLE001 - decompress names what is wrong
        return None
    if declared >= 0 and at != declared:
        return None
    return view[:at]


#: The most one zstd block yields (Block_Maximum_Size, RFC 8878 3.1.1.2.3).
_ZSTD_BLOCK_MAX = 128 * 1024


def _zstd_into(data: bytes | memoryview, limit: int) -> memoryview | None:
    """One zstd frame without a declared content size, nothing after it, decompressed
    by cramjam into the scratch buffer in one call, with room for what its block
    headers allow (raw and RLE blocks their size, a compressed block 128 KiB);
    ``None`` for any other shape (``decompress`` takes a frame that declares its
    size straight into bytes of that size), a bound past ``limit``, or a failure."""
    mv = memoryview(data)
    n = len(mv)
    if n < 9 or mv[:4] != _ZSTD_MAGIC_BYTES:
        return None
    fhd = mv[4]
    if fhd >> 6 or fhd & 0x20 or fhd & 0x18:
        return None  # a content size, single segment, reserved or unused bits
    p = 6 + (0, 1, 2, 4)[fhd & 3]  # magic, FHD, window descriptor, dictionary id
    bound = 0
    for _ in range(_MAX_BLOCKS):
        if p + 3 > n:
            return None
        (header,) = _U32(mv[p : p + 3].tobytes() + b"\0")
        p += 3
        kind = (header >> 1) & 3
        size = header >> 3
        if kind == 0:  # raw
            bound += size
            p += size
        elif kind == 1:  # RLE: one byte, repeated size times
            bound += size
            p += 1
        elif kind == 2:
            bound += _ZSTD_BLOCK_MAX
            p += size
        else:
            return None
        if header & 1:
            break
    else:
        return None
    if fhd & 0x04:
        p += 4  # content checksum
    if p != n or bound >= min(limit, _SCRATCH_MAX):
        return None
    view = _scratch_view(bound + 1)
    try:
        got: int = cramjam.zstd.decompress_into(mv, view)
    except Exception:  # noqa: BLE001 - decompress names what is wrong
        return None
    return view[:got] if got <= bound else None
