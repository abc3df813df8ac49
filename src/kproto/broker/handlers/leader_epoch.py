"""OffsetForLeaderEpoch (KIP-101, KIP-320): the end offset of a leader epoch, which
consumers use to detect log truncation after a leader change.

Sources: ``OffsetForLeaderEpochRequest/Response.json`` v0-v4 (``current_leader_epoch``
since v2, ``replica_id`` since v3); Kafka's ``Partition.lastOffsetForLeaderEpoch``:
the request's ``current_leader_epoch`` (-1: not checked) older than the partition's
is FENCED_LEADER_EPOCH, newer is UNKNOWN_LEADER_EPOCH, then a node that does not
lead the partition answers NOT_LEADER_OR_FOLLOWER; the end offset comes from
:mod:`kproto.broker.leader_epoch_cache`, built from the epochs the log stamps into
its batches (:mod:`kproto.broker.leadership`). A result with no known epoch has
``leader_epoch`` and ``end_offset`` -1 and no error, as Kafka's.
"""

from __future__ import annotations

from typing import Any

from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.leader_epoch_cache import end_offset_for

__all__ = ["offset_for_leader_epoch"]


def _partition(ctx: RequestContext, topic: str, p: Any) -> dict[str, Any]:
    replicas = ctx.replicas
    plog, error = replicas.leader_log(
        topic, p.partition, getattr(p, "current_leader_epoch", -1)
    )
    out: dict[str, Any] = {"partition": p.partition, "error_code": error}
    if plog is not None:
        current = replicas.leader_epoch(topic, p.partition)
        out["leader_epoch"], out["end_offset"] = end_offset_for(
            plog, p.leader_epoch, current
        )
    return out


async def offset_for_leader_epoch(ctx: RequestContext, request: Any) -> Any:
    """Each requested partition's ``(leader_epoch, end_offset)``."""
    topics = [
        {
            "topic": t.topic,
            "partitions": [_partition(ctx, t.topic, p) for p in t.partitions],
        }
        for t in request.topics
    ]
    return respond(ctx, throttle_time_ms=0, topics=topics)
