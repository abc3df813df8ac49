"""Request handlers of the KIP-848 consumer group APIs, at every version kproto
generates: ConsumerGroupHeartbeat (68, v0-v1) and ConsumerGroupDescribe (69, v0-v1).

The state machine is :class:`kproto.broker.groups.consumer_coordinator.ConsumerGroups`
(``ctx.groups.consumer``); offsets are committed and fetched with the classic
OffsetCommit/OffsetFetch handlers, validated against member epochs there.
"""

from __future__ import annotations

from typing import Any

from kproto.broker.groups.assignors import Assignment
from kproto.broker.groups.consumer_coordinator import HeartbeatRequest, HeartbeatResult
from kproto.broker.groups.consumer_records import assignment_from
from kproto.broker.handlers.cluster_info import (
    group_describe_error,
    with_group_operations,
)
from kproto.broker.handlers.context import (
    RequestContext,
    request_fields,
    respond,
    respond_with,
)
from kproto.errors import ErrorCode

__all__ = ["consumer_group_describe", "consumer_group_heartbeat"]


def _topic_partitions(assignment: Assignment) -> list[dict[str, Any]]:
    return [
        {"topic_id": t, "partitions": sorted(ps)}
        for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0]))
        if ps
    ]


async def consumer_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    """ConsumerGroupHeartbeat (ConsumerGroupHeartbeatRequest.json v0-v1, KIP-848):
    join (epoch 0), heartbeat, leave (-1) or static leave (-2); answers the member
    epoch, ``heartbeat_interval_ms`` and, when it changed, the assignment. v0 lacks
    ``subscribed_topic_regex``; a v0 join with an empty member id is given a
    generated one, v1 members must bring their own (KIP-1082: INVALID_REQUEST)."""
    coordinator = ctx.groups
    error = coordinator.check_coordinator(request.group_id, ctx.node_id)
    if error != ErrorCode.NONE:
        return respond_with(ctx, HeartbeatResult(error, ErrorCode(error).name))
    owned = request.topic_partitions
    result = await coordinator.consumer.heartbeat(
        HeartbeatRequest(
            **request_fields(request, HeartbeatRequest),
            owned=None if owned is None else assignment_from(owned),
            client_id=ctx.client_id or "",
            client_host=ctx.member_host,
            api_version=ctx.api_version,
        )
    )
    return respond_with(
        ctx,
        result,
        assignment=(
            None
            if result.assignment is None
            else {"topic_partitions": _topic_partitions(result.assignment)}
        ),
    )


def _named(assignment: Assignment, names: dict[Any, str]) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {**tp, "topic_name": names.get(tp["topic_id"], "")}
            for tp in _topic_partitions(assignment)
        ]
    }


def _describe(ctx: RequestContext, group_id: str) -> dict[str, Any]:
    coordinator = ctx.groups
    group = coordinator.consumer.groups.get(group_id)
    found, elsewhere = group is not None, group_id in coordinator.groups
    error, message = group_describe_error(ctx, group_id, "consumer", found, elsewhere)
    base = {"group_id": group_id, "error_code": error, "error_message": message}
    if group is None or error != ErrorCode.NONE:
        return base
    names = coordinator.consumer.topic_names()
    members = [
        {
            "member_id": m.member_id,
            "instance_id": m.instance_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "assignment": _named(m.assigned, names),
            "target_assignment": _named(group.target.get(m.member_id, {}), names),
            "member_type": 0 if m.uses_classic_protocol else 1,  # classic: 0
        }
        for m in group.members.values()
    ]
    return {
        **base,
        "group_state": group.state.value,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": group.preferred_assignor or coordinator.consumer.assignors[0],
        "members": members,
    }


async def consumer_group_describe(ctx: RequestContext, request: Any) -> Any:
    """ConsumerGroupDescribe (ConsumerGroupDescribeRequest.json v0-v1, KIP-848):
    state, epochs, assignor and every member's current and target assignment;
    GROUP_ID_NOT_FOUND for an unknown group or a classic one."""
    asked = request.include_authorized_operations
    return respond(
        ctx,
        throttle_time_ms=0,
        groups=with_group_operations(
            ctx, [_describe(ctx, g) for g in request.group_ids], asked
        ),
    )
