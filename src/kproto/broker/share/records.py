"""The records the share coordinator writes to ``__share_group_state``.

Shapes follow Kafka's ``ShareCoordinatorRecordSerde`` (share-coordinator module): a
key is an int16 record type (0 ``ShareSnapshotKey``, 1 ``ShareUpdateKey``) then the
key entity; a value is an int16 version (0) then ``ShareSnapshotValue`` /
``ShareUpdateValue``, or null for a tombstone (the share partition's state was
deleted). ``kproto dump-log --share-group-state-decoder`` reads them.

The partition of a share partition's state is Kafka's
``SharePartitionKey.asCoordinatorKey()`` (``"group:topicId:partition"``) hashed as
``Utils.abs(hashCode) % share.coordinator.state.topic.num.partitions``.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

import attrs

from kproto.broker.coordinator_runtime import partition_for as _partition_for
from kproto.broker.groups.records import encode_versioned, read_versioned
from kproto.index import data_type
from kproto.json import kafka_uuid
from kproto.meta import WIRE
from kproto.serial import DecodeError

from .partition import StateBatch

__all__ = [
    "SHARE_STATE_TOPIC",
    "ShareStateRecord",
    "decode_state_record",
    "snapshot_record",
    "state_partition_for",
]

SHARE_STATE_TOPIC = "__share_group_state"
SNAPSHOT_TYPE = 0
UPDATE_TYPE = 1
_INT16 = struct.Struct(">h")


def state_partition_for(
    group_id: str, topic_id: uuid.UUID, partition: int, partitions: int
) -> int:
    """The ``__share_group_state`` partition holding one share partition's state.

    The coordinator key is ``group:topicId:partition`` with the topic id in Kafka's
    base64 form (``Uuid.toString``)."""
    topic = kafka_uuid(topic_id)
    key = f"{group_id}:{topic}:{partition}"
    return _partition_for(key, partitions)


def snapshot_record(
    group_id: str,
    topic_id: uuid.UUID,
    partition: int,
    value: dict[str, Any] | None,
) -> tuple[bytes, bytes | None]:
    """The (key, value) of a ``ShareSnapshot`` record; ``value`` holds the
    ``ShareSnapshotValue`` fields with ``state_batches`` as :class:`StateBatch`
    objects; ``None`` is a tombstone."""
    key = encode_versioned(
        data_type("ShareSnapshotKey", SNAPSHOT_TYPE),
        SNAPSHOT_TYPE,
        {"group_id": group_id, "topic_id": topic_id, "partition": partition},
    )
    if value is None:
        return key, None
    value_cls = data_type("ShareSnapshotValue", 0)
    entity = attrs.fields_dict(value_cls)["state_batches"].metadata[WIRE].element.entity
    fields = dict(value)
    fields["state_batches"] = tuple(
        entity(**attrs.asdict(b)) for b in value["state_batches"]
    )
    return key, encode_versioned(value_cls, 0, fields)


@attrs.frozen
class ShareStateRecord:
    """A decoded ``__share_group_state`` record. ``snapshot`` tells a
    ``ShareSnapshot`` (the whole state) from a ``ShareUpdate`` (a delta); ``value``
    is the value entity, ``None`` for a tombstone."""

    group_id: str
    topic_id: uuid.UUID
    partition: int
    snapshot: bool
    value: Any


def decode_state_record(key: bytes | None, value: bytes | None) -> ShareStateRecord:
    """Decode one ``__share_group_state`` record.

    Raises:
        DecodeError: a missing or short key or value version, an unknown record
            type, or bytes that do not decode as the entity they claim to be.
    """
    if key is None or len(key) < 2:
        raise DecodeError(f"{SHARE_STATE_TOPIC} record without a record type")
    (record_type,) = _INT16.unpack_from(key)
    if record_type not in (SNAPSHOT_TYPE, UPDATE_TYPE):
        raise DecodeError(f"{SHARE_STATE_TOPIC} record of unknown type {record_type}")
    snapshot = record_type == SNAPSHOT_TYPE
    name = "ShareSnapshot" if snapshot else "ShareUpdate"
    try:
        k = read_versioned(f"{name}Key", record_type, key)
        v = None
        if value is not None:
            if len(value) < 2:
                raise DecodeError(f"{SHARE_STATE_TOPIC} value without a version")
            v = read_versioned(f"{name}Value", _INT16.unpack_from(value)[0], value)
    except LookupError as exc:
        raise DecodeError(f"{SHARE_STATE_TOPIC} record: {exc}") from exc
    return ShareStateRecord(k.group_id, k.topic_id, k.partition, snapshot, v)


def state_batches(value: Any) -> list[StateBatch]:
    """The :class:`StateBatch` list of a decoded value entity."""
    return [
        StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in value.state_batches
    ]
