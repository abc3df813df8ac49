"""The lz4 codec of Kafka record batches: the LZ4 frame format (see
:mod:`kproto.records._codecs` for the limits and errors every codec keeps)."""

from __future__ import annotations

import struct
from typing import Any

import cramjam

from kproto.exceptions import DecodeError

from ._codec_base import _SCRATCH_MAX, _optional, _scratch_view, _too_big
from ._xxh32 import xxh32

_lz4_frame = _optional("lz4.frame")  # one lz4 frame straight into bytes

_LZ4_MAGIC = 0x184D2204
_LZ4_BLOCK_MAX = {4: 1 << 16, 5: 1 << 18, 6: 1 << 20, 7: 1 << 22}

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
