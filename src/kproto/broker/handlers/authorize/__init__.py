"""ACL enforcement: the one place requests are checked against
:meth:`kproto.broker.acl.AclStore.authorize` before (and, for Metadata and the
describe APIs, after) their handler runs, answered with Kafka's error codes. One
module per API family holds its checks:

==============  ===============================================================
module          APIs and their checks
==============  ===============================================================
:mod:`.topics`  Produce (topic WRITE), Fetch (READ), ListOffsets and
                OffsetForLeaderEpoch (DESCRIBE), DeleteRecords (DELETE): each
                partition TOPIC_AUTHORIZATION_FAILED; OffsetCommit (group READ,
                then topic READ); Metadata and DescribeTopicPartitions (topic
                DESCRIBE: hidden from a listing, refused when named; auto-creation
                needs CREATE); CreateTopics (CREATE on the topic or the cluster),
                DeleteTopics (DELETE), CreatePartitions (ALTER); Describe/
                (Incremental)AlterConfigs (DESCRIBE_CONFIGS / ALTER_CONFIGS on the
                topic, the group, or the cluster for broker resources)
:mod:`.groups`  FindCoordinator, DescribeGroups (group DESCRIBE), ListGroups
                (cluster DESCRIBE, else only the groups it may DESCRIBE),
                JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetFetch (group
                READ), DeleteGroups, OffsetDelete (group DELETE),
                ConsumerGroupHeartbeat (group READ, DESCRIBE on the subscribed
                topics), ConsumerGroupDescribe (group DESCRIBE, DESCRIBE on the
                assigned topics): GROUP_ / TOPIC_AUTHORIZATION_FAILED
:mod:`.share`   the share group APIs (KIP-932): see its table
:mod:`.streams` the streams group APIs (KIP-1071): see its table
:mod:`.cluster` ACL and SCRAM APIs (cluster ALTER / DESCRIBE), ElectLeaders,
                reassignments, UpdateFeatures (ALTER), DescribeLogDirs (DESCRIBE),
                client quotas (DESCRIBE_CONFIGS / ALTER_CONFIGS), idempotent
                InitProducerId (IDEMPOTENT_WRITE or WRITE on some topic):
                CLUSTER_AUTHORIZATION_FAILED
:mod:`.txn`     the transaction APIs, and FindCoordinator / InitProducerId /
                Produce naming a transactional id
==============  ===============================================================

ApiVersions, SaslHandshake, SaslAuthenticate, DescribeCluster and the KIP-714
telemetry APIs (GetTelemetrySubscriptions, PushTelemetry) need no check
(:data:`UNCHECKED`). An API with no check here (one added to the broker later) is
served to super users only when ACLs are on: anyone else's connection is closed
(:data:`kproto.broker.acl.CHECKED_APIS` is what :mod:`kproto.broker.security` lets
through). Sources: Kafka's ``KafkaApis`` ``authHelper.authorize`` calls per API.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from kproto.broker.acl import AclStore
from kproto.broker.handlers.authorize.cluster import CLUSTER_CHECKS
from kproto.broker.handlers.authorize.common import Check
from kproto.broker.handlers.authorize.groups import GROUP_CHECKS
from kproto.broker.handlers.authorize.share import SHARE_CHECKS
from kproto.broker.handlers.authorize.streams import STREAMS_CHECKS
from kproto.broker.handlers.authorize.topics import TOPIC_CHECKS
from kproto.broker.handlers.authorize.txn import TXN_CHECKS
from kproto.broker.handlers.context import Handler, RequestContext
from kproto.index import ApiKey

__all__ = ["CHECKS", "UNCHECKED", "guarded"]

#: The APIs served to every authenticated principal without an ACL check.
UNCHECKED: Final = frozenset(
    {
        ApiKey.API_VERSIONS,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
        ApiKey.PUSH_TELEMETRY,
    }
)

#: The check of every API that has one (FindCoordinator and InitProducerId route
#: a transactional id to :mod:`.txn` themselves).
CHECKS: Final[Mapping[int, Check]] = MappingProxyType(
    {
        **TXN_CHECKS,
        **TOPIC_CHECKS,
        **CLUSTER_CHECKS,
        **GROUP_CHECKS,
        **SHARE_CHECKS,
        **STREAMS_CHECKS,
    }
)


async def guarded(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """``handler``'s answer to ``request`` with the ACL checks of its API (see the
    module table); a super user passes unchecked, as does an API in
    :data:`UNCHECKED` (the others never reach here: :mod:`kproto.broker.security`
    closes the connection)."""
    store: AclStore | None = ctx.security.acls
    if store is None or ctx.principal in store.super_users:
        return await handler(ctx, request)
    check = CHECKS.get(ctx.header.request_api_key)
    if check is None:
        return await handler(ctx, request)
    return await check(ctx, handler, request)
