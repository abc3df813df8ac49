"""Request and response frames: the bytes between a Kafka client and a broker.

The frame codec, without I/O (the sans-IO style of h11 and h2): the blocking
:class:`kproto.connection.Connection`, the asyncio :class:`kproto.aio.AsyncConnection`
and :mod:`kproto.proxy` move bytes and call this; the ApiVersions negotiation lives
in :mod:`kproto.negotiation`.

A frame on the wire is an int32 size (big-endian, the number of bytes that follow)
and a payload. A request payload is the request header (``RequestHeader`` v0, v1 or
v2, chosen by the request class's ``__header_schema__``) followed by the request
body; a response payload is the response header (``ResponseHeader`` v0 or v1) and
the response body. The header carries the correlation id that pairs a response
with its request. Both directions are here: a client calls :func:`encode_request`
and :func:`decode_response_frame`; a broker or proxy calls :func:`decode_request`
and :func:`encode_response`; :class:`FrameReader` cuts any slicing of a byte
stream into frames.

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
import struct
from typing import Any, Final, NamedTuple, TypeVar, cast

import attrs

from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type, response_type
from kproto.meta import entity_info
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
    "encode_request",
    "encode_frame",
    "decode_request",
    "decode_request_frame",
    "RequestFrame",
    "encode_response",
    "encode_response_parts",
    "RequestHeaderInfo",
    "peek_request_header",
    "RequestDecodeError",
    "UnsupportedRequestError",
    "check_frame_size",
    "ResponseFrame",
    "decode_response",
    "decode_response_frame",
    "response_class_for",
    "expects_response",
    "warn_trailing",
]

log = logging.getLogger("kproto.connection")

#: The default bound on a response frame's size: 100 MiB.
DEFAULT_MAX_FRAME_BYTES: Final = 100 * 1024 * 1024

#: The int32 size prefix of every frame (big-endian, signed).
SIZE_PREFIX: Final = struct.Struct(">i")

E = TypeVar("E")


class KafkaConnectionError(Exception):
    """Base class of every error raised by :mod:`kproto.connection`,
    :mod:`kproto.aio` and the frame codec: the socket failed, the peer closed it,
    or a frame was malformed. Broker error *codes* inside a decoded response are
    not errors here."""


class ConnectionClosedError(KafkaConnectionError):
    """The connection is closed: the broker closed it (EOF, possibly mid-frame) or
    :meth:`close` was called before a send."""


class RequestTimeoutError(KafkaConnectionError):
    """No complete response arrived within the connection's ``timeout_s``. The
    connection is closed, since the stream may be out of step."""


class FrameError(KafkaConnectionError):
    """A frame's size prefix is impossible (negative, or too small for a header)."""


class FrameTooLargeError(FrameError):
    """A frame claims more bytes than ``max_frame_bytes`` (raised as soon as the
    4-byte size prefix is read, before any of the payload is buffered).

    Attributes:
        size: the claimed size in bytes.
        limit: the bound in bytes.
    """

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            f"frame of {size} bytes exceeds the limit of {limit} bytes "
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
    return encode_frame(header_cls(**header_fields), request)


def encode_frame(header: Any, body: Any) -> bytes:
    """Encode ``header`` then ``body`` (entities of matching header and message
    versions; nothing is checked) behind an int32 size prefix. For a proxy
    forwarding a changed request under the client's own header.

    Raises:
        kproto.serial.EncodeError: a field does not fit its type.
    """
    payload = encode(header) + encode(body)
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
        cause: the :class:`kproto.serial.DecodeError` or ``LookupError`` it was
            raised from.
    """

    api_key: int | None
    api_version: int | None
    correlation_id: int | None

    def __init__(self, message: str, head: RequestHeaderInfo | None = None) -> None:
        super().__init__(message)
        self.api_key, self.api_version, self.correlation_id = (
            (None, None, None) if head is None else head
        )

    @property
    def cause(self) -> BaseException | None:
        """The error it was raised from (``__cause__``)."""
        return self.__cause__


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


class RequestFrame(NamedTuple):
    """Everything in a request frame, for servers and proxies that must lose nothing.

    Attributes:
        header: the ``RequestHeader`` entity (v0, v1 or v2).
        request: the decoded request entity.
        trailing: bytes left over after the body. Empty from a correct client;
            librdkafka 2.16 sends 3 extra bytes after its all-topics Metadata v13
            request. Kafka's broker reads what the schema names and ignores the
            rest (``AbstractRequest.parseRequest`` reads from the buffer and
            never checks what remains), so a server should too.
    """

    header: Any
    request: Any
    trailing: bytes


def decode_request_frame(frame: bytes | bytearray | memoryview) -> RequestFrame:
    """Decode a request frame (the bytes after the int32 size prefix) losslessly:
    the ``RequestHeader`` of the version the request class's ``__header_schema__``
    names, the request entity of the version the header's ``request_api_version``
    names, and any bytes left over. Re-encoding ``header`` and ``request`` and
    appending ``trailing`` gives ``frame`` back for every well-formed frame.

    Raises:
        UnsupportedRequestError: the api_key or api_version is unknown to kproto.
        RequestDecodeError: the frame is too short, or the header or body does not
            decode (``cause`` is the :class:`kproto.serial.DecodeError`, naming the
            field path and byte offset).
    """
    head = peek_request_header(frame)
    try:
        request_cls: Any = request_type(head.api_key, head.api_version)
    except LookupError as err:
        raise UnsupportedRequestError(
            f"unsupported request {_where(head)}: {err}", head
        ) from err
    stream = io.BytesIO(frame)
    try:
        header = entity_reader(request_cls.__header_schema__)(stream)
        request = entity_reader(request_cls)(stream)
    except DecodeError as err:
        raise RequestDecodeError(
            f"cannot decode request {_where(head)}: {err}", head
        ) from err
    return RequestFrame(header, request, bytes(frame[stream.tell() :]))


def _where(head: RequestHeaderInfo) -> str:
    """A request named in an error (formatted only when one is raised)."""
    return (
        f"api_key {head.api_key} v{head.api_version} "
        f"(correlation id {head.correlation_id})"
    )


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[Any, Any]:
    """Decode a request frame (the bytes after the int32 size prefix) into
    ``(header, request)``, strictly: the whole frame must be consumed. A server
    that should accept what Kafka accepts (bytes left over after the body) uses
    :func:`decode_request_frame` instead.

    Raises:
        UnsupportedRequestError: the api_key or api_version is unknown to kproto.
        RequestDecodeError: as :func:`decode_request_frame`, or bytes are left over.
    """
    header, request, trailing = decode_request_frame(frame)
    if trailing:
        at = len(frame) - len(trailing)
        head = RequestHeaderInfo(
            header.request_api_key, header.request_api_version, header.correlation_id
        )
        raise RequestDecodeError(
            f"request {_where(head)}: {len(trailing)} bytes left over after "
            f"{type(request).__name__} at byte offset {at}",
            head,
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
    head, body = encode_response_parts(header, response)
    return head + body


def encode_response_parts(header: Any, response: Any) -> tuple[bytes, bytes]:
    """:func:`encode_response`'s frame in two pieces, ``(int32 size + response
    header, response body)``, whose concatenation is that frame: a server writes a
    large body (a FetchResponse's records) to its socket without first copying it
    into one frame.

    Raises:
        TypeError: ``response`` is not a generated response entity.
        kproto.serial.EncodeError: a field does not fit its type.
    """
    info = entity_info(response)
    if info.message_type != "response" or info.api_key is None or not info.top_level:
        raise TypeError(f"{type(response).__qualname__} is not a response message")
    header_cls: type = type(response).__header_schema__
    body = encode(response)
    if type(header) is not header_cls:
        tail = _header_tail(header_cls)
        correlation_id = header.correlation_id
        if tail is not None and type(correlation_id) is int:
            try:
                return (
                    _SIZE_AND_ID.pack(4 + len(tail) + len(body), correlation_id) + tail,
                    body,
                )
            except struct.error:
                pass  # out of int32's range: the encoder names the error
        header = header_cls(correlation_id=correlation_id)
    head = encode(header)
    return SIZE_PREFIX.pack(len(head) + len(body)) + head, body


_SIZE_AND_ID: Final = struct.Struct(">ii")
_HEADER_TAILS: dict[type, bytes | None] = {}


def _header_tail(header_cls: type) -> bytes | None:
    """What a ``header_cls`` holding only a correlation id encodes to after that
    int32 (v0: nothing, v1: the empty tagged fields), found once per class by
    encoding one; ``None``: the header is not that simple (encoded field by field)."""
    tail = _HEADER_TAILS.get(header_cls, b"?")
    if tail == b"?":
        probe = encode(header_cls(correlation_id=0x01020304))
        tail = probe[4:] if probe[:4] == b"\x01\x02\x03\x04" else None
        if tail not in (b"", b"\x00"):
            tail = None
        _HEADER_TAILS[header_cls] = tail
    return tail


def check_frame_size(size: int, max_frame_bytes: int) -> int:
    """Validate a frame's int32 size prefix (bytes); return it.

    Raises:
        FrameError: the size is smaller than 4 bytes (a response's correlation id;
            a request needs 8, which :func:`peek_request_header` checks).
        FrameTooLargeError: the size exceeds ``max_frame_bytes``.
    """
    if size < 4:
        raise FrameError(f"impossible frame size {size} (minimum 4 bytes)")
    if size > max_frame_bytes:
        raise FrameTooLargeError(size, max_frame_bytes)
    return size


class ResponseFrame(NamedTuple):
    """Everything in a response payload, for callers that must lose nothing (a
    proxy re-encoding a frame, a tool showing a capture).

    Attributes:
        header: the ``ResponseHeader`` entity (v0 or v1).
        response: the decoded body: an entity of the class asked for, or, when
            ``api_versions_fallback`` is true, an ``ApiVersionsResponse`` v0.
        trailing: bytes left over after the body (empty from a correct broker;
            librdkafka's mock cluster appends one to Metadata v13).
        api_versions_fallback: the broker answered an ApiVersions request of a
            version it does not support with Kafka's fallback, a v0 body with
            error_code 35 (UNSUPPORTED_VERSION) listing the ApiVersions versions
            it does support (KIP-511; Kafka's ``RequestContext.apiVersion`` on
            the broker, ``ApiVersionsResponse.parse`` on the client).
    """

    header: Any
    response: Any
    trailing: bytes
    api_versions_fallback: bool = False


def decode_response_frame(
    response_cls: type, payload: bytes, *, expected_correlation_id: int | None = None
) -> ResponseFrame:
    """Decode a response payload (header and body, no size prefix) losslessly.

    The header class is ``response_cls.__header_schema__``. Re-encoding
    ``header`` and ``response`` then appending ``trailing`` gives ``payload``
    back for every well-formed frame. For ApiVersions above v0, a body that fails
    to decode, or decodes with error_code 35, is tried as the v0 fallback body
    (which must then consume the payload exactly); see
    :attr:`ResponseFrame.api_versions_fallback`.

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
    body_at = stream.tell()
    error: DecodeError | None = None
    body: Any = None
    try:
        body = entity_reader(cast(Any, response_cls))(stream)
    except DecodeError as err:
        error = err
    if api_key == ApiKey.API_VERSIONS and info.version > 0:
        unsupported = error is not None or (
            body.error_code == ErrorCode.UNSUPPORTED_VERSION
        )
        if unsupported:
            fallback = _api_versions_v0_body(payload, body_at)
            if fallback is not None:
                return ResponseFrame(header, fallback, b"", True)
    if error is not None:
        raise ResponseDecodeError(api_key, info.version, payload, error) from error
    return ResponseFrame(header, body, payload[stream.tell() :])


def _api_versions_v0_body(payload: bytes, at: int) -> Any:
    """The ApiVersionsResponse v0 at ``payload[at:]`` if it is an error_code 35 body
    consuming every byte, else ``None``."""
    v0 = response_type(ApiKey.API_VERSIONS, 0)
    stream = io.BytesIO(payload)
    stream.seek(at)
    try:
        body = entity_reader(v0)(stream)
    except DecodeError:
        return None
    if (
        stream.tell() != len(payload)
        or body.error_code != ErrorCode.UNSUPPORTED_VERSION
    ):
        return None
    return body


def decode_response(
    response_cls: type[E],
    payload: bytes,
    *,
    expected_correlation_id: int | None,
    warn_leftover: bool = True,
) -> E:
    """Decode a response payload (header and body, no size prefix); return the body.

    The shorthand of :func:`decode_response_frame` for callers that need only the
    body: the header is checked and dropped, and bytes left over after the body
    are dropped with a warning on the ``kproto.connection`` logger unless
    ``warn_leftover`` is false. (An ApiVersions v0 fallback body is returned as
    the v0 entity.)

    Raises:
        CorrelationIdMismatchError, ResponseDecodeError: as
            :func:`decode_response_frame`.
    """
    frame = decode_response_frame(
        response_cls, payload, expected_correlation_id=expected_correlation_id
    )
    if warn_leftover:
        warn_trailing(frame)
    return cast(E, frame.response)


def warn_trailing(frame: ResponseFrame) -> None:
    """Log ``frame.trailing``, if any, as a warning on the ``kproto.connection``
    logger (for callers that drop it)."""
    if frame.trailing:
        info = entity_info(frame.response)
        log.warning(
            "ignored %d bytes left over after %s v%d (correlation id %d)",
            len(frame.trailing),
            info.name,
            info.version,
            frame.header.correlation_id,
        )


def expects_response(request: Any) -> bool:
    """False for a Produce request with ``acks=0``, which brokers never answer."""
    return not (entity_info(request).api_key == 0 and getattr(request, "acks", 1) == 0)
