"""Streams groups (KIP-1071) under ACLs, as Kafka's ``KafkaApis`` checks them:
StreamsGroupHeartbeat needs group READ and DESCRIBE on every topic of the
topology, and creates internal topics only with CREATE (cluster or topic);
StreamsGroupDescribe needs group DESCRIBE and hides a group whose topology names a
topic the principal may not describe."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.acl import (
    AclOperation,
    PatternType,
    ResourceType,
)
from kproto.broker.groups.streams_coordinator import Status
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.groups.test_streams_groups import join, topology
from tests.broker.handlers.authorize.support import acl_cluster, allow, plain
from tests.broker.wire import GROUP_CAPS

pytestmark = pytest.mark.timeout(120)

_Op = AclOperation
_ids = itertools.count()
MISSING_INTERNAL_TOPICS = Status.MISSING_INTERNAL_TOPICS


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with acl_cluster(nodes=1, streams_heartbeat_interval_ms=100) as c:
        c.create_topic("s-open", 2)
        c.create_topic("s-secret", 2)
        allow(
            c,
            [
                (ResourceType.TOPIC, "s-open", PatternType.LITERAL, _Op.READ),
                # the internal topics of alice's applications: read, not create
                (ResourceType.TOPIC, "alice-", PatternType.PREFIXED, _Op.READ),
                (ResourceType.TOPIC, "alice-made-", PatternType.PREFIXED, _Op.CREATE),
                (ResourceType.GROUP, "alice-", PatternType.PREFIXED, _Op.READ),
            ],
        )
        yield c


def connect(cluster: Cluster, user: str) -> Connection:
    info = cluster.state.nodes[1]
    sasl = plain(user)
    conn = Connection(info.host, info.port, timeout_s=20, sasl=sasl)
    conn.negotiate(caps=GROUP_CAPS)
    return conn


def test_heartbeat_checks(cluster: Cluster) -> None:
    app = f"alice-made-{next(_ids)}"  # alice may create its internal topics
    with connect(cluster, "alice") as conn:
        joined = join(conn, app, "m1", topology("s-open", app))
        assert joined.error_code == ErrorCode.NONE, joined.error_message
        assert joined.member_epoch >= 1
        assert f"{app}-store-changelog" in cluster.state.topics
        refused = join(conn, f"bob-{next(_ids)}", "m1", topology("s-open", "bob"))
        assert refused.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        other = f"alice-made-{next(_ids)}"
        secret = join(conn, other, "m1", topology("s-secret", other))
        assert secret.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert f"{other}-store-changelog" not in cluster.state.topics


def test_internal_topics_need_create(cluster: Cluster) -> None:
    app = f"alice-app-{next(_ids)}"  # READ (so DESCRIBE) on them, but no CREATE
    with connect(cluster, "alice") as conn:
        joined = join(conn, app, "m1", topology("s-open", app))
    assert joined.error_code == ErrorCode.NONE, joined.error_message
    codes = [s.status_code for s in joined.status or ()]
    assert MISSING_INTERNAL_TOPICS in codes, joined.status
    assert f"{app}-store-changelog" not in cluster.state.topics
    assert f"{app}-agg-repartition" not in cluster.state.topics
    # a principal with cluster CREATE (the super user) gets them created
    with connect(cluster, "admin") as conn:
        again = join(conn, app, "m2", topology("s-open", app))
    assert again.error_code == ErrorCode.NONE
    assert f"{app}-store-changelog" in cluster.state.topics


def _describe(conn: Connection, groups: list[str]) -> dict[str, Any]:
    answer = conn.request(
        ApiKey.STREAMS_GROUP_DESCRIBE,
        group_ids=groups,
        include_authorized_operations=True,
    )
    return {g.group_id: g for g in answer.groups}


def test_describe_checks(cluster: Cluster) -> None:
    mine, mixed = f"alice-made-{next(_ids)}", f"alice-mixed-{next(_ids)}"
    with connect(cluster, "alice") as conn:
        assert join(conn, mine, "m1", topology("s-open", mine)).error_code == 0
    with connect(cluster, "admin") as conn:  # alice may describe the group only
        assert join(conn, mixed, "m1", topology("s-secret", mixed)).error_code == 0
        assert _describe(conn, [mixed])[mixed].error_code == ErrorCode.NONE
    with connect(cluster, "alice") as conn:
        groups = _describe(conn, [mine, "bob-app", mixed])
    ok = groups[mine]
    assert ok.error_code == ErrorCode.NONE and ok.topology is not None
    (member,) = ok.members
    assert member.client_host == "/127.0.0.1"  # Kafka's InetAddress.toString()
    assert ok.authorized_operations == (1 << 3) | (1 << 8)  # READ, DESCRIBE
    assert groups["bob-app"].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    hidden = groups[mixed]
    assert hidden.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert hidden.members == () and hidden.topology is None


def test_topology_description_update_needs_group_read(cluster: Cluster) -> None:
    with connect(cluster, "alice") as conn:
        answer = conn.request(
            ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
            group_id="bob-app",
            member_id="m1",
            topology_epoch=1,
        )
    assert answer.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
