"""Batch boundaries: the one scanner of record batch headers, without decoding them.

Every magic 2 record batch and every legacy (magic 0/1) message set entry starts with
``int64 base_offset, int32 batch_length``; the entry takes ``12 + batch_length`` bytes
and its magic byte is at ``+16``. Walking those headers finds where batches start and
end, which is how :func:`kproto.records.decode_batches` steps through its input and
how :mod:`kproto.spark` cuts segment files into byte ranges of whole batches.

The checks follow Kafka's ``ByteBufferLogInputStream.nextBatchSize``: a length below
the smallest legacy message (14 bytes) or above the largest size a batch can have
(``Integer.MAX_VALUE`` minus the 12-byte log overhead) is corrupt at once; with 17 bytes
available the magic must be 0, 1 or 2 and the length at least that format's minimum
(14, 22, 49); only then is a batch that runs past the end of the input an incomplete
tail (which a Fetch response may end with) rather than an error.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from pathlib import Path
from typing import Final, NamedTuple

import attrs
import crc32c

from ._header import (
    ATTR_COMPRESSION_MASK,
    ATTR_LOG_APPEND_TIME,
    ATTRIBUTES_AT,
    CRC_AT,
    LOG_OVERHEAD,
    MAGIC_AT,
    V2_HEADER,
    V2_MIN_LENGTH,
    BatchHead,
    V2Header,
    v2_head,
)
from ._types import Compression, TimestampType

__all__ = [
    "HEADER",
    "HEADER_UP_TO_MAGIC",
    "LOG_OVERHEAD",
    "MAGIC_AT",
    "MAX_LENGTH",
    "MIN_LENGTH",
    "Frame",
    "FramingError",
    "batch_crc_valid",
    "check_header",
    "frame_buffer",
    "header_problem",
    "next_frame",
    "parse_topic_partition",
    "read_batch_head",
    "segment_files",
]

#: ``>qi``: base offset and batch length, the 12 bytes that start every batch.
HEADER: Final = struct.Struct(">qi")
#: Bytes needed to see a batch's magic: base offset, length, leader epoch or CRC, magic.
HEADER_UP_TO_MAGIC: Final = MAGIC_AT + 1
#: Smallest valid batch length (bytes after the 12-byte header) per magic:
#: ``LegacyRecord.RECORD_OVERHEAD_V0/V1`` and ``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``.
MIN_LENGTH: Final = {0: 14, 1: 22, 2: V2_MIN_LENGTH}
_LEGACY_MIN_LENGTH: Final = 14
#: Largest batch length: the whole batch (12 + length bytes) must fit an int32 size.
MAX_LENGTH: Final = 0x7FFFFFFF - LOG_OVERHEAD


def header_problem(length: int, magic: int | None) -> tuple[str, int] | None:
    """Why ``length`` and ``magic`` cannot start a batch, or ``None`` if they can.

    ``magic`` is ``None`` when fewer than 17 bytes are available (only the length is
    checked then). Returns ``(reason, field offset)``, where the offset from the batch
    start is 8 (``batch_length``) or 16 (``magic``).
    """
    if length < 0 or length > MAX_LENGTH:
        extra = f": above the largest batch ({MAX_LENGTH} bytes)" if length > 0 else ""
        return f"invalid batch length {length}{extra}", 8
    if length < _LEGACY_MIN_LENGTH:
        return f"batch length {length} is below the minimum {_LEGACY_MIN_LENGTH}", 8
    if magic is None:
        return None
    minimum = MIN_LENGTH.get(magic)
    if minimum is None:
        return f"unknown magic {magic}", MAGIC_AT
    if length < minimum:
        return (
            f"batch length {length} is below the minimum {minimum} for magic {magic}",
            8,
        )
    return None


class Frame(NamedTuple):
    """The header of the entry at ``position`` of a buffer, as :func:`next_frame` saw it.

    Attributes:
        position: byte offset of the entry in the buffer.
        base_offset, batch_length: its first 12 bytes (``None`` if fewer are left).
        magic: its magic byte (``None`` if fewer than 17 bytes are left).
        end: ``position + 12 + batch_length``, or the buffer's end if unknown.
        complete: the whole entry is in the buffer (never for an unusable length).
        problem: why the header cannot frame a batch, or ``None``.
        problem_at: the buffer offset of the bad field (when ``problem`` is set).
    """

    position: int
    base_offset: int | None
    batch_length: int | None
    magic: int | None
    end: int
    complete: bool
    problem: str | None
    problem_at: int


def next_frame(buf: bytes | memoryview, pos: int, n: int) -> Frame:
    """Read the batch header at ``buf[pos]`` of the ``n`` bytes available.

    An entry with a ``problem`` cannot be decoded; if it has no problem and is not
    ``complete``, more bytes are needed (or, at the end of the input, it is an
    incomplete tail). An entry with a problem that is ``complete`` can be skipped
    (its length is usable); otherwise the next batch cannot be found.
    """
    left = n - pos
    if left < LOG_OVERHEAD:
        return Frame(pos, None, None, None, n, False, None, pos)
    base_offset, length = HEADER.unpack_from(buf, pos)
    magic = buf[pos + MAGIC_AT] if left >= HEADER_UP_TO_MAGIC else None
    end = pos + LOG_OVERHEAD + length
    complete = end <= n and _LEGACY_MIN_LENGTH <= length <= MAX_LENGTH
    found = header_problem(length, magic)
    if found is not None:
        reason, at = found
        return Frame(pos, base_offset, length, magic, end, complete, reason, pos + at)
    return Frame(pos, base_offset, length, magic, end, complete, None, pos)


@attrs.frozen(slots=True)
class FramingError:
    """Bytes at ``position`` that cannot be framed as a batch.

    Attributes:
        position: byte position of the bad header (in the file, or in the buffer given
            to :func:`frame_buffer`).
        base_offset: the header's offset field if 12 bytes were available, else None.
        length: bytes from ``position`` to the end of the range that are unreadable.
        reason: human-readable cause.
    """

    position: int
    base_offset: int | None
    length: int
    reason: str


def check_header(length: int, magic: int | None, remaining: int) -> str | None:
    """Why a batch header is invalid, or ``None`` if it frames a whole batch.

    ``remaining`` is the number of bytes available from the header's start; ``magic`` is
    ``None`` if fewer than 17 bytes remain. A batch longer than ``remaining`` is
    reported as truncated.
    """
    found = header_problem(length, magic)
    if found is not None:
        return found[0]
    if magic is None:
        return f"truncated batch header: {remaining} bytes left"
    if LOG_OVERHEAD + length > remaining:
        return f"truncated batch: needs {LOG_OVERHEAD + length} bytes, {remaining} left"
    return None


def frame_buffer(
    buf: bytes | memoryview, at_eof: bool
) -> tuple[int, FramingError | None, int | None]:
    """Find how much of ``buf`` (starting on a batch boundary) is whole batches.

    Returns ``(complete, error, need)``: ``buf[:complete]`` holds whole batches;
    ``error`` is set if the header at ``complete`` is invalid (or truncated while
    ``at_eof``); ``need`` is the total size of the next batch if it is valid but not
    fully in ``buf`` (read at least that much before calling again).
    Positions in ``error`` are relative to ``buf``.
    """
    n = len(buf)
    pos = 0
    while pos < n:
        left = n - pos
        if left < HEADER_UP_TO_MAGIC and not at_eof:
            return pos, None, HEADER_UP_TO_MAGIC
        f = next_frame(buf, pos, n)
        if f.problem is not None:
            return pos, FramingError(pos, f.base_offset, left, f.problem), None
        if f.magic is None:  # at the end, fewer than 17 bytes
            reason = f"truncated batch header: {left} bytes left"
            return pos, FramingError(pos, f.base_offset, left, reason), None
        if not f.complete:
            if not at_eof:
                return pos, None, f.end - pos
            reason = f"truncated batch: needs {f.end - pos} bytes, {left} left"
            return pos, FramingError(pos, f.base_offset, left, reason), None
        pos = f.end
    return pos, None, None


#: A legacy message's first fields (``LegacyRecord.java``): offset, size, crc, magic,
#: attributes; a magic 1 message's timestamp (ms) follows at ``+18``.
_LEGACY_HEAD: Final = struct.Struct(">qiIbb")
_LEGACY_TIMESTAMP: Final = struct.Struct(">q")


def read_batch_head(data: bytes, position: int) -> tuple[BatchHead, int | None] | None:
    """The batch-level fields of the batch at byte ``position`` of ``data``, from its
    header alone (no record is decoded, no checksum checked), for tools that show a
    batch whose records do not decode.

    Returns:
        ``(head, records_count)``: a :class:`~kproto.records._header.BatchHead` and,
        for magic 2, the header's records count (``None`` for legacy messages, whose
        count is known only by decoding them). For a legacy message ``base_offset`` is
        the wrapper's offset and ``last_offset_delta`` 0. A codec id Kafka does not
        define (5-7) stays in ``attributes`` while ``compression`` reads NONE. ``None`` when the header is
        cut short, its length is below 14 bytes, or its magic is not 0, 1 or 2.
    """
    n = len(data)
    if n < position + LOG_OVERHEAD or HEADER.unpack_from(data, position)[1] < 14:
        return None
    magic = data[position + MAGIC_AT] if n > position + MAGIC_AT else -1
    if magic == 2 and n >= position + V2_HEADER.size:
        h = V2Header._make(V2_HEADER.unpack_from(data, position))
        if h.attributes & ATTR_COMPRESSION_MASK > 4:  # keep the real id in attributes
            masked = h._replace(attributes=h.attributes & ~ATTR_COMPRESSION_MASK)
            head = v2_head(position, masked)._replace(attributes=h.attributes)
            return head, h.records_count
        return v2_head(position, h), h.records_count
    if magic not in (0, 1) or n < position + _LEGACY_HEAD.size:
        return None
    offset, length, crc, _, attributes = _LEGACY_HEAD.unpack_from(data, position)
    timestamp = -1
    if magic == 1 and n >= position + _LEGACY_HEAD.size + 8:
        (timestamp,) = _LEGACY_TIMESTAMP.unpack_from(data, position + _LEGACY_HEAD.size)
    ts_type = (
        TimestampType.NO_TIMESTAMP
        if magic == 0
        else TimestampType((attributes & ATTR_LOG_APPEND_TIME) >> 3)
    )
    codec = attributes & ATTR_COMPRESSION_MASK
    head = BatchHead(
        position, offset, length, -1, magic, crc, attributes,
        Compression(codec) if codec <= 4 else Compression.NONE,
        ts_type, False, False, False, 0, timestamp, timestamp, -1, -1, -1,
    )  # fmt: skip
    return head, None


def batch_crc_valid(data: bytes, position: int) -> bool | None:
    """Does the checksum of the batch at ``position`` match its bytes? Magic 2: CRC-32C
    from the attributes to the end of the batch (``DefaultRecordBatch.isValid``);
    magic 0/1: CRC-32 from the magic byte on (``LegacyRecord.isValid``). ``None`` when
    the batch runs past the end of ``data`` or its header is unreadable."""
    if len(data) < position + CRC_AT + 4:
        return None
    length = HEADER.unpack_from(data, position)[1]
    end = position + LOG_OVERHEAD + length
    if length < 14 or end > len(data):
        return None
    magic = data[position + MAGIC_AT]
    if magic == 2:
        stored = _UINT32.unpack_from(data, position + CRC_AT)[0]
        return bool(crc32c.crc32c(data[position + ATTRIBUTES_AT : end]) == stored)
    stored = _UINT32.unpack_from(data, position + LOG_OVERHEAD)[0]
    return bool(zlib.crc32(data[position + MAGIC_AT : end]) == stored)


_UINT32: Final = struct.Struct(">I")


_TOPIC_PARTITION: Final = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_SEGMENT_NAME: Final = re.compile(r"^\d+\.log$")


def parse_topic_partition(
    path: str | os.PathLike[str], *, segment_name_required: bool = True
) -> tuple[str | None, int | None]:
    """Topic and partition from Kafka's log layout ``<topic>-<partition>/<offset>.log``
    (``kafka.log.LocalLog``'s directory naming; topic names may contain ``-``).

    Returns ``(None, None)`` when the folder is not named ``<topic>-<partition>``, or,
    with ``segment_name_required``, when the file name is not a segment name (digits
    and ``.log``).
    """
    p = Path(path)
    if segment_name_required and not _SEGMENT_NAME.match(p.name):
        return None, None
    m = _TOPIC_PARTITION.match(p.parent.name)
    if m is None:
        return None, None
    return m.group("topic"), int(m.group("partition"))


def _base_offset(path: Path) -> int:
    stem = path.name.split(".")[0]
    return int(stem) if stem.isdigit() else -1


def _partition_dirs(folder: Path) -> list[Path]:
    """The ``<topic>-<partition>`` directories of a data directory, by topic then
    partition number."""
    found = []
    for child in folder.iterdir():
        topic, _, part = child.name.rpartition("-")
        if topic and part.isdigit() and child.is_dir():
            found.append((topic, int(part), child))
    return [p for _, _, p in sorted(found)]


def segment_files(folder: Path) -> list[Path]:
    """The ``.log`` segments under ``folder`` in Kafka's order: a partition
    directory's by base offset (the number in the file name); for a data directory,
    every ``<topic>-<partition>`` directory's so, by topic then partition number.

    Raises:
        ValueError: no ``.log`` file there (the folder is named).
    """
    logs = sorted(folder.glob("*.log"), key=_base_offset)
    if not logs:
        logs = [
            log
            for part in _partition_dirs(folder)
            for log in sorted(part.glob("*.log"), key=_base_offset)
        ]
    if not logs:
        raise ValueError(
            f"{folder}: no .log segment files in this directory or its "
            "<topic>-<partition> directories"
        )
    return logs
