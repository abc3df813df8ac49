"""Share groups (KIP-932): ShareGroupHeartbeat, ShareFetch and ShareAcknowledge
(ShareGroupDescribe and the share-group offset APIs are in :mod:`.share_admin`).

Sources: the JSON files of those APIs (ShareGroupHeartbeat, ShareFetch,
ShareAcknowledge, ShareGroupDescribe v1, the stable versions, and v2 of ShareFetch
and ShareAcknowledge with KIP-1222 renew acknowledgements; the offset APIs v0, and
DescribeShareGroupOffsets v1 with KIP-1226 lag); Kafka's ``KafkaApis``
``handleShareFetchRequest`` / ``handleShareAcknowledgeRequest`` and
``SharePartitionManager.newContext`` / ``acknowledgeSessionUpdate`` for the share
session rules. The state machine is :mod:`kproto.broker.share`.

Share sessions: epoch 0 opens one (acknowledgements in it are INVALID_REQUEST),
-1 closes it (acknowledgements applied, nothing fetched, the member's acquired
records on this node released), anything else must be the session's next epoch
(INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without a session). A
ShareFetch fetches from every partition of its session, not only those it names.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kproto.broker.handlers.context import RequestContext, respond, respond_with
from kproto.broker.handlers.partitions import topic_ids
from kproto.broker.share import HeartbeatResult, ShareCoordinator
from kproto.errors import ErrorCode

__all__ = [
    "share_group_heartbeat",
    "share_fetch",
    "share_acknowledge",
    "coordinator",
    "group_error",
]

_DEFAULT_MAX_RECORDS = 500
_NO_SHARE = "kproto broker: this node has no share coordinator"


def coordinator(ctx: RequestContext) -> ShareCoordinator:
    """The cluster's share coordinator (RuntimeError when the dispatcher has none)."""
    if ctx.share is None:  # a Dispatcher built without one (not Cluster's)
        raise RuntimeError(_NO_SHARE)
    return ctx.share


def group_error(ctx: RequestContext, group_id: str) -> tuple[ErrorCode, str | None]:
    """The coordinator checks of the group APIs, and GROUP_ID_NOT_FOUND for a
    classic or consumer (KIP-848) group of that id (Kafka: ``Group X is not a share
    group``)."""
    error = ErrorCode(ctx.groups.check_coordinator(group_id, ctx.node_id))
    if error != ErrorCode.NONE:
        return error, None
    classic = ctx.groups.describe_group(group_id) is not None
    if classic or group_id in ctx.groups.consumer.groups:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    return ErrorCode.NONE, None


# -- ShareGroupHeartbeat -----------------------------------------------------------


async def share_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    """Join (epoch 0), heartbeat, or leave (epoch -1) a share group; the answer
    carries the member's epoch, the heartbeat interval (ms) and, when it changed,
    its assignment (topic ids and partitions)."""
    share = coordinator(ctx)
    interval = share.config_for(request.group_id).heartbeat_interval_ms
    error, message = group_error(ctx, request.group_id)
    if error != ErrorCode.NONE:
        result = HeartbeatResult(error, message)
        return respond_with(ctx, result, heartbeat_interval_ms=interval)
    result = share.heartbeat(
        request.group_id,
        request.member_id,
        request.member_epoch,
        request.rack_id,
        request.subscribed_topic_names,
        ctx.client_id or "",
        ctx.member_host,
    )
    assignment = None
    if result.assignment is not None:
        topics = ctx.state.topics
        assignment = {
            "topic_partitions": [
                {"topic_id": topics[t].topic_id, "partitions": sorted(ps)}
                for t, ps in sorted(result.assignment.items())
                if t in topics
            ]
        }
    return respond_with(
        ctx, result, heartbeat_interval_ms=interval, assignment=assignment
    )


# -- ShareFetch and ShareAcknowledge ---------------------------------------------


def _session_error(
    share: ShareCoordinator, ctx: RequestContext, request: Any, fetch: bool
) -> tuple[ErrorCode, str | None]:
    """Check and advance the share session (``SharePartitionManager.newContext``
    for ShareFetch, ``acknowledgeSessionUpdate`` for ShareAcknowledge)."""
    group_id, member_id = request.group_id, request.member_id
    epoch = request.share_session_epoch
    if not group_id or not member_id:
        return ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set."
    if epoch == 0:
        if not fetch:
            return (
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                "ShareAcknowledge cannot open a session.",
            )
        if share.open_session(ctx.node_id, group_id, member_id) is None:
            return (
                ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                "Too many share sessions on this node.",
            )
        return ErrorCode.NONE, None
    session = share.session(ctx.node_id, group_id, member_id)
    if session is None:
        return (
            ErrorCode.SHARE_SESSION_NOT_FOUND,
            f"No share session for member {member_id}.",
        )
    if epoch == -1:
        return ErrorCode.NONE, None
    if epoch != session.epoch:
        return (
            ErrorCode.INVALID_SHARE_SESSION_EPOCH,
            f"Expected share session epoch {session.epoch}, got {epoch}.",
        )
    share.next_epoch(session)
    return ErrorCode.NONE, None


def _leader(ctx: RequestContext, topic: str, partition: int) -> ErrorCode:
    leader = ctx.state.leader(topic, partition)
    if leader is None or ctx.state.partition_log(topic, partition) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE if leader == ctx.node_id else ErrorCode.NOT_LEADER_OR_FOLLOWER


def _requested(
    ctx: RequestContext, request: Any
) -> list[tuple[uuid.UUID, str | None, int, list[tuple[int, int, list[int]]]]]:
    """``(topic id, topic name or None if unknown, partition, acknowledgements)``
    of every partition a request names."""
    names = topic_ids(ctx)
    return [
        (
            t.topic_id,
            names.get(t.topic_id),
            p.partition_index,
            [
                (b.first_offset, b.last_offset, list(b.acknowledge_types))
                for b in p.acknowledgement_batches
            ],
        )
        for t in request.topics
        for p in t.partitions
    ]


async def _acknowledge_all(
    share: ShareCoordinator,
    ctx: RequestContext,
    request: Any,
    partitions: list[
        tuple[uuid.UUID, str | None, int, list[tuple[int, int, list[int]]]]
    ],
) -> dict[tuple[uuid.UUID, int], ErrorCode]:
    out: dict[tuple[uuid.UUID, int], ErrorCode] = {}
    for topic_id, name, partition, acks in partitions:
        if not acks:
            continue
        if name is None:
            out[(topic_id, partition)] = ErrorCode.UNKNOWN_TOPIC_ID
            continue
        error = _leader(ctx, name, partition)
        if error == ErrorCode.NONE:
            error = await share.acknowledge(
                request.group_id, request.member_id, name, partition, acks
            )
        out[(topic_id, partition)] = error
    return out


def _node_endpoints(ctx: RequestContext, leaders: set[int]) -> list[dict[str, Any]]:
    return [
        {"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
        for n in ctx.state.nodes.values()
        if n.node_id in leaders
    ]


def _current_leader(
    ctx: RequestContext, topic: str | None, partition: int
) -> dict[str, int]:
    leader = None if topic is None else ctx.state.leader(topic, partition)
    return {"leader_id": -1 if leader is None else leader, "leader_epoch": 0}


def _answer(
    ctx: RequestContext,
    lock_ms: int,
    error: ErrorCode,
    message: str | None,
    responses: Any = (),
    endpoints: Any = (),
) -> Any:
    """A ShareFetch or ShareAcknowledge response: ``lock_ms`` the group's record
    lock duration (``acquisition_lock_timeout_ms``), ``responses`` its topics,
    ``endpoints`` the leaders a client must move to."""
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        acquisition_lock_timeout_ms=lock_ms,
        responses=list(responses),
        node_endpoints=list(endpoints),
    )


async def share_fetch(ctx: RequestContext, request: Any) -> Any:
    """Apply piggybacked acknowledgements, then acquire records for the member from
    every partition of its share session, waiting up to ``max_wait_ms`` (ms) for
    some (woken by appends and releases). Each partition answers the stored batches
    holding its acquired records and the ``acquired_records`` ranges with their
    delivery counts; ``acquisition_lock_timeout_ms`` is the lock duration.

    Limits, as Kafka's ``DelayedShareFetch`` and ``SharePartition.acquire``:
    ``max_bytes`` (bytes) is shared evenly by the partitions (Kafka's uniform
    ``PartitionMaxBytesStrategy``) and bounds the batches returned, except the
    response's first batch; ``max_bytes`` <= 0 acquires nothing; ``max_records``
    (soft, or exact in ``record_limit`` acquire mode), ``batch_size`` (v1+, the
    size of the acquired ranges) and the group's ``share.isolation.level``
    (read_committed: up to the last stable offset, aborted transactions'
    records archived) apply per :meth:`kproto.broker.share.SharePartition.acquire`."""
    share = coordinator(ctx)
    lock_ms = share.config_for(request.group_id or "").record_lock_duration_ms
    partitions = _requested(ctx, request)

    epoch = request.share_session_epoch
    if epoch == 0 and any(acks for *_, acks in partitions):
        return _answer(
            ctx,
            lock_ms,
            ErrorCode.INVALID_REQUEST,
            "Acknowledge data present in the initial ShareFetch.",
        )
    error, message = _session_error(share, ctx, request, fetch=True)
    if error != ErrorCode.NONE:
        return _answer(ctx, lock_ms, error, message)
    group_id, member_id = request.group_id, request.member_id
    ack_errors = await _acknowledge_all(share, ctx, request, partitions)
    results: dict[tuple[uuid.UUID, int], dict[str, Any]] = {}
    names = topic_ids(ctx)
    for topic_id, name, partition, _acks in partitions:
        results[(topic_id, partition)] = {
            "partition_index": partition,
            "error_code": (
                ErrorCode.NONE if name is not None else ErrorCode.UNKNOWN_TOPIC_ID
            ),
            "acknowledge_error_code": ack_errors.get(
                (topic_id, partition), ErrorCode.NONE
            ),
            "current_leader": _current_leader(ctx, name, partition),
            "records": b"",
            "acquired_records": [],
        }
    if epoch == -1:
        share.close_session(ctx.node_id, group_id, member_id)
        return _answer(ctx, lock_ms, ErrorCode.NONE, None, _by_topic(results))
    session = share.session(ctx.node_id, group_id, member_id)
    assert session is not None  # opened or checked by _session_error
    for _topic_id, name, partition, _acks in partitions:
        if name is not None:
            session.partitions[(name, partition)] = None
    for forgotten in request.forgotten_topics_data:
        name = names.get(forgotten.topic_id)
        for partition in forgotten.partitions:
            session.partitions.pop((name or "", partition), None)
    max_records = (
        request.max_records if request.max_records > 0 else _DEFAULT_MAX_RECORDS
    )
    config = share.config_for(group_id)
    read_committed = config.isolation_level == "read_committed"
    batch_size = getattr(request, "batch_size", 0)
    # KIP-1206: 0 batch_optimized (max_records a soft limit), 1 record_limit
    record_limit = getattr(request, "share_acquire_mode", 0) == 1
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    leaders: set[int] = set()
    while True:
        wake = ctx.state.appended_event()
        if share.session(ctx.node_id, group_id, member_id) is not session:
            break  # closed or replaced meanwhile: acquire nothing more for it
        got = 0
        errors = False
        # Kafka's PartitionMaxBytesStrategy (uniform): the request's max_bytes
        # shared by the partitions; none is read with max_bytes <= 0
        budget = request.max_bytes
        fetchable = sum(
            1
            for topic, partition in session.partitions
            if _leader(ctx, topic, partition) == ErrorCode.NONE
        )
        per_partition = budget // max(fetchable, 1)
        for topic, partition in list(session.partitions):
            info = ctx.state.topics.get(topic)
            if info is None:
                continue
            key = (info.topic_id, partition)
            entry = results.get(key)
            error = _leader(ctx, topic, partition)
            if error != ErrorCode.NONE:
                if entry is None:
                    entry = results[key] = {
                        "partition_index": partition,
                        "acknowledge_error_code": ErrorCode.NONE,
                        "records": b"",
                        "acquired_records": [],
                    }
                entry["error_code"] = error
                entry["current_leader"] = _current_leader(ctx, topic, partition)
                if entry["current_leader"]["leader_id"] >= 0:
                    leaders.add(entry["current_leader"]["leader_id"])
                continue
            if got >= max_records or budget <= 0:
                continue
            plog = ctx.state.partition_log(topic, partition)
            assert plog is not None
            try:
                ranges, data = share.share_partition(
                    group_id, topic, partition
                ).acquire(
                    member_id,
                    plog,
                    max_records - got,
                    min(per_partition, budget),
                    batch_size=batch_size,
                    record_limit=record_limit,
                    read_committed=read_committed,
                    # the first batch of the response passes the byte limit
                    # (Kafka's minOneMessage)
                    min_one=budget == request.max_bytes,
                )
            except OSError as exc:  # EIO, EMFILE: this partition only
                entry = results.setdefault(key, {"partition_index": partition})
                entry.update(
                    error_code=ErrorCode.KAFKA_STORAGE_ERROR,
                    error_message=f"cannot read {topic}-{partition}: {exc}",
                    acknowledge_error_code=entry.get(
                        "acknowledge_error_code", ErrorCode.NONE
                    ),
                    current_leader=_current_leader(ctx, topic, partition),
                    records=b"",
                    acquired_records=[],
                )
                errors = True
                continue
            if not ranges:
                continue
            got += sum(r.last_offset - r.first_offset + 1 for r in ranges)
            budget -= len(data)
            if entry is None:
                entry = results[key] = {
                    "partition_index": partition,
                    "error_code": ErrorCode.NONE,
                    "acknowledge_error_code": ErrorCode.NONE,
                    "current_leader": _current_leader(ctx, topic, partition),
                }
            entry["records"] = data
            entry["acquired_records"] = [
                {
                    "first_offset": r.first_offset,
                    "last_offset": r.last_offset,
                    "delivery_count": r.delivery_count,
                }
                for r in ranges
            ]
        left = deadline - loop.time()
        if got or leaders or errors or left <= 0:
            break
        try:
            async with asyncio.timeout(left):
                await wake.wait()
        except TimeoutError:
            continue  # one last pass; left <= 0 then ends the loop
    return _answer(
        ctx,
        lock_ms,
        ErrorCode.NONE,
        None,
        _by_topic(results),
        _node_endpoints(ctx, leaders),
    )


def _by_topic(
    results: dict[tuple[uuid.UUID, int], dict[str, Any]],
) -> list[dict[str, Any]]:
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (topic_id, _), entry in sorted(
        results.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])
    ):
        topics.setdefault(topic_id, []).append(entry)
    return [{"topic_id": t, "partitions": ps} for t, ps in topics.items()]


async def share_acknowledge(ctx: RequestContext, request: Any) -> Any:
    """Acknowledge records outside a ShareFetch (accept, release, reject; renew from
    v2). Epoch -1 acknowledges and closes the share session."""
    share = coordinator(ctx)
    lock_ms = share.config_for(request.group_id or "").record_lock_duration_ms
    error, message = _session_error(share, ctx, request, fetch=False)
    if error != ErrorCode.NONE:
        return _answer(ctx, lock_ms, error, message)
    partitions = _requested(ctx, request)
    ack_errors = await _acknowledge_all(share, ctx, request, partitions)
    if request.share_session_epoch == -1:
        share.close_session(ctx.node_id, request.group_id, request.member_id)
    results = {
        (topic_id, partition): {
            "partition_index": partition,
            "error_code": ack_errors.get((topic_id, partition), ErrorCode.NONE),
            "current_leader": _current_leader(ctx, name, partition),
        }
        for topic_id, name, partition, _acks in partitions
    }
    return _answer(ctx, lock_ms, ErrorCode.NONE, None, _by_topic(results))
