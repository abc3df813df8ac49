"""ACL checks of the cluster-level APIs: the ACL and SCRAM APIs, the admin APIs
(ElectLeaders, partition reassignments, DescribeLogDirs, client quotas,
UpdateFeatures) and idempotent InitProducerId, all answered
CLUSTER_AUTHORIZATION_FAILED when refused (Kafka's ``KafkaApis`` /
``AclApis`` ``authorizeClusterOperation`` calls)."""

from __future__ import annotations

from typing import Any

from kproto.broker.acl import AclOperation, ResourceType
from kproto.broker.handlers.authorize.common import (
    CLUSTER,
    CLUSTER_DENIED,
    Check,
    allowed,
)
from kproto.broker.handlers.authorize.txn import TXN_CHECKS
from kproto.broker.handlers.context import Handler, RequestContext
from kproto.broker.handlers.refusals import error_response
from kproto.index import ApiKey

__all__ = ["CLUSTER_CHECKS", "CLUSTER_OPS"]

_Op = AclOperation
_MESSAGE = "Cluster authorization failed."


def _cluster_denied(ctx: RequestContext, request: Any) -> Any:
    """The CLUSTER_AUTHORIZATION_FAILED answer of a cluster-level API (every entry
    of the ACL, SCRAM and quota APIs; InitProducerId with producer id -1)."""
    return error_response(ctx, request, CLUSTER_DENIED, _MESSAGE)


#: The operation each cluster-level API needs on the cluster.
CLUSTER_OPS = {
    ApiKey.CREATE_ACLS: _Op.ALTER,
    ApiKey.DELETE_ACLS: _Op.ALTER,
    ApiKey.DESCRIBE_ACLS: _Op.DESCRIBE,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _Op.ALTER,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _Op.DESCRIBE,
    ApiKey.DESCRIBE_LOG_DIRS: _Op.DESCRIBE,
    ApiKey.ELECT_LEADERS: _Op.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _Op.ALTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _Op.DESCRIBE,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _Op.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CLIENT_QUOTAS: _Op.ALTER_CONFIGS,
    ApiKey.UPDATE_FEATURES: _Op.ALTER,
    ApiKey.LIST_CONFIG_RESOURCES: _Op.DESCRIBE_CONFIGS,
}


async def _cluster_op(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    op = CLUSTER_OPS[ctx.header.request_api_key]
    if allowed(ctx, op, ResourceType.CLUSTER, CLUSTER):
        return await handler(ctx, request)
    return _cluster_denied(ctx, request)


def _may_write_idempotently(ctx: RequestContext) -> bool:
    if allowed(ctx, _Op.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER):
        return True
    return any(allowed(ctx, _Op.WRITE, ResourceType.TOPIC, n) for n in ctx.state.topics)


async def _init_producer_id(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """With a transactional id: its WRITE (:mod:`.txn`); without: cluster
    IDEMPOTENT_WRITE or WRITE on some topic."""
    if request.transactional_id is not None:
        return await TXN_CHECKS[ApiKey.INIT_PRODUCER_ID](ctx, handler, request)
    if not _may_write_idempotently(ctx):
        return _cluster_denied(ctx, request)
    return await handler(ctx, request)


#: The check of each cluster-level API.
CLUSTER_CHECKS: dict[int, Check] = {
    **{api_key: _cluster_op for api_key in CLUSTER_OPS},
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
}
