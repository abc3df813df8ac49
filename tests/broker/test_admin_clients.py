"""The admin APIs of issue 16 items 5-6 through real clients' admin calls:
confluent-kafka's AdminClient (librdkafka 2.16) and kafka-python's
KafkaAdminClient."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster

ck = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")
kafka_admin = pytest.importorskip("kafka.admin")
TopicPartition = pytest.importorskip("kafka").TopicPartition


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=2) as c:
        c.create_topic("adm-a", 3)
        c.create_topic("adm-b", 1)
        yield c


@pytest.fixture
def confluent(cluster: Cluster) -> Any:
    return admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


@pytest.fixture
def kp(cluster: Cluster) -> Iterator[Any]:
    client = kafka_admin.KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000
    )
    yield client
    client.close()


TOPIC_OPS = {
    "READ",
    "WRITE",
    "CREATE",
    "DESCRIBE",
    "DELETE",
    "ALTER",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
}
CLUSTER_OPS = {
    "CREATE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
    "ALTER",
    "DESCRIBE",
}


def test_confluent_describe_cluster_and_topics_with_operations(
    cluster: Cluster, confluent: Any
) -> None:
    described = confluent.describe_cluster(
        include_authorized_operations=True, request_timeout=10
    ).result(10)
    assert {op.name for op in described.authorized_operations} == CLUSTER_OPS
    futures = confluent.describe_topics(
        ck.TopicCollection(["adm-a", "adm-b"]),
        include_authorized_operations=True,
        request_timeout=10,
    )
    a = futures["adm-a"].result(10)
    assert [p.id for p in a.partitions] == [0, 1, 2]
    assert [p.leader.id for p in a.partitions] == cluster.state.topics["adm-a"].leaders
    assert a.topic_id is not None
    assert {op.name for op in a.authorized_operations} == TOPIC_OPS
    # librdkafka 2.16 describes topics with Metadata v10+ (not KIP-966's API)
    assert 3 in {r.api_key for r in cluster.requests.filter()}


def test_confluent_elect_leaders_not_needed(confluent: Any) -> None:
    tp = ck.TopicPartition("adm-a", 0)
    result = confluent.elect_leaders(ck.ElectionType.PREFERRED, [tp]).result(10)
    error = result[tp]
    assert error is not None and error.code() == ck.KafkaError.ELECTION_NOT_NEEDED


def _alter(
    confluent: Any, kind: Any, name: str, config: str, value: str, operation: Any
) -> None:
    """One IncrementalAlterConfigs ``operation`` of ``config`` to ``value`` on
    resource ``name`` of ``kind``, through confluent-kafka's AdminClient."""
    entry = admin.ConfigEntry(config, value, incremental_operation=operation)
    resource = admin.ConfigResource(kind, name, incremental_configs=[entry])
    for future in confluent.incremental_alter_configs([resource]).values():
        future.result(10)


def test_confluent_group_configs(cluster: Cluster, confluent: Any) -> None:
    group, heartbeat = admin.ConfigResource.Type.GROUP, "consumer.heartbeat.interval.ms"
    _alter(
        confluent, group, "adm-group", heartbeat, "6000", admin.AlterConfigOpType.SET
    )
    assert (
        cluster.state.group_config("adm-group", "consumer.heartbeat.interval.ms")
        == "6000"
    )
    described = confluent.describe_configs(
        [admin.ConfigResource(admin.ConfigResource.Type.GROUP, "adm-group")]
    )
    (configs,) = [f.result(10) for f in described.values()]
    assert configs["consumer.heartbeat.interval.ms"].value == "6000"
    assert configs["consumer.session.timeout.ms"].value == "45000"


def test_confluent_append_subtract(cluster: Cluster, confluent: Any) -> None:
    cluster.create_topic("adm-list", 1)
    topic, append = admin.ConfigResource.Type.TOPIC, admin.AlterConfigOpType.APPEND
    _alter(confluent, topic, "adm-list", "cleanup.policy", "compact", append)
    assert (
        cluster.state.topics["adm-list"].configs["cleanup.policy"] == "delete,compact"
    )


def test_kafka_python_admin_calls(cluster: Cluster, kp: Any) -> None:
    dirs = kp.describe_log_dirs()
    assert sorted(d["broker"] for d in dirs) == sorted(cluster.state.node_ids)
    for d in dirs:
        (log_dir,) = d["log_dirs"]
        assert log_dir["error_code"] == 0 and log_dir["total_bytes"] > 0
        held = {
            (t["name"], p["partition_index"])
            for t in log_dir["topics"]
            for p in t["partitions"]
        }
        assert ("adm-a", 0) in held or cluster.state.leader("adm-a", 0) != d["broker"]
    assert not kp.list_partition_reassignments()
    features = kp.describe_features()
    assert features["metadata.version"]["finalized"] == (25, 25)
    assert features["group.version"]["supported"] == (0, 1)
    target = next(
        n for n in cluster.state.node_ids if n != cluster.state.leader("adm-b", 0)
    )
    kp.alter_partition_reassignments({TopicPartition("adm-b", 0): [target]})
    assert cluster.state.leader("adm-b", 0) == target
    described = kp.describe_topic_partitions(["adm-a"])
    (topic,) = described["topics"]
    assert [p["leader_id"] for p in topic["partitions"]] == cluster.state.topics[
        "adm-a"
    ].leaders
    assert topic["topic_authorized_operations"] == 3576  # bits 3-8, 10, 11
