"""The typed errors of :mod:`kproto.serde`.

:class:`SerializationError` is Kafka's ``SerializationException``; the four subclasses
are confluent-kafka's ``KeySerializationError``, ``ValueSerializationError``,
``KeyDeserializationError`` and ``ValueDeserializationError``, raised when the field
(key or value) is known. Each names the topic, partition, offset and schema id where
known, in its message and as attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import SerializationContext

__all__ = [
    "SerializationError",
    "KeySerializationError",
    "ValueSerializationError",
    "KeyDeserializationError",
    "ValueDeserializationError",
    "in_context",
    "wrong_type",
]


class SerializationError(ValueError):
    """A value that cannot be serialized, or bytes that cannot be deserialized
    (Kafka's ``org.apache.kafka.common.errors.SerializationException``).

    Attributes: ``reason`` (the bare message), ``topic``, ``partition``, ``offset``,
    ``schema_id`` (an int id, or a GUID string for the header framing), each None
    where unknown.
    """

    def __init__(
        self,
        reason: str,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
        schema_id: int | str | None = None,
    ) -> None:
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.schema_id = schema_id
        where = [
            f"{name} {value!r}" if name == "topic" else f"{name} {value}"
            for name, value in (
                ("topic", topic),
                ("partition", partition),
                ("offset", offset),
                ("schema id", schema_id),
            )
            if value is not None
        ]
        super().__init__(f"{reason} ({', '.join(where)})" if where else reason)


class KeySerializationError(SerializationError):
    """A record key that cannot be serialized (confluent-kafka's name)."""


class ValueSerializationError(SerializationError):
    """A record value that cannot be serialized (confluent-kafka's name)."""


class KeyDeserializationError(SerializationError):
    """Record key bytes that cannot be deserialized (confluent-kafka's name)."""


class ValueDeserializationError(SerializationError):
    """Record value bytes that cannot be deserialized (confluent-kafka's name)."""


def in_context(
    reason: str,
    ctx: SerializationContext | None,
    *,
    deserializing: bool,
    schema_id: int | str | None = None,
) -> SerializationError:
    """The error to raise for ``reason``: the key/value subclass when ``ctx`` names the
    field, carrying ``ctx``'s topic, partition and offset; a plain
    :class:`SerializationError` without a context."""
    if ctx is None:
        return SerializationError(reason, schema_id=schema_id)
    key = ctx.field == "key"
    cls: type[SerializationError]
    if deserializing:
        cls = KeyDeserializationError if key else ValueDeserializationError
    else:
        cls = KeySerializationError if key else ValueSerializationError
    # getattr: confluent-kafka's own SerializationContext (no partition, offset) works too
    return cls(
        reason,
        topic=ctx.topic,
        partition=getattr(ctx, "partition", None),
        offset=getattr(ctx, "offset", None),
        schema_id=schema_id,
    )


def wrong_type(
    who: str,
    expected: str,
    value: Any,
    ctx: SerializationContext | None,
    *,
    schema_id: int | str | None = None,
) -> SerializationError:
    """The serializer error for a value of the wrong type: ``<who>: <expected>
    expected, got <the value's type>`` (in :func:`in_context`'s class)."""
    return in_context(
        f"{who}: {expected} expected, got {type(value).__name__}",
        ctx,
        deserializing=False,
        schema_id=schema_id,
    )
