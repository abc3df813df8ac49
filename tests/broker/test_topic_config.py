"""Every Kafka 4.x topic config: accepted with Kafka's validation, stored, described."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kproto.broker import Cluster, TopicError
from kproto.broker.topic_config import (
    TOPIC_CONFIGS,
    ConfigType,
    TopicConfigError,
    validate_topic_config,
    validate_topic_configs,
)
from kproto.errors import ErrorCode

ck = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")

#: the configs issue 14 found refused as "unknown topic config", and a few more
NAMED = {
    "min.cleanable.dirty.ratio": "0.1",
    "delete.retention.ms": "1000",
    "min.compaction.lag.ms": "10",
    "max.compaction.lag.ms": "100000",
    "segment.ms": "60000",
    "unclean.leader.election.enable": "true",
    "flush.messages": "1000",
    "index.interval.bytes": "8192",
    "preallocate": "false",
    "message.timestamp.before.max.ms": "86400000",
    "message.timestamp.after.max.ms": "86400000",
    "segment.jitter.ms": "5",
    "segment.index.bytes": "4096",
    "flush.ms": "1000",
    "file.delete.delay.ms": "0",
    "compression.type": "zstd",
    "compression.zstd.level": "-5",
    "compression.gzip.level": "-1",
    "compression.lz4.level": "12",
    "leader.replication.throttled.replicas": "0:1,1:2",
    "follower.replication.throttled.replicas": "*",
    "local.retention.ms": "-2",
    "remote.storage.enable": "false",
}

BAD = [
    ("min.cleanable.dirty.ratio", "1.5", "Value must be no more than 1"),
    ("min.cleanable.dirty.ratio", "half", "Not a number of type DOUBLE"),
    ("segment.ms", "0", "Value must be at least 1"),
    ("segment.bytes", "1000", "Value must be at least 1048576"),
    ("retention.ms", "-2", "Value must be at least -1"),
    ("max.message.bytes", "2147483648", "Not a number of type INT"),
    ("flush.messages", "9223372036854775808", "Not a number of type LONG"),
    ("preallocate", "yes", "Expected value to be either true or false"),
    ("cleanup.policy", "compact,shred", "String must be one of: compact, delete"),
    ("compression.type", "brotli", "String must be one of"),
    ("message.timestamp.type", "createtime", "String must be one of"),
    ("compression.gzip.level", "0", "Value must be at least 1"),
    ("compression.lz4.level", "18", "Value must be no more than 17"),
    ("leader.replication.throttled.replicas", "0-1", "[partitionId]:[brokerId]"),
    ("no.such.config", "1", "Unknown topic config name: no.such.config"),
]


def test_every_definition_parses_its_own_default() -> None:
    assert len(TOPIC_CONFIGS) >= 33
    for name, d in TOPIC_CONFIGS.items():
        if d.default:
            validate_topic_config(name, d.default)
        assert d.documentation and d.type is not ConfigType.UNKNOWN, name


@pytest.mark.parametrize(("name", "value", "reason"), BAD)
def test_bad_values_name_the_config(name: str, value: str, reason: str) -> None:
    with pytest.raises(TopicConfigError) as err:
        validate_topic_config(name, value)
    assert name in str(err.value) and reason in str(err.value)
    assert err.value.error_code == ErrorCode.INVALID_CONFIG


def test_compaction_lags_are_cross_checked() -> None:
    with pytest.raises(TopicConfigError, match="min.compaction.lag.ms"):
        validate_topic_configs(
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(nodes=1, data_dir=tmp_path_factory.mktemp("configs")) as c:
        yield c


def client(cluster: Cluster) -> object:
    return admin.AdminClient(
        {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 2}
    )


def test_confluent_creates_with_every_named_config_and_describes_them(
    cluster: Cluster,
) -> None:
    a = client(cluster)
    futures = a.create_topics([admin.NewTopic("named", 1, 1, config=NAMED)])
    assert futures["named"].result(10) is None
    res = admin.ConfigResource("topic", "named")
    described = a.describe_configs([res])[res].result(10)
    for name, value in NAMED.items():
        entry = described[name]
        assert entry.value == value, name
        assert entry.source == admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value, name
        assert not entry.is_default
    untouched = described["retention.bytes"]
    assert (untouched.value, untouched.source, untouched.is_default) == (
        "-1",
        admin.ConfigSource.DEFAULT_CONFIG.value,
        True,
    )
    assert set(described) >= set(NAMED) | {"cleanup.policy", "max.message.bytes"}
    assert "internal.segment.bytes" not in described  # internal: only when set


def test_confluent_bad_values_get_invalid_config_naming_it(cluster: Cluster) -> None:
    a = client(cluster)
    for i, (name, value, _) in enumerate(BAD):
        topic = f"bad{i}"
        futures = a.create_topics([admin.NewTopic(topic, 1, 1, config={name: value})])
        with pytest.raises(ck.KafkaException) as err:
            futures[topic].result(10)
        error = err.value.args[0]
        assert error.code() == ck.KafkaError.INVALID_CONFIG, (name, value)
        assert name in error.str(), error.str()
        assert topic not in cluster.state.topics
        assert not (cluster.data_dir / f"{topic}-0").exists()


def test_configs_are_stored_and_reopened(tmp_path: Path) -> None:
    with Cluster(nodes=1, data_dir=tmp_path) as c:
        c.create_topic("kept", 1, configs={"min.cleanable.dirty.ratio": "0.25"})
        with pytest.raises(TopicError) as err:
            c.create_topic("refused", 1, configs={"preallocate": "maybe"})
        assert err.value.error_code == ErrorCode.INVALID_CONFIG
    with Cluster(nodes=1, data_dir=tmp_path) as c:
        info = c.state.topics["kept"]
        assert info.config("min.cleanable.dirty.ratio") == "0.25"
        assert info.config("segment.ms") == "604800000"  # Kafka's default
        assert "refused" not in c.state.topics


def test_incremental_alter_validates_like_create(cluster: Cluster) -> None:
    a = client(cluster)
    a.create_topics([admin.NewTopic("alter", 1, 1)])["alter"].result(10)

    def alter(name: str, value: str) -> None:
        change = admin.ConfigResource(
            "topic",
            "alter",
            incremental_configs=[
                admin.ConfigEntry(
                    name, value, incremental_operation=admin.AlterConfigOpType.SET
                )
            ],
        )
        a.incremental_alter_configs([change])[change].result(10)

    alter("delete.retention.ms", "5")
    with pytest.raises(ck.KafkaException) as err:
        alter("delete.retention.ms", "-5")
    assert err.value.args[0].code() == ck.KafkaError.INVALID_CONFIG
    assert cluster.state.topics["alter"].config("delete.retention.ms") == "5"
