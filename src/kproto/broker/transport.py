"""A broker connection's socket side: frames in, responses out, no stream layer.

:class:`FrameConnection` is an :class:`asyncio.BufferedProtocol`: the transport
receives straight into one growing ``bytearray`` (``recv_into``, no ``bytes`` per
read), the frames are cut there by their size prefixes with the rules of
:class:`kproto.frame_reader.FrameReader` (:func:`kproto.framing.check_frame_size`),
and responses go to ``transport.write`` as they are, waiting only while the
transport's write buffer is over its high-water mark. It replaces
``asyncio.StreamReader``/``StreamWriter`` (two ``readexactly`` awaits, a stream
buffer copy and a timer per frame) under :class:`kproto.broker.server.NodeServer`.

Bounds (what the stream layer gave, kept):

* a size prefix below 4 or over ``max_frame_bytes`` (``socket.request.max.bytes``)
  stops reading as soon as it is the front frame's (the frames before it are
  served first) and fails the next :meth:`~FrameConnection.read_frame` with
  :class:`~kproto.framing.FrameError`, before the claimed size is allocated;
* the buffer only grows with what arrived (at most doubling, never to a size a peer
  claims), and reading pauses once a complete frame waits with
  :data:`READ_AHEAD_BYTES` more behind it: a connection whose requests are not
  being taken (one in flight, a full request queue, a muted client) reads
  nothing more;
* :meth:`~FrameConnection.read_frame` raises :class:`TimeoutError` when no complete
  frame arrived within ``idle_s`` of starting to wait (Kafka's
  ``connections.max.idle.ms``: silent, or stalled mid-frame), with one timer per
  connection re-armed lazily rather than one per frame.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any, Final

from kproto.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    SIZE_PREFIX,
    ConnectionClosedError,
    FrameError,
    check_frame_size,
)

__all__ = [
    "FrameConnection",
    "HEAP_BLOCK_BYTES",
    "MIN_READ_BYTES",
    "READ_AHEAD_BYTES",
    "SHRINK_BYTES",
    "warm_allocator",
]

#: The least free space offered to a read (bytes); the buffer starts this big.
MIN_READ_BYTES: Final = 16 * 1024
#: Below this much free space the buffer is compacted or grown before a read.
_LOW_FREE_BYTES: Final = 4096
#: Bytes read past a complete frame that is not yet taken before reading pauses.
READ_AHEAD_BYTES: Final = 128 * 1024
#: An emptied buffer larger than this is dropped (a large request's memory is
#: not kept for the connection's life).
SHRINK_BYTES: Final = 1024 * 1024

#: Blocks up to this size come from the heap after :func:`warm_allocator`.
HEAP_BLOCK_BYTES: Final = 256 * 1024

_unpack_size = SIZE_PREFIX.unpack_from


def warm_allocator(size: int = HEAP_BLOCK_BYTES) -> None:
    """Let blocks of up to ``size`` bytes come from the heap, not fresh mappings.

    glibc's ``malloc`` maps a block over its mmap threshold (128 KiB at start) anew
    each time, paying a page fault per 4 KiB touched, and raises the threshold to
    the size of the largest mapped block freed. Decompressing a produced batch
    allocated such blocks on every request (~70 page faults per 19 KB lz4 request,
    80% more broker CPU, before lz4 frames went to a scratch buffer); asyncio's stream reader raised the threshold by accident,
    allocating 256 KiB per ``recv``, and :class:`FrameConnection` reads into its
    own buffer instead, so the node does it once on start: one block of ``size``
    allocated (``calloc``: no page touched) and freed. No higher by default: larger
    blocks from the heap may stay resident after they are freed (peak RSS). Elsewhere
    than glibc this costs one allocation and does nothing more.
    """
    block = bytes(size)  # calloc'ed: no page touched
    del block


class FrameConnection(asyncio.BufferedProtocol):
    """One accepted connection: frames read into one buffer, responses written to
    the transport.

    Args:
        on_connect: called with this connection once the transport is made (the
            server starts the connection's task there).
        max_frame_bytes: the largest frame payload accepted (bytes).
        tls: the listener will run a TLS handshake (:meth:`start_tls`) first:
            nothing is read before it.

    Attributes:
        transport: the transport (after :meth:`start_tls`, the TLS one).
        write_paused: the transport's write buffer is over its high-water mark
            (await :meth:`drain`).
    """

    transport: Any

    def __init__(
        self,
        on_connect: Callable[[FrameConnection], object],
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        tls: bool = False,
    ) -> None:
        self._on_connect = on_connect
        self.max_frame_bytes = max_frame_bytes
        self._tls = tls
        self._buf = bytearray()
        self._start = 0  # the front frame's size prefix starts here
        self._end = 0  # bytes received end here
        self._size = -1  # the front frame's payload size (-1: prefix incomplete)
        self._error: FrameError | None = None
        self._eof = False
        self._lost = False
        self._reading_paused = False
        self.write_paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._drain_waiter: asyncio.Future[None] | None = None
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._closed: asyncio.Future[None] | None = None

    # -- asyncio.BufferedProtocol ------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self._loop = asyncio.get_running_loop()
        self._closed = self._loop.create_future()
        if self._tls:
            transport.pause_reading()  # the handshake reads first (start_tls)
        self._on_connect(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        buf = self._buf
        start, end = self._start, self._end
        used = end - start
        if used == 0 and start:
            self._start = self._end = start = end = 0
        if self._size >= 0:
            need = 4 + self._size - used  # <= 0: the front frame is complete
        else:
            need = 4 - used
        # make room when little is left, or when the front frame cannot complete in
        # it: at least MIN_READ_BYTES, for a large frame up to what it lacks but no
        # more than what already arrived (doubling), whatever size it claims
        free = len(buf) - end
        if free < _LOW_FREE_BYTES or (need > free and free < used):
            want = max(MIN_READ_BYTES, min(need, used))
            if start and len(buf) - used >= want:
                buf[:used] = buf[start:end]  # move the tail to the front (a copy)
            else:
                grown = bytearray(used + want)
                grown[:used] = memoryview(buf)[start:end]
                self._buf = buf = grown
            self._start, self._end = start, end = 0, used
        return memoryview(buf)[end:]

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        if self._size < 0 and not self._parse_prefix():
            return
        size = self._size
        if size >= 0 and self._end - self._start >= 4 + size:
            if self._end - self._start - 4 - size >= READ_AHEAD_BYTES:
                self._pause_reading()
            self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        # keep the socket open for the response to a request that arrived with the
        # EOF (a TLS transport cannot stay half open)
        return not self._tls

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._wake()
        waiter = self._drain_waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionResetError("connection lost"))
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        waiter = self._drain_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- reading -------------------------------------------------------------------

    def _parse_prefix(self) -> bool:
        """Read the front frame's size prefix if it arrived; False on a bad one
        (reading stops, the next :meth:`read_frame` raises)."""
        if self._end - self._start < 4:
            return True
        (size,) = _unpack_size(self._buf, self._start)
        try:
            self._size = check_frame_size(size, self.max_frame_bytes)
        except FrameError as err:
            self._error = err
            self._pause_reading()
            self._wake()
            return False
        return True

    def _pause_reading(self) -> None:
        if not self._reading_paused:
            self._reading_paused = True
            if not self._lost:
                self.transport.pause_reading()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _take(self) -> bytes | None:
        """The front frame's payload if complete (the buffer moves past it)."""
        size = self._size
        start = self._start
        if size < 0 or self._end - start < 4 + size:
            if self._error is not None:
                raise self._error
            if self._eof or self._lost:
                self._closed_mid_frame()
            return None
        with memoryview(self._buf) as view:
            payload = bytes(view[start + 4 : start + 4 + size])
        self._start = start = start + 4 + size
        self._size = -1
        if self._end == start:
            self._start = self._end = 0
            if len(self._buf) > SHRINK_BYTES:
                self._buf = bytearray()
        else:
            self._parse_prefix()
        if self._reading_paused and self._error is None:
            size = self._size
            if size < 0 or self._end - self._start - 4 - size < READ_AHEAD_BYTES:
                self._reading_paused = False
                if not self._lost:
                    self.transport.resume_reading()
        return payload

    def _closed_mid_frame(self) -> None:
        used = self._end - self._start
        if not used:
            raise ConnectionClosedError("the peer closed the connection")
        raise ConnectionClosedError(
            "the peer closed the connection mid-frame "
            + (
                f"({used} of 4 size-prefix bytes read)"
                if self._size < 0
                else f"({used - 4} of {self._size} bytes of a frame read)"
            )
        )

    async def read_frame(self, idle_s: float) -> bytes:
        """The next frame's payload (the bytes after its size prefix).

        Raises:
            TimeoutError: no complete frame within ``idle_s`` (seconds) of the call.
            FrameError / FrameTooLargeError: the size prefix is below 4 or above
                ``max_frame_bytes``.
            ConnectionClosedError: the peer closed the connection (possibly
                mid-frame, which the message says).
        """
        payload = self._take()
        if payload is not None:
            return payload
        loop = self._loop
        self._deadline = loop.time() + idle_s
        if self._timer is None:
            self._timer = loop.call_at(self._deadline, self._check_idle)
        while True:
            waiter = self._waiter = loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
            payload = self._take()
            if payload is not None:
                return payload

    def _check_idle(self) -> None:
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return  # not waiting: the next read_frame arms the timer again
        if self._loop.time() >= self._deadline:
            waiter.set_exception(TimeoutError())
        else:
            self._timer = self._loop.call_at(self._deadline, self._check_idle)

    # -- writing and closing ---------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Hand ``data`` to the transport (sent at once when the socket takes it,
        else buffered by the transport until it does).

        Raises:
            ConnectionResetError: the connection was lost.
        """
        if self._lost:
            raise ConnectionResetError("connection lost")
        self.transport.write(data)

    async def drain(self) -> None:
        """Wait until the transport's write buffer is under its low-water mark.

        Raises:
            ConnectionResetError: the connection was lost.
        """
        if self._lost:
            raise ConnectionResetError("connection lost")
        if not self.write_paused:
            return
        waiter = self._drain_waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._drain_waiter = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """The transport's ``get_extra_info`` (``peername``, ``peercert``, ...)."""
        return self.transport.get_extra_info(name, default)

    async def start_tls(
        self, sslcontext: ssl.SSLContext, *, ssl_handshake_timeout: float
    ) -> None:
        """Run the server side of a TLS handshake; frames are read through it after.

        Raises:
            ssl.SSLError / OSError / TimeoutError: the handshake failed (the
                connection is closed then).
        """
        try:
            self.transport = await self._loop.start_tls(
                self.transport,
                self,
                sslcontext,
                server_side=True,
                ssl_handshake_timeout=ssl_handshake_timeout,
            )
        except BaseException:
            self._lost = (
                True  # start_tls closed the socket; this protocol hears no more
            )
            raise
        self._reading_paused = False

    def close(self) -> None:
        """Close the transport (what was written is flushed first)."""
        self.transport.close()

    async def wait_closed(self) -> None:
        """Wait until the connection is lost (after :meth:`close`)."""
        if not self._lost and self._closed is not None:
            await self._closed
