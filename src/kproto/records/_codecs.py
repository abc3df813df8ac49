"""Compression codecs of Kafka record batches, with a bound on decompressed size.

Every decompressor here takes ``limit`` (bytes) and raises
:class:`~kproto.exceptions.DecodeError` as soon as the output would
exceed it, without allocating more than the limit (or than the input
justifies), so a small compressed payload cannot exhaust memory.

Formats:

* gzip: RFC 1952, concatenated members accepted (Java's ``GZIPInputStream``).
* snappy: raw snappy, and the xerial block framing Java clients write
  (``b"\\x82SNAPPY\\x00"``, two int32 version fields, then
  ``[int32 length + raw snappy block]*``).
* lz4: the LZ4 frame format. Kafka before 0.10 computed the frame header
  checksum over the magic number as well as the frame descriptor
  (KAFKA-3160); for magic 0 messages that checksum is accepted when decoding
  and written when encoding, as Kafka and kafka-python do.
* zstd: zstd frames.

Optional accelerators (the ``speed`` extra), used when installed: ISA-L's inflate
(``isal``) for gzip, python-lz4 for a batch that is one lz4 frame, ``zstandard`` for
a single zstd frame, each when the frame declares its size.
They decode the same formats to the same bytes; whatever they reject (or whatever is
not a case they take) goes to the standard path (``zlib``, cramjam), so the bytes and
every error message are the same with or without them.
"""

from __future__ import annotations

import zlib
from typing import Any

import cramjam

from kproto.exceptions import DecodeError, EncodeError

from ._codec_base import (
    _SCRATCH_MAX,
    SizeLimitError,
    _optional,
    _scratch,
    _scratch_view,
    _too_big,
)
from ._lz4 import _lz4_compress, _lz4_decompress
from ._types import Compression
from ._xxh32 import xxh32

_isal_zlib = _optional("isal.isal_zlib")  # ISA-L's inflate, ~2x zlib's
_zstandard = _optional("zstandard")  # one zstd frame straight into bytes

__all__ = ["SizeLimitError", "compress", "decompress", "xxh32"]

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"
_XERIAL_BLOCK = 32 * 1024
_SNAPPY_MAX_RATIO = 32


# ---------------------------------------------------------------- gzip

#: Output (bytes) produced per step while a gzip member is measured.
_GZIP_STEP = 1 << 20


def _gzip_member(
    data: bytes, start: int, limit: int, z: Any
) -> tuple[int, int, bytes | None]:
    """Measure the gzip member at ``data[start:]`` without holding its output.

    Returns ``(end of the member in data, decompressed size, output)``, where output
    is the decompressed bytes if they came in one step of at most 1 MiB, else
    ``None`` (the caller decompresses again into one buffer of the known size, so the
    peak is that size plus one step, never the step list plus a joined copy). ``z`` is
    :mod:`zlib` or a module with its interface (``isal.isal_zlib``).
    """
    d = z.decompressobj(16 + zlib.MAX_WBITS)
    rest = memoryview(data)[start:]
    try:
        kept: bytes | None = d.decompress(rest, min(_GZIP_STEP, limit + 1))
        size = len(kept) if kept is not None else 0
        while not d.eof and size <= limit:
            kept = None  # more than one step: measure only
            tail = d.unconsumed_tail
            more = len(d.decompress(tail, min(_GZIP_STEP, limit - size + 1)))
            if not more and len(d.unconsumed_tail) == len(tail):
                break  # no progress: the input ends inside the stream
            size += more
    except z.error as exc:
        raise DecodeError(f"gzip: {exc}") from None
    if size > limit:
        raise _too_big("gzip", limit)
    if not d.eof:
        raise DecodeError("gzip: truncated stream")
    return len(data) - len(d.unused_data), size, kept


def _gzip_decompress(data: bytes, limit: int) -> bytes:
    if _isal_zlib is not None:
        try:
            return _gzip_inflate(data, limit, _isal_zlib)
        except Exception:  # noqa: BLE001 - zlib below names what is wrong
            pass
    return _gzip_inflate(data, limit, zlib)


def _gzip_inflate(data: bytes, limit: int, z: Any) -> bytes:
    out: list[bytes] = []
    total = 0
    pos = 0
    while True:
        end, size, kept = _gzip_member(data, pos, limit - total, z)
        if kept is None:
            # bufsize exactly the size: zlib fills one buffer and returns it (any
            # other size ends with a copy of the output, or a join of blocks; isal's
            # one-shot call peaks at twice the size, so this is zlib's always).
            kept = zlib.decompress(data[pos:end], 16 + zlib.MAX_WBITS, max(size, 1))
        total += size
        out.append(kept)
        pos = end
        if not data[pos:].strip(b"\x00"):
            break
    return out[0] if len(out) == 1 else b"".join(out)


def _gzip_compress(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


# ---------------------------------------------------------------- snappy


def _snappy_raw(block: bytes | memoryview, limit: int) -> bytes:
    try:
        size = cramjam.snappy.decompress_raw_len(block)
    except Exception as exc:
        raise DecodeError(f"snappy: {exc}") from None
    if size > limit:
        raise _too_big("snappy", limit)
    if size > _SNAPPY_MAX_RATIO * len(block):
        # Each snappy element of n bytes yields at most 64 / 3 * n bytes.
        raise DecodeError(
            f"snappy: block of {len(block)} bytes declares {size} bytes uncompressed"
        )
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except Exception as exc:
        raise DecodeError(f"snappy: {exc}") from None


def _snappy_decompress(data: bytes, limit: int) -> bytes:
    fast = _snappy_into(data, limit)
    if fast is not None:
        return bytes(fast)
    if not data.startswith(_XERIAL_MAGIC) or len(data) < 16:
        return _snappy_raw(data, limit)
    # xerial framing: 8-byte magic, int32 version, int32 min compatible
    # version (some writers put these little-endian; they are not checked).
    mv = memoryview(data)
    pos = 16
    n = len(data)
    out: list[bytes] = []
    total = 0
    while pos < n:
        if pos + 4 > n:
            raise DecodeError("snappy (xerial): truncated block length")
        size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        pos += 4
        if size < 0 or pos + size > n:
            raise DecodeError(f"snappy (xerial): bad block length {size}")
        block = _snappy_raw(mv[pos : pos + size], limit - total)
        total += len(block)
        out.append(block)
        pos += size
    return b"".join(out)


def _snappy_into(data: bytes | memoryview, limit: int) -> memoryview | None:
    """``data`` (raw or xerial) decompressed block by block into the scratch buffer
    (copied out once by :func:`_snappy_decompress`: 1.15x faster than a bytes object
    per block and a join); a view of it. ``None`` for anything
    :func:`_snappy_decompress` would reject (it then names it)."""
    mv = memoryview(data)
    blocks: list[memoryview] = []
    n = len(data)
    if mv[:8] == _XERIAL_MAGIC and n >= 16:
        pos = 16
        while pos < n:
            size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
            pos += 4
            if pos > n or size < 0 or pos + size > n:
                return None
            blocks.append(mv[pos : pos + size])
            pos += size
    else:
        blocks.append(mv)
    sizes = []
    total = 0
    try:
        for block in blocks:
            size = cramjam.snappy.decompress_raw_len(block)
            if size > _SNAPPY_MAX_RATIO * len(block):
                return None
            total += size
            sizes.append(size)
        if not 0 < total <= min(limit, _SCRATCH_MAX):
            return None
        view = _scratch_view(total)
        at = 0
        for block, size in zip(blocks, sizes, strict=True):
            if cramjam.snappy.decompress_raw_into(block, view[at : at + size]) != size:
                return None
            at += size
    except Exception:  # noqa: BLE001 - _snappy_decompress names what is wrong
        return None
    return view


def _snappy_compress(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER]
    mv = memoryview(data)
    for i in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(mv[i : i + _XERIAL_BLOCK]))
        parts.append(len(block).to_bytes(4, "big"))
        parts.append(block)
    return b"".join(parts)


# ---------------------------------------------------------------- zstd


def _zstd_content_size(data: bytes) -> int | None:
    """The Frame_Content_Size of a single zstd frame, or None when absent."""
    if len(data) < 6 or data[:4] != b"\x28\xb5\x2f\xfd":
        return None
    fhd = data[4]
    fcs_flag = fhd >> 6
    single = (fhd >> 5) & 1
    did_size = (0, 1, 2, 4)[fhd & 3]
    p = 5 + (0 if single else 1) + did_size
    size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if size == 0 or p + size > len(data):
        return None
    value = int.from_bytes(data[p : p + size], "little")
    return value + 256 if size == 2 else value


#: The most a zstd block yields (Block_Maximum_Size, RFC 8878 3.1.1.2.3).
_ZSTD_BLOCK_MAX = 128 * 1024


def _zstd_decompress(data: bytes, limit: int) -> bytes:
    hint = _zstd_content_size(data)
    if hint is not None:
        if hint > limit:
            raise _too_big("zstd", limit)
        # Every block takes at least 4 bytes (3-byte header, 1 byte of content) and
        # yields at most 128 KiB: a larger declared size is a lie.
        most = (len(data) // 4 + 1) * _ZSTD_BLOCK_MAX
        if hint > most:
            raise DecodeError(
                f"zstd: frame of {len(data)} bytes declares {hint} bytes of content, "
                f"more than it can hold ({most})"
            )
        if _zstandard is not None and hint <= max(1 << 16, 32 * len(data)):
            # (it allocates the declared size: only a size the data likely holds,
            # the buffer the path below would start with)
            fast = _zstd_one_frame(data, hint)
            if fast is not None:
                return fast
    # Start with room for the declared size if the data is likely to hold it (32x),
    # and grow fourfold only when real output has filled the buffer: memory follows
    # what the data yields, not what its header claims.
    if hint is not None:
        size = min(hint + 1, max(1 << 16, 32 * len(data)))
    else:
        size = max(1 << 16, 4 * len(data))
    size = min(size, limit)
    while True:
        buf = _scratch_view(size)
        try:
            got = cramjam.zstd.decompress_into(data, buf)
        except Exception as exc:
            if "whole buffer" not in str(exc):
                raise DecodeError(f"zstd: {exc}") from None
            if size >= limit:
                raise _too_big("zstd", limit) from None
            size = _zstd_grow(size, hint, limit)
            continue
        if got == size and size < limit:
            # Filled exactly: it may have been cut; retry with room to spare.
            size = _zstd_grow(size, hint, limit)
            continue
        return bytes(buf[:got])


def _zstd_one_frame(data: bytes, size: int) -> bytes | None:
    """``data`` as one zstd frame of ``size`` declared bytes, decompressed by
    ``zstandard`` into a bytes object of that size; ``None`` for anything else (more
    frames, trailing bytes, corruption: the cramjam path decides)."""
    dctx = getattr(_scratch, "zstd", None)
    if dctx is None:
        dctx = _scratch.zstd = _zstandard.ZstdDecompressor()
    try:
        out: bytes = dctx.decompress(data, max_output_size=size, allow_extra_data=False)
    except Exception:  # noqa: BLE001
        return None
    return out if len(out) == size else None


def _zstd_grow(size: int, hint: int | None, limit: int) -> int:
    """The next buffer size after ``size`` was filled: 4x, at most declared size + 1."""
    bigger = size * 4
    if hint is not None and size <= hint:
        bigger = min(bigger, hint + 1)
    return min(bigger, limit)


def _zstd_compress(data: bytes) -> bytes:
    return bytes(cramjam.zstd.compress(data, level=3))


# ---------------------------------------------------------------- dispatch


def decompress(codec: int, data: bytes, limit: int, *, magic: int = 2) -> bytes:
    """Decompress ``data`` of ``codec`` (a :class:`Compression` value).

    Raises:
        DecodeError: for corrupt input, an unknown codec, or output larger
            than ``limit`` bytes (the location is added by the caller).
    """
    if codec == Compression.GZIP:
        return _gzip_decompress(data, limit)
    if codec == Compression.SNAPPY:
        return _snappy_decompress(data, limit)
    if codec == Compression.LZ4:
        return _lz4_decompress(data, limit, magic == 0)
    if codec == Compression.ZSTD:
        return _zstd_decompress(data, limit)
    if codec == Compression.NONE:
        return data
    raise DecodeError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes, *, magic: int = 2) -> bytes:
    """Compress ``data`` with ``codec`` as Kafka writes it (see module docs)."""
    if codec == Compression.GZIP:
        return _gzip_compress(data)
    if codec == Compression.SNAPPY:
        return _snappy_compress(data)
    if codec == Compression.LZ4:
        return _lz4_compress(data, magic == 0)
    if codec == Compression.ZSTD:
        return _zstd_compress(data)
    if codec == Compression.NONE:
        return data
    raise EncodeError(f"unknown compression codec {codec}")
