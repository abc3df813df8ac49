"""DescribeTopicPartitions (KIP-966): topic metadata paged by a cursor.

Sources: ``DescribeTopicPartitionsRequest/Response.json`` v0; Kafka's
``DescribeTopicPartitionsRequestHandler`` and ``KRaftMetadataCache.
describeTopicResponse``: the requested topics (all of them when none is named) in
name order, from the request's ``cursor`` (topic, first partition) on, at most
``min(response_partition_limit, max.request.partition.size.limit)`` partitions per
response; when more remain, ``next_cursor`` names the first partition left out. A
cursor naming a topic that is not requested is INVALID_REQUEST for every topic.

This broker has one replica per partition: ``replica_nodes`` and ``isr_nodes`` are
the leader, ``eligible_leader_replicas`` and ``last_known_elr`` are empty (ELR,
KIP-966's other half, needs replicas).
"""

from __future__ import annotations

from typing import Any

from kproto.broker.acl import ResourceType
from kproto.broker.handlers.cluster_info import operations, topic_metadata
from kproto.broker.handlers.context import RequestContext, respond
from kproto.errors import ErrorCode

__all__ = ["describe_topic_partitions", "MAX_REQUEST_PARTITION_SIZE_LIMIT"]

#: Kafka's ``max.request.partition.size.limit`` default: partitions per response.
MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000


async def describe_topic_partitions(ctx: RequestContext, request: Any) -> Any:
    """The requested topics' partitions, in (name, partition) order, paged."""
    state = ctx.state
    cursor = request.cursor
    if request.topics:
        names = sorted({t.name for t in request.topics})
    else:
        names = sorted(state.topics)
    if cursor is not None and request.topics and cursor.topic_name not in names:
        message_topics = [
            {
                "error_code": ErrorCode.INVALID_REQUEST,
                "name": name,
                "partitions": [],
                "topic_authorized_operations": operations(
                    ctx, ResourceType.TOPIC, name, True
                ),
            }
            for name in names
        ]
        return respond(ctx, throttle_time_ms=0, topics=message_topics, next_cursor=None)
    start_topic = cursor.topic_name if cursor is not None else ""
    start_partition = max(cursor.partition_index, 0) if cursor is not None else 0
    # a limit below 1 would never make progress: at least one partition
    remaining = max(
        1, min(request.response_partition_limit, MAX_REQUEST_PARTITION_SIZE_LIMIT)
    )
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in names:
        if name < start_topic:
            continue
        if remaining <= 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        entry = topic_metadata(state, name)
        entry["topic_authorized_operations"] = operations(
            ctx, ResourceType.TOPIC, name, True
        )
        first = start_partition if name == start_topic else 0
        partitions = entry["partitions"][first:]
        for p in partitions:
            p["eligible_leader_replicas"] = []
            p["last_known_elr"] = []
        if len(partitions) > remaining:
            next_cursor = {
                "topic_name": name,
                "partition_index": partitions[remaining]["partition_index"],
            }
            partitions = partitions[:remaining]
        entry["partitions"] = partitions
        remaining -= len(partitions)
        if entry["error_code"] == ErrorCode.NONE or request.topics:
            topics.append(entry)
        if next_cursor is not None:
            break
    return respond(ctx, throttle_time_ms=0, topics=topics, next_cursor=next_cursor)
