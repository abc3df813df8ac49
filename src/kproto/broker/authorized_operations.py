"""The ``authorized_operations`` bitfields of Metadata, DescribeCluster and
DescribeTopicPartitions (KIP-430).

Kafka's ``AuthHelper.authorizedOperations``: of the operations the resource type
supports (``AclEntry.supportedOperations``), those the authorizer allows, every one
when no authorizer is configured; one bit ``1 << AclOperation.code`` each
(``Utils.to32BitField``). When the client did not ask, the field keeps
:data:`NOT_REQUESTED` (``Integer.MIN_VALUE``). The enums are
:mod:`kproto.broker.acl`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from kproto.broker.acl import AclOperation, ResourceType

__all__ = [
    "NOT_REQUESTED",
    "SUPPORTED_OPERATIONS",
    "supported_operations",
    "authorized_operations",
]

#: The bitfield's value when the request did not ask for it (Integer.MIN_VALUE).
NOT_REQUESTED: Final = -(2**31)


_Op = AclOperation

#: ``AclEntry.supportedOperations``: the operations each concrete resource type has.
SUPPORTED_OPERATIONS: Mapping[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            _Op.READ,
            _Op.WRITE,
            _Op.CREATE,
            _Op.DESCRIBE,
            _Op.DELETE,
            _Op.ALTER,
            _Op.DESCRIBE_CONFIGS,
            _Op.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset(
        {_Op.READ, _Op.DESCRIBE, _Op.DELETE, _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS}
    ),
    ResourceType.CLUSTER: frozenset(
        {
            _Op.CREATE,
            _Op.CLUSTER_ACTION,
            _Op.DESCRIBE_CONFIGS,
            _Op.ALTER_CONFIGS,
            _Op.IDEMPOTENT_WRITE,
            _Op.ALTER,
            _Op.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({_Op.DESCRIBE, _Op.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({_Op.DESCRIBE}),
    ResourceType.USER: frozenset({_Op.CREATE_TOKENS, _Op.DESCRIBE_TOKENS}),
}


def supported_operations(resource_type: ResourceType) -> int:
    """The 32-bit field of every operation ``resource_type`` supports.

    Raises:
        KeyError: not a concrete resource type (UNKNOWN, ANY).
    """
    return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type])


def authorized_operations(
    resource_type: ResourceType,
    requested: bool,
    allowed: Callable[[AclOperation], bool] | None = None,
) -> int:
    """The ``authorized_operations`` field of a response: when ``requested``, the
    supported operations ``allowed`` permits (``None``: no authorizer, all of
    them), else :data:`NOT_REQUESTED`."""
    if not requested:
        return NOT_REQUESTED
    return sum(
        1 << op
        for op in SUPPORTED_OPERATIONS[resource_type]
        if allowed is None or allowed(op)
    )
