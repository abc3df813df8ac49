"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions.

Sources: ``CreateTopicsRequest/Response.json`` (topic id since v7, configs in the
response since v5, KIP-525), ``DeleteTopicsRequest/Response.json`` (topic ids
since v6), ``CreatePartitionsRequest/Response.json``; Kafka's
``ControllerApis`` / ``ReplicationControlManager`` checks. Any node answers (there
is no separate controller).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kproto.broker import topic_admin
from kproto.broker.errors import TopicError
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.partitions import topic_name
from kproto.broker.topic_admin import NewTopic
from kproto.errors import ErrorCode

__all__ = ["create_topics", "delete_topics", "create_partitions"]


async def create_topics(ctx: RequestContext, request: Any) -> Any:
    """Create each topic (``num_partitions`` -1: the cluster default) through
    :func:`kproto.broker.topic_admin.create_topics` (bounded, validated first, all
    or nothing per topic). Replication factor -1 (1) or 1..live nodes is kept:
    Metadata reports each partition's replicas and ISR; manual ``assignments``
    are accepted with ``num_partitions`` and ``replication_factor`` -1: each
    partition's first live replica leads it (INVALID_REPLICA_ASSIGNMENT for what
    Kafka's ``validateManualPartitionAssignment`` refuses)."""
    requested = [
        NewTopic(
            t.name,
            t.num_partitions,
            t.replication_factor,
            tuple((a.partition_index, tuple(a.broker_ids)) for a in t.assignments),
            {c.name: c.value for c in t.configs if c.value is not None},
        )
        for t in request.topics
    ]
    outcomes = await topic_admin.create_topics(
        ctx.state,
        requested,
        validate_only=getattr(request, "validate_only", False),
    )
    results = []
    for outcome in outcomes:
        info = outcome.info
        results.append(
            {
                "name": outcome.name,
                "topic_id": info.topic_id if info is not None else None,
                "error_code": outcome.error_code,
                "error_message": outcome.message,
                "num_partitions": info.partitions if info is not None else -1,
                "replication_factor": (
                    info.replication_factor if info is not None else -1
                ),
                "configs": (
                    [
                        {
                            "name": k,
                            "value": info.config(k),
                            "read_only": False,
                            "config_source": 1 if k in info.configs else 5,
                            "is_sensitive": False,
                        }
                        for k in sorted(info.configs)
                    ]
                    if info is not None
                    else None
                ),
            }
        )
    return respond(ctx, throttle_time_ms=0, topics=results)


async def delete_topics(ctx: RequestContext, request: Any) -> Any:
    """Delete topics named in ``topic_names`` (v0-5) or ``topics`` by name or id
    (v6+), their log directories, and every group's committed offsets for them."""
    state = ctx.state
    entries: list[tuple[str, ErrorCode]] = []
    if ctx.api_version >= 6:
        entries = [topic_name(ctx, t) for t in request.topics]
    else:
        entries = [(name, ErrorCode.NONE) for name in request.topic_names]
    results = []
    deleted = 0
    for name, error in entries:
        message, topic_id = None, None
        if not error:
            try:
                topic_id = state.delete_topic(name, save=False).topic_id
            except TopicError as err:
                error, message = err.error_code, str(err)
            else:
                # committed offsets of the topic go too (GroupCoordinator.onPartitionsDeleted)
                await ctx.groups.on_topic_deleted(name)
                deleted += 1
                if deleted % 64 == 0:  # bounded steps: let other clients in
                    await asyncio.sleep(0)
        results.append(
            {
                "name": name or None,
                "topic_id": topic_id,
                "error_code": error,
                "error_message": message,
            }
        )
    if deleted:
        state.save_topics()  # once per request
    return respond(ctx, throttle_time_ms=0, responses=results)


async def create_partitions(ctx: RequestContext, request: Any) -> Any:
    """Grow topics to ``count`` partitions through
    :func:`kproto.broker.topic_admin.create_partitions`; manual assignments
    (one broker id list per new partition) are the new partitions' replicas."""
    answers = await topic_admin.create_partitions(
        ctx.state,
        [
            (
                t.name,
                t.count,
                (
                    [list(a.broker_ids) for a in t.assignments]
                    if t.assignments  # null or empty: none
                    else None
                ),
            )
            for t in request.topics
        ],
        validate_only=request.validate_only,
    )
    results = [
        {"name": t.name, "error_code": error, "error_message": message}
        for t, (error, message) in zip(request.topics, answers, strict=True)
    ]
    return respond(ctx, throttle_time_ms=0, results=results)
