"""The ``__consumer_offsets`` records of KIP-848 consumer groups.

Kafka's ``GroupCoordinatorRecordHelpers`` write, per group: ``ConsumerGroupMetadata``
(key type 3: the group epoch), ``ConsumerGroupPartitionMetadata`` (4: subscribed
topics and their partition counts), ``ConsumerGroupMemberMetadata`` (5: one member's
subscription), ``ConsumerGroupTargetAssignmentMetadata`` (6: the assignment epoch),
``ConsumerGroupTargetAssignmentMember`` (7: one member's target assignment) and
``ConsumerGroupCurrentMemberAssignment`` (8: one member's epochs, state and
partitions). Value version 0 for all; a null value is a tombstone. As in
:mod:`kproto.broker.groups.records`, the key type is kproto's version of the key
class and precedes it as an int16.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from kproto.index import data_type
from kproto.meta import WIRE
from kproto.serial import DecodeError

from .assignors import Assignment
from .consumer_group import ConsumerGroupMember
from .records import _encode, _read, _value_version

__all__ = [
    "CONSUMER_KEY_TYPES",
    "ConsumerRecord",
    "assignment_from",
    "current_assignment_record",
    "decode_consumer_record",
    "group_epoch_record",
    "member_metadata_record",
    "partition_metadata_record",
    "target_member_record",
    "target_metadata_record",
]

#: Key type -> record name (``<name>Key`` / ``<name>Value``).
CONSUMER_KEY_TYPES: dict[int, str] = {
    3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata",
    5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
}
_TYPE_OF = {name: key_type for key_type, name in CONSUMER_KEY_TYPES.items()}
Pair = tuple[bytes, bytes | None]


def _element(cls: type, field: str) -> Any:
    return attrs.fields_dict(cls)[field].metadata[WIRE].element.entity


def _record(name: str, key: dict[str, Any], value: dict[str, Any] | None) -> Pair:
    key_type = _TYPE_OF[name]
    key_bytes = _encode(data_type(f"{name}Key", key_type), key_type, key)
    if value is None:
        return key_bytes, None
    return key_bytes, _encode(data_type(f"{name}Value", 0), 0, value)


def _partitions(cls: type, field: str, assignment: Assignment) -> tuple[Any, ...]:
    entity = _element(cls, field)
    return tuple(
        entity(topic_id=t, partitions=tuple(sorted(ps)))
        for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0]))
        if ps
    )


def assignment_from(topic_partitions: Any) -> Assignment:
    """``{topic_id: partitions}`` of a list of ``(topic_id, partitions)`` entities."""
    out: Assignment = {}
    for tp in topic_partitions or ():
        if tp.partitions:
            out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(
                tp.partitions
            )
    return out


def group_epoch_record(group_id: str, epoch: int | None) -> Pair:
    """``ConsumerGroupMetadata``: the group epoch (None: tombstone)."""
    value = None if epoch is None else {"epoch": epoch}
    return _record("ConsumerGroupMetadata", {"group_id": group_id}, value)


def partition_metadata_record(
    group_id: str, topics: dict[str, tuple[uuid.UUID, int]] | None
) -> Pair:
    """``ConsumerGroupPartitionMetadata``: ``{name: (topic_id, partitions)}``."""
    if topics is None:
        return _record("ConsumerGroupPartitionMetadata", {"group_id": group_id}, None)
    cls = data_type("ConsumerGroupPartitionMetadataValue", 0)
    entity = _element(cls, "topics")
    value = {
        "topics": tuple(
            entity(topic_id=tid, topic_name=name, num_partitions=count)
            for name, (tid, count) in sorted(topics.items())
        )
    }
    return _record("ConsumerGroupPartitionMetadata", {"group_id": group_id}, value)


def member_metadata_record(
    group_id: str, member_id: str, member: ConsumerGroupMember | None
) -> Pair:
    """``ConsumerGroupMemberMetadata``: a member's subscription (None: tombstone)."""
    key = {"group_id": group_id, "member_id": member_id}
    if member is None:
        return _record("ConsumerGroupMemberMetadata", key, None)
    value = {
        "instance_id": member.instance_id,
        "rack_id": member.rack_id,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "subscribed_topic_names": member.subscribed_topic_names,
        "subscribed_topic_regex": member.subscribed_topic_regex,
        "rebalance_timeout_ms": member.rebalance_timeout_ms,
        "server_assignor": member.server_assignor,
    }
    return _record("ConsumerGroupMemberMetadata", key, value)


def target_metadata_record(group_id: str, assignment_epoch: int | None) -> Pair:
    """``ConsumerGroupTargetAssignmentMetadata``: the assignment epoch."""
    value = None if assignment_epoch is None else {"assignment_epoch": assignment_epoch}
    return _record(
        "ConsumerGroupTargetAssignmentMetadata", {"group_id": group_id}, value
    )


def target_member_record(
    group_id: str, member_id: str, assignment: Assignment | None
) -> Pair:
    """``ConsumerGroupTargetAssignmentMember``: one member's target assignment."""
    key = {"group_id": group_id, "member_id": member_id}
    if assignment is None:
        return _record("ConsumerGroupTargetAssignmentMember", key, None)
    cls = data_type("ConsumerGroupTargetAssignmentMemberValue", 0)
    value = {"topic_partitions": _partitions(cls, "topic_partitions", assignment)}
    return _record("ConsumerGroupTargetAssignmentMember", key, value)


def current_assignment_record(
    group_id: str, member_id: str, member: ConsumerGroupMember | None
) -> Pair:
    """``ConsumerGroupCurrentMemberAssignment``: epochs, state and partitions."""
    key = {"group_id": group_id, "member_id": member_id}
    if member is None:
        return _record("ConsumerGroupCurrentMemberAssignment", key, None)
    cls = data_type("ConsumerGroupCurrentMemberAssignmentValue", 0)
    value = {
        "member_epoch": member.member_epoch,
        "previous_member_epoch": member.previous_member_epoch,
        "state": int(member.state),
        "assigned_partitions": _partitions(cls, "assigned_partitions", member.assigned),
        "partitions_pending_revocation": _partitions(
            cls, "partitions_pending_revocation", member.pending_revocation
        ),
    }
    return _record("ConsumerGroupCurrentMemberAssignment", key, value)


@attrs.frozen
class ConsumerRecord:
    """A decoded consumer group record: ``name`` (see :data:`CONSUMER_KEY_TYPES`),
    its key entity and value entity (``None``: tombstone)."""

    name: str
    key: Any
    value: Any

    @property
    def group_id(self) -> str:
        return str(self.key.group_id)


def decode_consumer_record(key: bytes, value: bytes | None) -> ConsumerRecord | None:
    """Decode a consumer group record; None when the key type is not one of
    :data:`CONSUMER_KEY_TYPES` (a classic record or one this broker ignores, such as
    ``ConsumerGroupRegularExpression``).

    Raises:
        DecodeError: bytes that do not decode as the record they claim to be.
    """
    if len(key) < 2:
        raise DecodeError("__consumer_offsets record without a key version")
    key_type = int.from_bytes(key[:2], "big", signed=True)
    name = CONSUMER_KEY_TYPES.get(key_type)
    if name is None:
        return None
    try:
        k = _read(f"{name}Key", key_type, key)
        if value is None:
            return ConsumerRecord(name, k, None)
        version = _value_version(value)
        return ConsumerRecord(name, k, _read(f"{name}Value", version, value))
    except LookupError as exc:
        raise DecodeError(f"__consumer_offsets {name} record: {exc}") from exc
