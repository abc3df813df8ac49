"""The typed broker configuration: Kafka's property names, types, ranges and
messages; ``Cluster(config=...)``, the old keyword arguments and the pytest marker
sharing it; ``node.id`` through confluent-kafka."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import attrs
import pytest

from kproto.broker import Cluster
from kproto.broker.broker_config import (
    ARGUMENTS,
    BROKER_CONFIGS,
    BrokerConfig,
    BrokerConfigError,
)
from kproto.broker.config_docs import config_table
from kproto.broker.pytest_plugin import cluster_kwargs
from kproto.broker.topic_config import TOPIC_CONFIGS, TopicConfig, attribute_name

ck = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")

#: Cluster keyword arguments that are not broker properties (objects, layout).
NOT_PROPERTIES = {
    "nodes",
    "data_dir",
    "config",
    "port",
    "users",
    "ssl_context",
    "default_quotas",
    "share_configs",
    "schema_registry",  # a second listener (Confluent runs it as its own server)
    "schema_registry_port",
    "transaction_version",  # a feature level (UpdateFeatures), not a property
}


def test_every_definition_is_an_attribute_and_parses_its_default() -> None:
    fields = {f.name for f in attrs.fields(BrokerConfig)} - {"explicit"}
    assert fields == {attribute_name(n) for n in BROKER_CONFIGS}
    defaults = BrokerConfig()
    for name, d in BROKER_CONFIGS.items():
        assert d.parse(d.definition.default) == defaults.value(name), name
        assert defaults.string(name) == d.definition.default or (
            d.definition.default == "" and defaults.string(name) == ""
        ), name
        assert d.definition.documentation, name
        if d.topic_config is not None:
            assert d.topic_config in TOPIC_CONFIGS, name
            assert TOPIC_CONFIGS[
                d.topic_config
            ].type is d.definition.type or d.definition.type.name in (
                "INT",
                "LONG",
            ), name


def test_every_cluster_argument_maps_onto_one_property() -> None:
    params = set(inspect.signature(Cluster).parameters)
    assert set(ARGUMENTS) <= params
    assert params - set(ARGUMENTS) == NOT_PROPERTIES
    assert len(set(ARGUMENTS.values())) == len(ARGUMENTS)


BAD: list[tuple[str, object, str]] = [
    ("node.id", "-1", "Value must be at least 0"),
    ("num.partitions", "0", "Value must be at least 1"),
    ("num.partitions", True, "Expected value of type INT"),
    ("num.partitions", "2147483648", "Not a number of type INT"),
    ("auto.create.topics.enable", "yes", "Expected value to be either true or false"),
    ("log.cleanup.policy", "compact,shred", "String must be one of: compact, delete"),
    ("log.cleaner.min.cleanable.ratio", 1.5, "Value must be no more than 1"),
    ("group.consumer.migration.policy", "sideways", "case insensitive"),
    ("group.consumer.assignors", "", "Empty list is not allowed"),
    ("log.message.timestamp.type", "createtime", "String must be one of"),
    ("max.connections.per.ip", -1, "Value must be at least 0"),
    ("sasl.enabled.mechanisms", 7, "Expected a comma separated list"),
]


@pytest.mark.parametrize(("name", "value", "rule"), BAD)
def test_bad_values_name_key_value_and_rule(
    name: str, value: object, rule: str
) -> None:
    with pytest.raises(BrokerConfigError) as err:
        BrokerConfig.from_properties({name: value})
    assert isinstance(err.value, ValueError)
    assert (err.value.key, err.value.value) == (name, value)
    assert rule in err.value.rule
    assert str(err.value).startswith(f"Invalid value {value} for configuration {name}")
    with pytest.raises(BrokerConfigError, match=name):
        Cluster(config={name: value})


def test_unknown_properties_are_refused_by_name() -> None:
    with pytest.raises(BrokerConfigError) as err:
        Cluster(config={"num.partition": 4})
    assert err.value.key == "num.partition"
    assert "Unknown broker config num.partition" in str(err.value)


def test_strings_and_python_values_parse_alike() -> None:
    as_strings = BrokerConfig.from_properties(
        {
            "num.partitions": "4",
            "auto.create.topics.enable": "FALSE",
            "group.consumer.assignors": "range, uniform",
            "log.cleaner.min.cleanable.ratio": "0.25",
        }
    )
    as_values = BrokerConfig.from_properties(
        {
            "num.partitions": 4,
            "auto.create.topics.enable": False,
            "group.consumer.assignors": ["range", "uniform"],
            "log.cleaner.min.cleanable.ratio": 0.25,
        }
    )
    assert as_strings == as_values
    assert as_values.group_consumer_assignors == ("range", "uniform")
    assert as_values.explicit == {
        "num.partitions",
        "auto.create.topics.enable",
        "group.consumer.assignors",
        "log.cleaner.min.cleanable.ratio",
    }


def test_keyword_arguments_and_config_are_one_configuration(tmp_path: Path) -> None:
    # made, not started: an explicit data_dir leaves nothing behind
    old = Cluster(
        data_dir=tmp_path, num_partitions=3, segment_bytes=600, acls_enabled=True
    )
    new = Cluster(
        data_dir=tmp_path,
        config={
            "num.partitions": 3,
            "log.segment.bytes": 600,
            "authorizer.class.name": (
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
            ),
        },
    )
    assert old.config == new.config
    assert old.state.config.num_partitions == new.state.config.num_partitions == 3
    assert new.state.config.log_segment_bytes == 600 and new.security.acls is not None
    with pytest.raises(BrokerConfigError, match="num_partitions=") as err:
        Cluster(num_partitions=2, config={"num.partitions": 3})
    assert err.value.key == "num.partitions"


def test_broker_log_properties_are_the_topics_defaults() -> None:
    config = BrokerConfig.from_properties(
        {"log.retention.ms": "1000", "log.cleanup.policy": "compact,delete"}
    )
    defaults = config.topic_defaults()
    assert defaults.retention_ms == 1000 and defaults.compact and defaults.delete
    assert defaults.segment_bytes == 16 * 1024 * 1024  # kproto's log.segment.bytes
    assert defaults.overridden == {"retention.ms", "cleanup.policy"}
    topic = TopicConfig.from_properties({"retention.ms": "5"}, defaults)
    assert (topic.retention_ms, topic.cleanup_policy) == (5, ("compact", "delete"))


def test_topics_take_the_brokers_defaults_and_describe_them() -> None:
    with Cluster(
        config={"log.retention.ms": 1000, "log.cleaner.min.cleanable.ratio": "0.2"}
    ) as cluster:
        info = cluster.create_topic("inherits")
        assert info.topic_config.retention_ms == 1000
        assert info.topic_config.min_cleanable_dirty_ratio == 0.2
        assert info.topic_config.retention_overridden
        a = admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        res = admin.ConfigResource("topic", "inherits")
        described = a.describe_configs([res])[res].result(10)
        retention = described["retention.ms"]
        assert retention.value == "1000"
        assert retention.source == admin.ConfigSource.STATIC_BROKER_CONFIG.value
        assert "log.retention.ms" in retention.synonyms
        assert described["retention.bytes"].source == (
            admin.ConfigSource.DEFAULT_CONFIG.value
        )


def test_pytest_marker_configs_reach_the_broker_config() -> None:
    out = cluster_kwargs({"configs": {"num.partitions": "2", "node.id": "0"}})
    assert out == {"num_partitions": 2, "config": {"node.id": "0"}}
    with pytest.raises(pytest.UsageError, match="node.id") as err:
        cluster_kwargs({"configs": {"node.id": "-3"}})
    assert "Value must be at least 0" in str(err.value)


@pytest.mark.kafka_cluster(configs={"node.id": 0, "log.retention.bytes": 4096})
def test_the_marker_takes_any_broker_property(kafka_cluster: Cluster) -> None:
    assert kafka_cluster.state.node_ids == [0]
    assert kafka_cluster.config.log_retention_bytes == 4096


def _brokers(cluster: Cluster) -> dict[int, Any]:
    a = admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    return dict(a.list_topics(timeout=10).brokers)


def test_node_id_zero_as_kafkas_quickstart() -> None:
    with Cluster(nodes=1, config={"node.id": 0}) as cluster:
        assert list(_brokers(cluster)) == [0]
        a = admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        assert a.describe_cluster().result(10).controller.id == 0
        producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for i in range(5):
            producer.produce("quickstart", key=b"k%d" % i, value=b"v%d" % i)
        assert producer.flush(30) == 0
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "zero",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["quickstart"])
        got: list[bytes] = []
        try:
            for _ in range(100):
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
                if len(got) == 5:
                    break
            assert consumer.committed([ck.TopicPartition("quickstart", 0)], 10)
        finally:
            consumer.close()
        assert got == [b"v%d" % i for i in range(5)]
        assert cluster.state.leader("quickstart", 0) == 0


def test_nodes_are_numbered_from_node_id() -> None:
    with Cluster(nodes=3, config={"node.id": 5}) as cluster:
        assert sorted(_brokers(cluster)) == [5, 6, 7]
        info = cluster.create_topic("spread", 3)
        assert set(info.leaders) == {5, 6, 7}
    with Cluster(nodes=2) as default:  # as librdkafka's mock: from 1
        assert sorted(_brokers(default)) == [1, 2]
    with pytest.raises(BrokerConfigError, match="node.id"):
        Cluster(nodes=2, config={"node.id": 2**31 - 1})


def test_the_documentation_table_covers_every_property() -> None:
    rows = list(config_table())
    assert [r[0] for r in rows] == list(BROKER_CONFIGS)
    by_name = {r[0]: r for r in rows}
    assert by_name["num.partitions"][3] == "[1,...]"
    assert by_name["offsets.topic.num.partitions"][2] == "5 (Kafka: 50)"
    assert by_name["log.retention.ms"][4] == "cluster-wide"


def test_the_plugins_table_and_the_constants_agree_with_the_definitions() -> None:
    from kproto.broker.file_cache import DEFAULT_MAX_OPEN_FILES
    from kproto.broker.pytest_plugin import BROKER_CONFIGS as PLUGIN_TABLE
    from kproto.broker.state import DEFAULT_MAX_PARTITIONS
    from kproto.framing import DEFAULT_MAX_FRAME_BYTES

    for name, (argument, _) in PLUGIN_TABLE.items():
        if argument != "data_dir":  # log.dir(s): the layout, not a property
            assert ARGUMENTS[argument] == name
    defaults = BrokerConfig()
    assert defaults.kproto_max_partitions == DEFAULT_MAX_PARTITIONS
    assert defaults.kproto_max_open_files == DEFAULT_MAX_OPEN_FILES
    assert defaults.socket_request_max_bytes == DEFAULT_MAX_FRAME_BYTES


def test_log_dirs_is_the_data_directory(tmp_path: Path) -> None:
    with Cluster(config={"log.dirs": str(tmp_path / "logs")}) as cluster:
        cluster.create_topic("kept")
        assert cluster.data_dir == tmp_path / "logs"
    assert (tmp_path / "logs" / "kept-0").is_dir()  # an explicit directory stays
    with pytest.raises(BrokerConfigError, match="kproto keeps one log directory"):
        Cluster(config={"log.dirs": "/a,/b"})
    with pytest.raises(BrokerConfigError, match="data_dir="):
        Cluster(data_dir=tmp_path, config={"log.dirs": str(tmp_path)})


def test_share_configs_join_the_broker_config(tmp_path: Path) -> None:
    cluster = Cluster(
        data_dir=tmp_path,
        share_configs={
            "group.share.record.lock.duration.ms": 500,
            "share.auto.offset.reset": "earliest",
        },
    )
    assert cluster.config.group_share_record_lock_duration_ms == 500
    assert cluster.share.config.record_lock_duration_ms == 500
    assert cluster.share.config.auto_offset_reset == "earliest"
    other = Cluster(data_dir=tmp_path, config={"group.share.delivery.count.limit": "3"})
    assert other.share.config.delivery_count_limit == 3
    with pytest.raises(BrokerConfigError, match="share_configs="):
        Cluster(
            config={"group.share.delivery.count.limit": 3},
            share_configs={"group.share.delivery.count.limit": 4},
        )


def _set_group_config(cluster: Cluster, name: str, value: str) -> None:
    a = admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = admin.ConfigResource(
        admin.ConfigResource.Type.GROUP,
        "bounded",
        incremental_configs=[
            admin.ConfigEntry(
                name, value, incremental_operation=admin.AlterConfigOpType.SET
            )
        ],
    )
    a.incremental_alter_configs([resource])[resource].result(10)


def test_group_config_bounds_are_broker_properties() -> None:
    with Cluster() as kafkas:  # Kafka's bounds: 45 s .. 60 s
        with pytest.raises(ck.KafkaException) as err:
            _set_group_config(kafkas, "consumer.session.timeout.ms", "10000")
        assert err.value.args[0].code() == ck.KafkaError.INVALID_CONFIG
        assert "greater than or equal to 45000" in err.value.args[0].str()
    with Cluster(
        config={
            "group.consumer.min.session.timeout.ms": 6000,
            "group.consumer.min.heartbeat.interval.ms": "500",
        }
    ) as fast:
        _set_group_config(fast, "consumer.session.timeout.ms", "10000")
        assert (
            fast.state.group_config("bounded", "consumer.session.timeout.ms") == "10000"
        )
