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
import io
from typing import Any

import attrs

from kproto.index import data_type
from kproto.meta import build_entity
from kproto.serial import DecodeError, entity_writer

from .records import _read, _value_version
from .streams_group import (
    StreamsGroup,
    StreamsGroupMember,
    StreamsMemberState,
    Subtopology,
    TaskSet,
    TopicInfo,
)

__all__ = [
    "STREAMS_KEY_TYPES",
    "StreamsRecord",
    "decode_streams_record",
    "group_records",
    "group_tombstones",
    "load_streams_groups",
    "member_records",
    "member_tombstones",
    "metadata_hash",
]

#: Key type -> record name (``<name>Key`` / ``<name>Value``).
STREAMS_KEY_TYPES: dict[int, str] = {
    17: "StreamsGroupMetadata",
    19: "StreamsGroupMemberMetadata",
    20: "StreamsGroupTargetAssignmentMetadata",
    21: "StreamsGroupTargetAssignmentMember",
    22: "StreamsGroupCurrentMemberAssignment",
    23: "StreamsGroupTopology",
}
_TYPE_OF = {name: key_type for key_type, name in STREAMS_KEY_TYPES.items()}
Pair = tuple[bytes, bytes | None]


def _encode(name: str, version: int, fields: dict[str, Any]) -> bytes:
    cls = data_type(name, version)
    buf = io.BytesIO()
    buf.write(version.to_bytes(2, "big", signed=True))
    entity_writer(cls)(buf, build_entity(cls, fields))
    return buf.getvalue()


def _record(name: str, key: dict[str, Any], value: dict[str, Any] | None) -> Pair:
    key_type = _TYPE_OF[name]
    key_bytes = _encode(f"{name}Key", key_type, key)
    return key_bytes, None if value is None else _encode(f"{name}Value", 0, value)


def _tasks(tasks: TaskSet) -> list[dict[str, Any]]:
    return [
        {"subtopology_id": sub, "partitions": sorted(ps)}
        for sub, ps in sorted(tasks.items())
        if ps
    ]


def _topic_infos(infos: tuple[TopicInfo, ...]) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "partitions": t.partitions,
            "replication_factor": t.replication_factor,
            "topic_configs": [{"key": k, "value": v} for k, v in t.configs],
        }
        for t in infos
    ]


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
        subtopologies = [
            {
                "subtopology_id": s.subtopology_id,
                "source_topics": list(s.source_topics),
                "repartition_sink_topics": list(s.repartition_sink_topics),
                "state_changelog_topics": _topic_infos(s.state_changelog_topics),
                "repartition_source_topics": _topic_infos(s.repartition_source_topics),
            }
            for s in group.topology
        ]
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
                _record(
                    "StreamsGroupTargetAssignmentMember",
                    {"group_id": group.group_id, "member_id": member_id},
                    {"active_tasks": _tasks(tasks)},
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
                "instance_id": member.instance_id,
                "rack_id": member.rack_id,
                "client_id": member.client_id,
                "client_host": member.client_host,
                "rebalance_timeout_ms": member.rebalance_timeout_ms,
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
                "active_tasks": _tasks(member.active),
                "active_tasks_pending_revocation": _tasks(member.pending_revocation),
            },
        ),
    ]


def member_tombstones(group_id: str, member_id: str) -> list[Pair]:
    key = {"group_id": group_id, "member_id": member_id}
    return [
        _record("StreamsGroupCurrentMemberAssignment", key, None),
        _record("StreamsGroupTargetAssignmentMember", key, None),
        _record("StreamsGroupMemberMetadata", key, None),
    ]


def group_tombstones(group_id: str) -> list[Pair]:
    key = {"group_id": group_id}
    return [
        _record("StreamsGroupTargetAssignmentMetadata", key, None),
        _record("StreamsGroupTopology", key, None),
        _record("StreamsGroupMetadata", key, None),
    ]


@attrs.frozen
class StreamsRecord:
    """A decoded streams group record: ``name`` (see :data:`STREAMS_KEY_TYPES`),
    key and value entities (value ``None``: tombstone)."""

    name: str
    key: Any
    value: Any

    @property
    def replay_key(self) -> tuple[str, str, str]:
        """``(name, group_id, member_id or "")``: the last record of each wins."""
        return (
            self.name,
            str(self.key.group_id),
            str(getattr(self.key, "member_id", "")),
        )


def decode_streams_record(key: bytes, value: bytes | None) -> StreamsRecord | None:
    """Decode a streams group record; None for another key type.

    Raises:
        DecodeError: bytes that do not decode as the record they claim to be.
    """
    if len(key) < 2:
        raise DecodeError("__consumer_offsets record without a key version")
    key_type = int.from_bytes(key[:2], "big", signed=True)
    name = STREAMS_KEY_TYPES.get(key_type)
    if name is None:
        return None
    try:
        k = _read(f"{name}Key", key_type, key)
        if value is None:
            return StreamsRecord(name, k, None)
        return StreamsRecord(
            name, k, _read(f"{name}Value", _value_version(value), value)
        )
    except LookupError as exc:
        raise DecodeError(f"__consumer_offsets {name} record: {exc}") from exc


def _task_set(tasks: Any) -> TaskSet:
    return {t.subtopology_id: frozenset(t.partitions) for t in tasks if t.partitions}


def _infos(infos: Any) -> tuple[TopicInfo, ...]:
    return tuple(
        TopicInfo(
            t.name,
            t.partitions,
            t.replication_factor,
            tuple((c.key, c.value) for c in t.topic_configs),
        )
        for t in infos
    )


def load_streams_groups(
    records: dict[tuple[str, str, str], StreamsRecord],
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
            group.topology = tuple(
                Subtopology(
                    s.subtopology_id,
                    tuple(s.source_topics),
                    tuple(s.repartition_sink_topics),
                    _infos(s.state_changelog_topics),
                    _infos(s.repartition_source_topics),
                )
                for s in v.subtopologies
            )
        elif name == "StreamsGroupTargetAssignmentMetadata":
            group.assignment_epoch = v.assignment_epoch
        elif name == "StreamsGroupTargetAssignmentMember":
            group.target[member_id] = _task_set(v.active_tasks)
        elif name == "StreamsGroupMemberMetadata":
            member = group.members.setdefault(member_id, StreamsGroupMember(member_id))
            member.instance_id, member.rack_id = v.instance_id, v.rack_id
            member.client_id, member.client_host = v.client_id, v.client_host
            member.rebalance_timeout_ms = v.rebalance_timeout_ms
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
        member.active = _task_set(v.active_tasks)
        member.pending_revocation = _task_set(v.active_tasks_pending_revocation)
        group.hold(member)
    for group in groups.values():
        group.target = {m: t for m, t in group.target.items() if m in group.members}
    return groups
