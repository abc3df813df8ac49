"""ElectLeaders (KIP-183, KIP-460), AlterPartitionReassignments and
ListPartitionReassignments (KIP-455).

Sources: ``ElectLeadersRequest/Response.json`` v0-v2 (``election_type`` since v1),
``AlterPartitionReassignmentsRequest/Response.json`` v0-v1
(``allow_replication_factor_change`` since v1, KIP-860),
``ListPartitionReassignmentsRequest/Response.json`` v0; Kafka's
``ReplicationControlManager.electLeaders`` / ``alterPartitionReassignments`` /
``listPartitionReassignments``.

Every partition here has one replica, its leader, which is therefore its preferred
replica: a preferred election is ELECTION_NOT_NEEDED, and so is an unclean one
(the leader is present); a partition whose node is stopped (offline) gets
PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE (no other replica). A reassignment to one live node moves the partition's
leadership there at once (every node reads the same data directory, so nothing
is copied) and none is ever left in progress; a target of more than one replica
is refused with INVALID_REPLICATION_FACTOR (no replication), and cancelling one
is NO_REASSIGNMENT_IN_PROGRESS.
"""

from __future__ import annotations

from typing import Any

from kproto.broker.errors import TopicError
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.topic_admin import check_replica_lists
from kproto.errors import ErrorCode

__all__ = [
    "elect_leaders",
    "alter_partition_reassignments",
    "list_partition_reassignments",
]

# ElectionType: PREFERRED 0, UNCLEAN 1.
_PREFERRED, _UNCLEAN = 0, 1


def _election(
    ctx: RequestContext, topic: str, partition: int, kind: int
) -> tuple[ErrorCode, str | None]:
    if topic not in ctx.state.topics:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    if ctx.state.leader(topic, partition) is None:
        return (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"No such partition as {topic}-{partition}",
        )
    if kind not in (_PREFERRED, _UNCLEAN):
        return ErrorCode.INVALID_REQUEST, f"Unknown election type {kind}"
    if ctx.state.leader(topic, partition) not in ctx.state.nodes:
        # offline (its only replica's node is stopped): nothing can be elected
        if kind == _PREFERRED:
            return (
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                "The preferred leader was not available.",
            )
        return (
            ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            "Eligible topic partition leaders are not available.",
        )
    return (
        ErrorCode.ELECTION_NOT_NEEDED,
        "Leader election not needed for topic partition.",
    )


async def elect_leaders(ctx: RequestContext, request: Any) -> Any:
    """Answer each partition's election; with ``topic_partitions`` null, only the
    partitions whose election was needed are listed (none here), as Kafka."""
    kind = getattr(request, "election_type", _PREFERRED)
    results: list[dict[str, Any]] = []
    if request.topic_partitions is not None:
        for t in request.topic_partitions:
            partition_results = []
            for p in t.partitions:
                error, message = _election(ctx, t.topic, p, kind)
                partition_results.append(
                    {"partition_id": p, "error_code": error, "error_message": message}
                )
            results.append({"topic": t.topic, "partition_result": partition_results})
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        replica_election_results=results,
    )


def _reassign(
    ctx: RequestContext, topic: str, partition: int, replicas: Any, allow_rf: bool
) -> tuple[ErrorCode, str | None]:
    state = ctx.state
    info = state.topics.get(topic)
    if info is None or not 0 <= partition < info.partitions:
        return (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"Unable to find partition {topic}-{partition}.",
        )
    if replicas is None:
        return (
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            f"Unable to find an ongoing reassignment for {topic}-{partition}.",
        )
    target = list(replicas)
    try:
        check_replica_lists(state, [target])
    except TopicError as err:
        return ErrorCode(err.error_code), str(err)
    if len(target) != 1:
        message = (
            f"The replication factor is changed from 1 to {len(target)}"
            if not allow_rf
            else f"cannot reassign {topic}-{partition} to {len(target)} replicas: "
            "this broker keeps one replica per partition"
        )
        return ErrorCode.INVALID_REPLICATION_FACTOR, message
    if target[0] not in state.nodes:
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"broker {target[0]} is not running",
        )
    info.leaders[partition] = target[0]
    return ErrorCode.NONE, None


async def alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    """Move each partition's (single) replica to the node named, at once."""
    allow_rf = getattr(request, "allow_replication_factor_change", True)
    responses = []
    moved = False
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            error, message = _reassign(
                ctx, t.name, p.partition_index, p.replicas, allow_rf
            )
            moved = moved or (error == ErrorCode.NONE)
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": error,
                    "error_message": message,
                }
            )
        responses.append({"name": t.name, "partitions": partitions})
    if moved:
        ctx.state.save_topics()
    return respond(
        ctx,
        throttle_time_ms=0,
        allow_replication_factor_change=allow_rf,
        error_code=ErrorCode.NONE,
        error_message=None,
        responses=responses,
    )


async def list_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    """No reassignment is ever in progress: an empty list."""
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        topics=[],
    )
