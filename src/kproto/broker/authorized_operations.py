"""The ``authorized_operations`` bitfields of Metadata, DescribeCluster,
DescribeTopicPartitions and DescribeGroups (KIP-430).

With no authorizer configured, Kafka answers every operation the resource type
supports (``AuthHelper.authorizedOperations``: the set of
``AclEntry.supportedOperations(resourceType)``, one bit ``1 << AclOperation.code``
each, ``Utils.to32BitField``). When the client did not ask, the field keeps
:data:`NOT_REQUESTED` (``Integer.MIN_VALUE``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

__all__ = [
    "AclOperation",
    "ResourceType",
    "NOT_REQUESTED",
    "SUPPORTED_OPERATIONS",
    "supported_operations",
    "authorized_operations",
]

#: The bitfield's value when the request did not ask for it (Integer.MIN_VALUE).
NOT_REQUESTED: Final = -(2**31)


class AclOperation(enum.IntEnum):
    """Kafka's ``org.apache.kafka.common.acl.AclOperation`` codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class ResourceType(enum.IntEnum):
    """Kafka's ``org.apache.kafka.common.resource.ResourceType`` codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


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


def authorized_operations(resource_type: ResourceType, requested: bool) -> int:
    """The ``authorized_operations`` field of a response: every supported
    operation when ``requested`` (no authorizer is configured), else
    :data:`NOT_REQUESTED`."""
    return supported_operations(resource_type) if requested else NOT_REQUESTED
