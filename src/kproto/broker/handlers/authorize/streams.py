"""ACL checks of the streams group APIs (KIP-1071; Kafka's ``KafkaApis``
``handleStreamsGroupHeartbeat`` and ``handleStreamsGroupDescribe``).

===============================  ======================================================
API                              check and answer when refused
===============================  ======================================================
StreamsGroupHeartbeat            group READ (GROUP_AUTHORIZATION_FAILED), then DESCRIBE
                                 on every topic of the topology sent (source,
                                 repartition sink and source, changelog topics), else
                                 TOPIC_AUTHORIZATION_FAILED
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

from kproto.broker.handlers.authorize.common import Check
from kproto.broker.handlers.authorize.groups import (
    GROUP_CHECKS,
    describe_groups_and_topics,
    heartbeat_check,
)
from kproto.index import ApiKey

__all__ = ["STREAMS_CHECKS"]


def _topology_topics(topology: Any) -> Iterable[str]:
    """Every topic a topology names (``subtopologies`` may be None)."""
    for s in (topology.subtopologies if topology is not None else None) or ():
        yield from s.source_topics
        yield from s.repartition_sink_topics
        yield from (t.name for t in s.repartition_source_topics)
        yield from (t.name for t in s.state_changelog_topics)


#: The check of each streams group API.
STREAMS_CHECKS: dict[int, Check] = {
    ApiKey.STREAMS_GROUP_HEARTBEAT: heartbeat_check(
        lambda r: list(_topology_topics(r.topology))
    ),
    ApiKey.STREAMS_GROUP_DESCRIBE: describe_groups_and_topics(
        lambda g: _topology_topics(g.topology),
        "The described group uses topics that the client is not authorized to "
        "describe.",
    ),
    ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: GROUP_CHECKS[ApiKey.HEARTBEAT],
}
