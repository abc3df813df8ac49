"""Request and response frames: the bytes between a client and a Kafka broker.

Shared by the blocking :class:`kproto.connection.Connection` and the asyncio
:class:`kproto.aio.AsyncConnection`; nothing here does I/O.

A frame on the wire is an int32 size (big-endian, the number of bytes that follow)
and a payload. A request payload is the request header (``RequestHeader`` v0, v1 or
v2, chosen by the request class's ``__header_schema__``) followed by the request
body; a response payload is the response header (``ResponseHeader`` v0 or v1) and
the response body. The header carries the correlation id that pairs a response
with its request.

Example::

    >>> from kproto.schema.api_versions.v0 import ApiVersionsRequest, ApiVersionsResponse
    >>> frame = encode_request(ApiVersionsRequest(), correlation_id=7, client_id="x")
    >>> frame.hex()  # size 11, api_key 18, version 0, correlation id 7, client id "x"
    '0000000b0012000000000007000178'

Errors are subclasses of :class:`KafkaConnectionError`.
"""

from __future__ import annotations

import io
import logging
import ssl
import struct
from collections.abc import Mapping
from typing import Any, Final, NamedTuple, TypeVar, cast

import attrs

from kproto.errors import KafkaProtocolError
from kproto.index import request_type, response_type
from kproto.meta import Wire, entity_info, wire_fields
from kproto.serial import DecodeError, encode, entity_reader

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "SIZE_PREFIX",
    "KafkaConnectionError",
    "ConnectionClosedError",
    "RequestTimeoutError",
    "FrameError",
    "FrameTooLargeError",
    "CorrelationIdMismatchError",
    "ResponseDecodeError",
    "NotNegotiatedError",
    "encode_request",
    "decode_request",
    "encode_response",
    "RequestHeaderInfo",
    "peek_request_header",
    "RequestDecodeError",
    "UnsupportedRequestError",
    "check_frame_size",
    "decode_response",
    "response_class_for",
    "build_entity",
    "api_versions_requests",
    "broker_ranges",
    "common_versions",
    "expects_response",
    "NegotiationState",
]

log = logging.getLogger("kproto.connection")

#: The default bound on a response frame's size: 100 MiB.
DEFAULT_MAX_FRAME_BYTES: Final = 100 * 1024 * 1024

#: The int32 size prefix of every frame (big-endian, signed).
SIZE_PREFIX: Final = struct.Struct(">i")

E = TypeVar("E")


class KafkaConnectionError(Exception):
    """Base class of every error raised by :mod:`kproto.connection` and
    :mod:`kproto.aio`: the socket failed, the broker closed it, or a frame was
    malformed. Broker error *codes* inside a decoded response are not errors here."""


class ConnectionClosedError(KafkaConnectionError):
    """The connection is closed: the broker closed it (EOF, possibly mid-frame) or
    :meth:`close` was called before a send."""


class RequestTimeoutError(KafkaConnectionError):
    """No complete response arrived within the connection's ``timeout_s``. The
    connection is closed, since the stream may be out of step."""


class FrameError(KafkaConnectionError):
    """A frame's size prefix is impossible (negative, or too small for a header)."""


class FrameTooLargeError(FrameError):
    """A response frame claims more bytes than the connection's ``max_frame_bytes``.

    Attributes:
        size: the claimed size in bytes.
        limit: the bound in bytes.
    """

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            f"response frame of {size} bytes exceeds the limit of {limit} bytes "
            "(raise max_frame_bytes if this is expected)"
        )


class CorrelationIdMismatchError(KafkaConnectionError):
    """A response's correlation id is not the one of the request just sent.

    Attributes:
        expected: the request's correlation id.
        received: the response's correlation id.
    """

    def __init__(self, expected: int, received: int) -> None:
        self.expected = expected
        self.received = received
        super().__init__(
            f"response correlation id {received} does not match request correlation id {expected}"
        )


class ResponseDecodeError(KafkaConnectionError):
    """A complete response frame arrived but its header or body does not decode.

    The stream is still in step (the whole frame was read), so the connection
    stays usable.

    Attributes:
        api_key: the API key of the request.
        api_version: the version the response was decoded as.
        payload: the frame payload (header and body, without the size prefix).
        cause: the :class:`kproto.serial.DecodeError`.
    """

    def __init__(
        self, api_key: int, api_version: int, payload: bytes, cause: DecodeError
    ) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.payload = payload
        self.cause = cause
        super().__init__(
            f"cannot decode response to api_key {api_key} v{api_version} "
            f"({len(payload)} bytes): {cause}"
        )


class NotNegotiatedError(KafkaConnectionError):
    """:meth:`version_for` was asked before :meth:`negotiate`, or the broker and
    kproto share no version of the API.

    Attributes:
        api_key: the API asked about.
    """

    def __init__(self, api_key: int, message: str) -> None:
        self.api_key = api_key
        super().__init__(message)


def response_class_for(request: Any, api_version: int | None = None) -> type:
    """The response class answering ``request`` at ``api_version`` (default: the
    request class's own version).

    Raises:
        TypeError: ``request`` is not a generated request entity.
        kproto.index.UnsupportedVersionError: no such version.
    """
    info = entity_info(request)
    if info.message_type != "request" or info.api_key is None or not info.top_level:
        raise TypeError(f"{type(request).__qualname__} is not a request message")
    return response_type(
        info.api_key, info.version if api_version is None else api_version
    )


def encode_request(
    request: Any,
    *,
    correlation_id: int,
    client_id: str | None,
    api_version: int | None = None,
) -> bytes:
    """Encode one request frame: int32 size, request header, request body.

    The header class is ``type(request).__header_schema__``; its
    ``request_api_version`` is ``api_version`` (default: the request class's
    version). ``client_id`` is dropped for header v0, which has none.

    Returns:
        the frame bytes, size prefix included.

    Raises:
        TypeError: ``request`` is not a generated request entity.
        kproto.serial.EncodeError: a field of the request does not fit its type.
    """
    info = entity_info(request)
    if info.message_type != "request" or info.api_key is None or not info.top_level:
        raise TypeError(f"{type(request).__qualname__} is not a request message")
    header_cls: type = type(request).__header_schema__
    header_fields: dict[str, Any] = {
        "request_api_key": info.api_key,
        "request_api_version": info.version if api_version is None else api_version,
        "correlation_id": correlation_id,
    }
    if "client_id" in attrs.fields_dict(header_cls):
        header_fields["client_id"] = client_id
    payload = encode(header_cls(**header_fields)) + encode(request)
    return SIZE_PREFIX.pack(len(payload)) + payload


class RequestHeaderInfo(NamedTuple):
    """The fixed start of every request header (v0, v1 and v2 alike)."""

    api_key: int
    api_version: int
    correlation_id: int


#: api_key (int16), api_version (int16), correlation_id (int32): the first 8 bytes of
#: every request header version.
_REQUEST_HEADER_HEAD: Final = struct.Struct(">hhi")


class RequestDecodeError(FrameError):
    """A request frame does not decode (a server-side error: what a broker or proxy
    receives from a client).

    Attributes:
        api_key, api_version, correlation_id: from the header's first 8 bytes, or
            ``None`` when the frame is too short to hold them.
        cause: the :class:`kproto.serial.DecodeError` or ``LookupError`` behind it.
    """

    def __init__(
        self,
        message: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
        cause: Exception | None = None,
    ) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.cause = cause
        super().__init__(message)


class UnsupportedRequestError(RequestDecodeError):
    """The request's api_key or api_version is not one kproto generates. A broker
    answers this with UNSUPPORTED_VERSION (for ApiVersions: the v0 body, as Kafka
    does); the header's api_key, api_version and correlation_id are set."""


def peek_request_header(frame: bytes | bytearray | memoryview) -> RequestHeaderInfo:
    """Read api_key, api_version and correlation_id from a request frame (the bytes
    after the int32 size prefix) without decoding the rest.

    Raises:
        RequestDecodeError: the frame is shorter than 8 bytes.
    """
    if len(frame) < _REQUEST_HEADER_HEAD.size:
        raise RequestDecodeError(
            f"request frame of {len(frame)} bytes is shorter than the 8-byte "
            "request header head (api_key, api_version, correlation_id)"
        )
    return RequestHeaderInfo(*_REQUEST_HEADER_HEAD.unpack_from(frame, 0))


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[Any, Any]:
    """Decode a request frame (the bytes after the int32 size prefix) into
    ``(header, request)``: the ``RequestHeader`` entity of the version the request
    class's ``__header_schema__`` names, and the request entity of the version the
    header's ``request_api_version`` names.

    The whole frame must be consumed: Kafka's ``RequestContext`` rejects a request
    with bytes left over, and so does this.

    Raises:
        UnsupportedRequestError: the api_key or api_version is unknown to kproto.
        RequestDecodeError: the frame is too short, the header or body does not
            decode (``cause`` is the :class:`kproto.serial.DecodeError`, naming the
            field path and byte offset), or bytes are left over.
    """
    head = peek_request_header(frame)
    where = f"api_key {head.api_key} v{head.api_version} (correlation id {head.correlation_id})"
    try:
        request_cls: Any = request_type(head.api_key, head.api_version)
    except LookupError as err:
        raise UnsupportedRequestError(
            f"unsupported request {where}: {err}",
            api_key=head.api_key,
            api_version=head.api_version,
            correlation_id=head.correlation_id,
            cause=err,
        ) from err
    stream = io.BytesIO(frame)
    try:
        header = entity_reader(request_cls.__header_schema__)(stream)
        request = entity_reader(request_cls)(stream)
    except DecodeError as err:
        raise RequestDecodeError(
            f"cannot decode request {where}: {err}",
            api_key=head.api_key,
            api_version=head.api_version,
            correlation_id=head.correlation_id,
            cause=err,
        ) from err
    left = len(frame) - stream.tell()
    if left:
        raise RequestDecodeError(
            f"request {where}: {left} bytes left over after "
            f"{request_cls.__name__} at byte offset {stream.tell()}",
            api_key=head.api_key,
            api_version=head.api_version,
            correlation_id=head.correlation_id,
        )
    return header, request


def encode_response(header: Any, response: Any) -> bytes:
    """Encode a response frame: int32 size, response header, response body.

    ``header`` is either the request's ``RequestHeader`` (its correlation_id is
    copied into the response header) or a ``ResponseHeader`` entity; the response
    header version is ``type(response).__header_schema__`` (v0 for every
    ApiVersionsResponse, as Kafka's ``ApiVersionsResponse`` requires, v1 for
    flexible versions, v0 otherwise).

    Returns:
        the frame bytes, size prefix included.

    Raises:
        TypeError: ``response`` is not a generated response entity.
        kproto.serial.EncodeError: a field does not fit its type.
    """
    info = entity_info(response)
    if info.message_type != "response" or info.api_key is None or not info.top_level:
        raise TypeError(f"{type(response).__qualname__} is not a response message")
    header_cls: type = type(response).__header_schema__
    if type(header) is not header_cls:
        header = header_cls(correlation_id=header.correlation_id)
    payload = encode(header) + encode(response)
    return SIZE_PREFIX.pack(len(payload)) + payload


def check_frame_size(size: int, max_frame_bytes: int) -> int:
    """Validate a response frame's int32 size prefix; return it.

    Raises:
        FrameError: the size is smaller than the 4-byte correlation id.
        FrameTooLargeError: the size exceeds ``max_frame_bytes``.
    """
    if size < 4:
        raise FrameError(f"impossible response frame size {size} (minimum 4 bytes)")
    if size > max_frame_bytes:
        raise FrameTooLargeError(size, max_frame_bytes)
    return size


def decode_response(
    response_cls: type[E],
    payload: bytes,
    *,
    expected_correlation_id: int | None,
    warn_leftover: bool = True,
) -> E:
    """Decode a response payload (header and body, no size prefix).

    The header class is ``response_cls.__header_schema__``. Bytes left over after
    the body are ignored, with a warning on the ``kproto.connection`` logger
    unless ``warn_leftover`` is false (some brokers, such as librdkafka's mock
    cluster for Metadata v13, append extra bytes).

    Raises:
        CorrelationIdMismatchError: the header's correlation id is not
            ``expected_correlation_id`` (skipped when that is ``None``).
        ResponseDecodeError: the header or body does not decode.
    """
    info = entity_info(response_cls)
    api_key = info.api_key if info.api_key is not None else -1
    header_cls: type = response_cls.__header_schema__  # type: ignore[attr-defined]
    stream = io.BytesIO(payload)
    try:
        header = entity_reader(header_cls)(stream)
    except DecodeError as err:
        raise ResponseDecodeError(api_key, info.version, payload, err) from err
    received = header.correlation_id
    if expected_correlation_id is not None and received != expected_correlation_id:
        raise CorrelationIdMismatchError(expected_correlation_id, received)
    try:
        body: E = entity_reader(cast(Any, response_cls))(stream)
    except DecodeError as err:
        raise ResponseDecodeError(api_key, info.version, payload, err) from err
    left = len(payload) - stream.tell()
    if left and warn_leftover:
        log.warning(
            "ignored %d bytes left over after %s v%d (correlation id %d)",
            left,
            response_cls.__name__,
            info.version,
            received,
        )
    return body


def _build_value(w: Wire, value: Any, path: str) -> Any:
    if value is None:
        return None
    if w.kind == "struct" and w.entity is not None and isinstance(value, Mapping):
        return build_entity(w.entity, value, path=path)
    if w.kind == "array" and isinstance(value, list | tuple):
        element = w.element
        if element is None:
            return tuple(value)
        return tuple(
            _build_value(element, v, f"{path}[{i}]") for i, v in enumerate(value)
        )
    return value


def build_entity(cls: type[E], fields: Mapping[str, Any], *, path: str = "") -> E:
    """Build an entity of ``cls`` from keyword values, recursively.

    Nested structs may be given as mappings and arrays as lists; both are turned
    into the nested classes and tuples of ``cls``'s version, so the same call works
    for every version of a message. Other values are passed through unchanged;
    fields not given keep their Kafka defaults.

    Raises:
        TypeError: a name is not a field of ``cls`` at this version (the message
            names the path and the fields that exist).
    """
    known = {f.name: w for f, w in wire_fields(cls)}
    values: dict[str, Any] = {}
    for name, value in fields.items():
        w = known.get(name)
        where = f"{path}.{name}" if path else f"{cls.__name__}.{name}"
        if w is None:
            raise TypeError(
                f"{where}: no such field in {cls.__qualname__} v{entity_info(cls).version}; "
                f"fields: {', '.join(known)}"
            )
        values[name] = _build_value(w, value, where)
    return cls(**values)


def api_versions_requests() -> tuple[Any, Any]:
    """The two ApiVersions requests :meth:`negotiate` tries: v3 (naming the client
    software, KIP-511) and the v0 fallback every broker answers."""
    from kproto import __version__
    from kproto.schema.api_versions.v0 import ApiVersionsRequest as V0
    from kproto.schema.api_versions.v3 import ApiVersionsRequest as V3

    return V3(client_software_name="kproto", client_software_version=__version__), V0()


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
    from kproto.index import UnknownMessageError, api_versions

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


def expects_response(request: Any) -> bool:
    """False for a Produce request with ``acks=0``, which brokers never answer."""
    return not (entity_info(request).api_key == 0 and getattr(request, "acks", 1) == 0)


_MAX_CORRELATION_ID = 2**31 - 1


class NegotiationState:
    """Correlation ids and negotiated versions, shared by the blocking and asyncio
    connections (no I/O here)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str | None,
        ssl_context: ssl.SSLContext | None,
        timeout_s: float,
        max_frame_bytes: int,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.ssl_context = ssl_context
        self.timeout_s = timeout_s
        self.max_frame_bytes = max_frame_bytes
        self.broker_api_versions: dict[int, tuple[int, int]] | None = None
        self.versions: dict[int, int] = {}
        self.api_versions_version: int | None = None
        self.api_versions_response: Any = None
        self._correlation_id = 0

    def _next_correlation_id(self) -> int:
        self._correlation_id = self._correlation_id % _MAX_CORRELATION_ID + 1
        return self._correlation_id

    def _store(
        self,
        response: Any,
        version: int,
        caps: Mapping[int, int] | None,
        allow_unstable: bool = False,
    ) -> dict[int, int]:
        if response.error_code != 0:
            raise KafkaProtocolError(
                response.error_code, f"ApiVersionsResponse v{version}"
            )
        self.api_versions_response = response
        self.api_versions_version = version
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
            NotNegotiatedError: :meth:`negotiate` has not run, or there is no common
                version (the broker does not offer the API, or only versions kproto
                lacks).
        """
        if self.broker_api_versions is None:
            raise NotNegotiatedError(api_key, "call negotiate() before version_for()")
        try:
            return self.versions[api_key]
        except KeyError:
            offered = self.broker_api_versions.get(api_key)
            raise NotNegotiatedError(
                api_key,
                f"no common version for api_key {api_key}: broker offers "
                f"{'nothing' if offered is None else f'v{offered[0]}-v{offered[1]}'}",
            ) from None

    def build_request(self, api_key: int, fields: Mapping[str, Any]) -> Any:
        """Build the request class of the negotiated version of ``api_key`` from
        ``fields`` (nested structs as mappings, arrays as lists; see
        :func:`kproto.framing.build_entity`).

        Raises:
            NotNegotiatedError: as :meth:`version_for`.
            TypeError: a field does not exist at the negotiated version.
        """
        return build_entity(request_type(api_key, self.version_for(api_key)), fields)
