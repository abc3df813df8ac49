"""The ``__consumer_offsets`` records of KIP-1071 streams groups, and their replay.

Kafka's ``StreamsCoordinatorRecordHelpers`` write, per group:
``StreamsGroupMetadata`` (key type 17: the group epoch and metadata hash),
``StreamsGroupTopology`` (23: the declared topology),
``StreamsGroupMemberMetadata`` (19: one member's process, endpoint, topology epoch),
``StreamsGroupTargetAssignmentMetadata`` (20: the assignment epoch),
``StreamsGroupTargetAssignmentMember`` (21: one member's target tasks) and
``StreamsGroupCurrentMemberAssignment`` (22: one member's epochs, state and tasks).
Value version 0 for all; a null value is a tombstone; as in
:mod:`kproto.broker.groups.records` the key type precedes the key as an int16.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .records import CoordinatorRecord, ModernRecords, Pair, partition_entries
from .streams_group import (
    StreamsGroup,
    StreamsGroupMember,
    StreamsMemberState,
    Subtopology,
    TaskSet,
)

__all__ = [
    "STREAMS_KEY_TYPES",
    "STREAMS_RECORDS",
    "decode_streams_record",
    "group_records",
    "group_tombstones",
    "load_streams_groups",
    "member_records",
    "metadata_hash",
]

STREAMS_RECORDS = ModernRecords("StreamsGroup")
#: Key type -> record name (``<name>Key`` / ``<name>Value``).
STREAMS_KEY_TYPES = STREAMS_RECORDS.key_types
_record = STREAMS_RECORDS.record
_member_record = STREAMS_RECORDS.member_record


def metadata_hash(metadata: dict[str, int]) -> int:
    """A stable int64 of the source topics' partition counts (Kafka hashes the
    topics' metadata; only equality matters)."""
    text = ",".join(f"{t}:{n}" for t, n in sorted(metadata.items()))
    return int.from_bytes(
        hashlib.sha256(text.encode()).digest()[:8], "big", signed=True
    )


def group_records(group: StreamsGroup, *, targets: bool) -> list[Pair]:
    """The group-level records (metadata, topology, assignment epoch) and, with
    ``targets``, every member's target tasks."""
    key = {"group_id": group.group_id}
    out = [
        _record(
            "StreamsGroupMetadata",
            key,
            {
                "epoch": group.group_epoch,
                "metadata_hash": metadata_hash(group.metadata),
                "validated_topology_epoch": group.topology_epoch,
            },
        )
    ]
    if group.topology is not None:
        subtopologies = [s.as_fields() for s in group.topology]
        value = {"epoch": group.topology_epoch, "subtopologies": subtopologies}
        out.append(_record("StreamsGroupTopology", key, value))
    out.append(
        _record(
            "StreamsGroupTargetAssignmentMetadata",
            key,
            {"assignment_epoch": group.assignment_epoch},
        )
    )
    if targets:
        for member_id, tasks in group.target.items():
            out.append(
                _member_record(
                    "StreamsGroupTargetAssignmentMember",
                    group.group_id,
                    member_id,
                    {"active_tasks": partition_entries(tasks, "subtopology_id")},
                )
            )
    return out


def member_records(group_id: str, member: StreamsGroupMember) -> list[Pair]:
    """A member's metadata and current assignment records."""
    key = {"group_id": group_id, "member_id": member.member_id}
    endpoint = member.user_endpoint
    return [
        _record(
            "StreamsGroupMemberMetadata",
            key,
            {
                **member.metadata_fields(),
                "topology_epoch": member.topology_epoch,
                "process_id": member.process_id,
                "user_endpoint": (
                    None
                    if endpoint is None
                    else {"host": endpoint[0], "port": endpoint[1]}
                ),
                "client_tags": [{"key": k, "value": v} for k, v in member.client_tags],
            },
        ),
        _record(
            "StreamsGroupCurrentMemberAssignment",
            key,
            {
                "member_epoch": member.member_epoch,
                "previous_member_epoch": member.previous_member_epoch,
                "state": int(member.state),
                "active_tasks": partition_entries(member.assigned, "subtopology_id"),
                "active_tasks_pending_revocation": partition_entries(
                    member.pending_revocation, "subtopology_id"
                ),
            },
        ),
    ]


def group_tombstones(group_id: str) -> list[Pair]:
    key = {"group_id": group_id}
    return [
        _record("StreamsGroupTargetAssignmentMetadata", key, None),
        _record("StreamsGroupTopology", key, None),
        _record("StreamsGroupMetadata", key, None),
    ]


def decode_streams_record(key: bytes, value: bytes | None) -> CoordinatorRecord | None:
    """Decode a streams group record; None for another key type.

    Raises:
        DecodeError: bytes that do not decode as the record they claim to be.
    """
    return STREAMS_RECORDS.decode(key, value)


def _task_set(tasks: Any) -> TaskSet:
    return {t.subtopology_id: frozenset(t.partitions) for t in tasks if t.partitions}


def load_streams_groups(
    records: Mapping[tuple[str, str, str], CoordinatorRecord],
) -> dict[str, StreamsGroup]:
    """The groups described by the last record of each key (a group needs its
    ``StreamsGroupMetadata``, a member its ``StreamsGroupMemberMetadata``). The
    topology is configured again on the next heartbeat; timers are not armed."""
    groups: dict[str, StreamsGroup] = {}
    live = {k: r for k, r in records.items() if r.value is not None}
    for (name, group_id, _), rec in live.items():
        if name == "StreamsGroupMetadata":
            groups[group_id] = StreamsGroup(
                group_id,
                group_epoch=rec.value.epoch,
                loaded_hash=rec.value.metadata_hash,
            )
    for (name, group_id, member_id), rec in live.items():
        group = groups.get(group_id)
        if group is None:
            continue
        v = rec.value
        if name == "StreamsGroupTopology":
            group.topology_epoch = v.epoch
            group.topology = tuple(Subtopology.from_entity(s) for s in v.subtopologies)
        elif name == "StreamsGroupTargetAssignmentMetadata":
            group.assignment_epoch = v.assignment_epoch
        elif name == "StreamsGroupTargetAssignmentMember":
            group.target[member_id] = _task_set(v.active_tasks)
        elif name == "StreamsGroupMemberMetadata":
            member = group.members.setdefault(member_id, StreamsGroupMember(member_id))
            member.replay_metadata(v)
            member.topology_epoch, member.process_id = v.topology_epoch, v.process_id
            if v.user_endpoint is not None:
                member.user_endpoint = (v.user_endpoint.host, v.user_endpoint.port)
            member.client_tags = tuple((t.key, t.value) for t in v.client_tags)
    for (name, group_id, member_id), rec in live.items():
        group = groups.get(group_id)
        if name != "StreamsGroupCurrentMemberAssignment" or group is None:
            continue
        found = group.members.get(member_id)
        if found is None:
            continue
        member, v = found, rec.value
        member.member_epoch = v.member_epoch
        member.previous_member_epoch = v.previous_member_epoch
        member.state = StreamsMemberState(v.state)
        member.assigned = _task_set(v.active_tasks)
        member.pending_revocation = _task_set(v.active_tasks_pending_revocation)
        group.add_partition_epochs(member)
    for group in groups.values():
        group.target = {m: t for m, t in group.target.items() if m in group.members}
    return groups
