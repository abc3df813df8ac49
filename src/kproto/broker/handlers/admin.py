"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions.

Sources: ``CreateTopicsRequest/Response.json`` (topic id since v7, configs in the
response since v5, KIP-525), ``DeleteTopicsRequest/Response.json`` (topic ids
since v6), ``CreatePartitionsRequest/Response.json``; Kafka's
``ControllerApis`` / ``ReplicationControlManager`` checks. Any node answers (there
is no separate controller).
"""

from __future__ import annotations

from typing import Any

from kproto.broker.errors import TopicError
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.partitions import topic_name
from kproto.errors import ErrorCode

__all__ = ["create_topics", "delete_topics", "create_partitions"]


async def create_topics(ctx: RequestContext, request: Any) -> Any:
    """Create each topic (``num_partitions`` -1: the cluster default). Replication
    factor -1 or 1..nodes is accepted and stored as 1 (no replication);
    manual ``assignments`` are refused with INVALID_REQUEST."""
    state = ctx.state
    validate_only = getattr(request, "validate_only", False)
    results = []
    for t in request.topics:
        error, message, info = ErrorCode.NONE, None, None
        rf = t.replication_factor
        if t.assignments:
            error, message = (
                ErrorCode.INVALID_REQUEST,
                "manual replica assignments are not supported",
            )
        elif rf != -1 and not 1 <= rf <= len(state.node_ids):
            error = ErrorCode.INVALID_REPLICATION_FACTOR
            message = f"replication factor {rf} is not in 1..{len(state.node_ids)}"
        else:
            try:
                info = state.create_topic(
                    t.name,
                    t.num_partitions,
                    configs={c.name: c.value for c in t.configs if c.value is not None},
                    validate_only=validate_only,
                )
            except TopicError as err:
                error, message = err.error_code, str(err)
        results.append(
            {
                "name": t.name,
                "topic_id": info.topic_id if info is not None else None,
                "error_code": error,
                "error_message": message,
                "num_partitions": info.partitions if info is not None else -1,
                "replication_factor": 1 if info is not None else -1,
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
    for name, error in entries:
        message, topic_id = None, None
        if not error:
            try:
                topic_id = state.delete_topic(name).topic_id
            except TopicError as err:
                error, message = err.error_code, str(err)
            else:
                # committed offsets of the topic go too (GroupCoordinator.onPartitionsDeleted)
                await ctx.groups.on_topic_deleted(name)
        results.append(
            {
                "name": name or None,
                "topic_id": topic_id,
                "error_code": error,
                "error_message": message,
            }
        )
    return respond(ctx, throttle_time_ms=0, responses=results)


async def create_partitions(ctx: RequestContext, request: Any) -> Any:
    """Grow topics to ``count`` partitions; manual assignments are refused."""
    state = ctx.state
    results = []
    for t in request.topics:
        error, message = ErrorCode.NONE, None
        if t.assignments:
            error, message = (
                ErrorCode.INVALID_REQUEST,
                "manual replica assignments are not supported",
            )
        else:
            try:
                state.create_partitions(
                    t.name, t.count, validate_only=request.validate_only
                )
            except TopicError as err:
                error, message = err.error_code, str(err)
        results.append({"name": t.name, "error_code": error, "error_message": message})
    return respond(ctx, throttle_time_ms=0, results=results)
