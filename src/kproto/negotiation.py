"""The client side of a broker connection, without I/O: ApiVersions negotiation,
correlation ids, and which failures leave the stream in step.

:class:`NegotiationState` is the one core under the blocking
:class:`kproto.connection.Connection` and the asyncio
:class:`kproto.aio.AsyncConnection`: they only open sockets, move bytes and wait.
Everything else (the constructor and its settings, encoding and pairing frames,
mapping socket errors to :class:`kproto.framing.KafkaConnectionError` subclasses,
the ApiVersions v3 -> v0 fallback, version arithmetic) is decided here, and can be
tested without a network.

The negotiation follows Kafka's ``NetworkClient.handleApiVersionsResponse``:
send ApiVersions v3 (naming the client software, KIP-511); if the broker answers
UNSUPPORTED_VERSION, retry at the highest ApiVersions version its answer lists
(or v0); if the answer does not decode or the broker hangs up, retry at v0, which
every broker answers.

SASL (KIP-43, KIP-152) follows ApiVersions when a :class:`kproto.sasl.SaslConfig` is
set: :class:`SaslExchange` sends SaslHandshake and then SaslAuthenticate rounds
until the mechanism completes, as Kafka's ``SaslClientAuthenticator``; a
``session_lifetime_ms`` in the answer (KIP-368) schedules a re-authentication at
85% of the lifetime, run before the next request that finds it due.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Mapping
from typing import Any, Final, NamedTuple, TypeVar

import attrs

from kproto.errors import ErrorCode, KafkaProtocolError
from kproto.frame_reader import FrameReader
from kproto.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    ConnectionClosedError,
    KafkaConnectionError,
    RequestTimeoutError,
    ResponseDecodeError,
    ResponseFrame,
    decode_response_frame,
    encode_request,
    expects_response,
    response_class_for,
    warn_trailing,
)
from kproto.index import ApiKey, api_versions, request_type
from kproto.meta import build_entity
from kproto.sasl import SaslAuthenticationError, SaslConfig, client_mechanism

__all__ = [
    "ApiVersionsNegotiation",
    "SASL_APIS",
    "SaslExchange",
    "client_ssl_context",
    "NotNegotiatedError",
    "api_name",
    "NegotiationState",
    "PendingRequest",
    "api_versions_request",
    "api_versions_requests",
    "broker_ranges",
    "common_versions",
]

E = TypeVar("E")

_MAX_CORRELATION_ID: Final = 2**31 - 1

#: The APIs a connection may send before SASL authentication completes.
SASL_APIS: Final = frozenset(
    {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
)

#: When a re-authentication is due: this share of ``session_lifetime_ms`` (Kafka's
#: clients pick 85-95% at random; the low end leaves the most slack).
REAUTH_SHARE: Final = 0.85

#: The ApiVersions version negotiation starts with.
FIRST_API_VERSIONS_VERSION: Final = 3


def api_versions_request(version: int) -> Any:
    """The ApiVersionsRequest of ``version``, naming the client software (``kproto``
    and its version, KIP-511) from v3 on."""
    from kproto import __version__

    cls: Any = request_type(ApiKey.API_VERSIONS, version)
    if version >= 3:
        return cls(client_software_name="kproto", client_software_version=__version__)
    return cls()


def api_versions_requests() -> tuple[Any, Any]:
    """The first and the last ApiVersions request negotiation tries: v3 and the v0
    fallback every broker answers."""
    return api_versions_request(FIRST_API_VERSIONS_VERSION), api_versions_request(0)


def broker_ranges(response: Any) -> dict[int, tuple[int, int]]:
    """``{api_key: (min_version, max_version)}`` from an ApiVersionsResponse of any
    version."""
    return {
        int(k.api_key): (int(k.min_version), int(k.max_version))
        for k in response.api_keys
    }


def common_versions(
    ranges: Mapping[int, tuple[int, int]], *, allow_unstable: bool = False
) -> dict[int, int]:
    """For each API both the broker (``ranges``) and kproto know, the highest version
    both support; APIs with no common version are left out. Versions marked
    ``latestVersionUnstable`` upstream (``__unstable__``) are never picked unless
    ``allow_unstable`` is true (see :func:`kproto.index.api_versions`)."""
    from kproto.index import UnknownMessageError

    out: dict[int, int] = {}
    for api_key, (lo, hi) in sorted(ranges.items()):
        try:
            ours = api_versions(api_key, include_unstable=allow_unstable)
        except UnknownMessageError:
            continue
        top = min(hi, ours.stop - 1)
        if top >= max(lo, ours.start):
            out[api_key] = top
    return out


def api_name(api_key: int) -> str:
    """``"Metadata (api_key 3)"``: the API's name in Kafka's terms with its key, or
    ``"api_key N"`` for a key kproto does not know."""
    try:
        versions = api_versions(api_key)
    except LookupError:
        return f"api_key {api_key}"
    # the JSON message name, as Kafka's ApiKeys enum spells it in its messages
    name = request_type(api_key, versions.start).__name__.removesuffix("Request")
    return f"{name} (api_key {api_key})"


class NotNegotiatedError(KafkaConnectionError):
    """:meth:`version_for` was asked before :meth:`negotiate`, or the broker and
    kproto share no version of the API. The message names the API
    ("DescribeCluster (api_key 60)").

    Attributes:
        api_key: the API asked about.
    """

    def __init__(self, api_key: int, message: str) -> None:
        self.api_key = api_key
        super().__init__(message)


class ApiVersionsNegotiation:
    """The ApiVersions exchange as a state machine (sans-IO).

    A shell loops: while :attr:`request` is not ``None``, reconnect if
    :attr:`reconnect` says so, send :attr:`request`, and hand the outcome to
    :meth:`receive` (a :class:`kproto.framing.ResponseFrame`) or :meth:`fail` (any
    :class:`~kproto.framing.KafkaConnectionError`: it re-raises those that are no
    reason to fall back). Then :attr:`response` and :attr:`version` hold the answer.
    At most three requests are sent: v3, a retry at the version the broker's
    UNSUPPORTED_VERSION answer lists, and v0.

    Raises (from :meth:`receive`):
        kproto.errors.KafkaProtocolError: the v0 answer carries an error code.
    """

    def __init__(self) -> None:
        self.version = FIRST_API_VERSIONS_VERSION
        self.request: Any = api_versions_request(self.version)
        self.reconnect = False
        self.response: Any = None

    def _retry(self, version: int) -> None:
        self.version = version
        self.request = api_versions_request(version)

    def receive(self, frame: ResponseFrame | None) -> None:
        """Take the decoded answer to :attr:`request` (None: there was none, which
        cannot happen: ApiVersions is always answered)."""
        assert frame is not None
        response = frame.response
        self.reconnect = False
        if response.error_code == 0 and not frame.api_versions_fallback:
            self.response, self.request = response, None
            return
        if self.version == 0:
            raise KafkaProtocolError(response.error_code, "ApiVersionsResponse v0")
        retry = 0
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            # the broker lists the ApiVersions versions it supports (Kafka does;
            # librdkafka's mock cluster lists nothing here)
            offered = broker_ranges(response).get(ApiKey.API_VERSIONS)
            if offered is not None and offered[1] < self.version:
                retry = max(0, offered[1])
        self._retry(retry)

    def fail(self, error: KafkaConnectionError) -> None:
        """Take the error the request ended with.

        Raises:
            KafkaConnectionError: ``error`` itself, at v0 or when it is neither a
                decode failure nor the broker hanging up.
        """
        if self.version == 0 or not isinstance(
            error, ResponseDecodeError | ConnectionClosedError
        ):
            raise error
        self.reconnect = isinstance(error, ConnectionClosedError)
        self._retry(0)


def client_ssl_context(
    cafile: str | None = None,
    *,
    certfile: str | None = None,
    keyfile: str | None = None,
    check_hostname: bool = True,
) -> ssl.SSLContext:
    """A TLS context for connections (Kafka's ``ssl.truststore`` /
    ``ssl.keystore`` settings): ``ssl.create_default_context`` trusting ``cafile``
    (or the system's CAs), with the broker's host name verified (Kafka's
    ``ssl.endpoint.identification.algorithm=https``) unless ``check_hostname`` is
    false, and a client certificate (mutual TLS) when ``certfile`` is given.

    Raises:
        OSError / ssl.SSLError: a file is missing or not PEM.
    """
    context = ssl.create_default_context(cafile=cafile)
    context.check_hostname = check_hostname
    if certfile is not None:
        context.load_cert_chain(certfile, keyfile)
    return context


class SaslExchange:
    """SaslHandshake, then SaslAuthenticate rounds, as a state machine (sans-IO):
    while :attr:`request` is not ``None``, send it and hand the response to
    :meth:`receive`. Then :attr:`session_lifetime_ms` holds the broker's session
    lifetime (0: none). Source: Kafka's ``SaslClientAuthenticator``
    (SaslHandshake v1, SaslAuthenticate v0-v2).

    Args:
        config: the mechanism and credentials.
        versions: the negotiated ``{api_key: version}`` (SaslHandshake and
            SaslAuthenticate must be in it).

    Raises:
        kproto.sasl.SaslAuthenticationError: (here and from :meth:`receive`) the
            broker offers no SaslAuthenticate, does not enable the mechanism,
            refuses the credentials (its error message is kept), or the
            mechanism fails (a SCRAM server signature that does not verify).
    """

    def __init__(self, config: SaslConfig, versions: Mapping[int, int]) -> None:
        self.mechanism = client_mechanism(config)
        handshake = versions.get(ApiKey.SASL_HANDSHAKE)
        authenticate = versions.get(ApiKey.SASL_AUTHENTICATE)
        if handshake is None or authenticate is None:
            raise SaslAuthenticationError(
                config.mechanism,
                "the broker offers no SaslHandshake v1 / SaslAuthenticate (not a "
                "SASL listener, or a broker older than Kafka 1.0)",
            )
        self._authenticate_cls: Any = request_type(
            ApiKey.SASL_AUTHENTICATE, authenticate
        )
        self.request: Any = request_type(ApiKey.SASL_HANDSHAKE, max(handshake, 1))(
            mechanism=config.mechanism
        )
        self.session_lifetime_ms = 0

    def receive(self, response: Any) -> None:
        """Take the answer to :attr:`request`."""
        name = self.mechanism.mechanism
        code = int(response.error_code)
        if hasattr(response, "mechanisms"):  # SaslHandshakeResponse
            if code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
                raise SaslAuthenticationError(
                    name,
                    "the broker does not enable it (enabled: "
                    f"{', '.join(response.mechanisms) or 'none'})",
                )
            if code:
                raise SaslAuthenticationError(
                    name, f"SaslHandshake answered {ErrorCode(code).name}"
                )
            self.request = self._authenticate_cls(
                auth_bytes=self.mechanism.initial_response()
            )
            return
        if code:
            reason = response.error_message or ErrorCode(code).name
            server_error = getattr(self.mechanism, "server_error", None)
            if server_error:
                reason = f"{reason} ({server_error})"
            raise SaslAuthenticationError(name, reason)
        self.session_lifetime_ms = int(getattr(response, "session_lifetime_ms", 0))
        answer = self.mechanism.evaluate(response.auth_bytes)
        if answer is not None:
            self.request = self._authenticate_cls(auth_bytes=answer)
        elif not self.mechanism.complete:
            raise SaslAuthenticationError(name, "the exchange ended unfinished")
        else:
            self.request = None


class PendingRequest(NamedTuple):
    """An encoded request waiting for its answer."""

    frame: bytes
    correlation_id: int
    response_cls: type
    expects_response: bool


@attrs.define(eq=False, slots=False)
class NegotiationState:
    """Settings, correlation ids and negotiated versions of one broker connection:
    the core the blocking and asyncio connections share (no I/O here).

    Args:
        host: broker host name or address.
        port: broker port.
        client_id: the ``client_id`` of every request header (v1/v2 headers).
        ssl_context: wrap the socket in TLS with this context (server name = host;
            :func:`client_ssl_context` makes one that verifies the host name).
        sasl: authenticate with this mechanism and credentials after ApiVersions
            (:class:`kproto.sasl.SaslConfig`); before that only ApiVersions and
            SASL requests may be sent, so a request sent first runs
            ``negotiate()`` itself.
        timeout_s: seconds for connecting and for each exchange; on expiry
            :class:`kproto.framing.RequestTimeoutError` is raised and the
            connection closed.
        max_frame_bytes: refuse response frames larger than this many bytes
            (default 100 MiB) with :class:`kproto.framing.FrameTooLargeError`.

    Attributes:
        versions: after ``negotiate()``, ``{api_key: version}``, the highest
            version of each API both sides support.
        broker_api_versions: after ``negotiate()``, ``{api_key: (min, max)}`` as
            offered by the broker; ``None`` before.
        api_versions_version: the ApiVersions version that succeeded.
        api_versions_response: the decoded ApiVersionsResponse.
    """

    host: str
    port: int
    client_id: str | None = attrs.field(default="kproto", kw_only=True)
    ssl_context: ssl.SSLContext | None = attrs.field(default=None, kw_only=True)
    sasl: SaslConfig | None = attrs.field(default=None, kw_only=True)
    timeout_s: float = attrs.field(default=30.0, kw_only=True)
    max_frame_bytes: int = attrs.field(default=DEFAULT_MAX_FRAME_BYTES, kw_only=True)

    def __attrs_post_init__(self) -> None:
        #: after SASL: the broker's session lifetime (ms; 0: none), KIP-368
        self.session_lifetime_ms = 0
        self._authenticated = False
        self._reauth_at: float | None = None
        self.broker_api_versions: dict[int, tuple[int, int]] | None = None
        self.versions: dict[int, int] = {}
        self.api_versions_version: int | None = None
        self.api_versions_response: Any = None
        self._correlation_id = 0
        self._init_transport()

    def _init_transport(self) -> None:
        """Called at the end of ``__init__``: a shell sets up its transport here."""

    def _abort(self) -> None:
        """Drop the transport without waiting (the stream is out of step)."""
        raise NotImplementedError

    @property
    def authenticated(self) -> bool:
        """True once SASL authentication succeeded on the open connection (always
        false without ``sasl``)."""
        return self._authenticated

    def _new_transport(self) -> None:
        """Called on every (re)connect: a new socket is not authenticated."""
        self._authenticated = False
        self._reauth_at = None

    def _sasl_exchange(self) -> SaslExchange:
        """Start an authentication (the connection counts as unauthenticated until
        :meth:`_authenticated_by`).

        Raises:
            ValueError: no ``sasl`` is set.
            NotNegotiatedError: before ``negotiate()``.
        """
        if self.sasl is None:
            raise ValueError("this connection has no sasl settings")
        if self.broker_api_versions is None:
            raise NotNegotiatedError(
                ApiKey.SASL_AUTHENTICATE, "call negotiate() before authenticate()"
            )
        self._authenticated = False
        return SaslExchange(self.sasl, self.versions)

    def _authenticated_by(self, exchange: SaslExchange) -> None:
        self._authenticated = True
        self.session_lifetime_ms = exchange.session_lifetime_ms
        self._reauth_at = (
            time.monotonic() + exchange.session_lifetime_ms / 1000 * REAUTH_SHARE
            if exchange.session_lifetime_ms > 0
            else None
        )

    def _needs_auth(self, request: Any) -> str | None:
        """``"negotiate"`` / ``"authenticate"`` when ``request`` must wait for SASL
        (not yet run, or a re-authentication due); ``None`` otherwise."""
        if self.sasl is None or getattr(request, "__api_key__", None) in SASL_APIS:
            return None
        if self.broker_api_versions is None:
            return "negotiate"
        if not self._authenticated:
            return "authenticate"
        if self._reauth_at is not None and time.monotonic() >= self._reauth_at:
            return "authenticate"
        return None

    def _next_correlation_id(self) -> int:
        self._correlation_id = self._correlation_id % _MAX_CORRELATION_ID + 1
        return self._correlation_id

    @property
    def _where(self) -> str:
        return f"{self.host}:{self.port}"

    def _closed_error(self) -> ConnectionClosedError:
        return ConnectionClosedError(f"connection to {self._where} is closed")

    def _connect_error(self, err: OSError) -> KafkaConnectionError:
        """The error to raise for a failed connect or TLS handshake."""
        if isinstance(err, TimeoutError):
            return RequestTimeoutError(
                f"connecting to {self._where} timed out after {self.timeout_s} s"
            )
        if isinstance(err, ssl.SSLCertVerificationError):
            return KafkaConnectionError(
                f"TLS handshake with {self._where} failed: the broker's certificate "
                f"does not verify: {err.verify_message or err}"
            )
        if isinstance(err, ssl.SSLError):
            return KafkaConnectionError(
                f"TLS handshake with {self._where} failed: {err}"
            )
        return KafkaConnectionError(f"cannot connect to {self._where}: {err}")

    def _prepare(self, request: Any, api_version: int | None) -> PendingRequest:
        """Encode ``request`` with a fresh correlation id.

        Raises:
            TypeError: not a request entity. kproto.serial.EncodeError: a field
                does not fit.
        """
        response_cls = response_class_for(request, api_version)
        correlation_id = self._next_correlation_id()
        frame = encode_request(
            request,
            correlation_id=correlation_id,
            client_id=self.client_id,
            api_version=api_version,
        )
        return PendingRequest(
            frame, correlation_id, response_cls, expects_response(request)
        )

    def _frame_reader(self) -> FrameReader:
        """A reader for one response (bounded by ``max_frame_bytes``)."""
        return FrameReader(max_frame_bytes=self.max_frame_bytes)

    def _complete(
        self, pending: PendingRequest, payload: bytes, warn_leftover: bool
    ) -> ResponseFrame:
        frame = decode_response_frame(
            pending.response_cls,
            payload,
            expected_correlation_id=pending.correlation_id,
        )
        if warn_leftover:
            warn_trailing(frame)
        return frame

    def _failure(self, err: Exception) -> Exception:
        """The error to raise for ``err`` from an exchange. Every error but
        :class:`ResponseDecodeError` (the whole frame was read) leaves the stream
        out of step, so the transport is dropped first."""
        if isinstance(err, ResponseDecodeError):
            return err
        self._abort()
        if isinstance(err, TimeoutError):
            return RequestTimeoutError(
                f"no response from {self._where} within {self.timeout_s} s"
            )
        if isinstance(err, OSError):
            return ConnectionClosedError(f"connection to {self._where} failed: {err}")
        return err

    def _store(
        self,
        negotiation: ApiVersionsNegotiation,
        caps: Mapping[int, int] | None,
        allow_unstable: bool = False,
    ) -> dict[int, int]:
        response = negotiation.response
        self.api_versions_response = response
        self.api_versions_version = negotiation.version
        self.broker_api_versions = broker_ranges(response)
        versions = common_versions(
            self.broker_api_versions, allow_unstable=allow_unstable
        )
        for api_key, cap in (caps or {}).items():
            if api_key in versions:
                if cap < self.broker_api_versions[api_key][0]:
                    del versions[api_key]
                else:
                    versions[api_key] = min(versions[api_key], cap)
        self.versions = versions
        return dict(self.versions)

    def version_for(self, api_key: int) -> int:
        """The highest version of ``api_key`` both the broker and kproto support.

        Raises:
            NotNegotiatedError: ``negotiate()`` has not run, or there is no common
                version (the broker does not offer the API, or only versions kproto
                lacks); the message names the API.
        """
        if self.broker_api_versions is None:
            raise NotNegotiatedError(
                api_key, f"call negotiate() before version_for({api_name(api_key)})"
            )
        try:
            return self.versions[api_key]
        except KeyError:
            offered = self.broker_api_versions.get(api_key)
            raise NotNegotiatedError(
                api_key,
                f"no common version for {api_name(api_key)}: broker offers "
                f"{'nothing' if offered is None else f'v{offered[0]}-v{offered[1]}'}",
            ) from None

    def build_request(self, api_key: int, fields: Mapping[str, Any]) -> Any:
        """Build the request class of the negotiated version of ``api_key`` from
        ``fields`` (nested structs as mappings, arrays as lists; see
        :func:`build_entity`).

        Raises:
            NotNegotiatedError: as :meth:`version_for`.
            TypeError: a field does not exist at the negotiated version.
        """
        return build_entity(request_type(api_key, self.version_for(api_key)), fields)
