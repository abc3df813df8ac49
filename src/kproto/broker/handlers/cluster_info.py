"""ApiVersions, Metadata and DescribeCluster: what a client learns first.

Sources: ``ApiVersionsRequest/Response.json`` (KIP-511), ``MetadataRequest/
Response.json`` (topic ids since v10, KIP-516), ``DescribeClusterRequest/
Response.json`` (KIP-700); Kafka's ``KafkaApis.handleTopicMetadataRequest``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from typing import Any

from kproto.broker import topic_admin
from kproto.broker.acl import ResourceType
from kproto.broker.authorized_operations import authorized_operations
from kproto.broker.errors import TopicError
from kproto.broker.handlers.context import Handler, RequestContext, build, respond
from kproto.broker.leadership import leader_epoch
from kproto.broker.state import ClusterState
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions, response_type

__all__ = [
    "served_api_ranges",
    "MIN_VERSIONS",
    "MAX_VERSIONS",
    "TV2_MAX_VERSIONS",
    "ADVERTISED_MIN_VERSIONS",
    "api_versions_handler",
    "metadata",
    "describe_cluster",
    "topic_metadata",
    "operations",
    "with_group_operations",
    "group_describe_error",
]

#: Lowest versions served where it is not 0: Produce and Fetch before v3/v4 carry
#: magic 0/1 message sets, which this broker does not store (Kafka 4 dropped them too);
#: the share-group APIs' v0 was Kafka 4.0's early access, removed in 4.1 (KIP-932).
MIN_VERSIONS: Mapping[ApiKey, int] = {
    ApiKey.PRODUCE: 3,
    ApiKey.FETCH: 4,
    ApiKey.SHARE_GROUP_HEARTBEAT: 1,
    ApiKey.SHARE_GROUP_DESCRIBE: 1,
    ApiKey.SHARE_FETCH: 1,
    ApiKey.SHARE_ACKNOWLEDGE: 1,
}

#: Highest versions served where it is not kproto's newest: InitProducerId v6
#: (KIP-939 two-phase commit, unstable upstream) is not implemented; EndTxn v5
#: (KIP-890 part 2, an epoch bump per transaction) is advertised only while the
#: cluster finalizes ``transaction.version`` 2 (:data:`TV2_MAX_VERSIONS`).
MAX_VERSIONS: Mapping[ApiKey, int] = {ApiKey.INIT_PRODUCER_ID: 5, ApiKey.END_TXN: 4}

#: The highest versions advertised at transaction version 2 instead.
TV2_MAX_VERSIONS: Mapping[ApiKey, int] = {ApiKey.END_TXN: 5}

#: Lowest versions advertised in ApiVersions where they differ from
#: :data:`MIN_VERSIONS`: Produce from v0, as Kafka 4 (KAFKA-18659,
#: ``ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION``), because older librdkafka
#: (issue 4956; Debian's 2.0.2) compresses only when the broker lists Produce v0
#: (gzip, snappy, lz4). A Produce v0-v2 request is answered UNSUPPORTED_VERSION per
#: partition before any handler runs (:data:`kproto.broker.dispatch.ROUTES`,
#: :func:`kproto.broker.handlers.refusals.unsupported_version`).
ADVERTISED_MIN_VERSIONS: Mapping[ApiKey, int] = {ApiKey.PRODUCE: 0}


def served_api_ranges(
    handlers: Mapping[ApiKey, Handler],
) -> dict[ApiKey, tuple[int, int]]:
    """``{api_key: (min_version, max_version)}`` for every API in ``handlers``, as
    ApiVersions advertises them: every version kproto generates, from
    :data:`ADVERTISED_MIN_VERSIONS` or else :data:`MIN_VERSIONS` up (Kafka's
    ``ApiVersionManager``)."""
    out = {}
    for api_key in sorted(handlers):
        versions = api_versions(api_key)
        low = ADVERTISED_MIN_VERSIONS.get(
            api_key, MIN_VERSIONS.get(api_key, versions.start)
        )
        out[api_key] = (low, MAX_VERSIONS.get(api_key, versions.stop - 1))
    return out


async def api_versions_handler(ctx: RequestContext, request: Any) -> Any:
    """Every API served and its version range (``ctx.served_apis``); v3+ also the
    supported and finalized features (:mod:`kproto.broker.handlers.features`)."""
    from kproto.broker.handlers.features import api_versions_feature_fields

    served = ctx.served_apis
    if ctx.txn.transaction_version >= 2:
        # widened only where a test did not narrow the API (its max is kproto's)
        served = {
            k: (
                (lo, TV2_MAX_VERSIONS[k] if hi == MAX_VERSIONS.get(k) else hi)
                if k in TV2_MAX_VERSIONS
                else (lo, hi)
            )
            for k, (lo, hi) in served.items()
        }
    return respond(
        ctx,
        error_code=ErrorCode.NONE,
        api_keys=_api_keys(
            ctx.api_version,
            tuple((k, lo, hi) for k, (lo, hi) in served.items()),
        ),
        throttle_time_ms=0,
        **api_versions_feature_fields(ctx.state),
    )


@functools.cache
def _api_keys(version: int, served: tuple[tuple[int, int, int], ...]) -> Any:
    """The ``api_keys`` entities of an ApiVersionsResponse of ``version`` listing
    ``served`` (built once: every connection asks)."""
    return build(
        response_type(ApiKey.API_VERSIONS, version),
        {
            "api_keys": [
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, lo, hi in served
            ]
        },
    ).api_keys


def operations(
    ctx: RequestContext, resource_type: ResourceType, name: str, requested: bool
) -> int:
    """The ``authorized_operations`` bitfield of one resource for the request's
    principal (:func:`kproto.broker.authorized_operations.authorized_operations`:
    all supported operations with ACLs off or for a super user)."""
    store = ctx.security.acls
    if store is None or ctx.principal in store.super_users:
        return authorized_operations(resource_type, requested)
    return authorized_operations(
        resource_type,
        requested,
        lambda op: store.authorize(
            ctx.principal, ctx.client_host, op, resource_type, name
        ),
    )


def with_group_operations(
    ctx: RequestContext, groups: list[dict[str, Any]], requested: bool
) -> list[dict[str, Any]]:
    """``groups`` (described group entries) with, when ``requested``, the
    ``authorized_operations`` of each one described without error (:func:`operations`);
    an entry with an error keeps the field's default, as Kafka's ``KafkaApis``
    ``handleDescribeGroupsRequest`` / ``handleConsumerGroupDescribe`` /
    ``handleShareGroupDescribe`` / ``handleStreamsGroupDescribe`` set it only on a
    group whose ``errorCode`` is NONE."""
    if requested:
        for group in groups:
            if group["error_code"] == ErrorCode.NONE:
                group["authorized_operations"] = operations(
                    ctx, ResourceType.GROUP, group["group_id"], True
                )
    return groups


def group_describe_error(
    ctx: RequestContext, group_id: str, kind: str, found: bool, elsewhere: bool
) -> tuple[ErrorCode, str | None]:
    """The error and message of one group of a ``kind`` (``consumer``,
    ``streams``) describe API: the coordinator check's (NOT_COORDINATOR, ...), else
    GROUP_ID_NOT_FOUND unless the group was ``found``: ``Group X is not a <kind>
    group.`` when a group of another type has the id (``elsewhere``), else ``Group
    X not found.`` (Kafka's ``GroupCoordinatorShard`` wording)."""
    error = ErrorCode(ctx.groups.check_coordinator(group_id, ctx.node_id))
    if error != ErrorCode.NONE:
        return error, error.name
    if found:
        return ErrorCode.NONE, None
    if elsewhere:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a {kind} group."
    return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."


def _brokers(state: ClusterState) -> list[dict[str, Any]]:
    return [
        {"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
        for n in state.nodes.values()
    ]


def topic_metadata(
    state: ClusterState, name: str, error_code: ErrorCode = ErrorCode.NONE
) -> dict[str, Any]:
    """One MetadataResponseTopic as a mapping (``error_code`` for unknown topics)."""
    info = state.topics.get(name)
    if info is None:
        return {
            "error_code": error_code or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "name": name,
            "partitions": [],
        }
    return {
        "error_code": ErrorCode.NONE,
        "name": name,
        "topic_id": info.topic_id,
        "is_internal": info.internal,
        "partitions": [
            partition_metadata(state, name, p, leader)
            for p, leader in enumerate(info.leaders)
        ],
    }


def partition_metadata(
    state: ClusterState, topic: str, partition: int, leader: int
) -> dict[str, Any]:
    """One MetadataResponsePartition as a mapping: its leader and leader epoch,
    its replicas (as assigned), the in-sync ones (every replica on a live node:
    all nodes read the same logs, so a live replica never lags) and the offline
    ones (on stopped nodes); an offline partition (leader -1, its nodes stopped)
    has LEADER_NOT_AVAILABLE, as Kafka's ``KRaftMetadataCache`` reports it."""
    info = state.topics[topic]
    replicas = info.replicas_of(partition)
    live = [n for n in replicas if n in state.nodes]
    return {
        "error_code": ErrorCode.LEADER_NOT_AVAILABLE if leader < 0 else ErrorCode.NONE,
        "partition_index": partition,
        "leader_id": max(leader, -1),
        "leader_epoch": leader_epoch(state, topic, partition),
        "replica_nodes": replicas,
        "isr_nodes": live if leader >= 0 else [],
        "offline_replicas": [n for n in replicas if n not in state.nodes],
    }


async def metadata(ctx: RequestContext, request: Any) -> Any:
    state = ctx.state
    requested = request.topics
    if requested is None or (ctx.api_version == 0 and not requested):
        names = list(state.topics)
    else:
        names = []
        by_id = {info.topic_id: n for n, info in state.topics.items()}
        for t in requested:
            name = getattr(t, "name", None)
            if not name and getattr(t, "topic_id", None) is not None:
                name = by_id.get(t.topic_id, "")
            names.append(name or "")
    allow = getattr(request, "allow_auto_topic_creation", True)
    topics = []
    created = 0
    # auto-creation is bounded per request as CreateTopics is; the rest of the
    # unknown topics are answered UNKNOWN_TOPIC_OR_PARTITION (the client retries)
    budget = topic_admin.MAX_PARTITIONS_PER_REQUEST
    for name in names:
        error = ErrorCode.NONE
        if name not in state.topics:
            if (
                state.config.auto_create_topics_enable
                and allow
                and budget >= state.config.num_partitions
            ):
                budget -= state.config.num_partitions
                try:
                    state.create_topic(name, save=False)
                except TopicError as err:
                    error = err.error_code
                else:
                    created += 1
                    if created % 64 == 0:  # bounded steps: let other clients in
                        await asyncio.sleep(0)
            else:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        topics.append(topic_metadata(state, name, error))
    if created:
        state.save_topics()  # once per request
    asked = getattr(request, "include_topic_authorized_operations", False)
    for entry in topics:
        entry["topic_authorized_operations"] = operations(
            ctx, ResourceType.TOPIC, entry["name"], asked
        )
    return respond(
        ctx,
        throttle_time_ms=0,
        brokers=_brokers(state),
        cluster_id=state.cluster_id,
        controller_id=state.controller_id,
        topics=topics,
        cluster_authorized_operations=operations(
            ctx,
            ResourceType.CLUSTER,
            "kafka-cluster",
            getattr(request, "include_cluster_authorized_operations", False),
        ),
    )


async def describe_cluster(ctx: RequestContext, request: Any) -> Any:
    state = ctx.state
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=getattr(request, "endpoint_type", 1),
        cluster_id=state.cluster_id,
        controller_id=state.controller_id,
        brokers=[
            {"broker_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
            for n in state.nodes.values()
        ],
        cluster_authorized_operations=operations(
            ctx,
            ResourceType.CLUSTER,
            "kafka-cluster",
            request.include_cluster_authorized_operations,
        ),
    )
