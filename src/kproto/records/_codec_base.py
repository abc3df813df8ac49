"""What the codecs share: optional accelerators, the thread's scratch buffer, the
size-limit error (see :mod:`kproto.records._codecs`)."""

from __future__ import annotations

import importlib
import threading
from typing import Any

from kproto.exceptions import DecodeError

__all__ = ["SizeLimitError"]


def _optional(name: str) -> Any:
    """The module ``name`` when installed (the ``speed`` extra), else ``None``."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - depends on the install
        return None


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
