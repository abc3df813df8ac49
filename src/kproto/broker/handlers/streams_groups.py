"""Request handlers of the KIP-1071 streams group APIs, at every version kproto
generates: StreamsGroupHeartbeat (88, v0-v1), StreamsGroupDescribe (89, v0-v1) and
StreamsGroupTopologyDescriptionUpdate (93, v0).

The state machine is :class:`kproto.broker.groups.streams_coordinator.StreamsGroups`
(``ctx.groups.streams``); offsets go through the classic handlers, as a consumer
group's (:mod:`.consumer_groups`).
"""

from __future__ import annotations

from typing import Any

import attrs

from kproto.broker.groups.streams_coordinator import (
    ACCEPTABLE_RECOVERY_LAG,
    TASK_OFFSET_INTERVAL_MS,
    StreamsHeartbeatResult,
)
from kproto.broker.groups.streams_group import StreamsGroup, TaskSet
from kproto.broker.handlers.cluster_info import (
    group_describe_error,
    with_group_operations,
)
from kproto.broker.handlers.context import RequestContext, respond, respond_with
from kproto.errors import ErrorCode

__all__ = [
    "streams_group_describe",
    "streams_group_heartbeat",
    "streams_group_topology_description_update",
]

# StreamsGroupDescribeResponse TopologyDescriptionStatus
_NOT_REQUESTED, _NOT_STORED, _AVAILABLE = 0, 1, 3


def _tasks(tasks: TaskSet) -> list[dict[str, Any]]:
    return [
        {"subtopology_id": sub, "partitions": sorted(parts)}
        for sub, parts in sorted(tasks.items())
        if parts
    ]


async def streams_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    """StreamsGroupHeartbeat (StreamsGroupHeartbeatRequest.json v0-v1, KIP-1071):
    join (epoch 0, with the topology), heartbeat or leave (-1; -2 is a leave too);
    answers the member epoch, the active tasks when they changed (standby and
    warm-up tasks are always empty) and the group's statuses (MISSING_SOURCE_TOPICS,
    MISSING_INTERNAL_TOPICS, STALE_TOPOLOGY)."""
    coordinator = ctx.groups
    error = coordinator.check_coordinator(request.group_id, ctx.node_id)
    common = {
        "throttle_time_ms": 0,
        "acceptable_recovery_lag_legacy": ACCEPTABLE_RECOVERY_LAG,
        "acceptable_recovery_lag": ACCEPTABLE_RECOVERY_LAG,
        "task_offset_interval_ms": TASK_OFFSET_INTERVAL_MS,
        "endpoint_information_epoch": 0,
        "partitions_by_user_endpoint": None,
    }
    if error != ErrorCode.NONE:
        refused = StreamsHeartbeatResult(
            error, ErrorCode(error).name, request.member_id
        )
        return respond_with(ctx, refused, **common, status=None)
    result = await coordinator.streams.heartbeat(
        request, ctx.client_id or "", ctx.member_host
    )
    group = coordinator.streams.groups.get(request.group_id)
    sent = result.active is not None
    return respond_with(
        ctx,
        result,
        **common,
        status=[{"status_code": c, "status_detail": d} for c, d in result.status],
        active_tasks=_tasks(result.active) if result.active is not None else None,
        standby_tasks=[] if sent else None,
        warmup_tasks=[] if sent else None,
        topology_description_required=(
            result.error_code == ErrorCode.NONE
            and group is not None
            and group.topology_description is None
        ),
    )


def _topology(group: StreamsGroup) -> dict[str, Any]:
    configured = group.configured
    ready = configured is not None and configured.tasks is not None
    sizes = dict(configured.internal_topics) if configured is not None else {}
    return {
        "epoch": group.topology_epoch,
        "subtopologies": (
            [s.as_fields(sizes) for s in group.topology or ()] if ready else None
        ),
    }


def _describe(
    ctx: RequestContext, group_id: str, with_description: bool
) -> dict[str, Any]:
    coordinator = ctx.groups
    group = coordinator.streams.groups.get(group_id)
    found = group is not None
    elsewhere = (
        group_id in coordinator.groups or group_id in coordinator.consumer.groups
    )
    error, message = group_describe_error(ctx, group_id, "streams", found, elsewhere)
    base = {"group_id": group_id, "error_code": error, "error_message": message}
    if group is None or error != ErrorCode.NONE:
        return base
    members = [
        {
            "member_id": m.member_id,
            "member_epoch": m.member_epoch,
            "instance_id": m.instance_id,
            "rack_id": m.rack_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "topology_epoch": m.topology_epoch,
            "process_id": m.process_id,
            "user_endpoint": (
                None
                if m.user_endpoint is None
                else {"host": m.user_endpoint[0], "port": m.user_endpoint[1]}
            ),
            "client_tags": [{"key": k, "value": v} for k, v in m.client_tags],
            "task_offsets": [],
            "task_end_offsets": [],
            "assignment": {
                "active_tasks": _tasks(m.active),
                "standby_tasks": [],
                "warmup_tasks": [],
            },
            "target_assignment": {
                "active_tasks": _tasks(group.target.get(m.member_id, {})),
                "standby_tasks": [],
                "warmup_tasks": [],
            },
            "is_classic": False,
        }
        for m in group.members.values()
    ]
    description = group.topology_description if with_description else None
    status = _NOT_REQUESTED
    if with_description:
        status = _NOT_STORED if description is None else _AVAILABLE
    return {
        **base,
        "group_state": group.state.value,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "topology": _topology(group),
        "members": members,
        "topology_description": description,
        "topology_description_status": status,
        "assignor_name": "sticky",
    }


async def streams_group_describe(ctx: RequestContext, request: Any) -> Any:
    """StreamsGroupDescribe (StreamsGroupDescribeRequest.json v0-v1, KIP-1071):
    state, epochs, the configured topology (subtopologies null until every source
    topic exists) and every member's current and target tasks; v1 the stored
    topology description when asked; GROUP_ID_NOT_FOUND for an unknown group or one
    of another type."""
    asked = request.include_authorized_operations
    with_description = bool(getattr(request, "include_topology_description", False))
    return respond(
        ctx,
        throttle_time_ms=0,
        groups=with_group_operations(
            ctx, [_describe(ctx, g, with_description) for g in request.group_ids], asked
        ),
    )


async def streams_group_topology_description_update(
    ctx: RequestContext, request: Any
) -> Any:
    """StreamsGroupTopologyDescriptionUpdate
    (StreamsGroupTopologyDescriptionUpdateRequest.json v0): a member stores the
    description of its topology for StreamsGroupDescribe v1 (in memory);
    GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, or INVALID_REQUEST when its topology
    epoch is not the group's."""
    coordinator = ctx.groups
    error = coordinator.check_coordinator(request.group_id, ctx.node_id)
    message = "" if error == ErrorCode.NONE else ErrorCode(error).name
    group = coordinator.streams.groups.get(request.group_id)
    if error != ErrorCode.NONE:
        pass
    elif group is None:
        error, message = (
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Group {request.group_id} not found.",
        )
    elif request.member_id not in group.members:
        error = ErrorCode.UNKNOWN_MEMBER_ID
        message = (
            f"Member {request.member_id} is not a member of group {request.group_id}."
        )
    elif request.topology_epoch != group.topology_epoch:
        error = ErrorCode.INVALID_REQUEST
        message = (
            f"TopologyEpoch {request.topology_epoch} is not the group's"
            f" {group.topology_epoch}."
        )
    else:
        group.topology_description = attrs.asdict(
            request.topology_description, recurse=True
        )
    return respond(ctx, throttle_time_ms=0, error_code=error, error_message=message)
