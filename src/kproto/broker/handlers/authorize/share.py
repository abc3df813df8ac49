"""ACL checks of the share group APIs (KIP-932 "Security": Kafka's ``KafkaApis``
``handleShareGroupHeartbeat``, ``handleShareGroupDescribe``,
``handleShareFetchRequest``, ``handleShareAcknowledgeRequest`` and the
share-group offset handlers).

=========================  ============================================================
API                        check and answer when refused
=========================  ============================================================
ShareGroupHeartbeat        group READ (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on
                           every subscribed topic (else TOPIC_AUTHORIZATION_FAILED)
ShareGroupDescribe         group DESCRIBE per group; a group assigning a topic the
                           principal may not DESCRIBE: TOPIC_AUTHORIZATION_FAILED
ShareFetch,                group READ (top-level GROUP_AUTHORIZATION_FAILED), then
ShareAcknowledge           topic READ: each partition of another topic (named, or in
                           the share session) TOPIC_AUTHORIZATION_FAILED, its
                           acknowledgements too; the session still advances
DescribeShareGroupOffsets  group DESCRIBE per group, then topic DESCRIBE: a named
                           topic's partitions TOPIC_AUTHORIZATION_FAILED, the others
                           left out of an "all topics" answer
AlterShareGroupOffsets     group READ (top-level), then topic READ per partition
DeleteShareGroupOffsets    group DELETE (top-level), then topic READ per topic
=========================  ============================================================

Unknown topic ids keep the handler's own UNKNOWN_TOPIC_ID. A topic of the member's
share session that it may no longer read is dropped from the session when refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from kproto.broker.acl import AclOperation, ResourceType
from kproto.broker.handlers.authorize.common import (
    GROUP_DENIED,
    TOPIC_DENIED,
    Check,
    allowed,
    call,
    refuse_whole,
)
from kproto.broker.handlers.authorize.groups import (
    describe_groups_and_topics,
    heartbeat_check,
)
from kproto.broker.handlers.context import Handler, RequestContext, build, respond
from kproto.broker.handlers.partitions import topic_ids
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.meta import ZERO_UUID

__all__ = ["SHARE_CHECKS"]

_Op = AclOperation
_NO_LEADER = {"leader_id": -1, "leader_epoch": -1}


def _readable(ctx: RequestContext, name: str) -> bool:
    return allowed(ctx, _Op.READ, ResourceType.TOPIC, name)


def _evolve(ctx: RequestContext, request: Any, **fields: Any) -> Any:
    """``request`` with ``fields`` (entries given as dicts or entities)."""
    cls = request_type(ctx.header.request_api_key, ctx.api_version)
    return build(cls, {**attrs.asdict(request, recurse=False), **fields})


def _denied_partitions(
    topics: Iterable[tuple[uuid.UUID, list[tuple[int, bool]]]], fetch: bool
) -> list[dict[str, Any]]:
    """Response topics answering ``(partition, acknowledged)`` TOPIC_AUTHORIZATION_
    FAILED (``ShareFetchResponse`` / ``ShareAcknowledgeResponse.partitionResponse``)."""
    out = []
    for topic_id, partitions in topics:
        entries = []
        for index, acknowledged in partitions:
            entry: dict[str, Any] = {
                "partition_index": index,
                "error_code": TOPIC_DENIED,
                "current_leader": _NO_LEADER,
            }
            if fetch:
                entry.update(
                    acknowledge_error_code=(
                        TOPIC_DENIED if acknowledged else ErrorCode.NONE
                    ),
                    records=b"",
                    acquired_records=[],
                )
            entries.append(entry)
        out.append({"topic_id": topic_id, "partitions": entries})
    return out


async def _share_session_api(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    """ShareFetch and ShareAcknowledge: group READ, then topic READ per partition.
    The handler always runs (on the readable topics) so the share session's epoch
    advances as Kafka's does."""
    fetch = ctx.header.request_api_key == ApiKey.SHARE_FETCH
    if not allowed(ctx, _Op.READ, ResourceType.GROUP, request.group_id or ""):
        return refuse_whole(ctx, GROUP_DENIED, responses=[], node_endpoints=[])
    names = topic_ids(ctx)
    kept = []
    # refused partitions by topic id: whether they carried acknowledgements
    denied: dict[uuid.UUID, dict[int, bool]] = {}
    for t in request.topics:
        name = names.get(t.topic_id)
        if name is None or _readable(ctx, name):
            kept.append(t)  # an unknown id gets the handler's UNKNOWN_TOPIC_ID
            continue
        refused = denied.setdefault(t.topic_id, {})
        for p in t.partitions:
            refused[p.partition_index] = bool(p.acknowledgement_batches)
    forgotten: dict[uuid.UUID, list[int]] = {}
    share = ctx.share
    if fetch and share is not None and request.share_session_epoch > 0:
        session = share.session(ctx.node_id, request.group_id, request.member_id)
        for topic, partition in list(session.partitions) if session else ():
            info = ctx.state.topics.get(topic)
            if info is not None and not _readable(ctx, topic):
                forgotten.setdefault(info.topic_id, []).append(partition)
                denied.setdefault(info.topic_id, {}).setdefault(partition, False)
    if not denied:
        return await handler(ctx, request)
    changes: dict[str, Any] = {"topics": kept}
    if forgotten:
        changes["forgotten_topics_data"] = list(request.forgotten_topics_data) + [
            {"topic_id": t, "partitions": ps} for t, ps in forgotten.items()
        ]
    response = await call(handler, ctx, _evolve(ctx, request, **changes))
    if response.error_code != ErrorCode.NONE:
        return response  # the session refused the request: nothing was served
    refusals = [(t, sorted(ps.items())) for t, ps in denied.items()]
    extra = respond(ctx, responses=_denied_partitions(refusals, fetch)).responses
    return attrs.evolve(response, responses=response.responses + extra)


def _topic_id(ctx: RequestContext, name: str) -> uuid.UUID:
    info = ctx.state.topics.get(name)
    return info.topic_id if info is not None else ZERO_UUID


async def _describe_offsets(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """DescribeShareGroupOffsets: group DESCRIBE per group, topic DESCRIBE per
    topic (``handleDescribeShareGroupOffsetsRequest``)."""

    def described(name: str) -> bool:
        return allowed(ctx, _Op.DESCRIBE, ResourceType.TOPIC, name)

    # per request group, in order: its refusal, or the topics refused in it
    plan: list[tuple[bool, list[dict[str, Any]] | None]] = []
    kept = []
    for g in request.groups:
        if not allowed(ctx, _Op.DESCRIBE, ResourceType.GROUP, g.group_id):
            plan.append((False, None))
            continue
        denied = None
        if g.topics is not None:
            denied = [
                {
                    "topic_name": t.topic_name,
                    "topic_id": _topic_id(ctx, t.topic_name),
                    "partitions": [
                        {
                            "partition_index": p,
                            "start_offset": -1,
                            "leader_epoch": -1,
                            "lag": -1,
                            "error_code": TOPIC_DENIED,
                        }
                        for p in t.partitions
                    ],
                }
                for t in g.topics
                if not described(t.topic_name)
            ]
            g = attrs.evolve(
                g, topics=tuple(t for t in g.topics if described(t.topic_name))
            )
        plan.append((True, denied))
        kept.append(g)
    response = None
    answers: Iterator[Any] = iter(())
    if kept:
        response = await call(handler, ctx, attrs.evolve(request, groups=tuple(kept)))
        answers = iter(response.groups)
    groups = []
    for asked, (permitted, denied) in zip(request.groups, plan, strict=True):
        if not permitted:
            refusal = {"group_id": asked.group_id, "error_code": GROUP_DENIED}
            groups.append(respond(ctx, groups=[refusal]).groups[0])
            continue
        g = next(answers)
        if g.error_code == ErrorCode.NONE:
            if denied is None:  # all topics: the undescribable ones left out
                topics = tuple(t for t in g.topics if described(t.topic_name))
            else:
                extra = {"group_id": g.group_id, "topics": denied}
                topics = g.topics + respond(ctx, groups=[extra]).groups[0].topics
            g = attrs.evolve(g, topics=topics)
        groups.append(g)
    if response is None:
        return respond(ctx, throttle_time_ms=0, groups=groups)
    return attrs.evolve(response, groups=tuple(groups))


def _offsets_check(
    op: AclOperation, refusal: Callable[[RequestContext, Any], dict[str, Any]]
) -> Check:
    """AlterShareGroupOffsets and DeleteShareGroupOffsets: group ``op`` (else the
    top-level GROUP_AUTHORIZATION_FAILED), then topic READ: each request topic the
    principal may not read answered ``refusal(ctx, topic)``."""

    async def check(ctx: RequestContext, handler: Handler, request: Any) -> Any:
        if not allowed(ctx, op, ResourceType.GROUP, request.group_id):
            return refuse_whole(ctx, GROUP_DENIED, responses=[])
        readable = [_readable(ctx, t.topic_name) for t in request.topics]
        pairs = list(zip(request.topics, readable, strict=True))
        kept = [t for t, ok in pairs if ok]
        denied = [refusal(ctx, t) for t, ok in pairs if not ok]
        return await _merge(ctx, handler, request, kept, denied)

    return check


def _partitions_denied(ctx: RequestContext, topic: Any) -> dict[str, Any]:
    """AlterShareGroupOffsets: each partition TOPIC_AUTHORIZATION_FAILED."""
    return {
        "topic_name": topic.topic_name,
        "topic_id": _topic_id(ctx, topic.topic_name),
        "partitions": [
            {"partition_index": p.partition_index, "error_code": TOPIC_DENIED}
            for p in topic.partitions
        ],
    }


def _topic_denied(ctx: RequestContext, topic: Any) -> dict[str, Any]:
    """DeleteShareGroupOffsets: the topic TOPIC_AUTHORIZATION_FAILED."""
    return {
        "topic_name": topic.topic_name,
        "topic_id": _topic_id(ctx, topic.topic_name),
        "error_code": TOPIC_DENIED,
    }


async def _merge(
    ctx: RequestContext,
    handler: Handler,
    request: Any,
    kept: list[Any],
    denied: list[dict[str, Any]],
) -> Any:
    if not denied:
        return await handler(ctx, request)
    if not kept:
        return refuse_whole(ctx, ErrorCode.NONE, responses=denied)
    response = await call(handler, ctx, attrs.evolve(request, topics=tuple(kept)))
    if response.error_code != ErrorCode.NONE:
        return response
    extra = respond(ctx, responses=denied).responses
    return attrs.evolve(response, responses=response.responses + extra)


def _assigned_topics(group: Any) -> Iterable[str]:
    for member in group.members:
        for tp in member.assignment.topic_partitions:
            yield tp.topic_name


#: The check of each share group API.
SHARE_CHECKS: dict[int, Check] = {
    ApiKey.SHARE_GROUP_HEARTBEAT: heartbeat_check(lambda r: r.subscribed_topic_names),
    ApiKey.SHARE_GROUP_DESCRIBE: describe_groups_and_topics(
        _assigned_topics,
        "The group has described topic(s) that the client is not authorized to "
        "describe.",
    ),
    ApiKey.SHARE_FETCH: _share_session_api,
    ApiKey.SHARE_ACKNOWLEDGE: _share_session_api,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: _describe_offsets,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: _offsets_check(_Op.READ, _partitions_denied),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: _offsets_check(_Op.DELETE, _topic_denied),
}
