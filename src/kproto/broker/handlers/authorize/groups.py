"""ACL checks of the group APIs shared by every group type, and of the classic and
consumer (KIP-848) group APIs; the share and streams group APIs are in
:mod:`.share` and :mod:`.streams` (Kafka's ``KafkaApis`` ``handle*`` of each)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from kproto.broker.acl import AclOperation, ResourceType
from kproto.broker.handlers.authorize.common import (
    CLUSTER,
    GROUP_DENIED,
    TOPIC_DENIED,
    Check,
    all_described,
    allowed,
    call,
    coordinator_keys,
    entries,
    group_allowed,
    refuse_whole,
)
from kproto.broker.handlers.authorize.txn import TXN_CHECKS
from kproto.broker.handlers.context import Handler, RequestContext, respond
from kproto.errors import ErrorCode
from kproto.index import ApiKey

__all__ = [
    "GROUP_CHECKS",
    "describe_groups_and_topics",
    "group_read",
    "heartbeat_check",
]

_Op = AclOperation


async def _list_groups(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """Every group with cluster DESCRIBE; else those the principal may DESCRIBE
    (of every type: classic, consumer, share, streams)."""
    response = await call(handler, ctx, request)
    if allowed(ctx, _Op.DESCRIBE, ResourceType.CLUSTER, CLUSTER):
        return response
    check = group_allowed(ctx, _Op.DESCRIBE)
    return attrs.evolve(
        response, groups=tuple(g for g in response.groups if check(g.group_id))
    )


def _per_group(field: str, op: AclOperation, out_field: str) -> Check:
    """Group ``op`` on each group of ``request.<field>`` (ids, or entries with a
    ``group_id``); each other one GROUP_AUTHORIZATION_FAILED in
    ``response.<out_field>``."""

    async def check(ctx: RequestContext, handler: Handler, request: Any) -> Any:
        permitted = group_allowed(ctx, op)
        return await entries(
            ctx, handler, request, field, permitted, out_field, _group_denied
        )

    return check


def _group_denied(group_id: str) -> dict[str, Any]:
    return {"group_id": group_id, "error_code": GROUP_DENIED}


def _whole_group(op: AclOperation) -> Check:
    """Group ``op`` on ``request.group_id``; else the whole answer
    GROUP_AUTHORIZATION_FAILED."""

    async def check(ctx: RequestContext, handler: Handler, request: Any) -> Any:
        if allowed(ctx, op, ResourceType.GROUP, request.group_id):
            return await handler(ctx, request)
        return refuse_whole(ctx, GROUP_DENIED)

    return check


#: Group READ on the request's group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
#: StreamsGroupTopologyDescriptionUpdate).
group_read = _whole_group(_Op.READ)


async def _offset_fetch(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    if not hasattr(request, "groups"):
        if allowed(ctx, _Op.READ, ResourceType.GROUP, request.group_id):
            return await handler(ctx, request)
        return refuse_whole(ctx, GROUP_DENIED, topics=[])
    return await entries(
        ctx,
        handler,
        request,
        "groups",
        group_allowed(ctx, _Op.READ),
        "groups",
        lambda g: {"group_id": g.group_id, "error_code": GROUP_DENIED, "topics": []},
    )


async def _find_coordinator(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """Key type 0 (group): group DESCRIBE; 1 (transaction): :mod:`.txn`; share
    coordinator keys (2) are refused by the handler itself."""
    if request.key_type == 1:
        return await TXN_CHECKS[ApiKey.FIND_COORDINATOR](ctx, handler, request)
    if request.key_type != 0:
        return await handler(ctx, request)
    permitted = group_allowed(ctx, _Op.DESCRIBE)
    return await coordinator_keys(ctx, handler, request, permitted, GROUP_DENIED)


def heartbeat_check(topics_of: Callable[[Any], Iterable[str] | None]) -> Check:
    """The check of a group heartbeat: group READ (GROUP_AUTHORIZATION_FAILED),
    then DESCRIBE on every topic ``topics_of(request)`` names (else the whole
    answer is TOPIC_AUTHORIZATION_FAILED: ``handleConsumerGroupHeartbeat``,
    ``handleShareGroupHeartbeat``, ``handleStreamsGroupHeartbeat``)."""

    async def check(ctx: RequestContext, handler: Handler, request: Any) -> Any:
        if not allowed(ctx, _Op.READ, ResourceType.GROUP, request.group_id):
            return refuse_whole(ctx, GROUP_DENIED)
        if not all_described(ctx, topics_of(request) or ()):
            return refuse_whole(ctx, TOPIC_DENIED)
        return await handler(ctx, request)

    return check


def describe_groups_and_topics(
    topics_of: Callable[[Any], Iterable[str]], message: str
) -> Check:
    """The check of ConsumerGroupDescribe, ShareGroupDescribe and
    StreamsGroupDescribe: group DESCRIBE per group (GROUP_AUTHORIZATION_FAILED);
    a described group naming a topic (``topics_of(group)``) the principal may not
    DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with ``message`` and nothing
    else (``authorized_operations``, when asked, are the principal's: the
    handler's :func:`~kproto.broker.handlers.cluster_info.operations`)."""

    describe = _per_group("group_ids", _Op.DESCRIBE, "groups")

    async def check(ctx: RequestContext, handler: Handler, request: Any) -> Any:
        response = await describe(ctx, handler, request)
        groups = []
        for g in response.groups:
            if g.error_code == ErrorCode.NONE:
                if not all_described(ctx, topics_of(g)):
                    g = respond(
                        ctx,
                        groups=[
                            {
                                "group_id": g.group_id,
                                "error_code": TOPIC_DENIED,
                                "error_message": message,
                                "members": [],
                            }
                        ],
                    ).groups[0]
            groups.append(g)
        return attrs.evolve(response, groups=tuple(groups))

    return check


def _assigned_topics(group: Any) -> Iterable[str]:
    for member in group.members:
        for assignment in (member.assignment, member.target_assignment):
            for tp in assignment.topic_partitions:
                yield tp.topic_name


#: The check of each classic or consumer group API.
GROUP_CHECKS: dict[int, Check] = {
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.DESCRIBE_GROUPS: _per_group("groups", _Op.DESCRIBE, "groups"),
    # DeleteGroups: every group type (share and streams groups too)
    ApiKey.DELETE_GROUPS: _per_group("groups_names", _Op.DELETE, "results"),
    ApiKey.JOIN_GROUP: group_read,
    ApiKey.SYNC_GROUP: group_read,
    ApiKey.HEARTBEAT: group_read,
    ApiKey.LEAVE_GROUP: group_read,
    ApiKey.OFFSET_DELETE: _whole_group(_Op.DELETE),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: heartbeat_check(
        lambda r: r.subscribed_topic_names
    ),
    ApiKey.CONSUMER_GROUP_DESCRIBE: describe_groups_and_topics(
        _assigned_topics,
        "The group has described topic(s) that the client is not authorized to "
        "describe.",
    ),
}
