"""Header-only framing of Kafka log segment files (no Spark, no decoding).

Every legacy message set entry (magic 0/1) and every v2 record batch starts with
``int64 offset, int32 length``; the entry occupies ``12 + length`` bytes and its magic
byte is at ``+16``. Walking those headers finds batch boundaries without reading the
batches, which is how segment files are split into byte ranges and how a reader keeps
each decode call on whole batches. The header checks themselves
(:func:`check_header`, :func:`frame_buffer`, :class:`FramingError`) are
:mod:`kproto.records.segments`', shared with the record decoder; this module adds the
files: finding them, scanning them and cutting them into ranges.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs

from kproto.records.segments import (
    HEADER,
    HEADER_UP_TO_MAGIC,
    MAGIC_AT,
    FramingError,
    check_header,
    frame_buffer,
    parse_topic_partition,
)

__all__ = [
    "HEADER",
    "SegmentFile",
    "FramingError",
    "ByteRange",
    "check_header",
    "find_segment_files",
    "parse_topic_partition",
    "scan_file",
    "split_file",
    "frame_buffer",
]


@attrs.frozen(slots=True)
class SegmentFile:
    """One ``.log`` file to read.

    Attributes:
        path: absolute path.
        size: size in bytes when found.
        topic, partition: from the Kafka directory layout
            ``<topic>-<partition>/<20-digit base offset>.log``, else ``None``.
    """

    path: str
    size: int
    topic: str | None
    partition: int | None


@attrs.frozen(slots=True)
class ByteRange:
    """``[start, end)`` of one segment file, starting and (normally) ending on batch
    boundaries. A range whose framing breaks is read up to the break and the rest is
    reported as corrupt."""

    path: str
    start: int
    end: int
    topic: str | None
    partition: int | None


def find_segment_files(paths: Iterable[str | os.PathLike[str]]) -> list[SegmentFile]:
    """Resolve files and folders (searched recursively for ``*.log``) to segment files.

    Files named explicitly are taken whatever their suffix. Duplicates are removed;
    folder contents are sorted by path.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    seen: set[str] = set()
    found: list[SegmentFile] = []
    for raw in paths:
        p = Path(raw).expanduser().absolute()
        if p.is_dir():
            candidates = sorted(q for q in p.rglob("*.log") if q.is_file())
        elif p.is_file():
            candidates = [p]
        else:
            raise FileNotFoundError(f"no such file or folder: {raw}")
        for q in candidates:
            key = str(q)
            if key in seen:
                continue
            seen.add(key)
            topic, partition = parse_topic_partition(q)
            found.append(SegmentFile(key, q.stat().st_size, topic, partition))
    return found


def _read_header(f: object, pos: int, end: int) -> tuple[int, int, int | None] | None:
    assert hasattr(f, "seek") and hasattr(f, "read")
    f.seek(pos)
    raw: bytes = f.read(min(HEADER_UP_TO_MAGIC, end - pos))
    if len(raw) < HEADER.size:
        return None
    offset, length = HEADER.unpack_from(raw)
    magic = raw[MAGIC_AT] if len(raw) > MAGIC_AT else None
    return offset, length, magic


def scan_file(
    path: str, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, int] | FramingError]:
    """Walk batch headers of ``path`` from ``start`` to ``end`` (default: file size).

    Yields ``(position, total size)`` per batch (``total = 12 + length``), reading 17
    bytes per batch. Stops after yielding a :class:`FramingError` if a header is
    invalid or the last batch is truncated.

    Raises:
        OSError: the file cannot be read.
    """
    if end is None:
        end = os.path.getsize(path)
    with open(path, "rb", buffering=0) as f:
        pos = start
        while pos < end:
            header = _read_header(f, pos, end)
            if header is None:
                yield FramingError(
                    pos,
                    None,
                    end - pos,
                    f"truncated batch header: {end - pos} bytes left",
                )
                return
            offset, length, magic = header
            reason = check_header(length, magic, end - pos)
            if reason is not None:
                yield FramingError(pos, offset, end - pos, reason)
                return
            yield pos, 12 + length
            pos += 12 + length


def split_file(seg: SegmentFile, split_bytes: int) -> list[ByteRange]:
    """Cut one file into ranges of about ``split_bytes`` at batch boundaries.

    Files no larger than ``split_bytes`` are one range without a scan. A framing error
    ends the scan; the last range then runs to the end of the file so the reader
    reports the unreadable rest.
    """
    if seg.size <= split_bytes:
        return [ByteRange(seg.path, 0, seg.size, seg.topic, seg.partition)]
    ranges: list[ByteRange] = []
    range_start = 0
    for item in scan_file(seg.path, 0, seg.size):
        if isinstance(item, FramingError):
            break
        pos, total = item
        if pos > range_start and pos + total - range_start > split_bytes:
            ranges.append(
                ByteRange(seg.path, range_start, pos, seg.topic, seg.partition)
            )
            range_start = pos
    ranges.append(ByteRange(seg.path, range_start, seg.size, seg.topic, seg.partition))
    return ranges
