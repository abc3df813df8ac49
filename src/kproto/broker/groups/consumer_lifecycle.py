"""Creating, converting, deleting and recovering KIP-848 consumer groups.

Functions the :class:`~kproto.broker.groups.GroupCoordinator` calls where a consumer
group meets the classic group APIs, following Kafka's ``GroupMetadataManager``:

- :func:`classic_join`: a classic JoinGroup to a consumer group with members joins
  it as a classic member (:class:`.consumer_classic.ClassicMembers`; refused with
  INCONSISTENT_GROUP_PROTOCOL when ``group.consumer.migration.policy`` is
  ``disabled``); an empty one is converted back to a classic group, keeping its
  offsets. The upgrade (a ConsumerGroupHeartbeat join to a classic group) is in
  :meth:`.consumer_coordinator.ConsumerGroups.heartbeat`, the conversions
  themselves in :mod:`.consumer_classic`.
- :func:`delete_offsets`: OffsetDelete (DeleteGroups is
  :meth:`.modern_coordinator.ModernGroups.delete_group`).
- :func:`load_groups`: the groups rebuilt from the last record of each key read
  from ``__consumer_offsets``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kproto.errors import ErrorCode

from .consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState
from .consumer_migration import MigrationPolicy
from .consumer_records import assignment_from
from .group import ClassicGroup, JoinResult
from .records import CoordinatorRecord, offset_commit_record

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

__all__ = [
    "classic_join",
    "delete_offsets",
    "load_groups",
]

E = ErrorCode


async def classic_join(
    coordinator: GroupCoordinator, group_id: str, *args: Any, **kwargs: Any
) -> JoinResult:
    """JoinGroup (arguments as ``Membership.join_group``) where ``group_id`` may be a
    consumer group."""
    modern = coordinator.consumer.groups.get(group_id)
    if modern is not None:
        if not modern.is_empty():
            if coordinator.consumer.migration_policy is MigrationPolicy.DISABLED:
                return JoinResult(
                    E.INCONSISTENT_GROUP_PROTOCOL, args[0] if args else ""
                )
            return await coordinator.consumer.classic.join(modern, *args, **kwargs)
        tombstones = coordinator.consumer.group_tombstones(modern)
        if not await coordinator._append(group_id, tombstones):
            return JoinResult(E.COORDINATOR_NOT_AVAILABLE)
        del coordinator.consumer.groups[group_id]
        modern.dead = True
        classic = coordinator.groups[group_id] = ClassicGroup(
            group_id, state_timestamp_ms=coordinator.now_ms()
        )
        classic.offsets = modern.offsets
    return await coordinator.membership.join_group(group_id, *args, **kwargs)


async def delete_offsets(
    coordinator: GroupCoordinator, group_id: str, partitions: list[tuple[str, int]]
) -> tuple[int, dict[tuple[str, int], int]]:
    """OffsetDelete of a consumer group: GROUP_SUBSCRIBED_TO_TOPIC for topics the
    members subscribe to (Kafka's ``ConsumerGroup.validateOffsetDelete`` and
    ``isSubscribedToTopic``)."""
    modern = coordinator.consumer.groups[group_id]
    subscribed = set(modern.subscription_metadata)
    result: dict[tuple[str, int], int] = {}
    deleted = []
    for tp in partitions:
        if tp[0] in subscribed and not modern.is_empty():
            result[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
        else:
            result[tp] = E.NONE
            if tp in modern.offsets:
                deleted.append(tp)
    if deleted:
        pairs = [offset_commit_record(group_id, t, p, None) for t, p in deleted]
        if not await coordinator._append(group_id, pairs):
            return E.COORDINATOR_NOT_AVAILABLE, {}
        for tp in deleted:
            modern.offsets.pop(tp, None)
    return E.NONE, result


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
