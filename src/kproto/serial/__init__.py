"""Generic readers and writers for every generated entity, over ``IO[bytes]``.

Example::

    >>> import io
    >>> from kproto.schema.api_versions.v3 import ApiVersionsRequest
    >>> from kproto.serial import entity_reader, entity_writer
    >>> buf = io.BytesIO()
    >>> entity_writer(ApiVersionsRequest)(buf, ApiVersionsRequest(
    ...     client_software_name="kproto", client_software_version="0.1"))
    >>> buf.getvalue()
    b'\\x07kproto\\x040.1\\x00'
    >>> entity_reader(ApiVersionsRequest)(io.BytesIO(buf.getvalue()))
    ApiVersionsRequest(client_software_name='kproto', client_software_version='0.1', unknown_tagged_fields=())

An entity carries no size prefix and no header: a request frame is int32 size, the
header entity, then the body entity (see :mod:`kproto.connection`).

Readers consume exactly one entity and leave the stream just past it. With an
``io.BytesIO`` they decode from its ``getvalue()`` bytes (shared with the stream, not
copied); with another seekable stream they decode from a read-ahead chunk (64 KiB at
first, never past the end) that grows only as far as the decoded lengths justify, and
seek back; with anything else (a socket file, a pipe) they read exactly what each field
needs, a long field in chunks that at most double what has arrived. A claimed length
is checked against the bytes left where that is known, and trusted no further than
bytes arrive where it is not, so bad input costs about what was sent, never the rest
of the stream or the claimed size. Bad bytes
raise :class:`DecodeError` naming the field path and byte offset (offsets count from
where the reader started). Values that do not fit their field raise
:class:`EncodeError` naming the field path.

The compiled code is plain Python you can read: :func:`source` returns it
(``source(MetadataResponse, "decode")``). Errors are re-diagnosed by
:mod:`kproto.serial.interpret` and raised without the compiled code's own exception;
with ``KPROTO_DEBUG=1`` in the environment that exception is kept as ``__cause__``,
its traceback showing the generated lines.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Callable
from functools import cache
from typing import IO, Any, TypeVar

from kproto.exceptions import DecodeError, EncodeError
from kproto.serial import interpret
from kproto.serial.compile import decoder, encoder, native_to_bytes, source
from kproto.serial.primitives import Short

__all__ = [
    "DecodeError",
    "EncodeError",
    "entity_reader",
    "entity_writer",
    "decode",
    "encode",
    "source",
]

E = TypeVar("E")

_SEEKABLE_CHUNK = 64 * 1024
_BytesIO = io.BytesIO


def _cause(exc: BaseException) -> BaseException | None:
    """The compiled code's own error when ``KPROTO_DEBUG=1`` (kept as ``__cause__``,
    its traceback shows the generated lines), else ``None``: the typed error from the
    interpreter already names the field and offset. Read on the error path only."""
    return exc if os.environ.get("KPROTO_DEBUG") == "1" else None


def _diagnose_decode(
    cls: type, buf: Any, start: int, exc: BaseException
) -> DecodeError:
    """Re-read with the interpreter to name the field path and byte offset."""
    src = interpret.BufferSource(buf, start)
    try:
        interpret.read_entity(cls, src)
    except DecodeError as err:
        if err.offset is not None:
            return DecodeError(err.reason, path=err.path, offset=err.offset - start)
        return err
    return DecodeError(f"cannot decode {cls.__name__}: {exc!r}", offset=None)


def _decode_view(cls: type, view: Any, start: int) -> tuple[Any, int]:
    try:
        return decoder(cls)(view, start)
    except Exception as exc:
        raise _diagnose_decode(cls, view, start, exc) from _cause(exc)


@cache
def entity_reader(cls: type[E]) -> Callable[[IO[bytes]], E]:
    """Return ``read(stream) -> entity`` for ``cls``, built once per class.

    The reader consumes exactly one encoded ``cls`` (no size prefix, no header).

    Raises (from ``read``):
        DecodeError: truncated input, a negative length other than the null marker, a
            length beyond the bytes left, invalid UTF-8, an over-long varint, null in a
            non-nullable field, or a malformed tagged-field section; the error names
            the field path and the byte offset from where ``read`` started.
    """
    decode_fn = decoder(cls)

    def read(stream: IO[bytes]) -> E:
        if isinstance(stream, _BytesIO):
            # getvalue() shares the stream's bytes object (no copy unless it must be
            # trimmed, which is a realloc); compiled code indexes and slices bytes
            # faster than a getbuffer() view, and there is no view to release.
            start = stream.tell()
            data = stream.getvalue()
            try:
                entity, end = decode_fn(data, start)
            except Exception as exc:
                raise _diagnose_decode(cls, data, start, exc) from _cause(exc)
            stream.seek(end)
            return entity  # type: ignore[no-any-return]
        if stream.seekable():
            return _read_seekable(cls, stream)  # type: ignore[no-any-return]
        return interpret.read_entity(cls, interpret.StreamSource(stream))  # type: ignore[no-any-return]

    read.__doc__ = f"Read one {cls.__name__} from a binary stream."
    return read


def _read_seekable(cls: type, stream: IO[bytes]) -> Any:
    """Decode from a read-ahead chunk (64 KiB at first, never past the end), growing it
    only as far as the input justifies, then leave the stream just past the entity.

    The chunk grows when the decoder ran off its end: to the position a length claims
    when the stream holds that many bytes (a length beyond the stream is an error, not
    a reason to read on), or to twice its size after a fixed-width field, which the
    decoder reaches only once everything before it has decoded.
    """
    start = stream.tell()
    stream.seek(0, io.SEEK_END)
    left = max(stream.tell() - start, 0)
    stream.seek(start)
    data = stream.read(min(_SEEKABLE_CHUNK, left))
    decode_fn = decoder(cls)
    while True:
        try:
            entity, end = decode_fn(data, 0)
        except Exception as exc:
            want = len(data)
            if isinstance(exc, Short) and exc.need <= left:
                want = max(exc.need, min(2 * len(data), left))
            elif isinstance(exc, (IndexError, struct.error)):
                want = min(2 * len(data), left)
            more = stream.read(want - len(data)) if want > len(data) else b""
            if more:
                data += more
                continue
            if len(data) < left:
                # Malformed before the chunk's end: name it with the true bytes left.
                stream.seek(start)
                try:
                    source = interpret.StreamSource(stream, 0, left)
                    return interpret.read_entity(cls, source)
                except DecodeError:
                    stream.seek(start)
                    raise
            stream.seek(start)
            raise _diagnose_decode(cls, data, 0, exc) from _cause(exc)
        stream.seek(start + end)
        return entity


def _diagnose_encode(entity: Any, exc: BaseException) -> EncodeError:
    try:
        interpret.write_entity([], entity)
    except EncodeError as err:
        return err
    return EncodeError(f"cannot encode {type(entity).__name__}: {exc!r}")


@cache
def entity_writer(cls: type[E]) -> Callable[[IO[bytes], E], None]:
    """Return ``write(stream, entity) -> None`` for ``cls``, built once per class.

    Writes exactly the encoding of one entity (no size prefix, no header) with a single
    ``stream.write`` call. Tagged fields equal to their default are omitted, as Kafka
    does; unknown tagged fields kept from decoding are written back unchanged.

    Raises (from ``write``):
        EncodeError: the entity is not a ``cls``, or a value does not fit its field
            (int out of range, None in a non-nullable field, wrong type); the error
            names the field path. Nothing is written then.
    """
    encode_fn = encoder(cls)
    to_bytes = native_to_bytes(cls)
    if to_bytes is not None:
        return _native_writer(cls, to_bytes)

    def write(stream: IO[bytes], entity: E) -> None:
        if entity.__class__ is not cls:
            raise _not_a(cls, entity)
        parts: list[bytes] = []
        try:
            encode_fn(entity, parts.append)
            data = b"".join(parts)
        except Exception as exc:
            raise _diagnose_encode(entity, exc) from _cause(exc)
        stream.write(data)

    write.__doc__ = f"Write one {cls.__name__} to a binary stream."
    return write


def _not_a(cls: type, entity: Any) -> EncodeError:
    return EncodeError(
        f"expected a {cls.__qualname__}, got {type(entity).__qualname__}",
        path=cls.__name__,
    )


def _native_writer(
    cls: type[E], to_bytes: Callable[[Any], bytes]
) -> Callable[[IO[bytes], E], None]:
    """entity_writer's ``write`` over the C writer (one call for the bytes, which
    runs the compiled encoder itself when unsure, so errors are the same)."""

    def write(stream: IO[bytes], entity: E) -> None:
        if entity.__class__ is not cls:
            raise _not_a(cls, entity)
        try:
            data = to_bytes(entity)
        except Exception as exc:
            raise _diagnose_encode(entity, exc) from _cause(exc)
        stream.write(data)

    write.__doc__ = f"Write one {cls.__name__} to a binary stream."
    return write


def encode(entity: Any) -> bytes:
    """The encoding of one entity as bytes (no size prefix, no header).

    Raises:
        EncodeError: a value does not fit its field (names the field path).
    """
    parts: list[bytes] = []
    try:
        to_bytes = native_to_bytes(type(entity))
        if to_bytes is not None:
            return to_bytes(entity)
        encoder(type(entity))(entity, parts.append)
        return b"".join(parts)
    except Exception as exc:
        raise _diagnose_encode(entity, exc) from _cause(exc)


def decode(cls: type[E], data: bytes | bytearray | memoryview) -> E:
    """Decode exactly one ``cls`` from ``data``; trailing bytes are an error.

    Raises:
        DecodeError: bad bytes (names the field path and byte offset), or bytes left
            over after the entity.
    """
    entity, end = _decode_view(cls, data, 0)
    if end != len(data):
        raise DecodeError(
            f"{len(data) - end} bytes left over after the entity",
            path=cls.__name__,
            offset=end,
        )
    return entity  # type: ignore[no-any-return]
