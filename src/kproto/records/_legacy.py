"""Legacy message sets: magic 0 and magic 1 messages, with nested compressed wrappers.

Layout: Kafka's ``LegacyRecord.java``: ``offset int64, message_size int32, crc uint32
(CRC-32 of magic .. end), magic int8, attributes int8, [timestamp int64 (magic 1,
KIP-32)], key bytes (int32 length, -1 = null), value bytes``. A compressed message
(codec in attributes bits 0-2) is a wrapper whose value is a compressed message set;
with magic 1 its inner offsets are relative and the wrapper carries the absolute offset
of the last inner message (KIP-31).
"""

from __future__ import annotations

import struct
import zlib

from kproto.exceptions import DecodeError

from ._codecs import SizeLimitError, decompress
from ._header import LOG_OVERHEAD, BatchHead, batch_path
from ._types import Compression, TimestampType
from ._v2_loop import Columns

__all__ = ["decode_legacy"]

_LEGACY_MIN_LENGTH = 14  # crc + magic + attributes + key and value lengths
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_MAX_LEGACY_DEPTH = 4
_COMPRESSIONS = tuple(Compression)
_TS_TYPES = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)
_crc32 = zlib.crc32

#: ``(offset, crc, magic, attributes, timestamp, key, value)`` of one message.
_Message = tuple[int, int, int, int, int, bytes | None, bytes | None]
#: ``(offset, timestamp, key, value)`` of one record.
_LegacyRecord = tuple[int, int, bytes | None, bytes | None]


class _Budget:
    """What is left of the limits of one top-level message (over all its wrappers)."""

    __slots__ = ("bytes_left", "max_bytes", "records_left", "max_records")

    def __init__(self, max_bytes: int, max_records: int) -> None:
        self.bytes_left = self.max_bytes = max_bytes
        self.records_left = self.max_records = max_records


def _legacy_message(
    data: bytes, pos: int, end: int, path: str, check_crc: bool, shift: int, where: str
) -> _Message:
    """One legacy message in ``data[pos:end]`` (``end`` = pos + 12 + message_size).

    Returns ``(offset, crc, magic, attributes, timestamp, key, value)``.
    """
    offset, size, crc, magic, attributes = struct.unpack_from(">qiIbb", data, pos)

    def fail(reason: str, at: int) -> DecodeError:
        return DecodeError(reason + where, path=path, offset=at + shift)

    if magic not in (0, 1):
        raise fail(f"unknown magic {magic}", pos + 16)
    if check_crc:
        actual = _crc32(data[pos + 16 : end])
        if actual != crc:
            raise DecodeError(
                f"CRC-32 mismatch: stored 0x{crc:08x}, computed 0x{actual:08x}" + where,
                path=path + ".crc",
                offset=pos + 12 + shift,
            )
    p = pos + 18
    timestamp = -1
    if magic == 1:
        if p + 8 > end:
            raise fail("message too short for its timestamp", p)
        timestamp = _INT64.unpack_from(data, p)[0]
        p += 8
    blobs: list[bytes | None] = []
    for name in ("key", "value"):
        if p + 4 > end:
            raise DecodeError(
                f"truncated {name} length" + where,
                path=f"{path}.{name}",
                offset=p + shift,
            )
        n = _INT32.unpack_from(data, p)[0]
        if n < -1:
            raise DecodeError(
                f"negative length {n}" + where, path=f"{path}.{name}", offset=p + shift
            )
        p += 4
        if n == -1:
            blobs.append(None)
            continue
        if p + n > end:
            raise DecodeError(
                f"length {n} runs past the end of the message ({end - p} bytes left)"
                + where,
                path=f"{path}.{name}",
                offset=p - 4 + shift,
            )
        blobs.append(data[p : p + n])
        p += n
    if p != end:
        raise fail(f"{end - p} bytes after the value of the message", p)
    return offset, crc, magic, attributes, timestamp, blobs[0], blobs[1]


def _legacy_expand(
    msg: _Message, path: str, check_crc: bool, budget: _Budget, depth: int
) -> list[_LegacyRecord]:
    """The records of a message: itself, or the flattened inner messages of a wrapper."""
    offset, _crc, magic, attributes, timestamp, key, value = msg
    codec = attributes & 7
    if not codec:
        return [(offset, timestamp, key, value)]
    if codec > 4:
        raise DecodeError(
            f"unknown compression codec {codec}", path=path + ".attributes"
        )
    if depth >= _MAX_LEGACY_DEPTH:
        raise DecodeError(
            f"compressed messages nested more than {depth} deep", path=path
        )
    if value is None:
        raise DecodeError(
            "compressed wrapper message with a null value", path=path + ".value"
        )
    try:
        inner = decompress(codec, value, budget.bytes_left, magic=magic)
    except SizeLimitError as exc:
        raise DecodeError(
            f"{exc.codec} payload decompresses to more than max_decompressed_size "
            f"({budget.max_bytes} bytes; {budget.bytes_left} left after the payloads "
            "of the enclosing wrappers)",
            path=path + ".value",
        ) from None
    except DecodeError as exc:
        raise DecodeError(exc.reason, path=path + ".value") from None
    budget.bytes_left -= len(inner)
    where = " (in decompressed data)"
    messages = []
    pos = 0
    n = len(inner)
    i = 0
    while pos < n:
        ipath = f"{path}.records[{i}]"
        if n - pos < LOG_OVERHEAD:
            raise DecodeError("truncated inner message" + where, path=ipath, offset=pos)
        size = _INT32.unpack_from(inner, pos + 8)[0]
        if size < _LEGACY_MIN_LENGTH or pos + LOG_OVERHEAD + size > n:
            raise DecodeError(
                f"bad inner message size {size}" + where,
                path=ipath + ".message_size",
                offset=pos + 8,
            )
        if budget.records_left <= 0:
            raise DecodeError(
                f"more than max_records ({budget.max_records}) messages in one "
                "top-level message" + where,
                path=ipath,
                offset=pos,
            )
        budget.records_left -= 1
        end = pos + LOG_OVERHEAD + size
        messages.append(
            (ipath, _legacy_message(inner, pos, end, ipath, check_crc, 0, where))
        )
        pos = end
        i += 1
    out: list[_LegacyRecord] = []
    if not messages:
        return out
    # KIP-31: with magic 1 wrappers the inner offsets are relative, and the
    # wrapper carries the absolute offset of the last inner message.
    # A wrapper offset of 0 is produce data (some clients write it so); its
    # inner offsets are kept as they are, as Kafka's DeepRecordsIterator does.
    delta = 0
    if magic >= 1 and offset != 0:
        delta = offset - messages[-1][1][0]
        if delta < 0:
            raise DecodeError(
                f"wrapper offset {offset} is below its last relative inner offset "
                f"{messages[-1][1][0]}",
                path=path,
            )
    log_append = magic == 1 and attributes & 0x08
    for ipath, m in messages:
        im = (
            m[0] + delta,
            m[1],
            m[2],
            m[3],
            timestamp if log_append else m[4],
            m[5],
            m[6],
        )
        out.extend(_legacy_expand(im, ipath, check_crc, budget, depth + 1))
    return out


def decode_legacy(
    data: bytes, pos: int, end: int, check_crc: bool, max_bytes: int, max_records: int
) -> tuple[BatchHead, Columns]:
    """Decode the top-level legacy message ``data[pos:end]`` as one batch.

    Returns its :class:`BatchHead` and record columns. A compressed wrapper yields its
    inner messages, flattened, with absolute offsets; ``partition_leader_epoch``,
    ``producer_id``, ``producer_epoch`` and ``base_sequence`` are -1.

    Raises:
        DecodeError: a corrupt message, or nested payloads above ``max_bytes`` in all
            or ``max_records`` messages.
    """
    base = _INT64.unpack_from(data, pos)[0]
    path = batch_path(pos, base)
    msg = _legacy_message(data, pos, end, path, check_crc, 0, "")
    _offset, crc, magic, attributes, timestamp, _key, _value = msg
    recs = _legacy_expand(msg, path, check_crc, _Budget(max_bytes, max_records), 0)
    offsets = [r[0] for r in recs]
    timestamps = [r[1] for r in recs]
    first = offsets[0] if recs else msg[0]
    head = BatchHead(
        pos,
        first,
        end - pos - LOG_OVERHEAD,
        -1,
        magic,
        crc,
        attributes,
        _COMPRESSIONS[attributes & 7],
        TimestampType.NO_TIMESTAMP if magic == 0 else _TS_TYPES[(attributes >> 3) & 1],
        False,
        False,
        False,
        (offsets[-1] - first) if recs else 0,
        timestamps[0] if recs else timestamp,
        timestamp,
        -1,
        -1,
        -1,
    )
    cols: Columns = (
        offsets,
        timestamps,
        [r[2] for r in recs],
        [r[3] for r in recs],
        [[] for _ in recs],
    )
    return head, cols
