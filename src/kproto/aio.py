"""asyncio counterparts of :mod:`kproto.connection`.

Frame helpers over ``asyncio`` streams, and :class:`AsyncConnection`, the asyncio
twin of :class:`kproto.connection.Connection` (this module is its only home, so the
blocking client never loads asyncio). Like its blocking twin it is a
building block and a thin shell over :class:`kproto.negotiation.NegotiationState`:
one connection, one request in flight (concurrent ``send`` calls wait on a lock),
no retries, no reconnects, no pooling.

Example::

    import asyncio
    from kproto.aio import AsyncConnection
    from kproto.index import ApiKey

    async def main() -> None:
        async with await AsyncConnection.open("127.0.0.1", 9092) as conn:
            await conn.negotiate()
            md = await conn.request(ApiKey.METADATA, topics=None)
            print([b.node_id for b in md.brokers])

    asyncio.run(main())
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kproto._closing import AsyncClosing
from kproto.frame_reader import FrameReader
from kproto.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    ConnectionClosedError,
    KafkaConnectionError,
    ResponseFrame,
    decode_response,
    encode_request,
)
from kproto.negotiation import (
    ApiVersionsNegotiation,
    NegotiationState,
)
from kproto.sasl import SaslAuthenticationError

__all__ = [
    "AsyncConnection",
    "read_frame",
    "write_frame",
    "encode_request",
    "decode_response",
]


async def read_frame(
    reader: asyncio.StreamReader, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
) -> bytes:
    """Read one frame and return its payload (the bytes after the int32 size).

    Bytes are cut by a :class:`kproto.frame_reader.FrameReader` and read in chunks of
    at most 64 KiB, never past the end of the frame: the buffer grows as the
    payload arrives, whatever size the prefix claims.

    Raises:
        ConnectionClosedError: EOF before a complete frame.
        FrameError / FrameTooLargeError: the size prefix is below 4 or above
            ``max_frame_bytes`` (bytes).
    """
    frames = FrameReader(max_frame_bytes=max_frame_bytes)
    while (payload := frames.next_frame()) is None:
        try:
            data = await reader.readexactly(frames.wanted)
        except asyncio.IncompleteReadError as err:
            frames.feed(err.partial)
            frames.eof()
            raise ConnectionClosedError("the peer closed the connection") from err
        frames.feed(data)
    return payload


async def write_frame(writer: asyncio.StreamWriter, frame: bytes) -> None:
    """Write one complete frame (size prefix included, as from
    :func:`kproto.framing.encode_request`) and wait until it is flushed.

    Raises:
        ConnectionClosedError: the transport is closing or the write failed.
    """
    if writer.is_closing():
        raise ConnectionClosedError("the connection is closed")
    try:
        writer.write(frame)
        await writer.drain()
    except (ConnectionError, OSError) as err:
        raise ConnectionClosedError(f"write failed: {err}") from err


class AsyncConnection(NegotiationState, AsyncClosing):
    """An asyncio connection to one broker: :class:`kproto.connection.Connection`'s
    twin, with ``async`` :meth:`send`, :meth:`negotiate`, :meth:`request` and
    :meth:`close`.

    Create it with ``await AsyncConnection.open(host, port, ...)``, or construct
    it and ``await conn.connect()``, or use ``async with AsyncConnection(...) as
    conn`` (which connects on entry and closes on exit). Arguments and
    attributes are those of :class:`kproto.negotiation.NegotiationState`;
    ``timeout_s`` bounds connecting and each whole request/response exchange
    (seconds).
    """

    def _init_transport(self) -> None:
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()
        self._auth_lock = asyncio.Lock()

    @classmethod
    async def open(cls, host: str, port: int, **settings: Any) -> AsyncConnection:
        """Construct (``settings`` as the constructor's keywords) and connect.

        Raises:
            KafkaConnectionError: the connection or TLS handshake failed.
            RequestTimeoutError: connecting took longer than ``timeout_s``.
        """
        conn = cls(host, port, **settings)
        await conn.connect()
        return conn

    async def connect(self) -> None:
        """Open the TCP (or TLS) connection; a no-op if already open.

        Raises:
            KafkaConnectionError: the connection or TLS handshake failed.
            RequestTimeoutError: connecting took longer than ``timeout_s``.
        """
        if self._writer is not None:
            return
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=self.ssl_context,
                    server_hostname=self.host if self.ssl_context is not None else None,
                    limit=2**20,
                ),
                self.timeout_s,
            )
        except OSError as err:
            raise self._connect_error(err) from err
        self._new_transport()

    @property
    def closed(self) -> bool:
        """True when not connected (never connected, closed, or broken by an error)."""
        return self._writer is None

    async def close(self) -> None:
        """Close the connection. Idempotent; never raises."""
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), 5.0)
            except (OSError, TimeoutError):
                pass

    def detach(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Hand over the open (negotiated, authenticated) streams and leave this
        connection closed; :class:`kproto.proxy.Proxy` pumps frames over them.

        Raises:
            ConnectionClosedError: not connected.
        """
        reader, writer = self._reader, self._writer
        if reader is None or writer is None:
            raise self._closed_error()
        self._writer, self._reader = None, None
        return reader, writer

    def _abort(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()

    async def __aenter__(self) -> AsyncConnection:
        await self.connect()
        return self

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<AsyncConnection {self.host}:{self.port} {state}>"

    async def send(self, request: Any, *, api_version: int | None = None) -> Any:
        """Send one request and return the decoded response body.

        Behaves as :meth:`kproto.connection.Connection.send` (same errors; Produce
        with ``acks=0`` returns ``None``). ``timeout_s`` bounds the whole exchange.
        On any error except :class:`ResponseDecodeError`, ``TypeError`` and
        ``EncodeError`` the connection is closed; so is it on cancellation.
        """
        frame = await self.send_frame(request, api_version=api_version)
        return None if frame is None else frame.response

    async def send_frame(
        self,
        request: Any,
        *,
        api_version: int | None = None,
        warn_leftover: bool = True,
    ) -> ResponseFrame | None:
        """As :meth:`send`, but return the whole :class:`kproto.framing.ResponseFrame`."""
        if self._needs_auth(request) is not None:
            async with self._auth_lock:  # one task runs SASL; the others wait for it
                need = self._needs_auth(request)
                if need == "negotiate":
                    await self.negotiate()
                elif need == "authenticate":
                    await self.authenticate()
        async with self._lock:
            reader, writer = self._reader, self._writer
            if reader is None or writer is None:
                raise self._closed_error()
            pending = self._prepare(request, api_version)
            try:
                async with asyncio.timeout(self.timeout_s):
                    await write_frame(writer, pending.frame)
                    if not pending.expects_response:
                        return None
                    payload = await read_frame(
                        reader, max_frame_bytes=self.max_frame_bytes
                    )
                return self._complete(pending, payload, warn_leftover)
            except asyncio.CancelledError:
                self._abort()
                raise
            except Exception as err:
                failure = self._failure(err)
                if failure is err:
                    raise
                raise failure from err

    async def negotiate(
        self, *, caps: Mapping[int, int] | None = None, allow_unstable: bool = False
    ) -> dict[int, int]:
        """ApiVersions v3, falling back as
        :meth:`kproto.connection.Connection.negotiate` does.

        Returns:
            ``{api_key: version}`` (also kept in :attr:`versions`).
        """
        negotiation = ApiVersionsNegotiation()
        while negotiation.request is not None:
            if negotiation.reconnect:
                await self.connect()
            try:
                frame = await self.send_frame(negotiation.request, warn_leftover=False)
                negotiation.receive(frame)
            except KafkaConnectionError as err:
                negotiation.fail(err)
        versions = self._store(negotiation, caps, allow_unstable)
        if self.sasl is not None and not self.authenticated:
            await self.authenticate()
        return versions

    async def authenticate(self) -> None:
        """SASL authentication; as :meth:`kproto.connection.Connection.authenticate`
        (the connection is closed when it fails)."""
        exchange = self._sasl_exchange()
        try:
            while exchange.request is not None:
                frame = await self.send_frame(exchange.request)
                assert frame is not None  # SASL requests are always answered
                exchange.receive(frame.response)
        except SaslAuthenticationError:
            await self.close()
            raise
        self._authenticated_by(exchange)

    async def request(self, api_key: int, /, **fields: Any) -> Any:
        """Build the negotiated version's request and send it; as
        :meth:`kproto.connection.Connection.request`."""
        if self.broker_api_versions is None:
            await self.negotiate()
        return await self.send(self.build_request(api_key, fields))
