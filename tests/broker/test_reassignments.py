"""Partition reassignments as Kafka's ``ReplicationControlManager`` runs them
(src/kproto/broker/reassignments.py): some partitions of a topic moved and the
others untouched, one left in progress while a replica it adds is on a stopped
node (ListPartitionReassignments shows its adding and removing replicas, Metadata
its merged replicas), completed when that node starts, cancelled, and refused as
Kafka refuses; through kafka-python's admin client and raw requests."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey

kafka = pytest.importorskip("kafka")
from kafka import TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.timeout(120)

_names = itertools.count()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(nodes=3, data_dir=tmp_path_factory.mktemp("reassign")) as c:
        yield c


@pytest.fixture(scope="module")
def admin(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


@pytest.fixture
def node3_down(cluster: Cluster) -> Iterator[None]:
    """Node 3 stopped (its leaderships moved) for the test; started after."""
    cluster.stop_node(3)
    try:
        yield
    finally:
        cluster.start_node(3)


def new_topic(cluster: Cluster, *assignment: list[int], **configs: str) -> str:
    """A topic whose partition ``p`` has replicas ``assignment[p]`` (led by the
    first), created by kafka-python's admin with a manual assignment."""
    name = f"re{next(_names)}"
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        client.create_topics(
            [
                NewTopic(
                    name,
                    replica_assignments=dict(enumerate(assignment)),
                    topic_configs=configs,
                )
            ]
        )
    finally:
        client.close()
    return name


def metadata(
    cluster: Cluster, name: str
) -> list[tuple[int, list[int], list[int], list[int]]]:
    """``(leader, replicas, isr, offline)`` of each partition, from Metadata."""
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        answer = conn.request(ApiKey.METADATA, topics=[{"name": name}])
    (topic,) = answer.topics
    return [
        (
            p.leader_id,
            list(p.replica_nodes),
            list(p.isr_nodes),
            list(p.offline_replicas),
        )
        for p in sorted(topic.partitions, key=lambda p: p.partition_index)
    ]


def alter(
    admin: KafkaAdminClient, name: str, targets: dict[int, Any]
) -> dict[int, Any]:
    """AlterPartitionReassignments; the error class per partition (None: done)."""
    answer = admin.alter_partition_reassignments(
        {TopicPartition(name, p): t for p, t in targets.items()}
    )
    return {tp.partition: error for tp, error in answer.items()}


def test_some_partitions_move_and_the_others_stay(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    name = new_topic(cluster, [1, 2], [2, 3], [3, 1])
    assert alter(admin, name, {1: [1, 3]}) == {1: None}
    assert [(r, isr) for _, r, isr, _ in metadata(cluster, name)] == [
        ([1, 2], [1, 2]),
        ([1, 3], [1, 3]),
        ([3, 1], [3, 1]),
    ]
    # node 2 led partition 1 and left it: the first replica of the target leads
    assert cluster.leader(name, 1) == 1
    assert admin.list_partition_reassignments() == {}


def test_in_progress_until_the_added_replica_is_back(
    cluster: Cluster, admin: KafkaAdminClient, node3_down: None
) -> None:
    name = new_topic(cluster, [1, 2], [2, 1])
    epoch = cluster.leader_epoch(name, 0)
    assert alter(admin, name, {0: [3, 2]}) == {0: None}
    ongoing = {"replicas": [3, 2, 1], "adding_replicas": [3], "removing_replicas": [1]}
    assert admin.list_partition_reassignments() == {TopicPartition(name, 0): ongoing}
    assert admin.list_partition_reassignments({name: [0, 1], "nope": [0]}) == {
        TopicPartition(name, 0): ongoing
    }
    assert admin.list_partition_reassignments({name: [1]}) == {}
    # the leader stays while its replica is being removed; the new one is offline
    assert metadata(cluster, name)[0] == (1, [3, 2, 1], [2, 1], [3])
    assert cluster.leader_epoch(name, 0) == epoch
    cluster.start_node(3)
    assert admin.list_partition_reassignments() == {}
    assert metadata(cluster, name)[0] == (3, [3, 2], [3, 2], [])
    assert cluster.leader_epoch(name, 0) == epoch + 1
    assert metadata(cluster, name)[1] == (2, [2, 1], [2, 1], [])


def test_cancel_goes_back(
    cluster: Cluster, admin: KafkaAdminClient, node3_down: None
) -> None:
    name = new_topic(cluster, [1, 2])
    assert alter(admin, name, {0: [1, 3]}) == {0: None}
    assert metadata(cluster, name)[0] == (1, [1, 3, 2], [1, 2], [3])
    assert alter(admin, name, {0: None}) == {0: None}
    assert metadata(cluster, name)[0] == (1, [1, 2], [1, 2], [])
    assert admin.list_partition_reassignments() == {}
    assert alter(admin, name, {0: None}) == {
        0: kafka.errors.NoReassignmentInProgressError
    }


def test_a_new_target_starts_from_the_merged_replicas(
    cluster: Cluster, admin: KafkaAdminClient, node3_down: None
) -> None:
    name = new_topic(cluster, [1, 2])
    assert alter(admin, name, {0: [1, 3]}) == {0: None}  # adding 3, removing 2
    assert alter(admin, name, {0: [3, 1]}) == {0: None}  # 2 is still being removed
    (listed,) = admin.list_partition_reassignments().values()
    assert listed == {
        "replicas": [3, 1, 2],
        "adding_replicas": [],
        "removing_replicas": [2],
    }


def test_unclean_revert_needs_the_topic_config(cluster: Cluster) -> None:
    strict = new_topic(cluster, [1])
    lenient = new_topic(cluster, [1], **{"unclean.leader.election.enable": "true"})
    cluster.stop_node(3)
    try:
        for name in (strict, lenient):
            # adding 2 and 3, removing 1: in progress while 3 is down
            assert raw_alter(cluster, name, [3, 2]) == (ErrorCode.NONE, None)
        cluster.stop_node(1, move_leaders=False)  # the reverted replicas: none live
        try:
            code, message = raw_alter(cluster, strict, None, node=2)
            assert code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert message == (
                f"Unable to revert partition assignment for {strict}:0 because "
                "it would require an unclean leader election."
            )
            assert raw_alter(cluster, lenient, None, node=2) == (ErrorCode.NONE, None)
            assert cluster.state.topics[lenient].replicas_of(0) == [1]
        finally:
            cluster.start_node(1)
    finally:
        cluster.start_node(3)
    # node 3 back: the reassignment left in progress completes
    assert cluster.state.topics[strict].replicas_of(0) == [3, 2]
    assert cluster.leader(strict, 0) == 3


def raw_alter(
    cluster: Cluster,
    name: str,
    target: list[int] | None,
    *,
    node: int = 1,
    **fields: Any,
) -> tuple[ErrorCode, str | None]:
    info = cluster.state.nodes[node]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        answer = conn.request(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            timeout_ms=1000,
            topics=[
                {
                    "name": name,
                    "partitions": [{"partition_index": 0, "replicas": target}],
                }
            ],
            **fields,
        )
    (partition,) = answer.responses[0].partitions
    return ErrorCode(partition.error_code), partition.error_message


def test_what_kafka_refuses(cluster: Cluster) -> None:
    name = new_topic(cluster, [1, 2])
    code, message = raw_alter(cluster, "missing", [1])
    assert (code, message) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "Unable to find a topic named missing.",
    )
    assert raw_alter(cluster, name, [1, 1])[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert raw_alter(cluster, name, [])[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert raw_alter(cluster, name, [1, 9])[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert raw_alter(cluster, name, [1], allow_replication_factor_change=False) == (
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "The replication factor is changed from 2 to 1",
    )
    assert raw_alter(cluster, name, None) == (
        ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
        "No partition reassignment is in progress.",
    )
    assert cluster.state.topics[name].replicas_of(0) == [1, 2]


def test_in_progress_survives_a_restart(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    data_dir = tmp_path_factory.mktemp("restart")
    with Cluster(nodes=3, data_dir=data_dir) as c:
        c.create_topic("kept", 1, replication_factor=2)
        replicas = c.state.topics["kept"].replicas_of(0)
        outsider = next(n for n in (1, 2, 3) if n not in replicas)
        c.stop_node(outsider)
        assert raw_alter(c, "kept", [outsider, replicas[0]], node=replicas[0]) == (
            ErrorCode.NONE,
            None,
        )
        saved = (data_dir / "kproto-topics.json").read_text()
        assert '"reassigning"' in saved
    with Cluster(nodes=3, data_dir=data_dir) as c:
        # every node is back: the reassignment completed at start
        assert c.state.topics["kept"].replicas_of(0) == [outsider, replicas[0]]
        assert c.state.topics["kept"].reassigning == {}
