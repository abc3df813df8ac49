"""Rebuilding KIP-848 consumer groups from their ``__consumer_offsets`` records.

:func:`load_groups` is what :class:`.consumer_coordinator.ConsumerGroups` replays at
start: the groups described by the last record of each key, as Kafka's
``GroupMetadataManager.replay`` leaves them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState
from .consumer_records import assignment_from
from .records import CoordinatorRecord

__all__ = ["load_groups"]


def load_groups(
    records: Mapping[tuple[str, str, str], CoordinatorRecord],
) -> dict[str, ConsumerGroup]:
    """The groups described by the last record of each ``replay_key`` (a group
    needs its ``ConsumerGroupMetadata`` record; a member its
    ``ConsumerGroupMemberMetadata``). Timers are not armed here."""
    by_group: dict[str, dict[str, Any]] = {}
    for (name, group_id, member_id), rec in records.items():
        if rec.value is None:
            continue
        entry = by_group.setdefault(group_id, {"members": {}})
        if member_id:
            entry["members"].setdefault(member_id, {})[name] = rec.value
        else:
            entry[name] = rec.value
    groups: dict[str, ConsumerGroup] = {}
    for group_id, entry in by_group.items():
        meta = entry.get("ConsumerGroupMetadata")
        if meta is None:
            continue
        group = ConsumerGroup(group_id, group_epoch=meta.epoch)
        target_meta = entry.get("ConsumerGroupTargetAssignmentMetadata")
        if target_meta is not None:
            group.assignment_epoch = target_meta.assignment_epoch
        partitions = entry.get("ConsumerGroupPartitionMetadata")
        for t in () if partitions is None else partitions.topics:
            group.subscription_metadata[t.topic_name] = (t.topic_id, t.num_partitions)
        for member_id, values in entry["members"].items():
            _load_member(group, member_id, values)
        groups[group_id] = group
    return groups


def _load_member(group: ConsumerGroup, member_id: str, values: dict[str, Any]) -> None:
    sub = values.get("ConsumerGroupMemberMetadata")
    if sub is None:
        return
    member = ConsumerGroupMember(
        member_id,
        subscribed_topic_names=tuple(sub.subscribed_topic_names or ()),
        subscribed_topic_regex=sub.subscribed_topic_regex or None,
        server_assignor=sub.server_assignor,
    )
    member.replay_metadata(sub)
    classic = sub.classic_member_metadata
    if classic is not None:
        member.classic_session_timeout_ms = classic.session_timeout_ms
        member.classic_protocols = tuple(
            (p.name, p.metadata) for p in classic.supported_protocols
        )
    current = values.get("ConsumerGroupCurrentMemberAssignment")
    if current is not None:
        member.member_epoch = current.member_epoch
        member.previous_member_epoch = current.previous_member_epoch
        try:
            member.state = MemberState(current.state)
        except ValueError:
            member.state = MemberState.UNKNOWN
        member.assigned = assignment_from(current.assigned_partitions)
        member.pending_revocation = assignment_from(
            current.partitions_pending_revocation
        )
    target = values.get("ConsumerGroupTargetAssignmentMember")
    if target is not None:
        group.target[member_id] = assignment_from(target.topic_partitions)
    group.add_member(member)
    group.add_partition_epochs(member)
