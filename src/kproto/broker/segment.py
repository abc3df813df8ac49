"""One segment of a partition log: a ``<base offset>.log`` file and the in-memory
index of its batches (Kafka's ``LogSegment``; this broker keeps no ``.index`` or
``.timeindex`` files and rebuilds the index on recovery, see
:mod:`kproto.broker.log`)."""

from __future__ import annotations

import errno
import logging
import os
from array import array
from pathlib import Path

import attrs

from kproto.broker.file_cache import FileCache, shared_file_cache

__all__ = ["Extent", "Segment", "segment_file_name"]

log = logging.getLogger("kproto.broker")


def segment_file_name(base_offset: int) -> str:
    """``00000000000000000042.log`` for base offset 42 (Kafka's 20-digit names)."""
    return f"{base_offset:020d}.log"


class Segment:
    """One ``.log`` file and the index of its batches; the file is opened on use
    through ``files`` (a bounded cache: an idle segment holds no descriptor)."""

    def __init__(
        self, path: Path, base_offset: int, files: FileCache | None = None
    ) -> None:
        self.path = path
        self.files = files if files is not None else shared_file_cache()
        self.base_offset = base_offset
        self.size = 0
        self.offsets = array("q")  # base offset of each batch
        self.last_offsets = array("q")  # last offset of each batch
        self.positions = array("q")  # file position of each batch
        self.sizes = array("q")  # batch size in bytes, overhead included
        self.max_timestamps = array("q")  # ms

    @property
    def fd(self) -> int:
        """The open descriptor (valid until the next use of the file cache).

        Raises:
            OSError: the file cannot be opened.
        """
        return self.files.fd(self, self.path)

    def create(self) -> None:
        """Create the (empty) file now, without keeping it open."""
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644))

    def close(self) -> None:
        self.files.close(self)

    def add(
        self, batch_bytes: bytes | bytearray, base: int, last: int, max_ts: int
    ) -> None:
        """Write ``batch_bytes`` at the end of the file, then index it.

        ``os.pwrite`` may write less than asked (a full disk, a signal): it is
        repeated until every byte is written; an error or a write of 0 bytes
        truncates the file back to its old size and raises, so nothing is indexed
        (or acknowledged) that is not wholly on disk.

        Raises:
            OSError: the write failed (ENOSPC, EIO ...).
        """
        view = memoryview(batch_bytes)
        total = len(view)
        written = 0
        try:
            fd = self.fd
            while written < total:
                n = os.pwrite(fd, view[written:], self.size + written)
                if n <= 0:
                    raise OSError(
                        errno.EIO,
                        f"pwrite wrote no bytes at {self.size + written} of {self.path}",
                    )
                written += n
        except OSError:
            # a failed pwrite may still have written some bytes: cut them off
            try:
                os.truncate(self.path, self.size)
            except OSError:
                log.exception("could not truncate %s after a failed write", self.path)
            raise
        self.index(base, last, self.size, total, max_ts)
        self.size += total

    def index(
        self, base: int, last: int, position: int, size: int, max_ts: int
    ) -> None:
        self.offsets.append(base)
        self.last_offsets.append(last)
        self.positions.append(position)
        self.sizes.append(size)
        self.max_timestamps.append(max_ts)

    @property
    def next_offset(self) -> int:
        return self.last_offsets[-1] + 1 if self.last_offsets else self.base_offset

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

    def read_all(self) -> bytes:
        """The file's ``size`` bytes (without opening it if it is empty)."""
        return self.read(0, self.size) if self.size else b""


@attrs.frozen
class Extent:
    """Whole batches of one segment: ``size`` bytes at byte ``position``, ending
    before offset ``end_offset`` (:meth:`kproto.broker.log.PartitionLog.read_extent`).
    """

    segment: Segment
    position: int
    size: int
    end_offset: int

    def read(self) -> bytes:
        """The batches' bytes (one ``pread``).

        Raises:
            OSError: the segment cannot be opened or read.
        """
        return self.segment.read(self.position, self.size)
