"""Fetch, ListOffsets and DeleteRecords: the requests translated into
:class:`kproto.broker.replica_manager.ReplicaManager` calls (``fetch_messages``,
``fetch_offset``, ``delete_records``) and their results into responses.

Sources: ``FetchRequest/Response.json`` (KIP-74 byte limits, KIP-227 sessions,
``last_fetched_epoch`` / ``diverging_epoch`` since v12, KIP-516 topic ids since
v13), ``ListOffsetsRequest/Response.json`` (KIP-734 max timestamp),
``DeleteRecordsRequest/Response.json`` (KIP-107); Kafka's
``ReplicaManager.fetchMessages`` / ``readFromLog``, ``Partition.readRecords`` and
``DelayedFetch``.
"""

from __future__ import annotations

from typing import Any

from kproto.broker.fetch_session import FetchSessionCache
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.fetch_response import fetch_response
from kproto.broker.replica_manager import FetchParams
from kproto.errors import ErrorCode

__all__ = ["fetch", "list_offsets", "delete_records"]

#: ``isolation_level`` (Fetch v4+, ListOffsets v2+; KIP-98).
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


async def fetch(ctx: RequestContext, request: Any) -> Any:
    """Read from each partition; wait up to ``max_wait_ms`` (ms) for at least
    ``min_bytes`` (bytes), woken by every append (Kafka's ``DelayedFetch``).

    ``isolation_level`` READ_COMMITTED (1) reads only below the last stable offset
    and lists the aborted transactions of the fetched range, whose records the
    consumer drops (KIP-98); ``last_stable_offset`` is always reported. A
    ``last_fetched_epoch`` (v12+) whose epoch ends before the fetch offset in
    this log is answered at once with ``diverging_epoch`` and no records. From
    v11 a consumer's ``rack_id`` may have the leader answer a
    ``preferred_read_replica`` (KIP-392), and a follower serves it
    (:mod:`kproto.broker.read_replicas`).

    Fetch sessions (KIP-227) are resolved by the node's
    :class:`kproto.broker.fetch_session.FetchSessionCache`: a full fetch opens
    one, an incremental fetch reads the session's partitions and is answered
    with the changed ones; session errors are answered with no partitions.

    The response entity is built straight from the answers
    (:func:`kproto.broker.handlers.fetch_response.fetch_response`), not through
    :func:`~kproto.broker.handlers.context.respond`; the bytes are the same.
    """
    cache = ctx.fetch_sessions or FetchSessionCache(max_slots=0)
    plan = cache.plan(request, ctx.api_version)
    if plan.error:
        return fetch_response(ctx.api_version, plan.error, 0, [])
    params = FetchParams(
        max_bytes=request.max_bytes if ctx.api_version >= 3 else 2**31 - 1,
        min_bytes=request.min_bytes,
        max_wait_ms=request.max_wait_ms,
        committed=getattr(request, "isolation_level", READ_UNCOMMITTED)
        == READ_COMMITTED,
        rack_id=_client_rack(ctx, request),
    )
    topics = await ctx.replicas.fetch_messages(plan.topics, params)
    answered = cache.finish(plan, plan.topics, topics)  # may open a session
    return fetch_response(ctx.api_version, ErrorCode.NONE, plan.session_id, answered)


def _client_rack(ctx: RequestContext, request: Any) -> str | None:
    """The client metadata's rack of a consumer's Fetch v11+ (``""``: none set;
    KIP-392), after Kafka's ``KafkaApis.handleFetchRequest``; None for older
    versions and for a broker's replication fetch (``replica_id`` >= 0), which
    read from the leader only."""
    if ctx.api_version < 11:
        return None
    replica_id = getattr(request, "replica_id", -1)
    state = getattr(request, "replica_state", None)
    if state is not None:
        replica_id = max(replica_id, state.replica_id)
    if replica_id >= 0:
        return None
    return request.rack_id or ""


async def list_offsets(ctx: RequestContext, request: Any) -> Any:
    """Offsets by timestamp: -2 earliest (and -4 earliest local), -1 latest (the
    last stable offset under ``isolation_level`` READ_COMMITTED, v2+),
    -3 the record with the largest timestamp (KIP-734), else the first record whose
    timestamp (ms) is at or after the one asked (offset -1 if none). The
    ``leader_epoch`` (v4+) of the latest offset is the partition's; of any other,
    the epoch that wrote it (-1: none found, or unstamped batches), as Kafka's
    ``UnifiedLog.fetchOffsetByTimestamp``."""
    committed = getattr(request, "isolation_level", READ_UNCOMMITTED) == READ_COMMITTED
    replicas = ctx.replicas
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            error, offset, timestamp, epoch = replicas.fetch_offset(
                t.name,
                p.partition_index,
                p.timestamp,
                current_leader_epoch=getattr(p, "current_leader_epoch", -1),
                committed=committed,
            )
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": error,
                    "old_style_offsets": [offset] if offset >= 0 else [],
                    "timestamp": timestamp,
                    "offset": offset,
                    "leader_epoch": epoch,
                }
            )
        topics.append({"name": t.name, "partitions": partitions})
    return respond(ctx, throttle_time_ms=0, topics=topics)


async def delete_records(ctx: RequestContext, request: Any) -> Any:
    """Raise each partition's log start offset to ``offset`` (-1: the high
    watermark); OFFSET_OUT_OF_RANGE above the high watermark."""
    topics = []
    changed = False
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            error, low = ctx.replicas.delete_records(
                t.name, p.partition_index, p.offset
            )
            changed = changed or low >= 0
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "low_watermark": low,
                    "error_code": error,
                }
            )
        topics.append({"name": t.name, "partitions": partitions})
    if changed:
        ctx.state.save_checkpoint()
    return respond(ctx, throttle_time_ms=0, topics=topics)
