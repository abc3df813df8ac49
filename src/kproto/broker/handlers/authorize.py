"""ACL enforcement: the one place requests are checked against
:meth:`kproto.broker.acl.AclStore.authorize` before (and, for Metadata, after) their
handler runs, answered with Kafka's error codes.

==========================  ===========================================================
API                         check (resource, operation) and answer when refused
==========================  ===========================================================
Produce                     topic WRITE: its partitions TOPIC_AUTHORIZATION_FAILED
Fetch                       topic READ: its partitions TOPIC_AUTHORIZATION_FAILED
ListOffsets                 topic DESCRIBE: its partitions TOPIC_AUTHORIZATION_FAILED
DeleteRecords               topic DELETE: its partitions TOPIC_AUTHORIZATION_FAILED
Metadata                    topic DESCRIBE: hidden from "all topics", a named one
                            answered TOPIC_AUTHORIZATION_FAILED; auto-creation needs
                            CREATE on the cluster or the topic
CreateTopics, DeleteTopics  topic CREATE (or cluster CREATE), topic DELETE
CreatePartitions            topic ALTER
DescribeConfigs, (Incre-    topic (or, for broker resources, cluster) DESCRIBE_CONFIGS /
mental)AlterConfigs         ALTER_CONFIGS: TOPIC_ / CLUSTER_AUTHORIZATION_FAILED
FindCoordinator,            group DESCRIBE: GROUP_AUTHORIZATION_FAILED (ListGroups
DescribeGroups, ListGroups  leaves the group out)
JoinGroup, SyncGroup,       group READ: GROUP_AUTHORIZATION_FAILED
Heartbeat, LeaveGroup,
OffsetFetch
DeleteGroups, OffsetDelete  group DELETE: GROUP_AUTHORIZATION_FAILED
OffsetCommit                group READ (every partition GROUP_AUTHORIZATION_FAILED),
                            then topic READ (TOPIC_AUTHORIZATION_FAILED)
InitProducerId              cluster IDEMPOTENT_WRITE or WRITE on some topic:
                            CLUSTER_AUTHORIZATION_FAILED
ACL and SCRAM APIs          cluster ALTER (create, delete, alter) or DESCRIBE:
                            CLUSTER_AUTHORIZATION_FAILED
transaction APIs            the transactional id: see :mod:`.authorize_txn`
DescribeTopicPartitions     topic DESCRIBE: hidden from a listing, a named one
                            answered TOPIC_AUTHORIZATION_FAILED
OffsetForLeaderEpoch        topic DESCRIBE: its partitions TOPIC_AUTHORIZATION_FAILED
ElectLeaders, AlterPartiti- cluster ALTER; DescribeLogDirs, ListPartitionReassignments
onReassignments, Update-    cluster DESCRIBE; Describe/AlterClientQuotas cluster
Features ...                DESCRIBE_CONFIGS / ALTER_CONFIGS:
                            CLUSTER_AUTHORIZATION_FAILED
==========================  ===========================================================

An API with no check here (one added to the broker later) is served to super users
only when ACLs are on: anyone else's connection is closed
(:data:`kproto.broker.acl.CHECKED_APIS` is what :mod:`kproto.broker.security` lets
through). OffsetFetch and OffsetDelete check the group, not each topic. Sources:
Kafka's ``KafkaApis`` ``authHelper.authorize`` calls per API.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import attrs

from kproto.broker.acl import AclOperation, AclStore, ResourceType
from kproto.broker.handlers.authorize_txn import (
    TXN_CHECKS,
    transactional_produce_denied,
)
from kproto.broker.handlers.context import Handler, RequestContext, respond
from kproto.broker.handlers.partitions import topic_name
from kproto.errors import ErrorCode
from kproto.index import ApiKey

__all__ = ["guarded"]

_TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
_GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
_CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
_CLUSTER = "kafka-cluster"


async def _call(handler: Handler, ctx: RequestContext, request: Any) -> Any:
    """``handler``'s answer (typed ``Any``: a response entity, or None for acks=0)."""
    return await handler(ctx, request)


def _ok(ctx: RequestContext, op: AclOperation, rt: ResourceType, name: str) -> bool:
    store = ctx.security.acls
    assert store is not None  # guarded() runs only with ACLs on
    return store.authorize(ctx.principal, ctx.client_host, op, rt, name)


@attrs.frozen
class _TopicSplit:
    """Where a topic-keyed request and its response keep topics and partitions."""

    op: AclOperation
    topics: str  # request: topics field
    partitions: str  # request topic: partitions field
    index: str  # request partition: index field
    out_topics: str  # response: topics field
    out_partitions: str
    out_index: str
    defaults: dict[str, Any] = attrs.field(factory=dict)
    name: str = "name"  # request topic: name field
    out_name: str = "name"
    code: ErrorCode = _TOPIC_DENIED


_SPLITS = {
    ApiKey.PRODUCE: _TopicSplit(
        AclOperation.WRITE,
        "topic_data",
        "partition_data",
        "index",
        "responses",
        "partition_responses",
        "index",
        {"base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1},
    ),
    ApiKey.FETCH: _TopicSplit(
        AclOperation.READ,
        "topics",
        "partitions",
        "partition",
        "responses",
        "partitions",
        "partition_index",
        {"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1},
        name="topic",
        out_name="topic",
    ),
    ApiKey.LIST_OFFSETS: _TopicSplit(
        AclOperation.DESCRIBE,
        "topics",
        "partitions",
        "partition_index",
        "topics",
        "partitions",
        "partition_index",
        {"timestamp": -1, "offset": -1},
    ),
    ApiKey.DELETE_RECORDS: _TopicSplit(
        AclOperation.DELETE,
        "topics",
        "partitions",
        "partition_index",
        "topics",
        "partitions",
        "partition_index",
        {"low_watermark": -1},
    ),
    ApiKey.OFFSET_COMMIT: _TopicSplit(
        AclOperation.READ,
        "topics",
        "partitions",
        "partition_index",
        "topics",
        "partitions",
        "partition_index",
    ),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _TopicSplit(
        AclOperation.DESCRIBE,
        "topics",
        "partitions",
        "partition",
        "topics",
        "partitions",
        "partition",
        {"leader_epoch": -1, "end_offset": -1},
        name="topic",
        out_name="topic",
    ),
}


def _denied_topic(
    spec: _TopicSplit, t: Any, name: str, code: ErrorCode
) -> dict[str, Any]:
    return {
        spec.out_name: name,
        "topic_id": getattr(t, "topic_id", None),
        spec.out_partitions: [
            {
                spec.out_index: getattr(p, spec.index),
                "error_code": code,
                **spec.defaults,
            }
            for p in getattr(t, spec.partitions)
        ],
    }


async def _split(
    ctx: RequestContext,
    handler: Handler,
    request: Any,
    spec: _TopicSplit,
    everything_denied: ErrorCode | None = None,
) -> Any:
    """Run ``handler`` on the topics the principal may use; answer the others
    ``spec.code`` (or every topic ``everything_denied``)."""
    allowed, denied = [], []
    for t in getattr(request, spec.topics):
        name, error = topic_name(ctx, t, spec.name)
        if everything_denied is None and (
            error or _ok(ctx, spec.op, ResourceType.TOPIC, name)
        ):
            allowed.append(t)  # an unknown topic gets the handler's own error
        else:
            denied.append(_denied_topic(spec, t, name, everything_denied or spec.code))
    if not denied:
        return await handler(ctx, request)
    extra = respond(ctx, **{spec.out_topics: denied})
    if not allowed:
        if getattr(request, "acks", None) == 0:
            return None
        return respond(
            ctx,
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            **{spec.out_topics: denied},
        )
    response = await handler(
        ctx, attrs.evolve(request, **{spec.topics: tuple(allowed)})
    )
    if response is None:
        return None
    merged = getattr(response, spec.out_topics) + getattr(extra, spec.out_topics)
    return attrs.evolve(response, **{spec.out_topics: merged})


async def _metadata(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    named = None if request.topics is None else [t.name for t in request.topics]
    if (
        named
        and getattr(request, "allow_auto_topic_creation", False)
        and not _ok(ctx, AclOperation.CREATE, ResourceType.CLUSTER, _CLUSTER)
        and not all(
            _ok(ctx, AclOperation.CREATE, ResourceType.TOPIC, n)
            for n in named
            if n and n not in ctx.state.topics
        )
    ):
        request = attrs.evolve(request, allow_auto_topic_creation=False)
    response = await _call(handler, ctx, request)
    kept = []
    for t in response.topics:
        if t.name is None or _ok(
            ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name
        ):
            kept.append(t)
        elif named is not None and t.name in named:
            kept.append(
                respond(
                    ctx, topics=[{"name": t.name, "error_code": _TOPIC_DENIED}]
                ).topics[0]
            )
    return attrs.evolve(response, topics=tuple(kept))


async def _describe_topic_partitions(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    """DescribeTopicPartitions: topics the principal may not DESCRIBE are left out
    of a listing, and answered TOPIC_AUTHORIZATION_FAILED when named."""
    response = await _call(handler, ctx, request)
    kept = []
    for t in response.topics:
        if _ok(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name):
            kept.append(t)
        elif request.topics:
            kept.append(
                attrs.evolve(
                    t,
                    error_code=_TOPIC_DENIED,
                    topic_id=uuid.UUID(int=0),
                    partitions=(),
                )
            )
    return attrs.evolve(response, topics=tuple(kept))


async def _entries(
    ctx: RequestContext,
    handler: Handler,
    request: Any,
    field: str,
    permitted: Callable[[Any], bool],
    out_field: str,
    refusal: Callable[[Any], dict[str, Any]],
) -> Any:
    """Run ``handler`` on the entries of ``request.<field>`` the principal may use;
    answer each other one ``refusal(entry)`` in ``response.<out_field>``."""
    entries = getattr(request, field)
    verdicts = [permitted(e) for e in entries]
    if all(verdicts):
        return await handler(ctx, request)
    refused = [refusal(e) for e, ok in zip(entries, verdicts, strict=True) if not ok]
    if not any(verdicts):
        return respond(
            ctx, throttle_time_ms=0, error_code=ErrorCode.NONE, **{out_field: refused}
        )
    allowed = tuple(e for e, ok in zip(entries, verdicts, strict=True) if ok)
    response = await _call(handler, ctx, attrs.evolve(request, **{field: allowed}))
    extra = getattr(respond(ctx, **{out_field: refused}), out_field)
    return attrs.evolve(response, **{out_field: getattr(response, out_field) + extra})


def _group_ok(ctx: RequestContext, op: AclOperation) -> Callable[[Any], bool]:
    def check(entry: Any) -> bool:
        group = entry if isinstance(entry, str) else entry.group_id
        return _ok(ctx, op, ResourceType.GROUP, group)

    return check


async def _create_topics(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    cluster = _ok(ctx, AclOperation.CREATE, ResourceType.CLUSTER, _CLUSTER)
    return await _entries(
        ctx,
        handler,
        request,
        "topics",
        lambda t: cluster or _ok(ctx, AclOperation.CREATE, ResourceType.TOPIC, t.name),
        "topics",
        lambda t: {
            "name": t.name,
            "error_code": _TOPIC_DENIED,
            "num_partitions": -1,
            "replication_factor": -1,
        },
    )


async def _delete_topics(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    field = "topic_names" if hasattr(request, "topic_names") else "topics"

    def name(t: Any) -> tuple[str, ErrorCode]:
        return (t, ErrorCode.NONE) if isinstance(t, str) else topic_name(ctx, t)

    return await _entries(
        ctx,
        handler,
        request,
        field,
        lambda t: bool(name(t)[1])
        or _ok(ctx, AclOperation.DELETE, ResourceType.TOPIC, name(t)[0]),
        "responses",
        lambda t: {
            "name": name(t)[0],
            "topic_id": getattr(t, "topic_id", None),
            "error_code": _TOPIC_DENIED,
        },
    )


async def _create_partitions(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    return await _entries(
        ctx,
        handler,
        request,
        "topics",
        lambda t: _ok(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name),
        "results",
        lambda t: {"name": t.name, "error_code": _TOPIC_DENIED},
    )


#: Kafka's ``ConfigResource.Type`` code of a topic.
_CONFIG_TOPIC, _CONFIG_GROUP = 2, 32  # ConfigResource.Type TOPIC, GROUP


async def _configs(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """DescribeConfigs (DESCRIBE_CONFIGS), AlterConfigs and IncrementalAlterConfigs
    (ALTER_CONFIGS): on the topic, the group (KIP-848 group configs), or on the
    cluster for broker resources."""
    describe = ctx.header.request_api_key == ApiKey.DESCRIBE_CONFIGS
    op = AclOperation.DESCRIBE_CONFIGS if describe else AclOperation.ALTER_CONFIGS

    def permitted(r: Any) -> bool:
        if r.resource_type == _CONFIG_TOPIC:
            return _ok(ctx, op, ResourceType.TOPIC, r.resource_name)
        if r.resource_type == _CONFIG_GROUP:
            return _ok(ctx, op, ResourceType.GROUP, r.resource_name)
        return _ok(ctx, op, ResourceType.CLUSTER, _CLUSTER)

    def refusal(r: Any) -> dict[str, Any]:
        code = {_CONFIG_TOPIC: _TOPIC_DENIED, _CONFIG_GROUP: _GROUP_DENIED}
        return {
            "error_code": code.get(r.resource_type, _CLUSTER_DENIED),
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }

    out = "results" if describe else "responses"
    return await _entries(ctx, handler, request, "resources", permitted, out, refusal)


async def _list_groups(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    response = await _call(handler, ctx, request)
    check = _group_ok(ctx, AclOperation.DESCRIBE)
    return attrs.evolve(
        response, groups=tuple(g for g in response.groups if check(g.group_id))
    )


async def _describe_groups(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    return await _entries(
        ctx,
        handler,
        request,
        "groups",
        _group_ok(ctx, AclOperation.DESCRIBE),
        "groups",
        lambda g: {"group_id": g, "error_code": _GROUP_DENIED},
    )


async def _delete_groups(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    return await _entries(
        ctx,
        handler,
        request,
        "groups_names",
        _group_ok(ctx, AclOperation.DELETE),
        "results",
        lambda g: {"group_id": g, "error_code": _GROUP_DENIED},
    )


#: Group APIs answered whole with a top-level GROUP_AUTHORIZATION_FAILED.
_GROUP_OPS = {
    ApiKey.JOIN_GROUP: AclOperation.READ,
    ApiKey.SYNC_GROUP: AclOperation.READ,
    ApiKey.HEARTBEAT: AclOperation.READ,
    ApiKey.LEAVE_GROUP: AclOperation.READ,
    ApiKey.OFFSET_DELETE: AclOperation.DELETE,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: AclOperation.READ,
}


async def _offset_fetch(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    if not hasattr(request, "groups"):
        if _ok(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            return await handler(ctx, request)
        return respond(ctx, throttle_time_ms=0, error_code=_GROUP_DENIED, topics=[])
    return await _entries(
        ctx,
        handler,
        request,
        "groups",
        _group_ok(ctx, AclOperation.READ),
        "groups",
        lambda g: {"group_id": g.group_id, "error_code": _GROUP_DENIED, "topics": []},
    )


async def _find_coordinator(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    if request.key_type != 0:  # share coordinators: refused by the handler itself
        return await handler(ctx, request)
    if not hasattr(request, "coordinator_keys"):
        if _ok(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, request.key):
            return await handler(ctx, request)
        return respond(
            ctx,
            throttle_time_ms=0,
            error_code=_GROUP_DENIED,
            node_id=-1,
            host="",
            port=-1,
        )
    return await _entries(
        ctx,
        handler,
        request,
        "coordinator_keys",
        _group_ok(ctx, AclOperation.DESCRIBE),
        "coordinators",
        lambda k: {
            "key": k,
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": _GROUP_DENIED,
        },
    )


def _cluster_denied(ctx: RequestContext, request: Any) -> Any:
    """The CLUSTER_AUTHORIZATION_FAILED answer of a cluster-level API."""
    api_key = ctx.header.request_api_key
    message = "Cluster authorization failed."
    if api_key == ApiKey.CREATE_ACLS:
        entries = [{"error_code": _CLUSTER_DENIED, "error_message": message}]
        return respond(
            ctx, throttle_time_ms=0, results=entries * len(request.creations)
        )
    if api_key == ApiKey.DELETE_ACLS:
        entries = [
            {
                "error_code": _CLUSTER_DENIED,
                "error_message": message,
                "matching_acls": [],
            }
        ]
        return respond(
            ctx, throttle_time_ms=0, filter_results=entries * len(request.filters)
        )
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        users = dict.fromkeys(
            [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        )
        return respond(
            ctx,
            throttle_time_ms=0,
            results=[
                {"user": u, "error_code": _CLUSTER_DENIED, "error_message": message}
                for u in users
            ],
        )
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        return respond(
            ctx,
            throttle_time_ms=0,
            entries=[
                {
                    "error_code": _CLUSTER_DENIED,
                    "error_message": message,
                    "entity": [
                        {"entity_type": e.entity_type, "entity_name": e.entity_name}
                        for e in entry.entity
                    ],
                }
                for entry in request.entries
            ],
        )
    if api_key == ApiKey.INIT_PRODUCER_ID:
        return respond(
            ctx,
            throttle_time_ms=0,
            error_code=_CLUSTER_DENIED,
            producer_id=-1,
            producer_epoch=-1,
        )
    return respond(  # DescribeAcls, DescribeUserScramCredentials, the admin APIs
        ctx, throttle_time_ms=0, error_code=_CLUSTER_DENIED, error_message=message
    )


_CLUSTER_OPS = {
    ApiKey.CREATE_ACLS: AclOperation.ALTER,
    ApiKey.DELETE_ACLS: AclOperation.ALTER,
    ApiKey.DESCRIBE_ACLS: AclOperation.DESCRIBE,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: AclOperation.ALTER,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: AclOperation.DESCRIBE,
    ApiKey.DESCRIBE_LOG_DIRS: AclOperation.DESCRIBE,
    ApiKey.ELECT_LEADERS: AclOperation.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: AclOperation.ALTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: AclOperation.DESCRIBE,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: AclOperation.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CLIENT_QUOTAS: AclOperation.ALTER_CONFIGS,
    ApiKey.UPDATE_FEATURES: AclOperation.ALTER,
}


def _may_write_idempotently(ctx: RequestContext) -> bool:
    if _ok(ctx, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, _CLUSTER):
        return True
    return any(
        _ok(ctx, AclOperation.WRITE, ResourceType.TOPIC, n) for n in ctx.state.topics
    )


_SPECIAL: dict[int, Callable[[RequestContext, Handler, Any], Any]] = {
    ApiKey.METADATA: _metadata,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.DESCRIBE_CONFIGS: _configs,
    ApiKey.ALTER_CONFIGS: _configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
}


def _names_transaction(api_key: int, request: Any) -> bool:
    """A transaction API, or FindCoordinator / InitProducerId for a transactional id."""
    if api_key == ApiKey.FIND_COORDINATOR:
        return bool(getattr(request, "key_type", 0) == 1)
    if api_key == ApiKey.INIT_PRODUCER_ID:
        return request.transactional_id is not None
    return api_key in TXN_CHECKS


async def guarded(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """``handler``'s answer to ``request`` with the ACL checks of its API (see the
    module table); a super user passes unchecked."""
    store: AclStore | None = ctx.security.acls
    if store is None or ctx.principal in store.super_users:
        return await handler(ctx, request)
    api_key = ctx.header.request_api_key
    if _names_transaction(api_key, request):
        return await TXN_CHECKS[api_key](ctx, handler, request)
    if api_key == ApiKey.PRODUCE and transactional_produce_denied(ctx, request):
        spec = _SPLITS[api_key]
        return await _split(
            ctx, handler, request, spec, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        )
    if api_key == ApiKey.OFFSET_COMMIT and not _ok(
        ctx, AclOperation.READ, ResourceType.GROUP, request.group_id
    ):
        return await _split(ctx, handler, request, _SPLITS[api_key], _GROUP_DENIED)
    if api_key in _SPLITS:
        return await _split(ctx, handler, request, _SPLITS[api_key])
    if api_key in _SPECIAL:
        return await _SPECIAL[api_key](ctx, handler, request)
    if api_key in _GROUP_OPS:
        if _ok(ctx, _GROUP_OPS[api_key], ResourceType.GROUP, request.group_id):
            return await handler(ctx, request)
        return respond(ctx, throttle_time_ms=0, error_code=_GROUP_DENIED)
    if api_key in _CLUSTER_OPS:
        if _ok(ctx, _CLUSTER_OPS[api_key], ResourceType.CLUSTER, _CLUSTER):
            return await handler(ctx, request)
        return _cluster_denied(ctx, request)
    if api_key == ApiKey.INIT_PRODUCER_ID and request.transactional_id is None:
        if not _may_write_idempotently(ctx):
            return _cluster_denied(ctx, request)
    return await handler(ctx, request)  # unchecked: ApiVersions, SASL, DescribeCluster
