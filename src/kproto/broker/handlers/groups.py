"""Request handlers of the group coordinator APIs, at every version kproto generates.

FindCoordinator (10), OffsetCommit (8), OffsetFetch (9), JoinGroup (11), Heartbeat
(12), LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16),
DeleteGroups (42), OffsetDelete (47). Each handler reads the request entity of its
version, asks :class:`~kproto.broker.groups.GroupCoordinator` (``ctx.groups``)
and builds the response of the same version with :func:`kproto.broker.handlers.context.respond`
(fields a version lacks are dropped). Version differences follow the JSON
definitions (``kafka-4.1-subset``) and Kafka's ``KafkaApis`` / ``GroupCoordinatorService``:
single-key FindCoordinator before v4, batched ``coordinator_keys`` from v4; single-group
OffsetFetch before v8, batched ``groups`` from v8; topic ids instead of names in
OffsetCommit/OffsetFetch v10; LeaveGroup batched ``members`` from v3 (earlier
versions carry a member's error at the top level).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kproto.broker.groups import GroupCoordinator, JoinResult, SyncResult
from kproto.broker.handlers import share_admin
from kproto.broker.handlers.cluster_info import with_group_operations
from kproto.broker.handlers.context import RequestContext, respond, respond_with
from kproto.broker.handlers.partitions import topic_ids
from kproto.errors import ErrorCode

__all__ = [
    "find_coordinator",
    "join_group",
    "sync_group",
    "heartbeat",
    "leave_group",
    "Commit",
    "commit",
    "committed_topics",
    "requested_offsets",
    "offset_commit",
    "offset_fetch",
    "offset_delete",
    "describe_groups",
    "list_groups",
    "delete_groups",
]


def _coordinator(ctx: RequestContext) -> GroupCoordinator:
    return ctx.groups


def _message(error: int) -> str | None:
    return None if error == ErrorCode.NONE else ErrorCode(error).name


# -- FindCoordinator -------------------------------------------------------------

#: FindCoordinator key types (Kafka's ``CoordinatorType``): GROUP 0, TRANSACTION 1.
_GROUP, _TRANSACTION = 0, 1


def _find(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    missing = {"key": key, "node_id": -1, "host": "", "port": -1}
    if key_type not in (_GROUP, _TRANSACTION):
        # No share coordinator in this broker.
        return {
            **missing,
            "error_code": ErrorCode.INVALID_REQUEST,
            "error_message": f"no coordinator of key type {key_type}",
        }
    if key_type == _TRANSACTION:
        node_id = ctx.txn.coordinator_for(key)
    else:
        node_id = _coordinator(ctx).coordinator_for(key)
    node = None if node_id is None else ctx.state.nodes.get(node_id)
    if node is None:
        return {
            **missing,
            "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
            "error_message": "COORDINATOR_NOT_AVAILABLE",
        }
    return {
        "key": key,
        "node_id": node.node_id,
        "host": node.host,
        "port": node.port,
        "error_code": ErrorCode.NONE,
        "error_message": None,
    }


async def find_coordinator(ctx: RequestContext, request: Any) -> Any:
    """FindCoordinator (FindCoordinatorRequest.json v0-v6): the node leading the
    group's ``__consumer_offsets`` partition (key type 0) or the transactional id's
    ``__transaction_state`` partition (key type 1); v4+ answers every
    ``coordinator_keys`` entry (KIP-699). Other key types (share groups) get
    INVALID_REQUEST."""
    key_type = getattr(request, "key_type", 0)
    if ctx.api_version >= 4:
        found = [_find(ctx, key_type, key) for key in request.coordinator_keys]
        return respond(ctx, throttle_time_ms=0, coordinators=found)
    found_one = _find(ctx, key_type, request.key)
    del found_one["key"]
    return respond(ctx, throttle_time_ms=0, **found_one)


# -- JoinGroup, SyncGroup, Heartbeat, LeaveGroup ---------------------------------


async def join_group(ctx: RequestContext, request: Any) -> Any:
    """JoinGroup (JoinGroupRequest.json v0-v9); waits for the rebalance. v4+ needs
    a known member id (KIP-394); v0 has no rebalance timeout (the session timeout
    is used, as Kafka does)."""
    coordinator = _coordinator(ctx)
    error = coordinator.check_coordinator(request.group_id, ctx.node_id)
    if error != ErrorCode.NONE:
        return respond_with(ctx, JoinResult(error, member_id=request.member_id))
    result = await coordinator.join_group(
        request.group_id,
        request.member_id,
        getattr(request, "group_instance_id", None),
        request.protocol_type,
        tuple((p.name, p.metadata) for p in request.protocols),
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=getattr(request, "rebalance_timeout_ms", -1),
        client_id=ctx.client_id or "",
        client_host=ctx.member_host,
        require_known_member_id=ctx.api_version >= 4,
    )
    return respond_with(
        ctx,
        result,
        members=[
            {"member_id": m, "group_instance_id": i, "metadata": data}
            for m, i, data in result.members
        ],
    )


async def sync_group(ctx: RequestContext, request: Any) -> Any:
    """SyncGroup (SyncGroupRequest.json v0-v5); v5 checks protocol type and name."""
    coordinator = _coordinator(ctx)
    error = coordinator.check_coordinator(request.group_id, ctx.node_id)
    if error != ErrorCode.NONE:
        return respond_with(ctx, SyncResult(error))
    result = await coordinator.sync_group(
        request.group_id,
        request.generation_id,
        request.member_id,
        getattr(request, "group_instance_id", None),
        {a.member_id: a.assignment for a in request.assignments},
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
    )
    return respond_with(ctx, result)


async def heartbeat(ctx: RequestContext, request: Any) -> Any:
    """Heartbeat (HeartbeatRequest.json v0-v4)."""
    coordinator = _coordinator(ctx)
    error = coordinator.check_coordinator(request.group_id, ctx.node_id)
    if error == ErrorCode.NONE:
        error = coordinator.heartbeat(
            request.group_id,
            request.generation_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
        )
    return respond(ctx, throttle_time_ms=0, error_code=error)


async def leave_group(ctx: RequestContext, request: Any) -> Any:
    """LeaveGroup (LeaveGroupRequest.json v0-v5): one member before v3, a batch of
    ``members`` (member id and/or ``group.instance.id``) from v3."""
    coordinator = _coordinator(ctx)
    if ctx.api_version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id, None)]
    error = coordinator.check_coordinator(request.group_id, ctx.node_id)
    errors: list[int] = [ErrorCode.NONE] * len(members)
    if error == ErrorCode.NONE:
        error, errors = await coordinator.leave(request.group_id, members)
    if ctx.api_version < 3:
        # LeaveGroupResponse before v3 has no member list: Kafka puts the member's
        # error at the top level.
        top = error or next((e for e in errors if e != ErrorCode.NONE), ErrorCode.NONE)
        return respond(ctx, throttle_time_ms=0, error_code=top)
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=error,
        members=(
            [
                {"member_id": m, "group_instance_id": i, "error_code": e}
                for (m, i), e in zip(members, errors, strict=True)
            ]
            if error == ErrorCode.NONE
            else []
        ),
    )


# -- OffsetCommit, OffsetFetch, OffsetDelete -------------------------------------


#: What one partition commits: ``(offset, leader epoch, metadata, commit
#: timestamp ms)``, -1 where the request version lacks it.
Commit = tuple[int, int, str | None, int]


def requested_offsets(
    ctx: RequestContext, request: Any, by_id: bool
) -> tuple[list[str | None], dict[tuple[str, int], Commit]]:
    """An OffsetCommit's or TxnOffsetCommit's topic names (one per request topic;
    ``None`` for a topic id no topic has, with ``by_id``) and the offsets it
    commits by ``(topic, partition)``."""
    ids = topic_ids(ctx) if by_id else {}
    names = [ids.get(t.topic_id) if by_id else t.name for t in request.topics]
    offsets = {
        (name, p.partition_index): (
            p.committed_offset,
            getattr(p, "committed_leader_epoch", -1),
            p.committed_metadata,
            getattr(p, "commit_timestamp", -1),
        )
        for name, t in zip(names, request.topics, strict=True)
        if name is not None
        for p in t.partitions
    }
    return names, offsets


async def commit(
    ctx: RequestContext,
    request: Any,
    offsets: dict[tuple[str, int], Commit],
    **how: Any,
) -> dict[tuple[str, int], int]:
    """Commit ``offsets`` for an OffsetCommit or TxnOffsetCommit (its group,
    generation or member epoch, member and instance id; ``how``: the
    coordinator's ``retention_ms`` or ``producer``): each partition's error."""
    return await ctx.groups.commit_offsets(
        request.group_id,
        getattr(request, "generation_id_or_member_epoch", -1),
        getattr(request, "member_id", ""),
        getattr(request, "group_instance_id", None),
        offsets,
        **how,
    )


def committed_topics(
    request: Any,
    names: list[str | None],
    results: Mapping[tuple[str, int], int],
    missing: int,
) -> list[dict[str, Any]]:
    """The ``topics`` of an OffsetCommit or TxnOffsetCommit response: each
    partition's result (``missing`` when ``results`` has none), UNKNOWN_TOPIC_ID
    for a topic id no topic has (``names`` from :func:`requested_offsets`)."""
    return [
        {
            "name": name,
            "topic_id": getattr(t, "topic_id", None),
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "error_code": (
                        ErrorCode.UNKNOWN_TOPIC_ID
                        if name is None
                        else results.get((name, p.partition_index), missing)
                    ),
                }
                for p in t.partitions
            ],
        }
        for name, t in zip(names, request.topics, strict=True)
    ]


async def offset_commit(ctx: RequestContext, request: Any) -> Any:
    """OffsetCommit (OffsetCommitRequest.json v0-v10): v0 (no generation) is a
    commit without membership; v9+ is needed by KIP-848 members (UNSUPPORTED_VERSION
    below); v10 names topics by id (UNKNOWN_TOPIC_ID if unknown)."""
    coordinator = _coordinator(ctx)
    names, offsets = requested_offsets(ctx, request, ctx.api_version >= 10)
    error = coordinator.check_coordinator(request.group_id, ctx.node_id)
    member_id = getattr(request, "member_id", "")
    if error == ErrorCode.NONE and ctx.api_version < 9:
        # KIP-848 members commit with v9+ (their member epoch), as Kafka requires
        if coordinator.consumer.is_member(request.group_id, member_id):
            error = ErrorCode.UNSUPPORTED_VERSION
    results: Mapping[tuple[str, int], int]
    if error != ErrorCode.NONE:
        results = dict.fromkeys(offsets, error)
    else:
        retention_ms = getattr(request, "retention_time_ms", -1)
        results = await commit(ctx, request, offsets, retention_ms=retention_ms)
    topics = committed_topics(request, names, results, error)
    return respond(ctx, throttle_time_ms=0, topics=topics)


def _fetch_group(
    ctx: RequestContext,
    group_id: str,
    topics: Any,
    by_id: bool,
    require_stable: bool = False,
) -> dict[str, Any]:
    """One group of an OffsetFetch answer: ``topics`` and ``error_code``."""
    coordinator = _coordinator(ctx)
    error = coordinator.check_coordinator(group_id, ctx.node_id)
    names = topic_ids(ctx) if by_id else {}
    ids = {name: topic_id for topic_id, name in names.items()}
    asked: list[tuple[str, int]] | None = None
    unknown: list[tuple[Any, list[int]]] = []
    if topics is not None:
        asked = []
        for t in topics:
            name = names.get(t.topic_id) if by_id else t.name
            if name is None:
                unknown.append((t.topic_id, list(t.partition_indexes)))
            else:
                asked.extend((name, p) for p in t.partition_indexes)
    if error != ErrorCode.NONE:
        if ctx.api_version < 2:
            # No group-level error before v2: every partition carries it.
            per_topic: dict[str, list[dict[str, Any]]] = {}
            for name, p in asked or []:
                per_topic.setdefault(name, []).append(
                    {
                        "partition_index": p,
                        "committed_offset": -1,
                        "metadata": "",
                        "error_code": error,
                    }
                )
            return {
                "topics": [
                    {"name": n, "partitions": ps} for n, ps in per_topic.items()
                ],
                "error_code": error,
            }
        return {"topics": [], "error_code": error}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for (name, partition), committed in coordinator.fetch_offsets(
        group_id, asked
    ).items():
        if by_id and name not in ids:
            continue
        if require_stable and coordinator.pending_txn_offsets.has_pending(
            group_id, name, partition
        ):
            grouped.setdefault(name, []).append(
                {
                    "partition_index": partition,
                    "committed_offset": -1,
                    "committed_leader_epoch": -1,
                    "metadata": "",
                    "error_code": ErrorCode.UNSTABLE_OFFSET_COMMIT,
                }
            )
            continue
        grouped.setdefault(name, []).append(
            {
                "partition_index": partition,
                "committed_offset": -1 if committed is None else committed.offset,
                "committed_leader_epoch": (
                    -1 if committed is None else committed.leader_epoch
                ),
                "metadata": "" if committed is None else committed.metadata,
                "error_code": ErrorCode.NONE,
            }
        )
    out = [
        {"name": name, "topic_id": ids.get(name), "partitions": partitions}
        for name, partitions in grouped.items()
    ]
    for topic_id, partitions in unknown:
        out.append(
            {
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": -1,
                        "metadata": "",
                        "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                    }
                    for p in partitions
                ],
            }
        )
    return {"topics": out, "error_code": ErrorCode.NONE}


async def offset_fetch(ctx: RequestContext, request: Any) -> Any:
    """OffsetFetch (OffsetFetchRequest.json v0-v10): v2+ null ``topics`` fetches
    every committed partition; v8+ batches ``groups``; v9+ checks a KIP-848
    member's ``member_epoch`` (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); v10 names
    topics by id. Partitions without a commit answer offset -1. With v7+
    ``require_stable`` (KIP-447) a partition with a transactional commit still
    pending answers UNSTABLE_OFFSET_COMMIT, so the client retries once the
    transaction ended."""
    by_id = ctx.api_version >= 10
    stable = bool(getattr(request, "require_stable", False))
    if ctx.api_version >= 8:
        groups = [
            {
                "group_id": g.group_id,
                **_fetch_group(ctx, g.group_id, g.topics, by_id, stable),
            }
            for g in request.groups
        ]
        for asked, answer in zip(request.groups, groups, strict=True):
            # v9+: a KIP-848 member's fetch is checked against its member epoch
            error = ctx.groups.consumer.validate_fetch(
                asked.group_id,
                getattr(asked, "member_id", None),
                getattr(asked, "member_epoch", -1),
            )
            if error == ErrorCode.NONE:  # a KIP-1071 streams member's, likewise
                error = ctx.groups.streams.validate_fetch(
                    asked.group_id,
                    getattr(asked, "member_id", None),
                    getattr(asked, "member_epoch", -1),
                )
            if error != ErrorCode.NONE and answer["error_code"] == ErrorCode.NONE:
                answer.update(topics=[], error_code=error)
        return respond(ctx, throttle_time_ms=0, groups=groups)
    answer = _fetch_group(ctx, request.group_id, request.topics, False, stable)
    return respond(ctx, throttle_time_ms=0, **answer)


async def offset_delete(ctx: RequestContext, request: Any) -> Any:
    """OffsetDelete (OffsetDeleteRequest.json v0, KIP-496)."""
    coordinator = _coordinator(ctx)
    asked = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    error = coordinator.check_coordinator(request.group_id, ctx.node_id)
    results: dict[tuple[str, int], int] = {}
    if error == ErrorCode.NONE:
        error, results = await coordinator.delete_offsets(request.group_id, asked)
    topics = [
        {
            "name": t.name,
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "error_code": results.get(
                        (t.name, p.partition_index), ErrorCode.NONE
                    ),
                }
                for p in t.partitions
            ],
        }
        for t in request.topics
    ]
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=error,
        topics=topics if error == ErrorCode.NONE else [],
    )


# -- DescribeGroups, ListGroups, DeleteGroups ------------------------------------


def _describe(ctx: RequestContext, group_id: str) -> dict[str, Any]:
    coordinator = _coordinator(ctx)
    empty = {
        "group_id": group_id,
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
    }
    error = coordinator.check_coordinator(group_id, ctx.node_id)
    if error != ErrorCode.NONE:
        return {
            **empty,
            "error_code": error,
            "error_message": _message(error),
            "group_state": "",
        }
    description = coordinator.describe_group(group_id)
    if description is None:
        # KIP-1043: v6 reports GROUP_ID_NOT_FOUND; earlier versions a Dead group.
        error = ErrorCode.GROUP_ID_NOT_FOUND if ctx.api_version >= 6 else ErrorCode.NONE
        message = _message(error)
        if error != ErrorCode.NONE and (
            group_id in coordinator.consumer.groups
            or group_id in coordinator.streams.groups
        ):
            message = f"Group {group_id} is not a classic group."  # KIP-848 group
        return {
            **empty,
            "error_code": error,
            "error_message": message,
            "group_state": "Dead",
        }
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "group_id": group_id,
        "group_state": description.state,
        "protocol_type": description.protocol_type,
        "protocol_data": description.protocol_data,
        "members": [
            {
                "member_id": m,
                "group_instance_id": instance,
                "client_id": client_id,
                "client_host": host,
                "member_metadata": metadata,
                "member_assignment": assignment,
            }
            for m, instance, client_id, host, metadata, assignment in description.members
        ],
    }


async def describe_groups(ctx: RequestContext, request: Any) -> Any:
    """DescribeGroups (DescribeGroupsRequest.json v0-v6); v3+ reports the group
    operations the principal may use when asked (every one a group supports
    without ACLs: :func:`~kproto.broker.handlers.cluster_info.with_group_operations`).
    """
    asked = getattr(request, "include_authorized_operations", False)
    groups = [_describe(ctx, g) for g in request.groups]
    with_group_operations(ctx, groups, asked)
    return respond(ctx, throttle_time_ms=0, groups=groups)


async def list_groups(ctx: RequestContext, request: Any) -> Any:
    """ListGroups (ListGroupsRequest.json v0-v5); v4 states filter, v5 types filter."""
    coordinator = _coordinator(ctx)
    listed = coordinator.list_groups(
        getattr(request, "states_filter", ()), getattr(request, "types_filter", ())
    )
    # Each broker lists the groups it coordinates (clients ask every broker).
    groups = [
        {"group_id": g, "protocol_type": t, "group_state": s, "group_type": kind}
        for g, t, s, kind in listed
        if coordinator.coordinator_for(g) == ctx.node_id
    ]
    groups += share_admin.list_share_groups(ctx, request)  # KIP-932 share groups
    return respond(ctx, throttle_time_ms=0, error_code=ErrorCode.NONE, groups=groups)


async def delete_groups(ctx: RequestContext, request: Any) -> Any:
    """DeleteGroups (DeleteGroupsRequest.json v0-v2)."""
    coordinator = _coordinator(ctx)
    results: dict[str, int] = {}
    local = []
    for group_id in request.groups_names:
        error = coordinator.check_coordinator(group_id, ctx.node_id)
        if error != ErrorCode.NONE:
            results[group_id] = error
        else:
            local.append(group_id)
    results.update(await coordinator.delete_groups(local))
    await share_admin.delete_share_groups(ctx, results)  # KIP-932 share groups
    return respond(
        ctx,
        throttle_time_ms=0,
        results=[
            {"group_id": g, "error_code": results[g]} for g in request.groups_names
        ],
    )
