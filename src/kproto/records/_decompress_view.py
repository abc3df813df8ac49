"""Decompression whose output does not escape: into the calling thread's scratch buffer.

:func:`decompress_view` gives the same bytes as :func:`~kproto.records._codecs.decompress`
(it *is* that function for anything outside its fast paths, errors included), but
for the common shapes of a produced batch it writes them into the thread's reusable
buffer (``_codec_base._scratch_view``, at most 8 MiB kept per thread; larger outputs
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

import cramjam

from ._codec_base import _SCRATCH_MAX, _scratch_view
from ._codecs import _snappy_into, decompress
from ._lz4 import _MAX_BLOCKS, _U32, _lz4_into
from ._types import Compression

__all__ = ["decompress_view"]

_ZSTD_MAGIC_BYTES = b"\x28\xb5\x2f\xfd"


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
