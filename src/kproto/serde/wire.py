"""Confluent's wire format: the schema id framing of registry-backed records.

- Magic byte 0, then the schema id as 4 bytes big-endian (unsigned), then the payload.
- Magic byte 1, then a 16-byte schema GUID (confluent-kafka 2.x's ``guid_to_bytes``):
  what ``header_schema_id_serializer`` puts in the ``__key_schema_id`` /
  ``__value_schema_id`` record header, leaving the payload bare.
- Protobuf only, after the id: the message-index path locating the message type in
  its file (``[0]``, the first top-level message, as the single byte 0; otherwise the
  count then each index, all zigzag varints).

The schema id serializers and deserializers below are what the ``schema.id.serializer``
and ``schema.id.deserializer`` options take (confluent-kafka's names:
``prefix_schema_id_serializer``, ``header_schema_id_serializer``,
``prefix_schema_id_deserializer``, ``dual_schema_id_deserializer``, the default: the
header if there is one, else the prefix).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence

import attrs

from .context import MessageField, SerializationContext
from .errors import in_context

__all__ = [
    "MAGIC_BYTE",
    "MAGIC_BYTE_GUID",
    "KEY_SCHEMA_ID_HEADER",
    "VALUE_SCHEMA_ID_HEADER",
    "SchemaId",
    "SchemaIdSerializer",
    "SchemaIdDeserializer",
    "encode_message_indexes",
    "decode_message_indexes",
    "decode_schema_id",
    "prefix_schema_id_serializer",
    "header_schema_id_serializer",
    "prefix_schema_id_deserializer",
    "dual_schema_id_deserializer",
]

MAGIC_BYTE = 0
MAGIC_BYTE_GUID = 1
KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"

_ID = struct.Struct(">bI")
MAX_VARINT_BYTES = 10


@attrs.frozen
class SchemaId:
    """Which schema a record was written with: the registry's ``schema_id`` and/or
    ``guid``, and for Protobuf the ``message_indexes`` path (None otherwise)."""

    schema_id: int | None = None
    guid: uuid.UUID | None = None
    message_indexes: tuple[int, ...] | None = None

    @property
    def label(self) -> int | str | None:
        """The id (or GUID string) to name in errors."""
        if self.schema_id is not None:
            return self.schema_id
        return None if self.guid is None else str(self.guid)

    def to_prefix(self) -> bytes:
        """Magic 0, the 4-byte id, then the message indexes (if any)."""
        if self.schema_id is None:
            raise ValueError("schema id is not set")
        out = _ID.pack(MAGIC_BYTE, self.schema_id)
        if self.message_indexes is not None:
            out += encode_message_indexes(self.message_indexes)
        return out

    def to_guid_bytes(self) -> bytes:
        """Magic 1, the 16-byte GUID, then the message indexes (if any)."""
        if self.guid is None:
            raise ValueError("schema GUID is not set (the registry gave none)")
        out = bytes([MAGIC_BYTE_GUID]) + self.guid.bytes
        if self.message_indexes is not None:
            out += encode_message_indexes(self.message_indexes)
        return out


SchemaIdSerializer = Callable[[bytes, SerializationContext | None, SchemaId], bytes]
"""``(payload, ctx, schema_id) -> bytes``: frames a payload (or moves the id to a
header of ``ctx.headers``)."""

SchemaIdDeserializer = Callable[
    [bytes, SerializationContext | None, bool], tuple[SchemaId, memoryview]
]
"""``(data, ctx, protobuf) -> (schema_id, payload)``."""


def _zigzag(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_message_indexes(indexes: Sequence[int]) -> bytes:
    """The Protobuf message-index path: ``[0]`` as one zero byte, else the zigzag
    varint count and indexes.

    Raises:
        ValueError: an empty path or a negative index.
    """
    if not indexes or any(i < 0 for i in indexes):
        raise ValueError(
            f"message indexes must be a non-empty path of >= 0, got {indexes!r}"
        )
    if list(indexes) == [0]:
        return b"\x00"
    return _zigzag(len(indexes)) + b"".join(_zigzag(i) for i in indexes)


def _read_zigzag(data: memoryview, pos: int) -> tuple[int, int]:
    n = shift = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise ValueError("message indexes: truncated varint")
        byte = data[pos + i]
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (n >> 1) ^ -(n & 1), pos + i + 1
    raise ValueError("message indexes: varint longer than 10 bytes")


def decode_message_indexes(data: memoryview, pos: int) -> tuple[tuple[int, ...], int]:
    """Read a message-index path at ``pos``; returns it and the position after.

    Raises:
        ValueError: truncated, negative, or a count larger than the bytes left.
    """
    count, pos = _read_zigzag(data, pos)
    if count == 0:
        return (0,), pos
    if count < 0 or count > len(data) - pos:
        raise ValueError(f"message indexes: invalid count {count}")
    out = []
    for _ in range(count):
        index, pos = _read_zigzag(data, pos)
        if index < 0:
            raise ValueError(f"message indexes: negative index {index}")
        out.append(index)
    return tuple(out), pos


def decode_schema_id(data: bytes | memoryview, protobuf: bool) -> tuple[SchemaId, int]:
    """Read a framing (magic 0 + id, or magic 1 + GUID; then the Protobuf path);
    returns the id and the payload's start.

    Raises:
        ValueError: empty, an unknown magic byte, or truncated (the message names it).
    """
    view = memoryview(data)
    if len(view) == 0:
        raise ValueError("no magic byte: empty data")
    magic = view[0]
    if magic == MAGIC_BYTE:
        if len(view) < 5:
            raise ValueError(f"truncated schema id: {len(view)} bytes, 5 expected")
        sid = SchemaId(int.from_bytes(view[1:5], "big"))
        pos = 5
    elif magic == MAGIC_BYTE_GUID:
        if len(view) < 17:
            raise ValueError(f"truncated schema GUID: {len(view)} bytes, 17 expected")
        sid = SchemaId(guid=uuid.UUID(bytes=bytes(view[1:17])))
        pos = 17
    else:
        raise ValueError(f"Unknown magic byte {magic} (0 or 1 expected)")
    if protobuf:
        indexes, pos = decode_message_indexes(view, pos)
        sid = attrs.evolve(sid, message_indexes=indexes)
    return sid, pos


def _header_name(ctx: SerializationContext) -> str:
    return (
        KEY_SCHEMA_ID_HEADER
        if ctx.field == MessageField.KEY
        else VALUE_SCHEMA_ID_HEADER
    )


def prefix_schema_id_serializer(
    payload: bytes, ctx: SerializationContext | None, schema_id: SchemaId
) -> bytes:
    """Magic 0 + id (+ message indexes) before the payload: the classic framing."""
    return schema_id.to_prefix() + payload


def header_schema_id_serializer(
    payload: bytes, ctx: SerializationContext | None, schema_id: SchemaId
) -> bytes:
    """The GUID framing in the ``__key_schema_id`` / ``__value_schema_id`` header
    appended to ``ctx.headers``; the payload bare.

    Raises:
        SerializationError: no context or no header list, or no GUID from the registry.
    """
    if ctx is None or ctx.headers is None:
        raise in_context(
            "header_schema_id_serializer needs a context with a headers list",
            ctx,
            deserializing=False,
            schema_id=schema_id.label,
        )
    try:
        value = schema_id.to_guid_bytes()
    except ValueError as err:
        raise in_context(
            str(err), ctx, deserializing=False, schema_id=schema_id.label
        ) from err
    ctx.headers.append((_header_name(ctx), value))
    return payload


def prefix_schema_id_deserializer(
    data: bytes, ctx: SerializationContext | None, protobuf: bool
) -> tuple[SchemaId, memoryview]:
    """The id from the payload's prefix.

    Raises:
        SerializationError: bad framing (named).
    """
    try:
        sid, pos = decode_schema_id(data, protobuf)
    except ValueError as err:
        raise in_context(str(err), ctx, deserializing=True) from err
    return sid, memoryview(data)[pos:]


def dual_schema_id_deserializer(
    data: bytes, ctx: SerializationContext | None, protobuf: bool
) -> tuple[SchemaId, memoryview]:
    """The id from the ``__key_schema_id`` / ``__value_schema_id`` header when the
    record has one (the payload is then bare), else from the payload's prefix.

    Raises:
        SerializationError: bad framing in the header or the prefix (named).
    """
    if ctx is not None and ctx.headers:
        name = _header_name(ctx)
        for key, value in ctx.headers:
            if key == name and value is not None:
                try:
                    sid, end = decode_schema_id(value, protobuf)
                    if end != len(value):
                        raise ValueError(
                            f"{len(value) - end} trailing bytes in the {name} header"
                        )
                except ValueError as err:
                    raise in_context(
                        f"header {name}: {err}", ctx, deserializing=True
                    ) from err
                return sid, memoryview(data)
    return prefix_schema_id_deserializer(data, ctx, protobuf)
