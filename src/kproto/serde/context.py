"""What a serializer is told about the record it works on, and the two call shapes.

A serializer is called ``serializer(value, ctx)`` and returns ``bytes`` or None; a
deserializer ``deserializer(data, ctx)`` returns the value (None for None). ``ctx`` is
a :class:`SerializationContext` or None, as confluent-kafka's serializers take it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, Protocol

import attrs

__all__ = [
    "MessageField",
    "SerializationContext",
    "Serializer",
    "Deserializer",
    "Headers",
    "ToDict",
    "FromDict",
]

Headers = list[tuple[str, bytes | None]]


class MessageField(StrEnum):
    """Which part of a record is (de)serialized (confluent-kafka's ``MessageField``)."""

    KEY = "key"
    VALUE = "value"


@attrs.define
class SerializationContext:
    """The record a (de)serializer works on (confluent-kafka's
    ``SerializationContext``, plus the partition and offset a consumer knows).

    ``headers`` is the record's header list: serializers that put the schema id in a
    header append to it (the list is the one produced); deserializers read it.
    """

    topic: str
    field: MessageField
    headers: Headers | None = None
    partition: int | None = None
    offset: int | None = None


#: A registry-backed serializer's ``to_dict(obj, ctx)``: an object to the value the
#: schema's library writes (a dict for an Avro record or a JSON object).
ToDict = Callable[[Any, SerializationContext | None], Any]
#: A registry-backed deserializer's ``from_dict(value, ctx)``: the value read to an
#: object.
FromDict = Callable[[Any, SerializationContext | None], Any]


class Serializer(Protocol):
    """``serializer(value, ctx) -> bytes | None`` (None serializes to None)."""

    def __call__(
        self, value: Any, ctx: SerializationContext | None = None, /
    ) -> bytes | None: ...


class Deserializer(Protocol):
    """``deserializer(data, ctx) -> value`` (None deserializes to None)."""

    def __call__(
        self, data: bytes | None, ctx: SerializationContext | None = None, /
    ) -> Any: ...
