"""ACL checks of the topic APIs: Produce, Fetch, ListOffsets, DeleteRecords,
OffsetForLeaderEpoch, OffsetCommit (its topics), Metadata, DescribeTopicPartitions,
CreateTopics, DeleteTopics, CreatePartitions and the config APIs (Kafka's
``KafkaApis`` ``handle*Request`` of each)."""

from __future__ import annotations

from typing import Any

import attrs

from kproto.broker.acl import AclOperation, ResourceType
from kproto.broker.handlers.authorize.common import (
    CLUSTER,
    CLUSTER_DENIED,
    GROUP_DENIED,
    TOPIC_DENIED,
    Check,
    allowed,
    call,
    entries,
    split,
)
from kproto.broker.handlers.authorize.txn import transactional_produce_denied
from kproto.broker.handlers.configs import ConfigResourceType
from kproto.broker.handlers.context import Handler, RequestContext, respond
from kproto.broker.handlers.partitions import topic_name
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.meta import ZERO_UUID

__all__ = ["TOPIC_CHECKS"]

_Op = AclOperation

#: The topic-keyed APIs (their shapes: :data:`~kproto.broker.handlers.refusals.
#: TOPIC_SHAPES`) and the operation each needs on a topic.
TOPIC_OPS = {
    ApiKey.PRODUCE: _Op.WRITE,
    ApiKey.FETCH: _Op.READ,
    ApiKey.LIST_OFFSETS: _Op.DESCRIBE,
    ApiKey.DELETE_RECORDS: _Op.DELETE,
    ApiKey.OFFSET_COMMIT: _Op.READ,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _Op.DESCRIBE,
}


async def _split(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    return await split(ctx, handler, request, TOPIC_OPS[ctx.header.request_api_key])


async def _produce(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """Transactional records need WRITE on their transactional id (every partition
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then topic WRITE."""
    if transactional_produce_denied(ctx, request):
        denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return await split(ctx, handler, request, _Op.WRITE, denied)
    return await split(ctx, handler, request, _Op.WRITE)


async def _offset_commit(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """Group READ (every partition GROUP_AUTHORIZATION_FAILED), then topic READ."""
    if not allowed(ctx, _Op.READ, ResourceType.GROUP, request.group_id):
        return await split(ctx, handler, request, _Op.READ, GROUP_DENIED)
    return await split(ctx, handler, request, _Op.READ)


async def _metadata(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """Topics the principal may not DESCRIBE are left out of "all topics" and
    answered TOPIC_AUTHORIZATION_FAILED when named; auto-creation needs CREATE on
    the cluster or on every topic to create."""
    named = None if request.topics is None else [t.name for t in request.topics]
    if (
        named
        and getattr(request, "allow_auto_topic_creation", False)
        and not allowed(ctx, _Op.CREATE, ResourceType.CLUSTER, CLUSTER)
        and not all(
            allowed(ctx, _Op.CREATE, ResourceType.TOPIC, n)
            for n in named
            if n and n not in ctx.state.topics
        )
    ):
        request = attrs.evolve(request, allow_auto_topic_creation=False)
    response = await call(handler, ctx, request)
    kept = []
    for t in response.topics:
        if t.name is None or allowed(ctx, _Op.DESCRIBE, ResourceType.TOPIC, t.name):
            kept.append(t)
        elif named is not None and t.name in named:
            kept.append(
                respond(
                    ctx, topics=[{"name": t.name, "error_code": TOPIC_DENIED}]
                ).topics[0]
            )
    return attrs.evolve(response, topics=tuple(kept))


async def _describe_topic_partitions(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    """Topics the principal may not DESCRIBE are left out of a listing, and
    answered TOPIC_AUTHORIZATION_FAILED when named."""
    response = await call(handler, ctx, request)
    kept = []
    for t in response.topics:
        if allowed(ctx, _Op.DESCRIBE, ResourceType.TOPIC, t.name):
            kept.append(t)
        elif request.topics:
            kept.append(
                attrs.evolve(
                    t,
                    error_code=TOPIC_DENIED,
                    topic_id=ZERO_UUID,
                    partitions=(),
                )
            )
    return attrs.evolve(response, topics=tuple(kept))


async def _create_topics(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    cluster = allowed(ctx, _Op.CREATE, ResourceType.CLUSTER, CLUSTER)
    return await entries(
        ctx,
        handler,
        request,
        "topics",
        lambda t: cluster or allowed(ctx, _Op.CREATE, ResourceType.TOPIC, t.name),
        "topics",
        lambda t: {
            "name": t.name,
            "error_code": TOPIC_DENIED,
            "num_partitions": -1,
            "replication_factor": -1,
        },
    )


async def _delete_topics(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    field = "topic_names" if hasattr(request, "topic_names") else "topics"

    def name(t: Any) -> tuple[str, ErrorCode]:
        return (t, ErrorCode.NONE) if isinstance(t, str) else topic_name(ctx, t)

    return await entries(
        ctx,
        handler,
        request,
        field,
        lambda t: bool(name(t)[1])
        or allowed(ctx, _Op.DELETE, ResourceType.TOPIC, name(t)[0]),
        "responses",
        lambda t: {
            "name": name(t)[0],
            "topic_id": getattr(t, "topic_id", None),
            "error_code": TOPIC_DENIED,
        },
    )


async def _create_partitions(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    return await entries(
        ctx,
        handler,
        request,
        "topics",
        lambda t: allowed(ctx, _Op.ALTER, ResourceType.TOPIC, t.name),
        "results",
        lambda t: {"name": t.name, "error_code": TOPIC_DENIED},
    )


async def _configs(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """DescribeConfigs (DESCRIBE_CONFIGS), AlterConfigs and IncrementalAlterConfigs
    (ALTER_CONFIGS): on the topic, the group (consumer and share groups' configs,
    KIP-848 / KIP-932), or on the cluster for broker resources."""
    describe = ctx.header.request_api_key == ApiKey.DESCRIBE_CONFIGS
    op = _Op.DESCRIBE_CONFIGS if describe else _Op.ALTER_CONFIGS

    def permitted(r: Any) -> bool:
        if r.resource_type == ConfigResourceType.TOPIC:
            return allowed(ctx, op, ResourceType.TOPIC, r.resource_name)
        if r.resource_type == ConfigResourceType.GROUP:
            return allowed(ctx, op, ResourceType.GROUP, r.resource_name)
        return allowed(ctx, op, ResourceType.CLUSTER, CLUSTER)

    def refusal(r: Any) -> dict[str, Any]:
        code = {
            ConfigResourceType.TOPIC: TOPIC_DENIED,
            ConfigResourceType.GROUP: GROUP_DENIED,
        }
        return {
            "error_code": code.get(r.resource_type, CLUSTER_DENIED),
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }

    out = "results" if describe else "responses"
    return await entries(ctx, handler, request, "resources", permitted, out, refusal)


#: The check of each topic API.
TOPIC_CHECKS: dict[int, Check] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _split,
    ApiKey.LIST_OFFSETS: _split,
    ApiKey.DELETE_RECORDS: _split,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _split,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.METADATA: _metadata,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.DESCRIBE_CONFIGS: _configs,
    ApiKey.ALTER_CONFIGS: _configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs,
}
