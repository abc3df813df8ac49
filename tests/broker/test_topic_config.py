"""Every Kafka 4.x topic config: accepted with Kafka's validation, stored, described."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from kproto.broker import Cluster, TopicError
from kproto.broker.topic_config import (
    SUBJECT_NAME_STRATEGIES,
    TOPIC_CONFIGS,
    TOPIC_NAME_STRATEGY,
    ConfigType,
    TopicConfig,
    TopicConfigError,
    attribute_name,
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


def test_the_typed_config_has_one_attribute_per_topic_config() -> None:
    fields = {f.name for f in attrs.fields(TopicConfig)} - {"overridden"}
    assert fields == {attribute_name(n) for n in TOPIC_CONFIGS}
    defaults = TopicConfig()
    for name, d in TOPIC_CONFIGS.items():
        assert defaults.string(name) == d.default, name


def test_configs_parse_once_into_kafkas_types() -> None:
    config = TopicConfig.from_properties(
        {
            "cleanup.policy": "compact, delete",
            "min.cleanable.dirty.ratio": "0.25",
            "preallocate": "TRUE",
            "retention.ms": " 1000 ",
            "internal.segment.bytes": "2000",
            "follower.replication.throttled.replicas": "0:1,1:2",
        }
    )
    assert config.cleanup_policy == ("compact", "delete")
    assert config.compact and config.delete
    assert config.min_cleanable_dirty_ratio == 0.25 and config.preallocate is True
    assert config.retention_ms == 1000 and config.retention_overridden
    assert config.segment_size == 2000 and config.segment_bytes == 1073741824
    assert config.follower_replication_throttled_replicas == ("0:1", "1:2")
    assert config.string("cleanup.policy") == "compact,delete"
    assert config.overridden >= {"cleanup.policy", "retention.ms"}
    assert not TopicConfig().retention_overridden


def test_confluent_schema_validation_configs_are_declared() -> None:
    assert not TopicConfig().confluent_value_schema_validation
    assert TopicConfig().confluent_key_subject_name_strategy == TOPIC_NAME_STRATEGY
    config = TopicConfig.from_properties(
        {
            "confluent.value.schema.validation": "true",
            "confluent.key.schema.validation": "false",
            "confluent.value.subject.name.strategy": SUBJECT_NAME_STRATEGIES[1],
        }
    )
    assert config.confluent_value_schema_validation
    assert config.confluent_value_subject_name_strategy.endswith("RecordNameStrategy")
    with pytest.raises(TopicConfigError, match="String must be one of"):
        TopicConfig.from_properties(
            {"confluent.key.subject.name.strategy": "MyStrategy"}
        )


def test_alter_reparses_and_the_log_follows(cluster: Cluster) -> None:
    info = cluster.create_topic("typed", 1, configs={"segment.bytes": "2097152"})
    assert info.topic_config.segment_size == 2097152
    cluster.alter_topic_configs(
        "typed", {"internal.segment.bytes": "4096", "segment.bytes": None}
    )
    assert info.topic_config.segment_size == 4096
    assert cluster.state.partition_log("typed", 0).segment_bytes == 4096  # type: ignore[union-attr]
    assert info.config("segment.bytes") == str(cluster.state.config.log_segment_bytes)
    with pytest.raises(TopicError) as err:
        cluster.alter_topic_configs("typed", {"retention.ms": "soon"})
    assert err.value.error_code == ErrorCode.INVALID_CONFIG
    assert info.topic_config.retention_ms == 604800000
