"""Describing the cluster: topics (Metadata), topic configs (DescribeConfigs) and
consumer groups (ListGroups, DescribeGroups, ConsumerGroupDescribe), as sans-IO operations over
:class:`~.core.ClientCore` (see :mod:`kproto.client.protocol`).

What Kafka's ``Admin.describeTopics``/``describeConfigs``/``listGroups``/
``describeConsumerGroups`` ask, answered in :mod:`.results` shapes: ListGroups goes
to every broker (each knows only the groups it coordinates), DescribeGroups to the
group's coordinator, DescribeConfigs and Metadata to any broker.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Sequence
from typing import Any, Final

from kproto.errors import ErrorCode
from kproto.index import ApiKey, data_type
from kproto.meta import ZERO_UUID
from kproto.serial import DecodeError, entity_reader

from .admin import call_coordinator
from .core import ClientCore
from .protocol import ANY_NODE, Call, Op, check_code
from .results import (
    ConfigEntry,
    GroupDescription,
    GroupListing,
    MemberDescription,
    PartitionDescription,
    TopicDescription,
    TopicPartition,
)

__all__ = [
    "CONFIG_SOURCE_DEFAULT",
    "TOPIC_RESOURCE",
    "decode_assignment",
    "consumer_group_describe",
    "describe_configs",
    "describe_groups",
    "describe_topics",
    "list_groups",
]

#: ``ConfigResource.Type.TOPIC`` (DescribeConfigs ``resource_type``).
TOPIC_RESOURCE: Final = 2
#: ``DescribeConfigsResponse.ConfigSource.DEFAULT_CONFIG`` (v1+ ``config_source``).
CONFIG_SOURCE_DEFAULT: Final = 5
_INT16: Final = struct.Struct(">h")


def describe_topics(
    core: ClientCore, names: Sequence[str] | None = None
) -> Op[list[TopicDescription]]:
    """Metadata for ``names`` (None: every topic), sorted by name.

    Raises:
        BrokerError: a named topic's error (UNKNOWN_TOPIC_OR_PARTITION, ...).
    """
    response = yield from core.refresh(None if names is None else list(names))
    out = []
    for t in response.topics:
        check_code(t.error_code, f"Metadata {t.name}", topic=t.name)
        partitions = tuple(
            PartitionDescription(
                p.partition_index,
                p.leader_id,
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                tuple(getattr(p, "offline_replicas", ())),
            )
            for p in sorted(t.partitions, key=lambda p: p.partition_index)
        )
        out.append(
            TopicDescription(
                t.name,
                getattr(t, "topic_id", ZERO_UUID),
                bool(getattr(t, "is_internal", False)),
                partitions,
            )
        )
    return sorted(out, key=lambda d: d.name)


def describe_configs(
    core: ClientCore, topics: Sequence[str]
) -> Op[dict[str, list[ConfigEntry]]]:
    """DescribeConfigs of ``topics`` (every config): ``{topic: [ConfigEntry]}``.

    Raises:
        BrokerError: a topic's error (UNKNOWN_TOPIC_OR_PARTITION, ...).
    """
    if not topics:
        return {}

    def build(v: int) -> dict[str, Any]:
        return {
            "resources": [
                {
                    "resource_type": TOPIC_RESOURCE,
                    "resource_name": t,
                    "configuration_keys": None,
                }
                for t in topics
            ],
            "include_synonyms": False,
            "include_documentation": False,
        }

    response = yield Call(ANY_NODE, ApiKey.DESCRIBE_CONFIGS, build)
    out: dict[str, list[ConfigEntry]] = {}
    for r in response.results:
        check_code(
            r.error_code,
            f"DescribeConfigs {r.resource_name}",
            topic=r.resource_name,
            error_message=r.error_message,
        )
        entries = []
        for c in r.configs:
            source = getattr(c, "config_source", -1)
            is_default = (
                c.is_default
                if hasattr(c, "is_default")
                else source == CONFIG_SOURCE_DEFAULT
            )
            entries.append(
                ConfigEntry(c.name, c.value, source, bool(is_default), c.is_sensitive)
            )
        out[r.resource_name] = entries
    return out


def list_groups(core: ClientCore) -> Op[list[GroupListing]]:
    """ListGroups on every broker, merged and sorted by group id.

    Raises:
        BrokerError: a broker's error (COORDINATOR_LOAD_IN_PROGRESS, ...).
    """
    yield from core.refresh([])

    def build(v: int) -> dict[str, Any]:
        return {"states_filter": [], "types_filter": []}

    found: dict[str, GroupListing] = {}
    for node in sorted(core.metadata.brokers):
        response = yield Call(node, ApiKey.LIST_GROUPS, build)
        check_code(response.error_code, f"ListGroups on node {node}")
        for g in response.groups:
            found[g.group_id] = GroupListing(
                g.group_id,
                g.protocol_type,
                getattr(g, "group_state", ""),
                getattr(g, "group_type", ""),
            )
    return [found[k] for k in sorted(found)]


def decode_assignment(data: bytes | None) -> tuple[TopicPartition, ...]:
    """The partitions in a consumer-protocol assignment (``member_assignment`` of
    a ``consumer`` group: int16 version, then ``ConsumerProtocolAssignment``;
    Kafka's ``ConsumerProtocol.deserializeAssignment``). Empty for no bytes.

    Raises:
        DecodeError: the bytes are not such an assignment.
    """
    if not data:
        return ()
    if len(data) < 2:
        raise DecodeError(f"consumer assignment of {len(data)} bytes has no version")
    (version,) = _INT16.unpack_from(data)
    try:
        cls = data_type("ConsumerProtocolAssignment", version)
    except LookupError:
        cls = data_type("ConsumerProtocolAssignment", 3)  # newer: read as the latest
    stream = io.BytesIO(data)
    stream.seek(2)
    entity = entity_reader(cls)(stream)
    return tuple(
        TopicPartition(tp.topic, p)
        for tp in entity.assigned_partitions
        for p in sorted(tp.partitions)
    )


def _member(m: Any, protocol_type: str) -> MemberDescription:
    assignment: tuple[TopicPartition, ...] = ()
    if protocol_type == "consumer":
        try:
            assignment = decode_assignment(m.member_assignment)
        except (DecodeError, ValueError, EOFError):
            assignment = ()  # as Kafka's tool: a member whose bytes do not decode
    return MemberDescription(
        m.member_id,
        getattr(m, "group_instance_id", None),
        m.client_id,
        m.client_host,
        assignment,
    )


def describe_groups(
    core: ClientCore, group_ids: Sequence[str]
) -> Op[list[GroupDescription]]:
    """DescribeGroups, each to its coordinator; in the order asked. A group that
    DescribeGroups does not find (GROUP_ID_NOT_FOUND, v6+: a KIP-848 group is "not
    a classic group") is asked again with ConsumerGroupDescribe (KIP-848), as
    Java's ``Admin.describeConsumerGroups`` covers both kinds (KIP-1043).

    Raises:
        BrokerError: a group's error (COORDINATOR_NOT_AVAILABLE twice,
            GROUP_ID_NOT_FOUND from both APIs, ...).
    """
    out = []
    for group_id in group_ids:

        def build(v: int, group_id: str = group_id) -> dict[str, Any]:
            return {"groups": [group_id], "include_authorized_operations": False}

        node, response = yield from call_coordinator(
            core, group_id, ApiKey.DESCRIBE_GROUPS, build, _group_code
        )
        g = response.groups[0]
        if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
            found = yield from consumer_group_describe(core, group_id)
            out.append(found)
            continue
        check_code(
            g.error_code,
            f"DescribeGroups {group_id}",
            error_message=getattr(g, "error_message", None),
        )
        out.append(
            GroupDescription(
                g.group_id,
                g.group_state,
                g.protocol_type,
                g.protocol_data,
                tuple(_member(m, g.protocol_type) for m in g.members),
                node,
            )
        )
    return out


def _group_code(response: Any) -> tuple[int]:
    """The error code of the one group a Describe*Groups request asked for."""
    return (response.groups[0].error_code,)


def _partitions(assignment: Any) -> tuple[TopicPartition, ...]:
    return tuple(
        TopicPartition(tp.topic_name, p)
        for tp in sorted(assignment.topic_partitions, key=lambda t: t.topic_name)
        for p in sorted(tp.partitions)
    )


def consumer_group_describe(core: ClientCore, group_id: str) -> Op[GroupDescription]:
    """ConsumerGroupDescribe (KIP-848, v0-v1) of one group at its coordinator:
    members with their epochs, current and target assignments.

    Raises:
        BrokerError: GROUP_ID_NOT_FOUND (no such KIP-848 group), a coordinator
            error twice, ...
    """

    def build(v: int) -> dict[str, Any]:
        return {"group_ids": [group_id], "include_authorized_operations": False}

    node, response = yield from call_coordinator(
        core, group_id, ApiKey.CONSUMER_GROUP_DESCRIBE, build, _group_code
    )
    g = response.groups[0]
    check_code(
        g.error_code,
        f"ConsumerGroupDescribe {group_id}",
        error_message=g.error_message,
    )
    members = tuple(
        MemberDescription(
            m.member_id,
            m.instance_id,
            m.client_id,
            m.client_host,
            _partitions(m.assignment),
            m.member_epoch,
            _partitions(m.target_assignment),
            tuple(m.subscribed_topic_names),
        )
        for m in g.members
    )
    return GroupDescription(
        g.group_id,
        g.group_state,
        "consumer",
        g.assignor_name,
        members,
        node,
        "consumer",
        g.group_epoch,
        g.assignment_epoch,
    )
