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

from .assignors import Assignment
from .consumer_group import ConsumerGroup, ConsumerGroupMember
from .records import CoordinatorRecord, ModernRecords, Pair, partition_entries

__all__ = [
    "CONSUMER_KEY_TYPES",
    "CONSUMER_RECORDS",
    "assignment_from",
    "current_assignment_record",
    "decode_consumer_record",
    "group_epoch_record",
    "group_records",
    "member_metadata_record",
    "partition_metadata_record",
    "target_member_record",
    "target_metadata_record",
]

CONSUMER_RECORDS = ModernRecords(
    "ConsumerGroup", ignored=frozenset({"ConsumerGroupRegularExpression"})
)
#: Key type -> record name (``<name>Key`` / ``<name>Value``).
CONSUMER_KEY_TYPES = CONSUMER_RECORDS.key_types
_record = CONSUMER_RECORDS.record
_member_record = CONSUMER_RECORDS.member_record


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
    value = None
    if topics is not None:
        value = {
            "topics": [
                {"topic_id": tid, "topic_name": name, "num_partitions": count}
                for name, (tid, count) in sorted(topics.items())
            ]
        }
    return _record("ConsumerGroupPartitionMetadata", {"group_id": group_id}, value)


def member_metadata_record(
    group_id: str, member_id: str, member: ConsumerGroupMember
) -> Pair:
    """``ConsumerGroupMemberMetadata``: a member's subscription (its tombstone is
    one of :meth:`.records.ModernRecords.member_tombstones`)."""
    classic = None
    if member.classic_protocols is not None:
        classic = {
            "session_timeout_ms": member.classic_session_timeout_ms,
            "supported_protocols": [
                {"name": name, "metadata": data}
                for name, data in member.classic_protocols
            ],
        }
    value = {
        **member.metadata_fields(),
        "subscribed_topic_names": member.subscribed_topic_names,
        "subscribed_topic_regex": member.subscribed_topic_regex,
        "server_assignor": member.server_assignor,
        "classic_member_metadata": classic,
    }
    return _member_record("ConsumerGroupMemberMetadata", group_id, member_id, value)


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
    value = None
    if assignment is not None:
        value = {"topic_partitions": partition_entries(assignment, "topic_id")}
    return _member_record(
        "ConsumerGroupTargetAssignmentMember", group_id, member_id, value
    )


def current_assignment_record(
    group_id: str, member_id: str, member: ConsumerGroupMember
) -> Pair:
    """``ConsumerGroupCurrentMemberAssignment``: epochs, state and partitions (its
    tombstone is one of :meth:`.records.ModernRecords.member_tombstones`)."""
    value = {
        "member_epoch": member.member_epoch,
        "previous_member_epoch": member.previous_member_epoch,
        "state": int(member.state),
        "assigned_partitions": partition_entries(member.assigned, "topic_id"),
        "partitions_pending_revocation": partition_entries(
            member.pending_revocation, "topic_id"
        ),
    }
    return _member_record(
        "ConsumerGroupCurrentMemberAssignment", group_id, member_id, value
    )


def group_records(group: ConsumerGroup) -> list[Pair]:
    """Every record of ``group`` as it stands (Kafka's
    ``ConsumerGroup.createConsumerGroupRecords``): the group epoch, the subscribed
    topics' metadata, each member's subscription and target assignment, the
    assignment epoch, then each member's current assignment."""
    gid = group.group_id
    out = [
        group_epoch_record(gid, group.group_epoch),
        partition_metadata_record(gid, group.subscription_metadata),
    ]
    for member_id, member in group.members.items():
        out.append(member_metadata_record(gid, member_id, member))
        out.append(target_member_record(gid, member_id, group.target.get(member_id)))
    out.append(target_metadata_record(gid, group.assignment_epoch))
    for member_id, member in group.members.items():
        out.append(current_assignment_record(gid, member_id, member))
    return out


def decode_consumer_record(key: bytes, value: bytes | None) -> CoordinatorRecord | None:
    """Decode a consumer group record; None when the key type is not one of
    :data:`CONSUMER_KEY_TYPES` (a classic record or one this broker ignores, such as
    ``ConsumerGroupRegularExpression``).

    Raises:
        DecodeError: bytes that do not decode as the record they claim to be.
    """
    return CONSUMER_RECORDS.decode(key, value)
