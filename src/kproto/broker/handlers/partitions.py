"""Helpers shared by the partition APIs: topic lookup by name or id, leadership."""

from __future__ import annotations

from typing import Any

from kproto.broker.handlers.context import RequestContext
from kproto.broker.leadership import leader_epoch
from kproto.broker.log import PartitionLog
from kproto.errors import ErrorCode
from kproto.meta import ZERO_UUID

__all__ = ["topic_name", "leader_log"]


def topic_name(
    ctx: RequestContext, entry: Any, name_field: str = "name"
) -> tuple[str, ErrorCode]:
    """``(topic name, error code)`` of a request's topic entry, which names the
    topic by ``name_field`` or (Fetch v13+, Produce v13) by ``topic_id``: an
    unknown id gives UNKNOWN_TOPIC_ID."""
    name = getattr(entry, name_field, None)
    if name:
        return name, ErrorCode.NONE
    topic_id = getattr(entry, "topic_id", None)
    if topic_id is not None and topic_id != ZERO_UUID:
        for info in ctx.state.topics.values():
            if info.topic_id == topic_id:
                return info.name, ErrorCode.NONE
        return "", ErrorCode.UNKNOWN_TOPIC_ID
    return "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def leader_log(
    ctx: RequestContext, topic: str, partition: int, current_leader_epoch: int = -1
) -> tuple[PartitionLog | None, ErrorCode]:
    """The partition's log if this node leads it, else ``(None, error code)``:
    UNKNOWN_TOPIC_OR_PARTITION; FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when the
    client's ``current_leader_epoch`` (-1: not checked) is older / newer than the
    partition's; NOT_LEADER_OR_FOLLOWER when another node (or none) leads it (Kafka's
    ``ReplicaManager.getPartitionOrException`` and
    ``Partition.localLogWithEpochOrThrow``)."""
    leader = ctx.state.leader(topic, partition)
    if leader is None:
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if current_leader_epoch >= 0:
        epoch = leader_epoch(ctx.state, topic, partition)
        if current_leader_epoch < epoch:
            return None, ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > epoch:
            return None, ErrorCode.UNKNOWN_LEADER_EPOCH
    if leader != ctx.node_id:
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
    plog = ctx.state.partition_log(topic, partition)
    if plog is None:
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return plog, ErrorCode.NONE
