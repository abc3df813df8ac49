"""Cut a byte stream into Kafka frames, whatever its slicing (sans-IO).

The stream half of the frame codec in :mod:`kproto.framing`: the blocking and asyncio
connections and the proxy feed it what their sockets return.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from kproto.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    SIZE_PREFIX,
    ConnectionClosedError,
    check_frame_size,
    decode_request,
)

__all__ = ["READ_CHUNK_BYTES", "FrameReader"]


#: The most a shell should read at once while a frame is incomplete (bytes): the
#: buffer grows by at most this much per read, whatever size the prefix claims.
READ_CHUNK_BYTES: Final = 64 * 1024


class FrameReader:
    """Cut a byte stream into frame payloads, whatever its slicing (sans-IO).

    :meth:`feed` takes bytes as they arrive (any chunking, down to one byte);
    :meth:`next_frame` returns each complete payload (the bytes after the size
    prefix) in order, or ``None`` until one is complete. The size prefix is checked
    as soon as its 4 bytes arrive, so an over-large frame is refused before its
    payload is buffered, and the buffer only ever holds bytes that arrived:
    nothing is allocated up front for the size a peer claims.

    Args:
        max_frame_bytes: the largest payload accepted (bytes; default 100 MiB).

    Example::

        >>> reader = FrameReader()
        >>> reader.feed(b"\\x00\\x00"); reader.feed(b"\\x00\\x04abcd\\x00")
        >>> reader.next_frame(), reader.next_frame(), reader.buffered
        (b'abcd', None, 1)

    Raises (from :meth:`feed`):
        FrameError / FrameTooLargeError: a size prefix below 4 or above
            ``max_frame_bytes``; the stream is out of step from then on.
    """

    def __init__(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._size: int | None = None  # payload size of the frame at the front

    @property
    def buffered(self) -> int:
        """Bytes fed and not yet returned as a frame."""
        return len(self._buf)

    @property
    def wanted(self) -> int:
        """How many bytes a shell should read next (bytes, at least 1): what the
        frame at the front still lacks, capped at :data:`READ_CHUNK_BYTES`."""
        need = 4 if self._size is None else 4 + self._size
        return max(1, min(need - len(self._buf), READ_CHUNK_BYTES))

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes from the stream.

        Raises:
            FrameError / FrameTooLargeError: as the class says.
        """
        self._buf += data
        self._check_prefix()

    def _check_prefix(self) -> None:
        if self._size is None and len(self._buf) >= 4:
            (size,) = SIZE_PREFIX.unpack_from(self._buf, 0)
            self._size = check_frame_size(size, self.max_frame_bytes)

    def next_frame(self) -> bytes | None:
        """The next complete payload (without its size prefix), or ``None``."""
        size = self._size
        if size is None or len(self._buf) < 4 + size:
            return None
        with memoryview(self._buf) as view:
            payload = bytes(view[4 : 4 + size])  # one copy, not two
        del self._buf[: 4 + size]
        self._size = None
        self._check_prefix()
        return payload

    def __iter__(self) -> Iterator[bytes]:
        """Every complete payload buffered now, in order."""
        while (payload := self.next_frame()) is not None:
            yield payload

    def requests(self) -> Iterator[tuple[Any, Any]]:
        """``(header, request)`` for every complete request frame buffered now, as
        :func:`kproto.framing.decode_request` gives them (for a broker reading a client stream).

        Raises:
            RequestDecodeError / UnsupportedRequestError: as :func:`kproto.framing.decode_request`;
                the bad frame is consumed, later ones stay buffered.
        """
        for payload in self:
            yield decode_request(payload)

    def eof(self) -> None:
        """The stream ended: fine between frames.

        Raises:
            ConnectionClosedError: a frame was cut off (says how much arrived).
        """
        if self._buf:
            have = len(self._buf) - 4
            raise ConnectionClosedError(
                "the peer closed the connection mid-frame "
                + (
                    f"({len(self._buf)} of 4 size-prefix bytes read)"
                    if self._size is None
                    else f"({have} of {self._size} bytes of a frame read)"
                )
            )
