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

import importlib
import struct
import threading
import zlib
from typing import Any

import cramjam

from kproto.exceptions import DecodeError, EncodeError

from ._types import Compression
from ._xxh32 import xxh32


def _optional(name: str) -> Any:
    """The module ``name`` when installed (the ``speed`` extra), else ``None``."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - depends on the install
        return None


_isal_zlib = _optional("isal.isal_zlib")  # ISA-L's inflate, ~2x zlib's
_lz4_frame = _optional("lz4.frame")  # one lz4 frame straight into bytes
_zstandard = _optional("zstandard")  # one zstd frame straight into bytes

__all__ = ["SizeLimitError", "compress", "decompress", "xxh32"]

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"
_XERIAL_BLOCK = 32 * 1024
_SNAPPY_MAX_RATIO = 32

_LZ4_MAGIC = 0x184D2204
_LZ4_BLOCK_MAX = {4: 1 << 16, 5: 1 << 18, 6: 1 << 20, 7: 1 << 22}

_scratch = threading.local()
_SCRATCH_MAX = 1 << 23


def _scratch_view(size: int) -> memoryview:
    """A writable ``size``-byte view to decompress into, then copy out of.

    Up to 8 MiB it is the calling thread's reusable buffer: allocating (and
    zero-filling) a large buffer per batch costs page faults that take longer
    than the decompression. cramjam is given a memoryview, as it handles a
    bytearray slowly.
    """
    if size > _SCRATCH_MAX:
        return memoryview(bytearray(size))
    buf: bytearray | None = getattr(_scratch, "buf", None)
    if buf is None or len(buf) < size:
        buf = _scratch.buf = bytearray(max(size, 1 << 16))
    return memoryview(buf)[:size]


class SizeLimitError(DecodeError):
    """A payload that decompresses to more than the ``limit`` it was given.

    Attributes:
        codec: ``"gzip"``, ``"snappy"``, ``"lz4"`` or ``"zstd"``.
        limit: the limit (bytes) passed to :func:`decompress`; callers that pass what
            is left of a larger budget rewrite the message to name both.
    """

    def __init__(self, codec: str, limit: int) -> None:
        super().__init__(
            f"{codec} payload decompresses to more than max_decompressed_size "
            f"({limit} bytes)"
        )
        self.codec = codec
        self.limit = limit


def _too_big(codec: str, limit: int) -> DecodeError:
    return SizeLimitError(codec, limit)


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


# ---------------------------------------------------------------- lz4


_U32 = struct.Struct("<I").unpack_from
#: The most blocks a fast path walks: Kafka's clients write 64 KiB to 4 MiB lz4
#: blocks and 128 KiB zstd blocks, so more than this is no batch within the limits
#: (or empty blocks, which only cost time): ``decompress`` takes it.
_MAX_BLOCKS = 1024

_LZ4_MAGIC_BYTES = b"\x04\x22\x4d\x18"
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


def _lz4_into(data: bytes | memoryview, limit: int) -> memoryview | None:
    """One lz4 frame as Kafka's clients write it, decompressed block by block into the
    scratch buffer; a view of it, ``None`` for any other shape or a failure (the
    reference path then decides and names it).

    The shape: frame version 1, independent blocks, no block or content checksum, no
    dictionary id, a content size or none, nothing after the frame
    (KafkaLZ4BlockOutputStream, librdkafka's LZ4F with independent blocks, kproto's
    own encoder). Its header checksum is checked, each block decompressed with
    liblz4's ``LZ4_decompress_safe`` (cramjam) into its place, bounded by the frame's
    block maximum, and a declared content size must match: the checks liblz4's frame
    decoder makes on such a frame, so the two accept the same frames.
    """
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


def _lz4_decompress(data: bytes, limit: int, old_kafka: bool) -> bytes:
    """Decompress LZ4 frames; ``old_kafka`` accepts the KAFKA-3160 header checksum."""
    if _lz4_frame is None or data[4:5] != b"\x68":
        # Block by block into the scratch buffer, then one exact-size copy: 1.5x
        # faster than cramjam's frame decoder on Kafka's frames (python-lz4 grows
        # its output when the frame declares no size; a sized one it writes
        # straight into bytes, below).
        fast = _lz4_into(data, limit)
        if fast is not None:
            return bytes(fast)
    n = len(data)
    pos = 0
    frames: list[tuple[int, int, int, bool]] = []  # start, end, bound, independent
    patched: bytearray | None = None
    bound_total = 0
    sized = False
    try:
        while pos < n:
            magic = int.from_bytes(data[pos : pos + 4], "little")
            if 0x184D2A50 <= magic <= 0x184D2A5F:  # skippable frame
                pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
                continue
            if magic != _LZ4_MAGIC:
                raise DecodeError(f"lz4: bad frame magic 0x{magic:08x}", offset=pos)
            flg = data[pos + 4]
            bd = data[pos + 5]
            if flg >> 6 != 1:
                raise DecodeError(
                    f"lz4: unsupported frame version {flg >> 6}", offset=pos
                )
            block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 7)
            if block_max is None:
                raise DecodeError(f"lz4: bad block maximum size code {bd}", offset=pos)
            desc_end = pos + 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
            stored_hc = data[desc_end]
            right_hc = (xxh32(data[pos + 4 : desc_end]) >> 8) & 0xFF
            if stored_hc != right_hc:
                if old_kafka and stored_hc == (xxh32(data[pos:desc_end]) >> 8) & 0xFF:
                    if patched is None:
                        patched = bytearray(data)
                    patched[desc_end] = right_hc
                else:
                    raise DecodeError("lz4: bad frame header checksum", offset=desc_end)
            p = desc_end + 1
            bound = 0
            while True:
                if p + 4 > n:
                    raise DecodeError("lz4: truncated frame", offset=p)
                size = int.from_bytes(data[p : p + 4], "little")
                p += 4
                if size == 0:
                    break
                if size & 0x80000000:
                    size &= 0x7FFFFFFF
                    bound += size
                else:
                    bound += block_max
                p += size + (4 if flg & 0x10 else 0)
            p += 4 if flg & 0x04 else 0
            if p > n:
                raise DecodeError("lz4: truncated frame", offset=n)
            frames.append((pos, p, bound, bool(flg & 0x20)))
            # The frame declares its content size, within what its blocks can hold
            # (python-lz4 allocates the declared size).
            sized = bool(flg & 0x08) and (
                int.from_bytes(data[pos + 6 : pos + 14], "little") <= bound
            )
            bound_total += bound
            pos = p
    except IndexError:
        raise DecodeError("lz4: truncated frame", offset=n) from None
    src = bytes(patched) if patched is not None else data
    if (
        _lz4_frame is not None
        and sized
        and bound_total <= limit
        and len(frames) == 1
        and frames[0][:2] == (0, n)
    ):
        # One frame of declared size, nothing around it: python-lz4 writes it
        # straight into bytes of that size (it reads one frame only, so anything
        # more goes to cramjam below). Its output is at most bound_total bytes.
        # Without a declared size (Kafka's and kproto's writers) it grows its
        # output as it goes, which in some process states (asyncio imported) took
        # 370 us for this 250 KB batch, against 55 us into the scratch buffer.
        try:
            one: bytes = _lz4_frame.decompress(src)
        except Exception:  # noqa: BLE001 - cramjam below names what is wrong
            pass
        else:
            return one
    if bound_total <= limit:
        if 0 < bound_total <= _SCRATCH_MAX:
            # Into a buffer of the worst-case size, 5x faster than letting
            # cramjam grow its output. On failure the plain call below reports
            # the error.
            view = _scratch_view(bound_total)
            try:
                got = cramjam.lz4.decompress_into(src, view)
            except Exception:
                pass
            else:
                return bytes(view[:got])
        try:
            return bytes(cramjam.lz4.decompress(src))
        except Exception as exc:
            raise DecodeError(f"lz4: {exc}") from None
    # The worst case exceeds the limit: decompress block by block, stopping
    # at the limit (possible for independent blocks, which Kafka requires).
    out = bytearray()
    for start, _end, _bound, independent in frames:
        if not independent:
            raise DecodeError(
                "lz4: a frame with linked blocks may exceed max_decompressed_size "
                f"({limit} bytes)"
            )
        flg = src[start + 4]
        block_max = _LZ4_BLOCK_MAX[(src[start + 5] >> 4) & 7]
        p = start + 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
        while True:
            size = int.from_bytes(src[p : p + 4], "little")
            p += 4
            if size == 0:
                break
            raw = size & 0x80000000
            size &= 0x7FFFFFFF
            if raw:
                out += src[p : p + size]
            else:
                room = min(block_max, limit - len(out) + 1)
                buf = bytearray(room)
                try:
                    got = cramjam.lz4.decompress_block_into(src[p : p + size], buf)
                except Exception:
                    if room < block_max:
                        raise _too_big("lz4", limit) from None
                    raise DecodeError("lz4: corrupt block", offset=p) from None
                out += buf[:got]
            if len(out) > limit:
                raise _too_big("lz4", limit)
            p += size + (4 if flg & 0x10 else 0)
    return bytes(out)


#: The block size kproto writes (BD 0x40), as KafkaLZ4BlockOutputStream's default.
_LZ4_BLOCK = 1 << 16
#: kproto's frame descriptor: version 1, independent blocks, no checksums or size.
_LZ4_HEAD = (_LZ4_FLG_PLAIN, 0x40)


def _lz4_compress(data: bytes, old_kafka: bool) -> bytes:
    """One lz4 frame of ``data`` as Kafka's KafkaLZ4BlockOutputStream writes it:
    64 KiB independent blocks (Kafka's reader needs them), no block or content
    checksum, no content size; a block that does not shrink is stored as is. Blocks
    are compressed by liblz4's fast compressor (acceleration 1), as librdkafka and
    kafka-python do. ``old_kafka`` (magic 0): the header checksum over the magic
    number and descriptor, as Kafka < 0.10 expects (KAFKA-3160)."""
    hc = xxh32((_LZ4_MAGIC_BYTES if old_kafka else b"") + bytes(_LZ4_HEAD))
    parts: list[Any] = [_LZ4_MAGIC_BYTES, bytes((*_LZ4_HEAD, (hc >> 8) & 0xFF))]
    mv = memoryview(data)
    compress_block = cramjam.lz4.compress_block
    for at in range(0, len(mv), _LZ4_BLOCK):
        chunk = mv[at : at + _LZ4_BLOCK]
        block = compress_block(chunk, store_size=False)
        if len(block) < len(chunk):
            parts += (len(block).to_bytes(4, "little"), block)
        else:
            parts += ((len(chunk) | 0x80000000).to_bytes(4, "little"), chunk)
    parts.append(b"\x00\x00\x00\x00")  # end mark
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
