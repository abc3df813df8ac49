"""Serializers and deserializers for record keys and values.

- Kafka's primitives under Kafka's names (:mod:`kproto.serde.primitives`):
  ``StringSerializer``, ``IntegerSerializer`` (4 bytes big-endian), ``LongSerializer``,
  ``ShortSerializer``, ``FloatSerializer``, ``DoubleSerializer``, ``BooleanSerializer``,
  ``UUIDSerializer``, ``ByteArraySerializer``, ``VoidSerializer`` and their
  deserializers.
- Schema Registry-backed Avro, JSON Schema and Protobuf in Confluent's wire format
  (:mod:`kproto.serde.avro`, :mod:`kproto.serde.json_schema`,
  :mod:`kproto.serde.protobuf`; framing in :mod:`kproto.serde.wire`, subject name
  strategies in :mod:`kproto.serde.strategies`).

Every serializer is called ``serializer(value, ctx)`` and every deserializer
``deserializer(data, ctx)`` with an optional :class:`SerializationContext`, as
confluent-kafka's are. Names are imported lazily: ``from kproto.serde import
IntegerSerializer`` loads neither fastavro, jsonschema nor protobuf.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import primitives
from .context import Deserializer, MessageField, SerializationContext, Serializer
from .errors import (
    KeyDeserializationError,
    KeySerializationError,
    SerializationError,
    ValueDeserializationError,
    ValueSerializationError,
)
from .primitives import *  # noqa: F403 (the names of primitives.__all__)

if TYPE_CHECKING:
    from .avro import AvroDeserializer, AvroSerializer
    from .json_schema import JSONDeserializer, JSONSerializer
    from .protobuf import ProtobufDeserializer, ProtobufSerializer
    from .strategies import (
        record_name_strategy,
        topic_name_strategy,
        topic_record_name_strategy,
    )

_LAZY = {
    "AvroSerializer": "avro",
    "AvroDeserializer": "avro",
    "JSONSerializer": "json_schema",
    "JSONDeserializer": "json_schema",
    "ProtobufSerializer": "protobuf",
    "ProtobufDeserializer": "protobuf",
    "topic_name_strategy": "strategies",
    "record_name_strategy": "strategies",
    "topic_record_name_strategy": "strategies",
}

__all__ = [
    "Serializer",
    "Deserializer",
    "MessageField",
    "SerializationContext",
    "SerializationError",
    "KeySerializationError",
    "ValueSerializationError",
    "KeyDeserializationError",
    "ValueDeserializationError",
    "AvroSerializer",
    "AvroDeserializer",
    "JSONSerializer",
    "JSONDeserializer",
    "ProtobufSerializer",
    "ProtobufDeserializer",
    "topic_name_strategy",
    "record_name_strategy",
    "topic_record_name_strategy",
]
__all__ += primitives.__all__


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
