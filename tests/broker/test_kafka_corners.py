"""Kafka's answers in the corners real clients' own test suites probe (issue 16
item 6), checked at the protocol level with kproto's Connection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.acl import AclOperation, ResourceType
from kproto.broker.authorized_operations import supported_operations
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.meta import build_entity
from tests.broker.wire import (
    commit_offset,
    connect,
    describe_configs,
    heartbeat,
    incremental_alter_configs,
    join_classic,
    join_consumer_group,
)

NOT_REQUESTED = -(2**31)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=2) as c:
        yield c


@pytest.fixture
def conn(cluster: Cluster) -> Iterator[Connection]:
    info = cluster.state.nodes[cluster.state.node_ids[0]]
    c = Connection(info.host, info.port, timeout_s=30)
    c.negotiate()
    yield c
    c.close()


def send(conn: Connection, api_key: ApiKey, version: int, **fields: Any) -> Any:
    return conn.send(build_entity(request_type(api_key, version), fields))


def test_operation_bitfields_are_kafkas() -> None:
    # AclEntry.supportedOperations, one bit per AclOperation code
    assert supported_operations(ResourceType.TOPIC) == sum(
        1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11)
    )
    assert supported_operations(ResourceType.CLUSTER) == sum(
        1 << op for op in (5, 7, 8, 9, 10, 11, 12)
    )
    assert supported_operations(ResourceType.GROUP) >> AclOperation.READ & 1


def test_authorized_operations_when_asked(cluster: Cluster, conn: Connection) -> None:
    cluster.create_topic("ops", 1)
    topic_ops = supported_operations(ResourceType.TOPIC)
    cluster_ops = supported_operations(ResourceType.CLUSTER)
    asked = send(
        conn,
        ApiKey.METADATA,
        8,
        topics=[{"name": "ops"}],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=True,
        include_topic_authorized_operations=True,
    )
    assert asked.cluster_authorized_operations == cluster_ops
    assert asked.topics[0].topic_authorized_operations == topic_ops
    plain = send(conn, ApiKey.METADATA, 12, topics=[{"name": "ops"}])
    assert plain.topics[0].topic_authorized_operations == NOT_REQUESTED
    described = send(
        conn, ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=True
    )
    assert described.cluster_authorized_operations == cluster_ops
    not_asked = send(conn, ApiKey.DESCRIBE_CLUSTER, 1)
    assert not_asked.cluster_authorized_operations == NOT_REQUESTED


def _coordinator(
    cluster: Cluster, conn: Connection, group: str, caps: dict[ApiKey, int]
) -> Connection:
    """A connection to ``group``'s coordinator (FindCoordinator v3 on ``conn``),
    negotiated with ``caps``."""
    found = send(conn, ApiKey.FIND_COORDINATOR, 3, key=group, key_type=0)
    return connect(cluster, found.node_id, caps=caps, timeout_s=30)


def test_admin_offset_commit_to_a_group_with_members(
    cluster: Cluster, conn: Connection
) -> None:
    cluster.create_topic("oc", 1)
    group = "corner-group"
    # JoinGroup v3 gives a member id at once (KIP-394 came with v4)
    caps = {ApiKey.JOIN_GROUP: 3, ApiKey.OFFSET_COMMIT: 8}
    with _coordinator(cluster, conn, group, caps) as gconn:
        joined = join_classic(gconn, group, timeout_ms=30000)
        assert joined.error_code == ErrorCode.NONE
        # an admin's commit (no member, generation -1) to a group with members
        assert commit_offset(gconn, group, "oc", 0, 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_delete_records_negative_offset(cluster: Cluster) -> None:
    cluster.create_topic("dr", 1)
    leader = cluster.state.leader("dr", 0)
    assert leader is not None
    info = cluster.state.nodes[leader]
    c = Connection(info.host, info.port, timeout_s=30)
    c.negotiate()
    try:
        answer = c.request(
            ApiKey.DELETE_RECORDS,
            topics=[
                {
                    "name": "dr",
                    "partitions": [
                        {"partition_index": 0, "offset": -1001},
                    ],
                }
            ],
            timeout_ms=1000,
        )
        assert (
            answer.topics[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        )
        hw = c.request(
            ApiKey.DELETE_RECORDS,
            topics=[
                {"name": "dr", "partitions": [{"partition_index": 0, "offset": -1}]}
            ],
            timeout_ms=1000,
        )
        assert hw.topics[0].partitions[0].error_code == ErrorCode.NONE
    finally:
        c.close()


def create_assigned(
    conn: Connection, topics: dict[str, list[list[int]]]
) -> dict[str, int]:
    """CreateTopics of ``topics`` with manual assignments (a topic's name to each
    partition's broker ids, partition 0 first): each topic's error code."""
    answer = conn.request(
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": name,
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [
                    {"partition_index": i, "broker_ids": ids}
                    for i, ids in enumerate(partitions)
                ],
                "configs": [],
            }
            for name, partitions in topics.items()
        ],
        timeout_ms=5000,
    )
    return {t.name: t.error_code for t in answer.topics}


def test_create_topics_with_manual_assignments(
    cluster: Cluster, conn: Connection
) -> None:
    nodes = cluster.state.node_ids
    errors = create_assigned(
        conn,
        {"manual": [[nodes[1]], [nodes[1], nodes[0]]], "manual-bad": [[99]]},
    )
    # lists of different sizes are refused; a list per broker size is fine
    assert errors["manual-bad"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert errors["manual"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    errors = create_assigned(conn, {"manual": [[nodes[1]], [nodes[1]]]})
    assert errors["manual"] == ErrorCode.NONE
    assert cluster.state.topics["manual"].leaders == [nodes[1], nodes[1]]

    def grow(count: int, *assignments: list[int]) -> int:
        """The error code of growing "manual" to ``count`` partitions, the new
        ones on ``assignments`` (one broker id list per new partition)."""
        answer = conn.request(
            ApiKey.CREATE_PARTITIONS,
            topics=[
                {
                    "name": "manual",
                    "count": count,
                    "assignments": [{"broker_ids": ids} for ids in assignments],
                }
            ],
            timeout_ms=5000,
            validate_only=False,
        )
        return int(answer.results[0].error_code)

    assert grow(3, [nodes[0]]) == ErrorCode.NONE
    assert cluster.state.topics["manual"].leaders == [nodes[1], nodes[1], nodes[0]]
    # one assignment for two new partitions; an unknown broker
    assert grow(5, [nodes[0]]) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert grow(4, [42]) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert cluster.state.topics["manual"].partitions == 3


def _describe(conn: Connection, resource_type: int, name: str) -> dict[str, Any]:
    (result,) = describe_configs(conn, (resource_type, name)).results
    assert result.error_code == ErrorCode.NONE, result.error_message
    return {c.name: c for c in result.configs}


def test_group_configs(cluster: Cluster, conn: Connection) -> None:
    group = 32
    before = _describe(conn, group, "cfg-group")
    assert before["consumer.session.timeout.ms"].value == "45000"
    assert before["consumer.session.timeout.ms"].config_source == 5  # DEFAULT_CONFIG
    assert (
        "share.auto.offset.reset" in before and "streams.num.standby.replicas" in before
    )
    ok = incremental_alter_configs(
        conn,
        group,
        "cfg-group",
        ("consumer.session.timeout.ms", 0, "50000"),
        ("share.auto.offset.reset", 0, "earliest"),
    )
    assert ok.error_code == ErrorCode.NONE, ok.error_message
    after = _describe(conn, group, "cfg-group")
    assert after["consumer.session.timeout.ms"].value == "50000"
    assert after["consumer.session.timeout.ms"].config_source == 8  # GROUP_CONFIG
    # share.* goes to the share coordinator, described in the same answer
    assert after["share.auto.offset.reset"].value == "earliest"
    assert after["share.auto.offset.reset"].config_source == 8
    got = cluster.state.group_config("cfg-group", "consumer.session.timeout.ms")
    assert got == "50000"
    assert cluster.state.group_config("other", "consumer.session.timeout.ms") == "45000"
    assert cluster.state.group_config("o", "streams.num.standby.replicas", "1") == "1"
    for bad in (
        ("consumer.session.timeout.ms", 0, "1000"),  # below the broker's minimum
        ("no.such.config", 0, "1"),
        ("share.auto.offset.reset", 0, "middle"),
        ("consumer.heartbeat.interval.ms", 2, "1"),  # APPEND on an INT
    ):
        refused = incremental_alter_configs(conn, group, "cfg-group", bad)
        assert refused.error_code == ErrorCode.INVALID_CONFIG, bad
    deleted = incremental_alter_configs(
        conn, group, "cfg-group", ("consumer.session.timeout.ms", 1, None)
    )
    assert deleted.error_code == ErrorCode.NONE
    described = _describe(conn, group, "cfg-group")["consumer.session.timeout.ms"]
    assert described.config_source == 5


def test_append_and_subtract_on_list_configs(
    cluster: Cluster, conn: Connection
) -> None:
    cluster.create_topic("lists", 1)
    topic = 2
    appended = incremental_alter_configs(
        conn, topic, "lists", ("cleanup.policy", 2, "compact")
    )
    assert appended.error_code == ErrorCode.NONE, appended.error_message
    assert cluster.state.topics["lists"].configs["cleanup.policy"] == "delete,compact"
    again = incremental_alter_configs(
        conn, topic, "lists", ("cleanup.policy", 2, "compact")
    )
    assert again.error_code == ErrorCode.NONE
    assert cluster.state.topics["lists"].configs["cleanup.policy"] == "delete,compact"
    subtracted = incremental_alter_configs(
        conn, topic, "lists", ("cleanup.policy", 3, "delete")
    )
    assert subtracted.error_code == ErrorCode.NONE
    assert cluster.state.topics["lists"].configs["cleanup.policy"] == "compact"
    not_a_list = incremental_alter_configs(
        conn, topic, "lists", ("retention.ms", 2, "5")
    )
    assert not_a_list.error_code == ErrorCode.INVALID_CONFIG
    assert "not LIST" in (not_a_list.error_message or "")
    bad_item = incremental_alter_configs(
        conn, topic, "lists", ("cleanup.policy", 2, "shred")
    )
    assert bad_item.error_code == ErrorCode.INVALID_CONFIG
    assert cluster.state.topics["lists"].configs["cleanup.policy"] == "compact"


def test_group_configs_survive_a_restart(tmp_path: Any) -> None:
    with Cluster(data_dir=tmp_path) as c:
        info = c.state.nodes[c.state.node_ids[0]]
        conn = Connection(info.host, info.port, timeout_s=30)
        conn.negotiate()
        assert (
            incremental_alter_configs(
                conn, 32, "g", ("streams.num.standby.replicas", 0, "2")
            )
        ).error_code == ErrorCode.NONE
        conn.close()
    time.sleep(0)
    with Cluster(data_dir=tmp_path) as c:
        assert c.state.group_config("g", "streams.num.standby.replicas") == "2"


def test_group_configs_reach_the_consumer_group_coordinator(
    cluster: Cluster, conn: Connection
) -> None:
    """KIP-848: a group's ``consumer.heartbeat.interval.ms`` is the interval its
    members are given (Kafka's per-group lookup in ``GroupMetadataManager``)."""
    cluster.create_topic("hb", 1)
    group = "hb-group"
    altered = incremental_alter_configs(
        conn, 32, group, ("consumer.heartbeat.interval.ms", 0, "7000")
    )
    assert altered.error_code == ErrorCode.NONE, altered.error_message
    with _coordinator(cluster, conn, group, {ApiKey.CONSUMER_GROUP_HEARTBEAT: 0}) as c:
        answer = join_consumer_group(
            c, group, "m-1", ["hb"], rebalance_timeout_ms=30000
        )
        assert answer.error_code == ErrorCode.NONE, answer.error_message
        assert answer.heartbeat_interval_ms == 7000
        api = ApiKey.CONSUMER_GROUP_HEARTBEAT
        left = heartbeat(c, api, group, answer.member_id, -1)
        assert left.error_code == ErrorCode.NONE


def test_validate_only_alterations_are_validated(
    cluster: Cluster, conn: Connection
) -> None:
    cluster.create_topic("vo", 1)
    answer = incremental_alter_configs(
        conn, 2, "vo", ("cleanup.policy", 2, "shred"), validate_only=True
    )
    assert answer.error_code == ErrorCode.INVALID_CONFIG
    assert "cleanup.policy" not in cluster.state.topics["vo"].configs
