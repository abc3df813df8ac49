"""Fetch, ListOffsets and DeleteRecords: reading a partition and moving its start.

Sources: ``FetchRequest/Response.json`` (KIP-74 byte limits, KIP-227 sessions,
``last_fetched_epoch`` / ``diverging_epoch`` since v12, KIP-516 topic ids since
v13), ``ListOffsetsRequest/Response.json`` (KIP-734 max timestamp),
``DeleteRecordsRequest/Response.json`` (KIP-107); Kafka's
``ReplicaManager.fetchMessages`` / ``readFromLog``, ``Partition.readRecords`` and
``DelayedFetch``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kproto.broker.errors import LogAppendError
from kproto.broker.fetch_session import (
    FetchPartition,
    FetchPlan,
    FetchSessionCache,
    PartitionAnswer,
    TopicAnswer,
)
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.fetch_response import fetch_response
from kproto.broker.handlers.partitions import leader_log, topic_name
from kproto.broker.leader_epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    end_offset_for,
    epoch_for_offset,
)
from kproto.broker.leadership import leader_epoch
from kproto.broker.log import Extent, PartitionLog
from kproto.errors import ErrorCode

__all__ = ["fetch", "list_offsets", "delete_records"]

_LATEST, _EARLIEST, _MAX_TIMESTAMP, _EARLIEST_LOCAL = -1, -2, -3, -4
#: ``isolation_level`` (Fetch v4+, ListOffsets v2+; KIP-98).
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


def _read_all(
    ctx: RequestContext, request: Any, wanted: list[Any]
) -> tuple[list[TopicAnswer], list[tuple[int, int, Extent]], int, bool]:
    """One pass over the ``wanted`` topics (the request's, or its fetch
    session's), from the logs' batch indexes alone: ``(topics, reads, bytes to
    read, any error)``, where ``reads`` lists ``(topic index, partition index,
    extent)`` for :func:`_read_records` (nothing is read while a Fetch waits for
    ``min_bytes``)."""
    remaining = request.max_bytes if ctx.api_version >= 3 else 2**31 - 1
    committed = getattr(request, "isolation_level", READ_UNCOMMITTED) == READ_COMMITTED
    total = 0
    errors = False
    topics: list[TopicAnswer] = []
    reads: list[tuple[int, int, Extent]] = []
    for t in wanted:
        name, topic_error = topic_name(ctx, t, "topic")
        partitions: list[PartitionAnswer] = []
        for p in t.partitions:
            error = topic_error
            hwm = start = lso = -1
            aborted = None
            plog = None
            diverging = None
            if not error:
                plog, error = leader_log(
                    ctx, name, p.partition, getattr(p, "current_leader_epoch", -1)
                )
            if plog is not None:
                hwm, start = plog.high_watermark, plog.log_start_offset
                lso = plog.last_stable_offset
                if p.last_fetched_epoch >= 0:
                    error, diverging = _diverging(ctx, name, p, plog)
                if error or diverging is not None:
                    pass  # the fetcher truncates first: nothing is read
                elif not start <= p.fetch_offset <= hwm:
                    error = ErrorCode.OFFSET_OUT_OF_RANGE
                elif remaining > 0 or total == 0:
                    # KIP-74: the first batch of the first non-empty partition is
                    # returned whole even above the limits, so a fetch always
                    # makes progress.
                    extent = plog.read_extent(
                        p.fetch_offset,
                        min(p.partition_max_bytes, max(remaining, 0)),
                        min_one=total == 0,
                        max_offset=lso if committed else None,
                    )
                    if extent is not None:
                        reads.append((len(topics), len(partitions), extent))
                        total += extent.size
                        remaining -= extent.size
                        if committed:
                            aborted = _aborted(plog, p.fetch_offset, extent.end_offset)
            errors = errors or bool(error) or diverging is not None  # answer now
            partitions.append(
                PartitionAnswer(
                    p.partition, error, hwm, lso, start, aborted, b"", diverging
                )
            )
        topics.append(TopicAnswer(name, getattr(t, "topic_id", None), partitions))
    return topics, reads, total, errors


def _diverging(
    ctx: RequestContext, topic: str, p: FetchPartition, plog: PartitionLog
) -> tuple[ErrorCode, tuple[int, int] | None]:
    """The fetcher's ``last_fetched_epoch`` (Fetch v12+) checked against the log, as
    Kafka's ``Partition.readRecords``: ``(error, diverging epoch)``, where the
    diverging epoch is ``(epoch, end offset)`` when the log's epoch ends before
    the fetch offset or the epoch is not in the log (the fetcher must truncate;
    nothing is read). OFFSET_OUT_OF_RANGE when the epoch's end is unknown or the
    fetch offset is below the log start offset."""
    epoch, end_offset = end_offset_for(
        plog, p.last_fetched_epoch, leader_epoch(ctx.state, topic, p.partition)
    )
    if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_EPOCH_OFFSET:
        return ErrorCode.OFFSET_OUT_OF_RANGE, None
    if p.fetch_offset < plog.log_start_offset:
        return ErrorCode.OFFSET_OUT_OF_RANGE, None
    if epoch < p.last_fetched_epoch or end_offset < p.fetch_offset:
        return ErrorCode.NONE, (epoch, end_offset)
    return ErrorCode.NONE, None


def _read_records(
    topics: list[TopicAnswer], reads: list[tuple[int, int, Extent]]
) -> None:
    """Read the planned extents into ``topics`` (one ``pread`` each); a read
    that fails (EMFILE, EIO) answers its partition KAFKA_STORAGE_ERROR."""
    for ti, pi, extent in reads:
        partitions = topics[ti].partitions
        answer = partitions[pi]
        try:
            partitions[pi] = answer._replace(records=extent.read())
        except OSError:  # this partition only
            partitions[pi] = answer._replace(
                error_code=ErrorCode.KAFKA_STORAGE_ERROR, aborted_transactions=None
            )


def _aborted(
    plog: Any, fetch_offset: int, end_offset: int
) -> list[tuple[int, int]] | None:
    """The aborted transactions a read-committed consumer needs for the batches
    fetched from ``fetch_offset`` up to ``end_offset`` (exclusive): those
    overlapping the fetched offsets (Kafka's
    ``LocalLog.collectAbortedTransactions`` up to the end of the fetched data),
    as ``(producer_id, first_offset)``; ``None`` (a null array, as Kafka sends)
    when there are none."""
    found = plog.txn_index.aborted_between(fetch_offset, end_offset)
    if not found:
        return None
    return [(a.producer_id, a.first_offset) for a in found]


async def fetch(ctx: RequestContext, request: Any) -> Any:
    """Read from each partition; wait up to ``max_wait_ms`` (ms) for at least
    ``min_bytes`` (bytes), woken by every append (Kafka's ``DelayedFetch``).

    ``isolation_level`` READ_COMMITTED (1) reads only below the last stable offset
    and lists the aborted transactions of the fetched range, whose records the
    consumer drops (KIP-98); ``last_stable_offset`` is always reported. A
    ``last_fetched_epoch`` (v12+) whose epoch ends before the fetch offset in
    this log is answered at once with ``diverging_epoch`` and no records.

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
    topics = await _fetch_wait(ctx, request, plan)
    answered = cache.finish(plan, plan.topics, topics)  # may open a session
    return fetch_response(ctx.api_version, ErrorCode.NONE, plan.session_id, answered)


async def _fetch_wait(
    ctx: RequestContext, request: Any, plan: FetchPlan
) -> list[TopicAnswer]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    while True:
        wake = ctx.state.appended_event()
        topics, reads, total, errors = _read_all(ctx, request, plan.topics)
        left = deadline - loop.time()
        if total >= request.min_bytes or errors or left <= 0:
            break
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a
            # cancellation that races with the wake-up (the node could not stop)
            async with asyncio.timeout(left):
                await wake.wait()
        except TimeoutError:
            topics, reads, total, errors = _read_all(ctx, request, plan.topics)
            break
    _read_records(topics, reads)
    return topics


async def list_offsets(ctx: RequestContext, request: Any) -> Any:
    """Offsets by timestamp: -2 earliest (and -4 earliest local), -1 latest (the
    last stable offset under ``isolation_level`` READ_COMMITTED, v2+),
    -3 the record with the largest timestamp (KIP-734), else the first record whose
    timestamp (ms) is at or after the one asked (offset -1 if none). The
    ``leader_epoch`` (v4+) of the latest offset is the partition's; of any other,
    the epoch that wrote it (-1: none found, or unstamped batches), as Kafka's
    ``UnifiedLog.fetchOffsetByTimestamp``."""
    committed = getattr(request, "isolation_level", READ_UNCOMMITTED) == READ_COMMITTED
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            plog, error = leader_log(
                ctx, t.name, p.partition_index, getattr(p, "current_leader_epoch", -1)
            )
            offset, timestamp = -1, -1
            current = leader_epoch(ctx.state, t.name, p.partition_index)
            epoch = max(current, 0)
            if plog is not None:
                ts = p.timestamp
                if ts == _LATEST:
                    offset = (
                        plog.last_stable_offset if committed else plog.high_watermark
                    )
                elif ts in (_EARLIEST, _EARLIEST_LOCAL):
                    offset = plog.log_start_offset
                elif ts == _MAX_TIMESTAMP:
                    found = plog.max_timestamp()
                    if found is not None:
                        offset, timestamp = found
                else:
                    found = plog.offset_for_timestamp(ts)
                    if found is not None:
                        offset, timestamp = found
                if ts != _LATEST:  # the epoch of the offset found (-1: none)
                    epoch = (
                        epoch_for_offset(plog, offset, current)
                        if offset >= 0
                        else UNDEFINED_EPOCH
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
    state = ctx.state
    topics = []
    changed = False
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            plog, error = leader_log(ctx, t.name, p.partition_index)
            low = -1
            if plog is not None:
                target = plog.high_watermark if p.offset == -1 else p.offset
                try:
                    low = plog.delete_records_before(target)
                    changed = True
                except LogAppendError as err:
                    error = err.error_code
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "low_watermark": low,
                    "error_code": error,
                }
            )
        topics.append({"name": t.name, "partitions": partitions})
    if changed:
        state.save_checkpoint()
    return respond(ctx, throttle_time_ms=0, topics=topics)
