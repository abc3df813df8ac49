"""Access control lists: the bindings CreateAcls stores, the filters DescribeAcls and
DeleteAcls match, and the one decision every request passes,
:meth:`AclStore.authorize`.

Follows Kafka's ``StandardAuthorizer`` (and ``AclAuthorizer`` before it): a
super user may do anything; otherwise a DENY binding that matches the principal,
host, operation and resource wins; then an ALLOW binding does, where ALL allows
every operation and READ, WRITE, DELETE or ALTER imply DESCRIBE (ALTER_CONFIGS
implies DESCRIBE_CONFIGS); with no match the answer is no
(``allow.everyone.if.no.acl.found=false``). A binding's resource matches by its
pattern type: LITERAL names the resource exactly or is ``*`` (every resource of
the type), PREFIXED matches names starting with it. Enum values are Kafka's
``ResourceType``, ``PatternType``, ``AclOperation`` and ``AclPermissionType``
codes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator

import attrs

from kproto.index import ApiKey

__all__ = [
    "CHECKED_APIS",
    "AclBinding",
    "AclFilter",
    "AclOperation",
    "AclPermissionType",
    "AclStore",
    "PatternType",
    "ResourceType",
    "WILDCARD",
]

#: The APIs :mod:`kproto.broker.handlers.authorize` checks (or needs no check for);
#: with ACLs on, any other API is served to super users only.
CHECKED_APIS: frozenset[int] = frozenset(
    {
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.LIST_OFFSETS,
        ApiKey.METADATA,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.FIND_COORDINATOR,
        ApiKey.JOIN_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.API_VERSIONS,
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        ApiKey.DESCRIBE_LOG_DIRS,
        ApiKey.ELECT_LEADERS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        ApiKey.ALTER_CLIENT_QUOTAS,
        ApiKey.UPDATE_FEATURES,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        ApiKey.SASL_AUTHENTICATE,
        ApiKey.CREATE_ACLS,
        ApiKey.DESCRIBE_ACLS,
        ApiKey.DELETE_ACLS,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.DELETE_RECORDS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.LIST_GROUPS,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.DELETE_GROUPS,
        ApiKey.OFFSET_DELETE,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.END_TXN,
        ApiKey.TXN_OFFSET_COMMIT,
        ApiKey.DESCRIBE_TRANSACTIONS,
        ApiKey.LIST_TRANSACTIONS,
        ApiKey.DESCRIBE_PRODUCERS,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ApiKey.SHARE_GROUP_HEARTBEAT,
        ApiKey.SHARE_GROUP_DESCRIBE,
        ApiKey.SHARE_FETCH,
        ApiKey.SHARE_ACKNOWLEDGE,
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
        ApiKey.STREAMS_GROUP_HEARTBEAT,
        ApiKey.STREAMS_GROUP_DESCRIBE,
        ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
        ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
        ApiKey.PUSH_TELEMETRY,
        ApiKey.LIST_CONFIG_RESOURCES,
    }
)

#: The literal resource name that stands for every resource of its type.
WILDCARD = "*"


class ResourceType(enum.IntEnum):
    """Kafka's ``ResourceType`` codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    """Kafka's ``PatternType`` codes (ANY and MATCH only in filters)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    """Kafka's ``AclOperation`` codes."""

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


class AclPermissionType(enum.IntEnum):
    """Kafka's ``AclPermissionType`` codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: Operations an ALLOW of the key also allows (Kafka's ``AclEntry.supportedOperations``
#: implications).
_IMPLIED = {
    AclOperation.DESCRIBE: {
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    },
    AclOperation.DESCRIBE_CONFIGS: {AclOperation.ALTER_CONFIGS},
}


@attrs.frozen
class AclBinding:
    """One ACL: who (``principal``, ``User:alice`` or ``User:*``; ``host`` or ``*``)
    may or may not (``permission_type``) do what (``operation``) to which
    resources (``resource_type``, ``resource_name``, ``pattern_type``)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def check(self) -> str | None:
        """Why Kafka would refuse to create this binding (INVALID_REQUEST), or None."""
        if self.resource_type not in (
            ResourceType.TOPIC,
            ResourceType.GROUP,
            ResourceType.CLUSTER,
            ResourceType.TRANSACTIONAL_ID,
            ResourceType.DELEGATION_TOKEN,
            ResourceType.USER,
        ):
            return f"Invalid resource type {self.resource_type}"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"Invalid pattern type {self.pattern_type}"
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY) or not (
            0 <= self.operation <= max(AclOperation)
        ):
            return f"Invalid operation {self.operation}"
        if self.permission_type not in (
            AclPermissionType.DENY,
            AclPermissionType.ALLOW,
        ):
            return f"Invalid permission type {self.permission_type}"
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            return f"Could not parse principal from `{self.principal}`"
        if not self.resource_name:
            return "Resource name must not be empty"
        if self.resource_type == ResourceType.CLUSTER and (
            self.resource_name != "kafka-cluster"
        ):
            return "The only valid name for the CLUSTER resource is kafka-cluster"
        return None

    def covers(self, resource_type: int, name: str) -> bool:
        """Whether this binding's resource pattern matches one resource."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)


@attrs.frozen
class AclFilter:
    """DescribeAcls' and DeleteAcls' filter (Kafka's ``AclBindingFilter``): ANY or
    ``None`` fields match everything; pattern type MATCH finds every binding that
    covers ``resource_name`` (literal, wildcard and prefixed)."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def matches(self, b: AclBinding) -> bool:
        if (
            self.resource_type != ResourceType.ANY
            and b.resource_type != self.resource_type
        ):
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is not None and not b.covers(
                b.resource_type, self.resource_name
            ):
                return False
        else:
            if (
                self.pattern_type != PatternType.ANY
                and b.pattern_type != self.pattern_type
            ):
                return False
            if self.resource_name is not None and b.resource_name != self.resource_name:
                return False
        if self.principal is not None and b.principal != self.principal:
            return False
        if self.host is not None and b.host != self.host:
            return False
        if self.operation != AclOperation.ANY and b.operation != self.operation:
            return False
        return (
            self.permission_type == AclPermissionType.ANY
            or b.permission_type == self.permission_type
        )


class AclStore:
    """The cluster's ACLs and super users.

    Args:
        super_users: principals every check lets through (``User:admin``).
    """

    def __init__(self, super_users: Iterable[str] = ()) -> None:
        self.super_users = frozenset(super_users)
        self._bindings: dict[AclBinding, None] = {}  # insertion-ordered set

    def __iter__(self) -> Iterator[AclBinding]:
        return iter(list(self._bindings))

    def add(self, binding: AclBinding) -> None:
        """Store ``binding`` (adding one that exists changes nothing)."""
        self._bindings[binding] = None

    def remove(self, acl_filter: AclFilter) -> list[AclBinding]:
        """Remove and return every binding ``acl_filter`` matches."""
        gone = [b for b in self._bindings if acl_filter.matches(b)]
        for b in gone:
            del self._bindings[b]
        return gone

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether ``principal`` connecting from ``host`` may do ``operation`` on a
        resource (see the module docstring)."""
        if principal in self.super_users:
            return True
        allowed = False
        for b in self._bindings:
            if not b.covers(resource_type, name):
                continue
            if b.principal not in (principal, "User:*") or b.host not in (host, "*"):
                continue
            if b.permission_type == AclPermissionType.DENY:
                if b.operation in (operation, AclOperation.ALL):
                    return False
            elif b.operation in (operation, AclOperation.ALL) or (
                b.operation in _IMPLIED.get(operation, ())
            ):
                allowed = True
        return allowed
