"""The records the transaction coordinator writes to ``__transaction_state``.

As Kafka's ``TransactionLog`` (coordinator record serde): the key is an int16 record
type (0, the ``TransactionLogKey`` JSON ``apiKey``, which kproto's generated classes
carry as the key's version) followed by ``TransactionLogKey`` v0; the value is an
int16 version followed by ``TransactionLogValue`` (v0 here, what Kafka writes for
transaction version 1 clients), or null for a tombstone.
:func:`kproto.spark.decode_internal_topic` decodes these records unchanged.
"""

from __future__ import annotations

import io
import struct
from typing import Any

import attrs

from kproto.broker.coordinator_runtime import partition_for as _partition_for
from kproto.index import data_type
from kproto.meta import WIRE
from kproto.serial import DecodeError, entity_reader, entity_writer

from .metadata import TransactionMetadata, TransactionState

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "TRANSACTION_LOG_VALUE_VERSION",
    "decode_record",
    "partition_for",
    "transaction_record",
]

TRANSACTION_STATE_TOPIC = "__transaction_state"
TRANSACTION_LOG_KEY_TYPE = 0
TRANSACTION_LOG_VALUE_VERSION = 0
_INT16 = struct.Struct(">h")


def partition_for(transactional_id: str, partitions: int) -> int:
    """The ``__transaction_state`` partition of ``transactional_id`` (Kafka's
    ``TransactionStateManager.partitionFor``: ``Utils.abs(hashCode) % n``)."""
    return _partition_for(transactional_id, partitions)


def _encode(cls: type, version: int, fields: dict[str, object]) -> bytes:
    buf = io.BytesIO()
    buf.write(_INT16.pack(version))
    entity_writer(cls)(buf, cls(**fields))
    return buf.getvalue()


def transaction_record(
    transactional_id: str, meta: TransactionMetadata | None
) -> tuple[bytes, bytes | None]:
    """The (key, value) of one transactional id's state; ``meta`` ``None`` is a
    tombstone (an expired id)."""
    key = _encode(
        data_type("TransactionLogKey", TRANSACTION_LOG_KEY_TYPE),
        TRANSACTION_LOG_KEY_TYPE,
        {"transactional_id": transactional_id},
    )
    if meta is None:
        return key, None
    # v1 (tagged previous/next producer id, client transaction version) for a
    # TV2 producer, as Kafka's TransactionLog.valueToBytes
    version = (
        1 if meta.client_transaction_version >= 2 else TRANSACTION_LOG_VALUE_VERSION
    )
    value_cls = data_type("TransactionLogValue", version)
    schema = attrs.fields_dict(value_cls)["transaction_partitions"]
    entity = schema.metadata[WIRE].element.entity
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    # Kafka writes null partitions for Empty and the Complete states.
    partitions = (
        None
        if meta.state
        in (
            TransactionState.EMPTY,
            TransactionState.COMPLETE_COMMIT,
            TransactionState.COMPLETE_ABORT,
        )
        else tuple(
            entity(topic=t, partition_ids=tuple(ps)) for t, ps in by_topic.items()
        )
    )
    tv2: dict[str, object] = (
        {
            "previous_producer_id": meta.previous_producer_id,
            "next_producer_id": meta.next_producer_id,
            "client_transaction_version": meta.client_transaction_version,
        }
        if version >= 1
        else {}
    )
    value = _encode(
        value_cls,
        version,
        {
            **tv2,
            "producer_id": meta.producer_id,
            "producer_epoch": meta.producer_epoch,
            "transaction_timeout_ms": meta.txn_timeout_ms,
            "transaction_status": int(meta.state),
            "transaction_partitions": partitions,
            "transaction_last_update_timestamp_ms": meta.txn_last_update_timestamp_ms,
            "transaction_start_timestamp_ms": meta.txn_start_timestamp_ms,
        },
    )
    return key, value


def decode_record(
    key: bytes | None, value: bytes | None
) -> tuple[str, TransactionMetadata | None]:
    """Decode one ``__transaction_state`` record: ``(transactional_id, metadata or
    None for a tombstone)``.

    Raises:
        DecodeError: a missing key, an unknown key type, value version or state
            id, or bytes that do not decode.
    """
    if key is None or len(key) < 2:
        raise DecodeError("__transaction_state record without a key type")
    (key_type,) = _INT16.unpack_from(key)
    if key_type != TRANSACTION_LOG_KEY_TYPE:
        raise DecodeError(f"__transaction_state record with key type {key_type}")
    try:
        k = _read("TransactionLogKey", key_type, key)
        if value is None:
            return k.transactional_id, None
        if len(value) < 2:
            raise DecodeError("__transaction_state value without a version")
        v = _read("TransactionLogValue", _INT16.unpack_from(value)[0], value)
        state = TransactionState(v.transaction_status)
    except LookupError as exc:
        raise DecodeError(f"__transaction_state record: {exc}") from exc
    except ValueError as exc:
        raise DecodeError(f"__transaction_state record: {exc}") from exc
    meta = TransactionMetadata(
        k.transactional_id,
        v.producer_id,
        v.producer_epoch,
        v.transaction_timeout_ms,
        state,
        partitions={
            (p.topic, i)
            for p in (v.transaction_partitions or ())
            for i in p.partition_ids
        },
        txn_start_timestamp_ms=v.transaction_start_timestamp_ms,
        txn_last_update_timestamp_ms=v.transaction_last_update_timestamp_ms,
        previous_producer_id=getattr(v, "previous_producer_id", -1),
        next_producer_id=getattr(v, "next_producer_id", -1),
        client_transaction_version=getattr(v, "client_transaction_version", 0),
    )
    return k.transactional_id, meta


def _read(name: str, version: int, data: bytes) -> Any:
    stream = io.BytesIO(data)
    stream.seek(2)
    return entity_reader(data_type(name, version))(stream)
