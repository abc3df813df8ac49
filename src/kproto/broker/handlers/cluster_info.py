"""ApiVersions, Metadata and DescribeCluster: what a client learns first.

Sources: ``ApiVersionsRequest/Response.json`` (KIP-511), ``MetadataRequest/
Response.json`` (topic ids since v10, KIP-516), ``DescribeClusterRequest/
Response.json`` (KIP-700); Kafka's ``KafkaApis.handleTopicMetadataRequest``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kproto.broker.dispatch import HANDLERS, RequestContext, handles, respond
from kproto.broker.state import ClusterState, TopicError
from kproto.index import api_versions

__all__ = ["served_api_ranges", "MIN_VERSIONS", "topic_metadata"]

#: Lowest versions served where it is not 0: Produce and Fetch before v3/v4 carry
#: magic 0/1 message sets, which this broker does not store (Kafka 4 dropped them too).
MIN_VERSIONS = {0: 3, 1: 4}

_ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def served_api_ranges() -> dict[int, tuple[int, int]]:
    """``{api_key: (min_version, max_version)}`` for every API with a handler:
    every version kproto generates, from :data:`MIN_VERSIONS` up."""
    out = {}
    for api_key in sorted(HANDLERS):
        versions = api_versions(api_key)
        out[api_key] = (MIN_VERSIONS.get(api_key, versions.start), versions.stop - 1)
    return out


@handles(18)
async def api_versions_handler(ctx: RequestContext, request: Any) -> Any:
    return respond(
        ctx,
        error_code=0,
        api_keys=[
            {"api_key": k, "min_version": lo, "max_version": hi}
            for k, (lo, hi) in served_api_ranges().items()
        ],
        throttle_time_ms=0,
    )


def _brokers(state: ClusterState) -> list[dict[str, Any]]:
    return [
        {"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
        for n in state.nodes.values()
    ]


def topic_metadata(
    state: ClusterState, name: str, error_code: int = 0
) -> dict[str, Any]:
    """One MetadataResponseTopic as a mapping (``error_code`` for unknown topics)."""
    info = state.topics.get(name)
    if info is None:
        return {"error_code": error_code or 3, "name": name, "partitions": []}
    return {
        "error_code": 0,
        "name": name,
        "topic_id": info.topic_id,
        "is_internal": info.internal,
        "partitions": [
            {
                "error_code": 0,
                "partition_index": p,
                "leader_id": leader,
                "leader_epoch": 0,
                "replica_nodes": [leader],
                "isr_nodes": [leader],
                "offline_replicas": [],
            }
            for p, leader in enumerate(info.leaders)
        ],
    }


@handles(3)
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
    for name in names:
        error = 0
        if name not in state.topics:
            if state.auto_create_topics and allow:
                try:
                    state.create_topic(name, save=False)
                except TopicError as err:
                    error = err.error_code
                else:
                    created += 1
                    if created % 64 == 0:  # bounded steps: let other clients in
                        await asyncio.sleep(0)
            else:
                error = 3
        topics.append(topic_metadata(state, name, error))
    if created:
        state.save_topics()  # once per request
    return respond(
        ctx,
        throttle_time_ms=0,
        brokers=_brokers(state),
        cluster_id=state.cluster_id,
        controller_id=state.controller_id,
        topics=topics,
        cluster_authorized_operations=-2147483648,
    )


@handles(60)
async def describe_cluster(ctx: RequestContext, request: Any) -> Any:
    state = ctx.state
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        endpoint_type=getattr(request, "endpoint_type", 1),
        cluster_id=state.cluster_id,
        controller_id=state.controller_id,
        brokers=[
            {"broker_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
            for n in state.nodes.values()
        ],
        cluster_authorized_operations=-2147483648,
    )
