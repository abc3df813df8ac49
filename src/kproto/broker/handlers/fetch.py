"""Fetch, ListOffsets and DeleteRecords: reading a partition and moving its start.

Sources: ``FetchRequest/Response.json`` (KIP-74 byte limits, KIP-227 sessions,
KIP-516 topic ids since v13), ``ListOffsetsRequest/Response.json`` (KIP-734
max timestamp), ``DeleteRecordsRequest/Response.json`` (KIP-107); Kafka's
``ReplicaManager.fetchMessages`` / ``readFromLog`` and ``DelayedFetch``.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from kproto.broker.errors import LogAppendError
from kproto.broker.fetch_session import FetchPlan, FetchSessionCache
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.partitions import leader_log, topic_name
from kproto.broker.leadership import leader_epoch
from kproto.errors import ErrorCode

__all__ = ["fetch", "list_offsets", "delete_records"]

_LATEST, _EARLIEST, _MAX_TIMESTAMP, _EARLIEST_LOCAL = -1, -2, -3, -4
_BASE_AND_LENGTH = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
#: ``isolation_level`` (Fetch v4+, ListOffsets v2+; KIP-98).
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


def _read_all(
    ctx: RequestContext, request: Any, wanted: list[Any]
) -> tuple[list[dict[str, Any]], int, bool]:
    """One pass over the ``wanted`` topics (the request's, or its fetch
    session's): ``(topics, bytes read, any error)``."""
    remaining = request.max_bytes if ctx.api_version >= 3 else 2**31 - 1
    committed = getattr(request, "isolation_level", READ_UNCOMMITTED) == READ_COMMITTED
    total = 0
    errors = False
    topics = []
    for t in wanted:
        name, topic_error = topic_name(ctx, t, "topic")
        partitions = []
        for p in t.partitions:
            error = topic_error
            records = b""
            hwm = start = lso = -1
            aborted: list[dict[str, int]] | None = None
            plog = None
            if not error:
                plog, error = leader_log(
                    ctx, name, p.partition, getattr(p, "current_leader_epoch", -1)
                )
            if plog is not None:
                hwm, start = plog.high_watermark, plog.log_start_offset
                lso = plog.last_stable_offset
                if not start <= p.fetch_offset <= hwm:
                    error = ErrorCode.OFFSET_OUT_OF_RANGE
                elif remaining > 0 or total == 0:
                    # KIP-74: the first batch of the first non-empty partition is
                    # returned whole even above the limits, so a fetch always
                    # makes progress.
                    try:
                        records = plog.read(
                            p.fetch_offset,
                            min(p.partition_max_bytes, max(remaining, 0)),
                            min_one=total == 0,
                            max_offset=lso if committed else None,
                        )
                    except OSError:  # EMFILE, EIO: this partition only
                        error = ErrorCode.KAFKA_STORAGE_ERROR
                    if committed and not error:
                        aborted = _aborted(plog, p.fetch_offset, records, lso)
                    total += len(records)
                    remaining -= len(records)
            errors = errors or bool(error)
            partitions.append(
                {
                    "partition_index": p.partition,
                    "error_code": error,
                    "high_watermark": hwm,
                    "last_stable_offset": lso,
                    "log_start_offset": start,
                    "aborted_transactions": aborted,
                    "preferred_read_replica": -1,
                    "records": records,
                }
            )
        topics.append(
            {
                "topic": name,
                "topic_id": getattr(t, "topic_id", None),
                "partitions": partitions,
            }
        )
    return topics, total, errors


def _aborted(
    plog: Any, fetch_offset: int, records: bytes, lso: int
) -> list[dict[str, int]] | None:
    """The aborted transactions a read-committed consumer needs for ``records``
    (read from ``fetch_offset``): those overlapping the fetched offsets (Kafka's
    ``LocalLog.collectAbortedTransactions`` up to the end of the fetched data);
    ``None`` (a null array, as Kafka sends) when there are none."""
    if not records:
        return None
    end = lso
    position = 0
    # walk the batch headers (DefaultRecordBatch: base offset at 0, length at 8,
    # last offset delta at 23) without decoding the records
    while position + 27 <= len(records):
        base, length = _BASE_AND_LENGTH.unpack_from(records, position)
        (delta,) = _INT32.unpack_from(records, position + 23)
        end = base + delta + 1
        position += 12 + length
    found = plog.txn_index.aborted_between(fetch_offset, end)
    if not found:
        return None
    return [
        {"producer_id": a.producer_id, "first_offset": a.first_offset} for a in found
    ]


async def fetch(ctx: RequestContext, request: Any) -> Any:
    """Read from each partition; wait up to ``max_wait_ms`` (ms) for at least
    ``min_bytes`` (bytes), woken by every append (Kafka's ``DelayedFetch``).

    ``isolation_level`` READ_COMMITTED (1) reads only below the last stable offset
    and lists the aborted transactions of the fetched range, whose records the
    consumer drops (KIP-98); ``last_stable_offset`` is always reported.

    Fetch sessions (KIP-227) are resolved by the node's
    :class:`kproto.broker.fetch_session.FetchSessionCache`: a full fetch opens
    one, an incremental fetch reads the session's partitions and is answered
    with the changed ones; session errors are answered with no partitions.
    """
    cache = ctx.fetch_sessions or FetchSessionCache(max_slots=0)
    plan = cache.plan(request, ctx.api_version)
    if plan.error:
        return respond(
            ctx,
            throttle_time_ms=0,
            error_code=plan.error,
            session_id=0,
            responses=[],
        )
    topics = await _fetch_wait(ctx, request, plan)
    responses = cache.finish(plan, plan.topics, topics)  # may open a session
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        session_id=plan.session_id,
        responses=responses,
    )


async def _fetch_wait(
    ctx: RequestContext, request: Any, plan: FetchPlan
) -> list[dict[str, Any]]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    while True:
        wake = ctx.state.appended_event()
        topics, total, errors = _read_all(ctx, request, plan.topics)
        left = deadline - loop.time()
        if total >= request.min_bytes or errors or left <= 0:
            break
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a
            # cancellation that races with the wake-up (the node could not stop)
            async with asyncio.timeout(left):
                await wake.wait()
        except TimeoutError:
            topics, total, errors = _read_all(ctx, request, plan.topics)
            break
    return topics


async def list_offsets(ctx: RequestContext, request: Any) -> Any:
    """Offsets by timestamp: -2 earliest (and -4 earliest local), -1 latest (the
    last stable offset under ``isolation_level`` READ_COMMITTED, v2+),
    -3 the record with the largest timestamp (KIP-734), else the first record whose
    timestamp (ms) is at or after the one asked (offset -1 if none)."""
    committed = getattr(request, "isolation_level", READ_UNCOMMITTED) == READ_COMMITTED
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            plog, error = leader_log(
                ctx, t.name, p.partition_index, getattr(p, "current_leader_epoch", -1)
            )
            offset, timestamp = -1, -1
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
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": error,
                    "old_style_offsets": [offset] if offset >= 0 else [],
                    "timestamp": timestamp,
                    "offset": offset,
                    "leader_epoch": max(
                        leader_epoch(ctx.state, t.name, p.partition_index), 0
                    ),
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
