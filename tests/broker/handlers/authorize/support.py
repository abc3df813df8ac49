"""What the ACL tests share: a SASL/PLAIN cluster with ACLs on and ``admin`` its super
user, each user's PLAIN credentials, and ALLOW rules granted to a principal."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kproto.broker import Cluster
from kproto.broker.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kproto.sasl import SaslConfig

#: Each test user's password is its name with ``-pw``; ``admin`` is the super user.
USERS = {name: f"{name}-pw" for name in ("alice", "admin")}


def plain(user: str) -> SaslConfig:
    """SASL/PLAIN credentials of test user ``user``."""
    return SaslConfig(mechanism="PLAIN", username=user, password=f"{user}-pw")


def acl_cluster(*more_users: str, **settings: Any) -> Cluster:
    """A (not yet started) ``Cluster`` on SASL_PLAINTEXT with mechanism PLAIN for
    ``alice``, ``admin`` and ``more_users``, ``admin`` a super user and the ACL
    authorizer on (``acls_enabled``); ``settings`` are further ``Cluster``
    arguments."""
    users = {**USERS, **{name: f"{name}-pw" for name in more_users}}
    return Cluster(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=["PLAIN"],
        users=users,
        super_users=["admin"],
        acls_enabled=True,
        **settings,
    )


def allow(
    cluster: Cluster,
    rules: Iterable[tuple[ResourceType, str, PatternType, AclOperation]],
    principal: str = "User:alice",
) -> None:
    """Add to ``cluster``'s ACL store one ALLOW binding for ``principal`` from any
    host per ``(resource type, name, pattern type, operation)`` of ``rules``."""
    store = cluster.security.acls
    assert store is not None
    for resource_type, name, pattern, operation in rules:
        store.add(
            AclBinding(
                resource_type,
                name,
                pattern,
                principal,
                "*",
                operation,
                AclPermissionType.ALLOW,
            )
        )
