"""Kafka's primitive serializers and deserializers, under Kafka's names.

Each follows the Java class of the same name in ``org.apache.kafka.common.serialization``
(bytes, byte order and error messages): integers are big-endian two's complement, floats
IEEE 754 big-endian, a UUID is its 36-character string form in the string encoding (as
Kafka's ``UUIDSerializer``), a boolean one byte 0 or 1. None serializes to None and
None deserializes to None. Wrong sizes and values that do not fit raise
:class:`~kproto.serde.errors.SerializationError` (Kafka's ``SerializationException``),
as the key/value subclass carrying the topic, partition and offset when a context
is given.
"""

from __future__ import annotations

import codecs
import struct
import uuid
from typing import Any, Generic, TypeVar

from .context import SerializationContext
from .errors import in_context, wrong_type

__all__ = [
    "StringSerializer",
    "StringDeserializer",
    "ShortSerializer",
    "ShortDeserializer",
    "IntegerSerializer",
    "IntegerDeserializer",
    "LongSerializer",
    "LongDeserializer",
    "FloatSerializer",
    "FloatDeserializer",
    "DoubleSerializer",
    "DoubleDeserializer",
    "BooleanSerializer",
    "BooleanDeserializer",
    "UUIDSerializer",
    "UUIDDeserializer",
    "ByteArraySerializer",
    "ByteArrayDeserializer",
    "VoidSerializer",
    "VoidDeserializer",
]

N = TypeVar("N", int, float)


class StringSerializer:
    """``str`` to bytes in ``encoding`` (Kafka's ``StringSerializer``; its
    ``serializer.encoding`` config, default UTF-8).

    Raises:
        LookupError: an unknown encoding (at construction).
        SerializationError: not a ``str``, or a character the encoding lacks.
    """

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = codecs.lookup(encoding).name

    def __call__(
        self, value: str | None, ctx: SerializationContext | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise wrong_type("StringSerializer", "str", value, ctx)
        try:
            return value.encode(self.encoding)
        except UnicodeEncodeError as err:
            raise in_context(
                f"Error when serializing string to byte[] in {self.encoding}: {err}",
                ctx,
                deserializing=False,
            ) from err


class StringDeserializer:
    """Bytes in ``encoding`` to ``str`` (Kafka's ``StringDeserializer``). Strict:
    bytes that are not valid in the encoding raise instead of decoding to
    replacement characters.

    Raises:
        LookupError: an unknown encoding (at construction).
        SerializationError: bytes invalid in the encoding.
    """

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = codecs.lookup(encoding).name

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> str | None:
        if data is None:
            return None
        try:
            return bytes(data).decode(self.encoding)
        except UnicodeDecodeError as err:
            raise in_context(
                f"Error when deserializing byte[] to string in {self.encoding}: {err}",
                ctx,
                deserializing=True,
            ) from err


class _FixedSize:
    """A fixed-size struct format (``fmt``, ``size`` bytes) of Kafka's number
    serializers and deserializers."""

    fmt = ""
    size = 0

    def __init__(self) -> None:
        self._struct = struct.Struct(self.fmt)


class _NumberSerializer(_FixedSize, Generic[N]):
    """The body of Kafka's number serializers: ``name`` is the Java class's prefix
    (``Integer``, ``Double``), ``kind`` (int or float) what a value must be (a bool
    is neither)."""

    name = ""
    kind: type = int

    def __call__(
        self, value: N | None, ctx: SerializationContext | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if self.kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise wrong_type(f"{self.name}Serializer", "int", value, ctx)
        if self.kind is float and (
            isinstance(value, bool) or not isinstance(value, int | float)
        ):
            raise wrong_type(f"{self.name}Serializer", "float", value, ctx)
        try:
            return self._struct.pack(value)
        except (struct.error, OverflowError) as err:
            raise in_context(
                f"{self.name}Serializer: {value!r} does not fit in {self.size} bytes",
                ctx,
                deserializing=False,
            ) from err


class _NumberDeserializer(_FixedSize, Generic[N]):
    """The body of Kafka's number deserializers: ``label`` is the class Kafka's
    size message names (``IntegerDeserializer``; plain ``Deserializer`` for
    ``FloatDeserializer`` and ``DoubleDeserializer``, as Kafka writes it)."""

    label = ""

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> N | None:
        if data is None:
            return None
        if len(data) != self.size:
            raise in_context(
                f"Size of data received by {self.label} is not {self.size}",
                ctx,
                deserializing=True,
            )
        value: N = self._struct.unpack(data)[0]
        return value


class ShortSerializer(_NumberSerializer[int]):
    """``int`` to 2 bytes big-endian (Kafka's ``ShortSerializer``).

    Raises:
        SerializationError: not an int, or outside -32768..32767.
    """

    name, fmt, size = "Short", ">h", 2


class ShortDeserializer(_NumberDeserializer[int]):
    """2 bytes big-endian to ``int`` (Kafka's ``ShortDeserializer``).

    Raises:
        SerializationError: "Size of data received by ShortDeserializer is not 2".
    """

    label, fmt, size = "ShortDeserializer", ">h", 2


class IntegerSerializer(_NumberSerializer[int]):
    """``int`` to 4 bytes big-endian (Kafka's ``IntegerSerializer``; the same bytes as
    confluent-kafka's ``IntegerSerializer``).

    Raises:
        SerializationError: not an int, or outside the int32 range.
    """

    name, fmt, size = "Integer", ">i", 4


class IntegerDeserializer(_NumberDeserializer[int]):
    """4 bytes big-endian to ``int`` (Kafka's ``IntegerDeserializer``).

    Raises:
        SerializationError: "Size of data received by IntegerDeserializer is not 4".
    """

    label, fmt, size = "IntegerDeserializer", ">i", 4


class LongSerializer(_NumberSerializer[int]):
    """``int`` to 8 bytes big-endian (Kafka's ``LongSerializer``).

    Raises:
        SerializationError: not an int, or outside the int64 range.
    """

    name, fmt, size = "Long", ">q", 8


class LongDeserializer(_NumberDeserializer[int]):
    """8 bytes big-endian to ``int`` (Kafka's ``LongDeserializer``).

    Raises:
        SerializationError: "Size of data received by LongDeserializer is not 8".
    """

    label, fmt, size = "LongDeserializer", ">q", 8


class FloatSerializer(_NumberSerializer[float]):
    """``float`` to 4 bytes IEEE 754 big-endian (Kafka's ``FloatSerializer``; a
    Python float is rounded to single precision).

    Raises:
        SerializationError: not a number, or too large for single precision.
    """

    name, fmt, size, kind = "Float", ">f", 4, float


class FloatDeserializer(_NumberDeserializer[float]):
    """4 bytes IEEE 754 big-endian to ``float`` (Kafka's ``FloatDeserializer``).

    Raises:
        SerializationError: "Size of data received by Deserializer is not 4"
            (Kafka's text).
    """

    label, fmt, size = "Deserializer", ">f", 4


class DoubleSerializer(_NumberSerializer[float]):
    """``float`` to 8 bytes IEEE 754 big-endian (Kafka's ``DoubleSerializer``; the
    same bytes as confluent-kafka's ``DoubleSerializer``).

    Raises:
        SerializationError: not a number.
    """

    name, fmt, size, kind = "Double", ">d", 8, float


class DoubleDeserializer(_NumberDeserializer[float]):
    """8 bytes IEEE 754 big-endian to ``float`` (Kafka's ``DoubleDeserializer``).

    Raises:
        SerializationError: "Size of data received by Deserializer is not 8"
            (Kafka's text).
    """

    label, fmt, size = "Deserializer", ">d", 8


class BooleanSerializer:
    """``bool`` to one byte, 1 or 0 (Kafka's ``BooleanSerializer``, KIP-907).

    Raises:
        SerializationError: not a bool.
    """

    def __call__(
        self, value: bool | None, ctx: SerializationContext | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            raise wrong_type("BooleanSerializer", "bool", value, ctx)
        return b"\x01" if value else b"\x00"


class BooleanDeserializer:
    """One byte, 1 or 0, to ``bool`` (Kafka's ``BooleanDeserializer``).

    Raises:
        SerializationError: "Size of data received by BooleanDeserializer is not 1",
            or "Unexpected byte received by BooleanDeserializer: N".
    """

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> bool | None:
        if data is None:
            return None
        if len(data) != 1:
            raise in_context(
                "Size of data received by BooleanDeserializer is not 1",
                ctx,
                deserializing=True,
            )
        if data[0] > 1:
            raise in_context(
                f"Unexpected byte received by BooleanDeserializer: {data[0]}",
                ctx,
                deserializing=True,
            )
        return data[0] == 1


class UUIDSerializer:
    """A :class:`uuid.UUID` to its 36-character string form (lower-case hex with
    hyphens) in ``encoding`` (Kafka's ``UUIDSerializer``: ``uuid.toString()`` in UTF-8).

    Raises:
        SerializationError: not a UUID.
    """

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = codecs.lookup(encoding).name

    def __call__(
        self, value: uuid.UUID | None, ctx: SerializationContext | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, uuid.UUID):
            raise wrong_type("UUIDSerializer", "uuid.UUID", value, ctx)
        return str(value).encode(self.encoding)


class UUIDDeserializer:
    """The 36-character string form in ``encoding`` to a :class:`uuid.UUID` (Kafka's
    ``UUIDDeserializer``).

    Raises:
        SerializationError: "Error parsing data into UUID" (Kafka's text), naming the
            bytes: not 36 characters of hex groups 8-4-4-4-12.
    """

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = codecs.lookup(encoding).name

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> uuid.UUID | None:
        if data is None:
            return None
        try:
            text = bytes(data).decode(self.encoding)
            if len(text) != 36 or [len(g) for g in text.split("-")] != [8, 4, 4, 4, 12]:
                raise ValueError(text)
            return uuid.UUID(text)
        except ValueError as err:  # UnicodeDecodeError is a ValueError
            raise in_context(
                f"Error parsing data into UUID: {bytes(data[:64])!r}",
                ctx,
                deserializing=True,
            ) from err


class ByteArraySerializer:
    """Bytes as they are (Kafka's ``ByteArraySerializer``); bytearray and memoryview
    are copied to bytes.

    Raises:
        SerializationError: not bytes-like.
    """

    def __call__(
        self, value: Any, ctx: SerializationContext | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, bytes | bytearray | memoryview):
            raise wrong_type("ByteArraySerializer", "bytes", value, ctx)
        return bytes(value)


class ByteArrayDeserializer:
    """Bytes as they are (Kafka's ``ByteArrayDeserializer``)."""

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> bytes | None:
        return None if data is None else bytes(data)


class VoidSerializer:
    """Always None (Kafka's ``VoidSerializer``, for topics without keys).

    Raises:
        SerializationError: a value other than None.
    """

    def __call__(self, value: None, ctx: SerializationContext | None = None) -> None:
        if value is not None:
            raise wrong_type("VoidSerializer", "None", value, ctx)
        return None


class VoidDeserializer:
    """None from None (Kafka's ``VoidDeserializer``).

    Raises:
        SerializationError: "Data should be null for a VoidDeserializer." (Kafka's text)
    """

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None
    ) -> None:
        if data is not None:
            raise in_context(
                "Data should be null for a VoidDeserializer.", ctx, deserializing=True
            )
        return None
