"""Serializers applied to whole records: what :class:`kproto.client.Client` calls
when ``produce`` is given a ``key_serializer`` / ``value_serializer`` and ``fetch`` /
``iter_records`` a ``key_deserializer`` / ``value_deserializer``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import attrs

from .context import Deserializer, MessageField, SerializationContext, Serializer

__all__ = ["serialize_records", "deserialize_records", "deserialize_result"]

R = TypeVar("R")


def serialize_records(
    topic: str,
    records: Sequence[Any],
    key_serializer: Serializer | None,
    value_serializer: Serializer | None,
) -> list[tuple[Any, ...]]:
    """``records`` (``(key, value[, headers[, timestamp_ms]])`` tuples or
    :class:`kproto.records.Record`) with keys and values serialized, as
    ``(key, value, headers[, timestamp_ms])`` tuples. Each serializer gets a
    :class:`SerializationContext` with the record's header list, which a serializer
    framing the schema id in a header appends to.

    Raises:
        SerializationError: as :class:`KeySerializationError` /
            :class:`ValueSerializationError` naming the topic.
    """
    out: list[tuple[Any, ...]] = []
    for record in records:
        if hasattr(record, "key"):
            key, value = record.key, record.value
            headers = list(record.headers)
            timestamp = record.timestamp if record.timestamp >= 0 else None
        else:
            key, value = record[0], record[1]
            headers = list(record[2] or ()) if len(record) > 2 else []
            timestamp = record[3] if len(record) > 3 else None
        if key_serializer is not None:
            key = key_serializer(
                key, SerializationContext(topic, MessageField.KEY, headers)
            )
        if value_serializer is not None:
            value = value_serializer(
                value, SerializationContext(topic, MessageField.VALUE, headers)
            )
        out.append(
            (key, value, headers)
            if timestamp is None
            else (key, value, headers, timestamp)
        )
    return out


def deserialize_records(
    topic: str,
    partition: int,
    records: Iterable[R],
    key_deserializer: Deserializer | None,
    value_deserializer: Deserializer | None,
) -> list[R]:
    """Each record (an attrs record such as :class:`kproto.records.Record`) with its
    ``key`` and ``value`` replaced by their deserialized values. Each deserializer gets
    a :class:`SerializationContext` with the topic, partition, the record's offset and
    its headers.

    Raises:
        SerializationError: as :class:`KeyDeserializationError` /
            :class:`ValueDeserializationError` naming topic, partition and offset.
    """
    out: list[R] = []
    for record in records:
        rec: Any = record
        headers = list(rec.headers)
        key, value = rec.key, rec.value
        if key_deserializer is not None:
            key = key_deserializer(
                key,
                SerializationContext(
                    topic, MessageField.KEY, headers, partition, rec.offset
                ),
            )
        if value_deserializer is not None:
            value = value_deserializer(
                value,
                SerializationContext(
                    topic, MessageField.VALUE, headers, partition, rec.offset
                ),
            )
        out.append(attrs.evolve(rec, key=key, value=value))
    return out


def deserialize_result(
    result: R,
    topic: str,
    partition: int,
    key_deserializer: Deserializer | None,
    value_deserializer: Deserializer | None,
) -> R:
    """A fetch result (:class:`kproto.client.FetchResult`) with its ``records``
    deserialized as :func:`deserialize_records` does."""
    res: Any = result
    records = deserialize_records(
        topic, partition, res.records, key_deserializer, value_deserializer
    )
    evolved: R = attrs.evolve(res, records=tuple(records))
    return evolved
