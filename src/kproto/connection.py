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

The asyncio counterpart is :class:`kproto.aio.AsyncConnection`. Both are thin
shells over :class:`kproto.negotiation.NegotiationState` (settings, correlation
ids, error mapping, the ApiVersions fallback) and :class:`kproto.frame_reader.FrameReader`
(which buffers a response as it arrives, never the size its prefix claims).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Mapping
from typing import Any

from kproto._closing import Closing
from kproto.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    ConnectionClosedError,
    CorrelationIdMismatchError,
    FrameError,
    FrameTooLargeError,
    KafkaConnectionError,
    RequestTimeoutError,
    ResponseDecodeError,
    ResponseFrame,
)
from kproto.negotiation import (
    ApiVersionsNegotiation,
    NegotiationState,
    NotNegotiatedError,
)
from kproto.sasl import SaslAuthenticationError

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "Connection",
    "ConnectionClosedError",
    "CorrelationIdMismatchError",
    "FrameError",
    "FrameTooLargeError",
    "KafkaConnectionError",
    "NotNegotiatedError",
    "RequestTimeoutError",
    "ResponseDecodeError",
    "SaslAuthenticationError",
]


class Connection(NegotiationState, Closing):
    """A blocking connection to one broker; see the module docstring.

    Connects in the constructor. Arguments and attributes are those of
    :class:`kproto.negotiation.NegotiationState`: ``host``, ``port``,
    ``client_id="kproto"``, ``ssl_context=None``, ``sasl=None``, ``timeout_s=30.0`` (seconds
    for connecting and for each socket operation), ``max_frame_bytes`` (default
    100 MiB); after :meth:`negotiate`, ``versions``, ``broker_api_versions``,
    ``api_versions_version`` and ``api_versions_response``.

    Raises:
        KafkaConnectionError: the TCP connection or TLS handshake failed.
        RequestTimeoutError: connecting took longer than ``timeout_s``.

    The connection is thread-safe in the sense that concurrent :meth:`send` calls
    are serialised; there is only ever one request in flight.
    """

    def _init_transport(self) -> None:
        self._lock = threading.Lock()
        self._auth_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._connect()

    def _connect(self) -> None:
        try:
            sock = socket.create_connection(
                (self.host, self.port), timeout=self.timeout_s
            )
        except OSError as err:
            raise self._connect_error(err) from err
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                sock = self.ssl_context.wrap_socket(sock, server_hostname=self.host)
        except OSError as err:
            sock.close()
            raise self._connect_error(err) from err
        self._sock = sock
        self._new_transport()

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

    _abort = close

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<Connection {self.host}:{self.port} {state}>"

    def send(self, request: Any, *, api_version: int | None = None) -> Any:
        """Send one request and return the decoded response body.

        Writes int32 size, the request header (with a fresh correlation id and
        ``client_id``) and ``request``; then reads one response frame and decodes
        its header and body with the response class of the same api_key and
        version. ``api_version`` overrides the version written into the header and
        used to decode the response (default: ``request``'s class version); it is
        meant for probing brokers, since the body is still encoded as its class.
        Bytes left over after the body are logged as a warning.

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
        frame = self.send_frame(request, api_version=api_version)
        return None if frame is None else frame.response

    def send_frame(
        self,
        request: Any,
        *,
        api_version: int | None = None,
        warn_leftover: bool = True,
    ) -> ResponseFrame | None:
        """As :meth:`send`, but return the whole :class:`kproto.framing.ResponseFrame`
        (header, body, trailing bytes, ApiVersions fallback flag)."""
        if self._needs_auth(request) is not None:
            with self._auth_lock:  # one thread runs SASL; the others wait for it
                need = self._needs_auth(request)
                if need == "negotiate":
                    self.negotiate()
                elif need == "authenticate":
                    self.authenticate()
        with self._lock:
            sock = self._sock
            if sock is None:
                raise self._closed_error()
            pending = self._prepare(request, api_version)
            try:
                sock.sendall(pending.frame)
                if not pending.expects_response:
                    return None
                reader = self._frame_reader()
                while (payload := reader.next_frame()) is None:
                    data = sock.recv(reader.wanted)
                    if not data:
                        reader.eof()
                        raise self._closed_error()
                    reader.feed(data)
                return self._complete(pending, payload, warn_leftover)
            except Exception as err:
                failure = self._failure(err)
                if failure is err:
                    raise
                raise failure from err

    def negotiate(
        self, *, caps: Mapping[int, int] | None = None, allow_unstable: bool = False
    ) -> dict[int, int]:
        """Ask the broker which API versions it supports; remember the best common ones.

        Sends ApiVersions v3 (with ``client_software_name``/``_version``); on
        UNSUPPORTED_VERSION retries at the version the broker lists, and on a body
        that does not decode or the broker closing the connection (after which one
        reconnect is made) falls back to ApiVersions v0, which every broker
        answers (see :class:`kproto.negotiation.ApiVersionsNegotiation`).

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
        negotiation = ApiVersionsNegotiation()
        while negotiation.request is not None:
            if negotiation.reconnect:
                self._connect()
            try:
                frame = self.send_frame(negotiation.request, warn_leftover=False)
                negotiation.receive(frame)
            except KafkaConnectionError as err:
                negotiation.fail(err)
        versions = self._store(negotiation, caps, allow_unstable)
        if self.sasl is not None and not self.authenticated:
            self.authenticate()
        return versions

    def authenticate(self) -> None:
        """Authenticate with ``sasl`` (SaslHandshake, SaslAuthenticate rounds; see
        :class:`kproto.negotiation.SaslExchange`); :meth:`negotiate` runs it, and
        :meth:`send` runs it again when the broker's session lifetime is near
        its end (KIP-368).

        Raises:
            kproto.sasl.SaslAuthenticationError: the broker refused, or the
                mechanism failed; the connection is closed.
            ValueError: no ``sasl`` is set. NotNegotiatedError: before ``negotiate()``.
            KafkaConnectionError: as :meth:`send`.
        """
        exchange = self._sasl_exchange()
        try:
            while exchange.request is not None:
                frame = self.send_frame(exchange.request)
                assert frame is not None  # SASL requests are always answered
                exchange.receive(frame.response)
        except SaslAuthenticationError:
            self.close()
            raise
        self._authenticated_by(exchange)

    def request(self, api_key: int, /, **fields: Any) -> Any:
        """Build the negotiated version's request for ``api_key`` and send it.

        ``fields`` are the request's attribute names; nested structs may be given
        as dicts and arrays as lists (see :func:`kproto.meta.build_entity`).
        Runs :meth:`negotiate` (and SASL authentication) first if it has not run.

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
