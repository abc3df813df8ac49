"""Dynamic broker configs (issue 27): AlterConfigs and IncrementalAlterConfigs on
BROKER resources, described with Kafka's sources and synonyms, through
confluent-kafka's and kafka-python's admin clients and a raw request for the
cluster-wide default (``""``, which neither client sends)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from tests.broker.wire import describe_configs, incremental_alter_configs

ck = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")
kafka_admin = pytest.importorskip("kafka.admin")

SOURCE = admin.ConfigSource
SET, DELETE = admin.AlterConfigOpType.SET, admin.AlterConfigOpType.DELETE


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(
        nodes=2, data_dir=tmp_path, config={"message.max.bytes": 2000000}
    ) as c:
        yield c


def client(cluster: Cluster) -> Any:
    return admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def alter(a: Any, node: str, *changes: tuple[str, str | None, Any]) -> None:
    resource = admin.ConfigResource(
        "broker",
        node,
        incremental_configs=[
            admin.ConfigEntry(name, value, incremental_operation=op)
            for name, value, op in changes
        ],
    )
    a.incremental_alter_configs([resource])[resource].result(10)


def describe(a: Any, node: str) -> dict[str, Any]:
    resource = admin.ConfigResource("broker", node)
    described: dict[str, Any] = a.describe_configs([resource])[resource].result(10)
    return described


def test_describe_shows_static_default_and_read_only(cluster: Cluster) -> None:
    described = describe(client(cluster), "1")
    static = described["message.max.bytes"]
    assert (static.value, static.source) == (
        "2000000",
        SOURCE.STATIC_BROKER_CONFIG.value,
    )
    assert not static.is_read_only and not static.is_default
    fixed = described["num.partitions"]
    assert fixed.is_read_only and fixed.is_default
    assert fixed.source == SOURCE.DEFAULT_CONFIG.value
    assert described["node.id"].value == "1"  # the default; nodes count from it


def test_incremental_set_and_delete_take_effect(cluster: Cluster) -> None:
    a = client(cluster)
    alter(
        a,
        "1",
        ("log.retention.ms", "60000", SET),
        ("log.cleanup.policy", "compact", SET),
    )
    entry = describe(a, "1")["log.retention.ms"]
    assert (entry.value, entry.source) == ("60000", SOURCE.DYNAMIC_BROKER_CONFIG.value)
    info = cluster.create_topic("after")
    assert info.topic_config.retention_ms == 60000 and info.topic_config.compact
    res = admin.ConfigResource("topic", "after")
    topic_entry = a.describe_configs([res])[res].result(10)["retention.ms"]
    assert topic_entry.value == "60000"
    assert topic_entry.source == SOURCE.DYNAMIC_BROKER_CONFIG.value
    alter(
        a, "1", ("log.retention.ms", None, DELETE), ("log.cleanup.policy", None, DELETE)
    )
    assert cluster.state.topics["after"].topic_config.retention_ms == 604800000
    assert not cluster.state.topics["after"].topic_config.compact
    assert describe(a, "1")["log.retention.ms"].source == SOURCE.DEFAULT_CONFIG.value


def test_read_only_unknown_and_bad_values_are_refused_as_kafka(
    cluster: Cluster,
) -> None:
    a = client(cluster)
    refused = {
        ("num.partitions", "6"): "Cannot update these configs dynamically: "
        "Set(num.partitions)",
        ("no.such.config", "1"): "Unknown Dynamic Configuration 'no.such.config'.",
        ("log.retention.ms", "-7"): "Invalid value -7 for configuration "
        "log.retention.ms: Value must be at least -1",
    }
    for (name, value), message in refused.items():
        with pytest.raises(ck.KafkaException) as err:
            alter(a, "1", (name, value, SET))
        error = err.value.args[0]
        assert error.code() == ck.KafkaError.INVALID_CONFIG, name
        assert error.str() == message
    assert cluster.state.dynamic.broker_configs == {}
    assert cluster.state.config.num_partitions == 1


def test_a_new_default_conflicting_with_a_topic_is_refused(cluster: Cluster) -> None:
    cluster.create_topic("lagged", 1, configs={"max.compaction.lag.ms": "100"})
    with pytest.raises(ck.KafkaException, match="min.compaction.lag.ms"):
        alter(client(cluster), "1", ("log.cleaner.min.compaction.lag.ms", "500", SET))
    assert cluster.state.config.log_cleaner_min_compaction_lag_ms == 0


def test_validate_only_changes_nothing(cluster: Cluster) -> None:
    resource = admin.ConfigResource(
        "broker",
        "1",
        incremental_configs=[
            admin.ConfigEntry("log.retention.bytes", "4096", incremental_operation=SET)
        ],
    )
    a = client(cluster)
    future = a.incremental_alter_configs([resource], validate_only=True)
    future[resource].result(10)
    assert cluster.state.config.log_retention_bytes == -1


def _raw_alter(cluster: Cluster, name: str, value: str | None) -> Any:
    info = cluster.state.nodes[cluster.state.node_ids[0]]
    with Connection(info.host, info.port, timeout_s=30) as conn:
        conn.negotiate()
        result = incremental_alter_configs(conn, 4, "", (name, 0, value))
        described = describe_configs(conn, (4, ""), include_synonyms=True)
    return result, described.results[0]


def test_cluster_wide_default_and_per_broker_layers(cluster: Cluster) -> None:
    result, described = _raw_alter(cluster, "log.retention.bytes", "8192")
    assert result.error_code == ErrorCode.NONE
    assert [(c.name, c.value, c.config_source) for c in described.configs] == [
        ("log.retention.bytes", "8192", SOURCE.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    ]
    assert cluster.state.config.log_retention_bytes == 8192
    a = client(cluster)
    alter(a, "1", ("log.retention.bytes", "4096", SET))
    entry = describe(a, "1")["log.retention.bytes"]
    assert entry.source == SOURCE.DYNAMIC_BROKER_CONFIG.value
    assert cluster.state.config.log_retention_bytes == 4096  # the controller's
    assert describe(a, "2")["log.retention.bytes"].source == (
        SOURCE.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    )
    result, _ = _raw_alter(cluster, "num.partitions", "3")
    assert result.error_code == ErrorCode.INVALID_CONFIG


def test_dynamic_configs_survive_a_restart(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path) as first:
        alter(client(first), "1", ("log.cleaner.backoff.ms", "250", SET))
        assert first.cleaner.backoff_ms == 250
    with Cluster(data_dir=tmp_path) as again:
        assert again.state.config.log_cleaner_backoff_ms == 250
        assert again.cleaner.backoff_ms == 250
        assert describe(client(again), "1")["log.cleaner.backoff.ms"].source == (
            SOURCE.DYNAMIC_BROKER_CONFIG.value
        )


def test_max_connections_per_ip_changes_at_run_time(cluster: Cluster) -> None:
    alter(client(cluster), "2", ("max.connections.per.ip", "1", SET))
    info = cluster.state.nodes[2]
    with socket.create_connection((info.host, info.port), timeout=10):
        second = socket.create_connection((info.host, info.port), timeout=10)
        with second:
            assert second.recv(1) == b""  # closed at accept
    assert cluster.servers[0].connection_quotas.max_connections_per_ip is None


def test_kafka_python_alters_and_describes_a_broker(cluster: Cluster) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        changed = ConfigResource(
            ConfigResourceType.BROKER, "1", configs={"log.retention.ms": "7000"}
        )
        assert a.alter_configs([changed]) == {"broker": {"1": "OK"}}
        described = a.describe_configs(
            [
                ConfigResource(
                    ConfigResourceType.BROKER, "1", configs={"log.retention.ms": None}
                )
            ],
            include_synonyms=True,
        )["broker"]["1"]["log.retention.ms"]
        assert described["config_source"] == "DYNAMIC_BROKER_CONFIG"
        assert [s["source"] for s in described["synonyms"]] == [
            "DYNAMIC_BROKER_CONFIG",
            "DEFAULT_CONFIG",
        ]
        fixed = ConfigResource(
            ConfigResourceType.BROKER, "1", configs={"num.partitions": "9"}
        )
        result = a.alter_configs([fixed], raise_on_unknown=False)["broker"]["1"]
        assert "Cannot update these configs dynamically" in str(result)
    finally:
        a.close()
    assert cluster.state.config.log_retention_ms == 7000
