"""Replica assignments kept, as Kafka's ``ReplicationControlManager`` keeps them:
CreateTopics with a replication factor or a manual assignment and CreatePartitions
report every replica and the ISR in Metadata and DescribeTopicPartitions, across a
restart, and refuse what Kafka refuses; through confluent-kafka's and
kafka-python's admin clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    NewPartitions,
    NewTopic,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replicas")


@pytest.fixture(scope="module")
def cluster(data_dir: Path) -> Iterator[Cluster]:
    with Cluster(nodes=3, data_dir=data_dir) as c:
        yield c


@pytest.fixture(scope="module")
def admin(cluster: Cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def create(admin: AdminClient, *topics: Any) -> dict[str, ErrorCode]:
    """CreateTopics; the error code per topic (NONE when created). librdkafka
    wants the partition count of a manual assignment and sends -1."""
    codes = {}
    for name, future in admin.create_topics(list(topics), request_timeout=10).items():
        try:
            future.result(10)
        except ck.KafkaException as exc:
            codes[name] = ErrorCode(exc.args[0].code())
        else:
            codes[name] = ErrorCode.NONE
    return codes


def described(admin: AdminClient, name: str) -> list[tuple[int, list[int], list[int]]]:
    """``(leader, replicas, isr)`` of each partition, from DescribeTopicPartitions."""
    (future,) = admin.describe_topics(
        ck.TopicCollection([name]), request_timeout=10
    ).values()
    topic = future.result(10)
    return [
        (p.leader.id, [n.id for n in p.replicas], [n.id for n in p.isr])
        for p in topic.partitions
    ]


def metadata(cluster: Cluster, name: str) -> list[tuple[int, list[int], list[int]]]:
    """``(leader, replicas, isr)`` of each partition, from a Metadata request."""
    info = cluster.state.nodes[cluster.state.node_ids[0]]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        answer = conn.request(ApiKey.METADATA, topics=[{"name": name}])
    (topic,) = answer.topics
    return [
        (p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
        for p in sorted(topic.partitions, key=lambda p: p.partition_index)
    ]


def test_replication_factor_three(cluster: Cluster, admin: AdminClient) -> None:
    assert create(admin, NewTopic("rf3", 4, 3)) == {"rf3": ErrorCode.NONE}
    parts = described(admin, "rf3")
    assert parts == metadata(cluster, "rf3")
    for leader, replicas, isr in parts:
        assert sorted(replicas) == [1, 2, 3] and isr == replicas
        assert leader == replicas[0]  # the leader is the first replica
    # leaders spread over the nodes
    assert len({leader for leader, _, _ in parts}) == 3


def test_manual_assignment(cluster: Cluster, admin: AdminClient) -> None:
    assignment = [[2, 3], [3, 1], [1, 2]]
    assert create(
        admin, NewTopic("manual-rf2", len(assignment), replica_assignment=assignment)
    ) == {"manual-rf2": ErrorCode.NONE}
    assert described(admin, "manual-rf2") == [(r[0], r, r) for r in assignment]


def test_create_partitions_keep_the_replication_factor(
    cluster: Cluster, admin: AdminClient
) -> None:
    assert create(admin, NewTopic("grow", 1, 2)) == {"grow": ErrorCode.NONE}
    admin.create_partitions([NewPartitions("grow", 3)])["grow"].result(10)
    placed = described(admin, "grow")
    assert [len(replicas) for _, replicas, _ in placed] == [2, 2, 2]
    admin.create_partitions([NewPartitions("grow", 4, replica_assignment=[[3, 1]])])[
        "grow"
    ].result(10)
    assert described(admin, "grow")[3] == (3, [3, 1], [3, 1])
    wrong = admin.create_partitions(
        [NewPartitions("grow", 5, replica_assignment=[[3]])]
    )["grow"]
    with pytest.raises(ck.KafkaException) as exc:
        wrong.result(10)
    assert exc.value.args[0].code() == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert "not consistent with previous partitions" in exc.value.args[0].str()


def test_what_kafka_refuses(cluster: Cluster, admin: AdminClient) -> None:
    codes = create(
        admin,
        NewTopic("rf4", 1, 4),
        NewTopic("unknown-broker", 1, replica_assignment=[[1, 9]]),
        NewTopic("twice", 1, replica_assignment=[[2, 2]]),
        NewTopic("uneven", 2, replica_assignment=[[1, 2], [3]]),
    )
    assert codes == {
        "rf4": ErrorCode.INVALID_REPLICATION_FACTOR,
        "unknown-broker": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "twice": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "uneven": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    }
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        answer = conn.request(
            ApiKey.CREATE_TOPICS,
            timeout_ms=5000,
            topics=[
                {
                    "name": "both",
                    "num_partitions": -1,
                    "replication_factor": 2,
                    "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}],
                },
                {"name": "zero-rf", "num_partitions": 1, "replication_factor": 0},
                {
                    "name": "gap",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [{"partition_index": 1, "broker_ids": [1]}],
                },
            ],
        )
    errors = {t.name: (t.error_code, t.error_message) for t in answer.topics}
    assert errors["both"] == (
        ErrorCode.INVALID_REQUEST,
        "A manual partition assignment was specified, but replication factor was "
        "not set to -1.",
    )
    assert errors["zero-rf"][0] == ErrorCode.INVALID_REPLICATION_FACTOR
    assert errors["gap"][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert not {"rf4", "unknown-broker", "twice", "uneven", "both"} & set(
        cluster.state.topics
    )


def test_a_stopped_node_leaves_the_isr(cluster: Cluster, admin: AdminClient) -> None:
    assert create(admin, NewTopic("isr", 1, replica_assignment=[[3, 1, 2]])) == {
        "isr": ErrorCode.NONE
    }
    cluster.stop_node(3)
    try:
        # the next in-sync replica leads; the stopped one is offline
        assert metadata(cluster, "isr") == [(1, [3, 1, 2], [1, 2])]
    finally:
        cluster.start_node(3)
    assert metadata(cluster, "isr") == [(1, [3, 1, 2], [3, 1, 2])]


def test_cluster_create_topic_with_replicas(cluster: Cluster) -> None:
    info = cluster.create_topic("direct", 3, replication_factor=2)
    assert [len(r) for r in info.replicas] == [2, 2, 2]
    assert metadata(cluster, "direct") == [
        (r[0], r, r) for r in (list(x) for x in info.replicas)
    ]


def test_kafka_python_admin(cluster: Cluster) -> None:
    kafka = pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KNewTopic

    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        client.create_topics(
            [
                KNewTopic("kp-rf3", 2, 3),
                KNewTopic("kp-manual", -1, -1, replica_assignments={0: [2, 1]}),
            ]
        )
        topics = {t["name"]: t for t in client.describe_topics(["kp-rf3", "kp-manual"])}
        rf3, manual = topics["kp-rf3"], topics["kp-manual"]
        assert [sorted(p["replica_nodes"]) for p in rf3["partitions"]] == [
            [1, 2, 3]
        ] * 2
        assert [
            (p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in manual["partitions"]
        ] == [(2, [2, 1], [2, 1])]
        with pytest.raises(kafka.errors.InvalidReplicationFactorError):
            client.create_topics([KNewTopic("kp-rf5", 1, 5)])
    finally:
        client.close()


def test_kept_across_a_restart(
    cluster: Cluster, admin: AdminClient, data_dir: Path
) -> None:
    assert create(admin, NewTopic("kept", 1, replica_assignment=[[2, 1, 3]])) == {
        "kept": ErrorCode.NONE
    }
    before = metadata(cluster, "kept")
    cluster.close()
    with Cluster(nodes=3, data_dir=data_dir) as again:
        assert metadata(again, "kept") == before == [(2, [2, 1, 3], [2, 1, 3])]
