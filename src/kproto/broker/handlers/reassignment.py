"""ElectLeaders (KIP-183, KIP-460), AlterPartitionReassignments and
ListPartitionReassignments (KIP-455).

Sources: ``ElectLeadersRequest/Response.json`` v0-v2 (``election_type`` since v1),
``AlterPartitionReassignmentsRequest/Response.json`` v0-v1
(``allow_replication_factor_change`` since v1, KIP-860),
``ListPartitionReassignmentsRequest/Response.json`` v0; Kafka's
``ReplicationControlManager.electLeaders`` / ``alterPartitionReassignments`` /
``listPartitionReassignments``.

Each partition keeps its replicas (assigned at creation); every node reads the same
data directory, so a live replica is always in sync. A preferred election moves
the leadership to the first replica when it is live and not leading
(ELECTION_NOT_NEEDED when it leads, PREFERRED_LEADER_NOT_AVAILABLE when its node
is stopped); an unclean one is needed only by an offline partition, which it gives
to a live replica (ELIGIBLE_LEADERS_NOT_AVAILABLE when none is live).
Reassignments are started, completed, cancelled and listed by
:mod:`kproto.broker.reassignments` (one in progress while a replica it adds is on
a stopped node).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kproto.broker.errors import TopicError
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.leadership import set_leader
from kproto.broker.reassignments import (
    cancel_reassignment,
    change_reassignment,
    ongoing_reassignments,
)
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
    """Kafka's ``ReplicationControlManager.electLeader`` for one partition."""
    state = ctx.state
    info = state.topics.get(topic)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    if not 0 <= partition < info.partitions:
        return (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"No such partition as {topic}-{partition}",
        )
    if kind not in (_PREFERRED, _UNCLEAN):
        return ErrorCode.INVALID_REQUEST, f"Unknown election type {kind}"
    leader = info.leaders[partition]
    replicas = info.replicas_of(partition)
    live = [n for n in replicas if n in state.nodes]
    if kind == _PREFERRED:
        preferred = replicas[0] if replicas else leader
        if preferred == leader:
            return (
                ErrorCode.ELECTION_NOT_NEEDED,
                "Leader election not needed for topic partition.",
            )
        if preferred not in state.nodes:
            return (
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                "The preferred leader was not available.",
            )
        set_leader(state, topic, partition, preferred)
        return ErrorCode.NONE, None
    if leader in state.nodes:
        return (
            ErrorCode.ELECTION_NOT_NEEDED,
            "Leader election not needed for topic partition.",
        )
    if not live:
        return (
            ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            "Eligible topic partition leaders are not available.",
        )
    set_leader(state, topic, partition, live[0])
    return ErrorCode.NONE, None


def _each_partition(
    ctx: RequestContext,
    asked: Iterable[tuple[str, Iterable[tuple[int, Any]]]],
    change: Callable[[RequestContext, str, int, Any], tuple[ErrorCode, str | None]],
    fields: tuple[str, str, str],
) -> list[dict[str, Any]]:
    """``change(ctx, topic, partition, argument)`` on each asked ``(partition,
    argument)`` of each asked topic, in order, and the topics saved once if any
    partition changed (NONE). The results are the response's topics: ``fields``
    names their topic name, their partitions and a partition's index field."""
    topic_field, partitions_field, index_field = fields
    out = []
    changed = False
    for topic, partitions in asked:
        results = []
        for partition, argument in partitions:
            error, message = change(ctx, topic, partition, argument)
            changed = changed or error == ErrorCode.NONE
            results.append(
                {index_field: partition, "error_code": error, "error_message": message}
            )
        out.append({topic_field: topic, partitions_field: results})
    if changed:
        ctx.state.save_topics()
    return out


async def elect_leaders(ctx: RequestContext, request: Any) -> Any:
    """Answer each partition's election; with ``topic_partitions`` null, only the
    partitions whose election was needed are listed (none here), as Kafka."""
    kind = getattr(request, "election_type", _PREFERRED)
    asked = (
        [(t.topic, list(t.partitions)) for t in request.topic_partitions]
        if request.topic_partitions is not None
        else None
    )
    if asked is None:  # every partition; only those elected are listed
        needed: list[tuple[str, list[int]]] = []
        for name, info in ctx.state.topics.items():
            wanted = [
                p
                for p in range(info.partitions)
                if _election_needed(ctx, name, p, kind)
            ]
            if wanted:
                needed.append((name, wanted))
        asked = needed
    results = _each_partition(
        ctx,
        [(topic, [(p, kind) for p in partitions]) for topic, partitions in asked],
        _election,
        ("topic", "partition_result", "partition_id"),
    )
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        replica_election_results=results,
    )


def _election_needed(
    ctx: RequestContext, topic: str, partition: int, kind: int
) -> bool:
    info = ctx.state.topics[topic]
    leader = info.leaders[partition]
    if kind == _PREFERRED:
        replicas = info.replicas_of(partition)
        return bool(replicas) and replicas[0] != leader
    return leader not in ctx.state.nodes


def _reassign(
    ctx: RequestContext, topic: str, partition: int, replicas: Any, allow_rf: bool
) -> tuple[ErrorCode, str | None]:
    try:
        if replicas is None:
            cancel_reassignment(ctx.state, topic, partition)
        else:
            change_reassignment(
                ctx.state,
                topic,
                partition,
                list(replicas),
                allow_replication_factor_change=allow_rf,
            )
    except TopicError as err:
        return ErrorCode(err.error_code), str(err)
    return ErrorCode.NONE, None


async def alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    """Start (or cancel, null replicas) each partition's reassignment, each
    answered on its own (:mod:`kproto.broker.reassignments`)."""
    allow_rf = getattr(request, "allow_replication_factor_change", True)

    def reassign(
        ctx: RequestContext, topic: str, partition: int, replicas: Any
    ) -> tuple[ErrorCode, str | None]:
        return _reassign(ctx, topic, partition, replicas, allow_rf)

    asked = [
        (t.name, [(p.partition_index, p.replicas) for p in t.partitions])
        for t in request.topics
    ]
    responses = _each_partition(
        ctx, asked, reassign, ("name", "partitions", "partition_index")
    )
    return respond(
        ctx,
        throttle_time_ms=0,
        allow_replication_factor_change=allow_rf,
        error_code=ErrorCode.NONE,
        error_message=None,
        responses=responses,
    )


async def list_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    """The reassignments in progress: of every partition (``topics`` null), else
    of the partitions named; unknown topics and partitions, and those not
    reassigning, are left out."""
    wanted = (
        None
        if request.topics is None
        else [(t.name, list(t.partition_indexes)) for t in request.topics]
    )
    topics = [
        {
            "name": name,
            "partitions": [
                {
                    "partition_index": o.partition_index,
                    "replicas": o.replicas,
                    "adding_replicas": o.adding_replicas,
                    "removing_replicas": o.removing_replicas,
                }
                for o in ongoing
            ],
        }
        for name, ongoing in ongoing_reassignments(ctx.state, wanted)
    ]
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        topics=topics,
    )
