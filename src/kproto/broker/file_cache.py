"""A bounded, least-recently-used cache of open segment files.

Kafka keeps every segment's file channel open (and relies on a high ``ulimit -n``);
an in-process test broker cannot ask for that, so segment files are opened on use
and at most :data:`DEFAULT_MAX_OPEN_FILES` stay open: an idle partition holds no
file descriptor, and 100,000 partitions need no more than the bound.

Every method runs on the cluster's event-loop thread; a descriptor returned by
:meth:`FileCache.fd` is valid until the next call into the cache.
"""

from __future__ import annotations

import errno
import os
from collections import OrderedDict
from pathlib import Path

__all__ = ["DEFAULT_MAX_OPEN_FILES", "FileCache", "shared_file_cache"]

#: Open segment files kept per cache.
DEFAULT_MAX_OPEN_FILES = 256
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


class FileCache:
    """Open file descriptors keyed by their owner (a segment), at most
    ``max_open`` at once; the least recently used is closed to make room.

    Raises:
        ValueError: ``max_open`` < 1.
    """

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN_FILES) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, got {max_open}")
        self.max_open = max_open
        self._open: OrderedDict[object, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def fd(self, owner: object, path: Path) -> int:
        """The open descriptor of ``path`` for ``owner`` (read-write, created if
        missing, mode 0o644), opening it if needed.

        When the process is out of descriptors (EMFILE/ENFILE) half of the cache is
        closed and the open retried once.

        Raises:
            OSError: the file cannot be opened.
        """
        fd = self._open.get(owner)
        if fd is not None:
            self._open.move_to_end(owner)
            return fd
        while len(self._open) >= self.max_open:
            self._evict_oldest()
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            if err.errno not in _OUT_OF_DESCRIPTORS or not self._open:
                raise
            for _ in range(max(len(self._open) // 2, 1)):
                self._evict_oldest()
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._open[owner] = fd
        return fd

    def close(self, owner: object) -> None:
        """Close ``owner``'s descriptor if it is open."""
        fd = self._open.pop(owner, None)
        if fd is not None:
            os.close(fd)

    def close_all(self) -> None:
        """Close every descriptor."""
        while self._open:
            self._evict_oldest()

    def _evict_oldest(self) -> None:
        _, fd = self._open.popitem(last=False)
        os.close(fd)


_SHARED = FileCache()


def shared_file_cache() -> FileCache:
    """The cache of logs opened without one (a bare :class:`PartitionLog`)."""
    return _SHARED
