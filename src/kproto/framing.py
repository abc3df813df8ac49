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
from collections.abc import Iterator
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
    "encode_response",
    "RequestHeaderInfo",
    "peek_request_header",
    "RequestDecodeError",
    "UnsupportedRequestError",
    "check_frame_size",
    "FrameReader",
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
    return encode_frame(header, response)


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
        :func:`decode_request` gives them (for a broker reading a client stream).

        Raises:
            RequestDecodeError / UnsupportedRequestError: as :func:`decode_request`;
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
