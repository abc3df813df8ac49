"""ACL checks of the streams group APIs (KIP-1071; Kafka's ``KafkaApis``
``handleStreamsGroupHeartbeat`` and ``handleStreamsGroupDescribe``).

===============================  ======================================================
API                              check and answer when refused
===============================  ======================================================
StreamsGroupHeartbeat            group READ (GROUP_AUTHORIZATION_FAILED), then DESCRIBE
                                 on every topic of the topology sent (source,
                                 repartition sink and source, changelog topics), else
                                 TOPIC_AUTHORIZATION_FAILED; the internal topics it
                                 creates need CREATE on the cluster or on each topic
                                 (else not created: MISSING_INTERNAL_TOPICS status)
StreamsGroupDescribe             group DESCRIBE per group; a group whose topology names
                                 a topic the principal may not DESCRIBE:
                                 TOPIC_AUTHORIZATION_FAILED, no members, no topology
StreamsGroupTopologyDescription  group READ, as the heartbeat that stores it (kproto's
Update                           choice: Kafka has no such API to follow)
===============================  ======================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kproto.broker.acl import AclOperation, ResourceType
from kproto.broker.handlers.authorize.common import CLUSTER, Check, allowed
from kproto.broker.handlers.authorize.groups import (
    describe_groups_and_topics,
    group_read,
    heartbeat_check,
)
from kproto.broker.handlers.context import Handler, RequestContext
from kproto.broker.state import TOPIC_CREATION_ALLOWED
from kproto.index import ApiKey

__all__ = ["STREAMS_CHECKS"]


def _topology_topics(topology: Any) -> Iterable[str]:
    """Every topic a topology names (``subtopologies`` may be None)."""
    for s in (topology.subtopologies if topology is not None else None) or ():
        yield from s.source_topics
        yield from s.repartition_sink_topics
        yield from (t.name for t in s.repartition_source_topics)
        yield from (t.name for t in s.state_changelog_topics)


def _internal_topics(subtopologies: Iterable[Any] | None) -> set[str]:
    """The internal topics (repartition sources, changelogs) of subtopologies."""
    return {
        t.name
        for s in subtopologies or ()
        for t in (*s.repartition_source_topics, *s.state_changelog_topics)
    }


_heartbeat = heartbeat_check(lambda r: list(_topology_topics(r.topology)))


async def _streams_heartbeat(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    """The heartbeat check, and the internal topics the coordinator creates while
    serving it only with CREATE on the cluster or on the topic (Kafka's
    ``handleStreamsGroupHeartbeat`` ``createTopicUnauthorized``)."""
    if allowed(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER):
        return await _heartbeat(ctx, handler, request)

    group = ctx.groups.streams.groups.get(request.group_id)
    internal = _internal_topics(
        request.topology.subtopologies if request.topology is not None else None
    ) | _internal_topics(group.topology if group is not None else None)

    def may_create(
        name: str,
    ) -> bool:  # other topics (__consumer_offsets): the broker's
        return name not in internal or allowed(
            ctx, AclOperation.CREATE, ResourceType.TOPIC, name
        )

    token = TOPIC_CREATION_ALLOWED.set(may_create)
    try:
        return await _heartbeat(ctx, handler, request)
    finally:
        TOPIC_CREATION_ALLOWED.reset(token)


#: The check of each streams group API.
STREAMS_CHECKS: dict[int, Check] = {
    ApiKey.STREAMS_GROUP_HEARTBEAT: _streams_heartbeat,
    ApiKey.STREAMS_GROUP_DESCRIBE: describe_groups_and_topics(
        lambda g: _topology_topics(g.topology),
        "The described group uses topics that the client is not authorized to "
        "describe.",
    ),
    ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: group_read,
}
