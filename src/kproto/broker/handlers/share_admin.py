"""Share groups (KIP-932): ShareGroupDescribe, DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets.

Sources: ``ShareGroupDescribeRequest/Response.json`` v1, the offset APIs' JSON
files v0 (DescribeShareGroupOffsets v1 adds KIP-1226's lag); Kafka's
``GroupCoordinatorService`` share-group describe and offset handling: offsets can
be altered or deleted only while the group has no members.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kproto.broker.handlers.cluster_info import with_group_operations
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.share import coordinator, group_error
from kproto.broker.share import RecordState, ShareCoordinator
from kproto.errors import ErrorCode
from kproto.meta import ZERO_UUID

__all__ = [
    "delete_share_groups",
    "list_share_groups",
    "share_group_describe",
    "describe_share_group_offsets",
    "alter_share_group_offsets",
    "delete_share_group_offsets",
]


async def share_group_describe(ctx: RequestContext, request: Any) -> Any:
    """Each group's state (``Empty``/``Stable``), epochs, assignor (``simple``) and
    members with their subscriptions and assignments, and when asked the group
    operations the principal may use; GROUP_ID_NOT_FOUND for an unknown group or a
    classic group."""
    share = coordinator(ctx)
    topics = ctx.state.topics
    groups = []
    for group_id in request.group_ids:
        error, message = group_error(ctx, group_id)
        group = share.groups.get(group_id)
        if error == ErrorCode.NONE and group is None:
            error, message = (
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Group {group_id} not found.",
            )
        if error != ErrorCode.NONE or group is None:
            groups.append(
                {
                    "error_code": error,
                    "error_message": message,
                    "group_id": group_id,
                    "group_state": "Dead",
                    "group_epoch": -1,
                    "assignment_epoch": -1,
                    "assignor_name": "",
                    "members": [],
                }
            )
            continue
        members = [
            {
                "member_id": m.member_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topics),
                "assignment": {
                    "topic_partitions": [
                        {
                            "topic_id": topics[t].topic_id,
                            "topic_name": t,
                            "partitions": sorted(ps),
                        }
                        for t, ps in sorted(m.assignment.items())
                        if t in topics
                    ]
                },
            }
            for m in group.members.values()
        ]
        groups.append(
            {
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "group_id": group_id,
                "group_state": group.state,
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": "simple",
                "members": members,
            }
        )
    asked = request.include_authorized_operations
    return respond(
        ctx, throttle_time_ms=0, groups=with_group_operations(ctx, groups, asked)
    )


async def describe_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    """Each share partition's start offset (SPSO; -1 if never started) and, from
    v1, its lag (records from the SPSO to the log end not yet acknowledged or
    archived)."""
    share = coordinator(ctx)
    out = []
    for g in request.groups:
        error, message = group_error(ctx, g.group_id)
        if (
            error == ErrorCode.NONE
            and g.group_id not in share.groups
            and not share.start_offsets(g.group_id)
        ):
            error, message = (
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Group {g.group_id} not found.",
            )
        if error != ErrorCode.NONE:
            out.append(
                {
                    "group_id": g.group_id,
                    "topics": [],
                    "error_code": error,
                    "error_message": message,
                }
            )
            continue
        starts = share.start_offsets(g.group_id)
        if g.topics is None:
            wanted: dict[str, list[int]] = {}
            for t, p in starts:
                wanted.setdefault(t, []).append(p)
        else:
            wanted = {t.topic_name: list(t.partitions) for t in g.topics}
        topics = []
        for name, partitions in wanted.items():
            info = ctx.state.topics.get(name)
            rows = []
            for p in partitions:
                known = info is not None and 0 <= p < info.partitions
                start = starts.get((name, p), -1)
                lag = -1
                share_partition = share.partitions.get((g.group_id, name, p))
                plog = ctx.state.partition_log(name, p)
                if share_partition is not None and plog is not None:
                    done = sum(
                        1
                        for r in share_partition.records.values()
                        if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
                    )
                    lag = max(
                        plog.high_watermark - share_partition.start_offset - done, 0
                    )
                rows.append(
                    {
                        "partition_index": p,
                        "start_offset": start,
                        "leader_epoch": 0,
                        "lag": lag,
                        "error_code": (
                            ErrorCode.NONE
                            if known
                            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        ),
                        "error_message": None,
                    }
                )
            topics.append(
                {
                    "topic_name": name,
                    "topic_id": info.topic_id if info else ZERO_UUID,
                    "partitions": rows,
                }
            )
        out.append(
            {
                "group_id": g.group_id,
                "topics": topics,
                "error_code": ErrorCode.NONE,
                "error_message": None,
            }
        )
    return respond(ctx, throttle_time_ms=0, groups=out)


def _empty_group_error(
    ctx: RequestContext, share: ShareCoordinator, group_id: str
) -> tuple[ErrorCode, str | None]:
    error, message = group_error(ctx, group_id)
    if error != ErrorCode.NONE:
        return error, message
    group = share.groups.get(group_id)
    if group is not None and group.members:
        return (
            ErrorCode.NON_EMPTY_GROUP,
            f"Share group {group_id} has members; offsets can only be changed when it is empty.",
        )
    return ErrorCode.NONE, None


async def _change_offsets(
    ctx: RequestContext,
    request: Any,
    change: Callable[[ShareCoordinator, Any], Awaitable[dict[str, Any]]],
) -> Any:
    """AlterShareGroupOffsets and DeleteShareGroupOffsets: only for an empty group
    (:func:`_empty_group_error`, the top-level error), each request topic
    answered ``change(share, topic)`` (its ``partitions``, or its error)."""
    share = coordinator(ctx)
    error, message = _empty_group_error(ctx, share, request.group_id)
    responses = []
    if error == ErrorCode.NONE:
        for t in request.topics:
            info = ctx.state.topics.get(t.topic_name)
            responses.append(
                {
                    "topic_name": t.topic_name,
                    "topic_id": info.topic_id if info else ZERO_UUID,
                    **await change(share, t),
                }
            )
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        responses=responses,
    )


async def alter_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    """Set share partitions' start offsets (nothing in flight after); only for an
    empty group (NON_EMPTY_GROUP otherwise); an offset outside the log's
    [log start, log end] is OFFSET_OUT_OF_RANGE."""

    async def alter(share: ShareCoordinator, t: Any) -> dict[str, Any]:
        rows = []
        for p in t.partitions:
            plog = ctx.state.partition_log(t.topic_name, p.partition_index)
            if plog is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not plog.log_start_offset <= p.start_offset <= plog.high_watermark:
                code = ErrorCode.OFFSET_OUT_OF_RANGE
            else:
                code = await share.alter_offset(
                    request.group_id, t.topic_name, p.partition_index, p.start_offset
                )
            rows.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": code,
                    "error_message": None,
                }
            )
        return {"partitions": rows}

    return await _change_offsets(ctx, request, alter)


async def delete_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    """Delete the share partitions of the named topics (their state gets
    tombstones); only for an empty group."""

    async def delete(share: ShareCoordinator, t: Any) -> dict[str, Any]:
        code = (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if t.topic_name not in ctx.state.topics
            else await share.delete_offsets(request.group_id, t.topic_name)
        )
        return {"error_code": code, "error_message": None}

    return await _change_offsets(ctx, request, delete)


# -- ListGroups and DeleteGroups (the classic handlers call these) ------------------


def list_share_groups(ctx: RequestContext, request: Any) -> list[dict[str, Any]]:
    """The share groups this node coordinates as ListGroups entries (protocol type
    and group type ``share``), filtered by ``states_filter`` (v4+, case-insensitive)
    and ``types_filter`` (v5+), as Kafka's ``GroupCoordinatorService.listGroups``."""
    if ctx.share is None:
        return []
    states = {s.lower() for s in getattr(request, "states_filter", None) or ()}
    types = {t.lower() for t in getattr(request, "types_filter", None) or ()}
    if types and "share" not in types:
        return []
    out = []
    for group_id, group in sorted(ctx.share.groups.items()):
        if states and group.state.lower() not in states:
            continue
        if ctx.groups.coordinator_for(group_id) != ctx.node_id:
            continue
        out.append(
            {
                "group_id": group_id,
                "protocol_type": "share",
                "group_state": group.state,
                "group_type": "share",
            }
        )
    return out


async def delete_share_groups(ctx: RequestContext, results: dict[str, int]) -> None:
    """DeleteGroups for share groups: ``results`` (group id -> error) holds the
    classic answer; a share group there as GROUP_ID_NOT_FOUND is deleted instead
    (its share partitions' state gets tombstones) when it has no members, else
    NON_EMPTY_GROUP."""
    if ctx.share is None:
        return
    for group_id, error in results.items():
        if error == ErrorCode.GROUP_ID_NOT_FOUND and group_id in ctx.share.groups:
            results[group_id] = await ctx.share.delete_group(group_id)
