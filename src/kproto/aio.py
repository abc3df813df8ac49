"""asyncio counterparts of :mod:`kproto.connection`.

Frame helpers over ``asyncio`` streams, and :class:`AsyncConnection`, the asyncio
twin of :class:`kproto.connection.Connection` (also importable from there). Like
its blocking twin it is a building block: one connection, one request in flight
(concurrent ``send`` calls wait on a lock), no retries, no reconnects, no pooling.

Example::

    import asyncio
    from kproto.connection import AsyncConnection
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
import ssl
from collections.abc import Mapping
from types import TracebackType
from typing import Any, TypeVar

from kproto.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    SIZE_PREFIX,
    ConnectionClosedError,
    KafkaConnectionError,
    NegotiationState,
    RequestTimeoutError,
    ResponseDecodeError,
    api_versions_requests,
    check_frame_size,
    decode_response,
    encode_request,
    expects_response,
    response_class_for,
)

__all__ = [
    "AsyncConnection",
    "read_frame",
    "write_frame",
    "encode_request",
    "decode_response",
]

E = TypeVar("E")


async def read_frame(
    reader: asyncio.StreamReader, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
) -> bytes:
    """Read one frame and return its payload (the bytes after the int32 size).

    Raises:
        ConnectionClosedError: EOF before a complete frame.
        FrameError / FrameTooLargeError: the size prefix is below 4 or above
            ``max_frame_bytes`` (bytes).
    """
    try:
        (size,) = SIZE_PREFIX.unpack(await reader.readexactly(4))
        check_frame_size(size, max_frame_bytes)
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as err:
        raise ConnectionClosedError(
            f"the peer closed the connection ({len(err.partial)} of "
            f"{err.expected} bytes read)"
        ) from err


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


class AsyncConnection(NegotiationState):
    """An asyncio connection to one broker: :class:`kproto.connection.Connection`'s
    twin, with ``async`` :meth:`send`, :meth:`negotiate`, :meth:`request` and
    :meth:`close`.

    Create it with ``await AsyncConnection.open(host, port, ...)``, or construct
    it and ``await conn.connect()``, or use ``async with AsyncConnection(...) as
    conn`` (which connects on entry and closes on exit). Arguments and
    attributes are those of :class:`~kproto.connection.Connection`; ``timeout_s``
    bounds connecting and each whole request/response exchange (seconds).
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str | None = "kproto",
        ssl_context: ssl.SSLContext | None = None,
        timeout_s: float = 30.0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        super().__init__(
            host,
            port,
            client_id=client_id,
            ssl_context=ssl_context,
            timeout_s=timeout_s,
            max_frame_bytes=max_frame_bytes,
        )
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = "kproto",
        ssl_context: ssl.SSLContext | None = None,
        timeout_s: float = 30.0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> AsyncConnection:
        """Construct and connect.

        Raises:
            KafkaConnectionError: the connection or TLS handshake failed.
            RequestTimeoutError: connecting took longer than ``timeout_s``.
        """
        conn = cls(
            host,
            port,
            client_id=client_id,
            ssl_context=ssl_context,
            timeout_s=timeout_s,
            max_frame_bytes=max_frame_bytes,
        )
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
        except TimeoutError as err:
            raise RequestTimeoutError(
                f"connecting to {self.host}:{self.port} timed out after {self.timeout_s} s"
            ) from err
        except OSError as err:
            raise KafkaConnectionError(
                f"cannot connect to {self.host}:{self.port}: {err}"
            ) from err

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

    def _abort(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()

    async def __aenter__(self) -> AsyncConnection:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<AsyncConnection {self.host}:{self.port} {state}>"

    async def _exchange(self, frame: bytes, want_response: bool) -> bytes | None:
        reader, writer = self._reader, self._writer
        if reader is None or writer is None:
            raise ConnectionClosedError(
                f"connection to {self.host}:{self.port} is closed"
            )
        await write_frame(writer, frame)
        if not want_response:
            return None
        return await read_frame(reader, max_frame_bytes=self.max_frame_bytes)

    async def send(self, request: Any, *, api_version: int | None = None) -> Any:
        """Send one request and return the decoded response body.

        Behaves as :meth:`kproto.connection.Connection.send` (same errors; Produce
        with ``acks=0`` returns ``None``). ``timeout_s`` bounds the whole exchange.
        On any error except :class:`ResponseDecodeError`, ``TypeError`` and
        ``EncodeError`` the connection is closed; so is it on cancellation.
        """
        return await self._send(request, api_version, True)

    async def _send(
        self, request: Any, api_version: int | None, warn_leftover: bool
    ) -> Any:
        response_cls = response_class_for(request, api_version)
        async with self._lock:
            correlation_id = self._next_correlation_id()
            frame = encode_request(
                request,
                correlation_id=correlation_id,
                client_id=self.client_id,
                api_version=api_version,
            )
            try:
                payload = await asyncio.wait_for(
                    self._exchange(frame, expects_response(request)), self.timeout_s
                )
                if payload is None:
                    return None
                return decode_response(
                    response_cls,
                    payload,
                    expected_correlation_id=correlation_id,
                    warn_leftover=warn_leftover,
                )
            except ResponseDecodeError:
                raise
            except TimeoutError as err:
                self._abort()
                raise RequestTimeoutError(
                    f"no response from {self.host}:{self.port} within {self.timeout_s} s"
                ) from err
            except KafkaConnectionError:
                self._abort()
                raise
            except OSError as err:
                self._abort()
                raise ConnectionClosedError(
                    f"connection to {self.host}:{self.port} failed: {err}"
                ) from err
            except asyncio.CancelledError:
                self._abort()
                raise

    async def negotiate(
        self, *, caps: Mapping[int, int] | None = None, allow_unstable: bool = False
    ) -> dict[int, int]:
        """ApiVersions v3, falling back to v0; as
        :meth:`kproto.connection.Connection.negotiate`.

        Returns:
            ``{api_key: version}`` (also kept in :attr:`versions`).
        """
        v3, v0 = api_versions_requests()
        try:
            response = await self._send(v3, None, False)
            if response.error_code == 0:
                return self._store(response, 3, caps, allow_unstable)
        except ResponseDecodeError:
            pass
        except ConnectionClosedError:
            await self.connect()
        return self._store(await self.send(v0), 0, caps, allow_unstable)

    async def request(self, api_key: int, /, **fields: Any) -> Any:
        """Build the negotiated version's request and send it; as
        :meth:`kproto.connection.Connection.request`."""
        if self.broker_api_versions is None:
            await self.negotiate()
        return await self.send(self.build_request(api_key, fields))
