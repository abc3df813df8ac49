"""A thin blocking connection to one Kafka broker.

:class:`Connection` is a building block, not a client: one TCP (optionally TLS)
socket, one request in flight at a time, no retries, no reconnects, no pooling, no
metadata cache, no routing to partition leaders. It frames requests, pairs
responses by correlation id and decodes them with the generated classes; what to
send where, and what to do about error codes in a response, is up to the caller.

Example::

    from kproto.connection import Connection
    from kproto.index import ApiKey

    with Connection("127.0.0.1", 9092) as conn:
        conn.negotiate()                       # ApiVersions v3, falling back to v0
        md = conn.request(ApiKey.METADATA, topics=[{"name": "events"}])
        for broker in md.brokers:
            print(broker.node_id, broker.host, broker.port)

Every error raised by the connection itself is a :class:`KafkaConnectionError`;
broker error *codes* are returned inside the decoded responses (see
:class:`kproto.errors.ErrorCode`). Leftover bytes after a response body are logged
as a warning on the ``kproto.connection`` logger.

The asyncio counterpart is :class:`AsyncConnection` (defined in :mod:`kproto.aio`).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from kproto.aio import AsyncConnection
from kproto.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    SIZE_PREFIX,
    ConnectionClosedError,
    CorrelationIdMismatchError,
    FrameError,
    FrameTooLargeError,
    KafkaConnectionError,
    NegotiationState,
    NotNegotiatedError,
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
    "DEFAULT_MAX_FRAME_BYTES",
    "AsyncConnection",
    "Connection",
    "ConnectionClosedError",
    "CorrelationIdMismatchError",
    "FrameError",
    "FrameTooLargeError",
    "KafkaConnectionError",
    "NotNegotiatedError",
    "RequestTimeoutError",
    "ResponseDecodeError",
]


class Connection(NegotiationState):
    """A blocking connection to one broker; see the module docstring.

    Args:
        host: broker host name or address.
        port: broker port.
        client_id: the ``client_id`` of every request header (v1/v2 headers).
        ssl_context: wrap the socket in TLS with this context (server name = host).
        timeout_s: seconds for connecting and for each socket operation; on expiry
            :class:`RequestTimeoutError` is raised and the connection closed.
        max_frame_bytes: refuse response frames larger than this many bytes
            (default 100 MiB) with :class:`FrameTooLargeError`.

    Attributes:
        versions: after :meth:`negotiate`, ``{api_key: version}``, the highest
            version of each API both sides support.
        broker_api_versions: after :meth:`negotiate`, ``{api_key: (min, max)}`` as
            offered by the broker; ``None`` before.
        api_versions_version: the ApiVersions version that succeeded (3 or 0).
        api_versions_response: the decoded ApiVersionsResponse.

    Raises:
        KafkaConnectionError: the TCP connection or TLS handshake failed.
        RequestTimeoutError: connecting took longer than ``timeout_s``.

    The connection is thread-safe in the sense that concurrent :meth:`send` calls
    are serialised; there is only ever one request in flight.
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
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._connect()

    def _connect(self) -> None:
        try:
            sock = socket.create_connection(
                (self.host, self.port), timeout=self.timeout_s
            )
        except TimeoutError as err:
            raise RequestTimeoutError(
                f"connecting to {self.host}:{self.port} timed out after {self.timeout_s} s"
            ) from err
        except OSError as err:
            raise KafkaConnectionError(
                f"cannot connect to {self.host}:{self.port}: {err}"
            ) from err
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                sock = self.ssl_context.wrap_socket(sock, server_hostname=self.host)
        except OSError as err:
            sock.close()
            raise KafkaConnectionError(
                f"TLS handshake with {self.host}:{self.port} failed: {err}"
            ) from err
        self._sock = sock

    @property
    def closed(self) -> bool:
        """True once the connection is closed (by :meth:`close` or after an error
        that left the stream out of step)."""
        return self._sock is None

    def close(self) -> None:
        """Close the socket. Idempotent; never raises."""
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<Connection {self.host}:{self.port} {state}>"

    def _recv_exact(self, sock: socket.socket, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = sock.recv_into(view[got:], n - got)
            if k == 0:
                raise ConnectionClosedError(
                    f"{self.host}:{self.port} closed the connection "
                    f"({got} of {n} bytes of a frame read)"
                )
            got += k
        return bytes(buf)

    def send(self, request: Any, *, api_version: int | None = None) -> Any:
        """Send one request and return the decoded response body.

        Writes int32 size, the request header (with a fresh correlation id and
        ``client_id``) and ``request``; then reads one response frame and decodes
        its header and body with the response class of the same api_key and
        version. ``api_version`` overrides the version written into the header and
        used to decode the response (default: ``request``'s class version); it is
        meant for probing brokers, since the body is still encoded as its class.

        A Produce request with ``acks=0`` gets no response from the broker: then
        nothing is read and ``None`` is returned.

        Returns:
            the response entity (e.g. a ``MetadataResponse``), or ``None`` as above.

        Raises:
            ConnectionClosedError: the connection is closed or the broker closed it.
            RequestTimeoutError: no complete response within ``timeout_s``.
            FrameError / FrameTooLargeError: an impossible or over-large size prefix.
            CorrelationIdMismatchError: the response answers another request.
            ResponseDecodeError: the response does not decode (connection stays open).
            TypeError: ``request`` is not a generated request entity.
            kproto.serial.EncodeError: ``request`` has a value that does not fit.

        All but the last three close the connection, whose stream is then of
        unknown state.
        """
        return self._send(request, api_version, True)

    def _send(self, request: Any, api_version: int | None, warn_leftover: bool) -> Any:
        response_cls = response_class_for(request, api_version)
        with self._lock:
            sock = self._sock
            if sock is None:
                raise ConnectionClosedError(
                    f"connection to {self.host}:{self.port} is closed"
                )
            correlation_id = self._next_correlation_id()
            frame = encode_request(
                request,
                correlation_id=correlation_id,
                client_id=self.client_id,
                api_version=api_version,
            )
            try:
                sock.sendall(frame)
                if not expects_response(request):
                    return None
                (size,) = SIZE_PREFIX.unpack(self._recv_exact(sock, 4))
                check_frame_size(size, self.max_frame_bytes)
                payload = self._recv_exact(sock, size)
                return decode_response(
                    response_cls,
                    payload,
                    expected_correlation_id=correlation_id,
                    warn_leftover=warn_leftover,
                )
            except ResponseDecodeError:
                raise
            except TimeoutError as err:
                self.close()
                raise RequestTimeoutError(
                    f"no response from {self.host}:{self.port} within {self.timeout_s} s"
                ) from err
            except KafkaConnectionError:
                self.close()
                raise
            except OSError as err:
                self.close()
                raise ConnectionClosedError(
                    f"connection to {self.host}:{self.port} failed: {err}"
                ) from err

    def negotiate(
        self, *, caps: Mapping[int, int] | None = None, allow_unstable: bool = False
    ) -> dict[int, int]:
        """Ask the broker which API versions it supports; remember the best common ones.

        Sends ApiVersions v3 (with ``client_software_name``/``_version``). If that
        fails in any way (an error code, a body that does not decode, or the broker
        closing the connection, after which one reconnect is made) it sends
        ApiVersions v0, which every broker answers; the v3 error body is never
        relied upon.

        Args:
            caps: optional ``{api_key: highest version to use}``, for brokers known
                to mishandle versions they advertise (librdkafka's mock cluster
                with flexible JoinGroup/SyncGroup, for one).
            allow_unstable: also pick versions Kafka marks ``latestVersionUnstable``
                (classes with ``__unstable__ = True``); off by default, as in Kafka's
                own clients.

        Returns:
            ``{api_key: version}``, the highest version of each API both sides
            support (also kept in :attr:`versions`).

        Raises:
            kproto.errors.KafkaProtocolError: the v0 response carries an error code.
            KafkaConnectionError: as :meth:`send`.
        """
        v3, v0 = api_versions_requests()
        try:
            response = self._send(v3, None, False)
            if response.error_code == 0:
                return self._store(response, 3, caps, allow_unstable)
        except ResponseDecodeError:
            pass
        except ConnectionClosedError:
            self._connect()
        return self._store(self.send(v0), 0, caps, allow_unstable)

    def request(self, api_key: int, /, **fields: Any) -> Any:
        """Build the negotiated version's request for ``api_key`` and send it.

        ``fields`` are the request's attribute names; nested structs may be given
        as dicts and arrays as lists (see :func:`kproto.framing.build_entity`).
        Runs :meth:`negotiate` first if it has not run.

        Returns:
            the decoded response, as :meth:`send`.

        Raises:
            NotNegotiatedError: no common version of ``api_key``.
            TypeError: a field does not exist at the negotiated version.
            KafkaConnectionError: as :meth:`send`.
        """
        if self.broker_api_versions is None:
            self.negotiate()
        return self.send(self.build_request(api_key, fields))
