"""Each Kafka release's ApiVersions table (:mod:`kproto.kafka_releases`), cross-checked
against a second source: the ApiVersions responses of real brokers that kafka-python
recorded (``BROKER_API_VERSIONS``), and each KRaft 3.x table against the same
release's ZooKeeper-mode table."""

from __future__ import annotations

import itertools

import pytest
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS

from kproto.index import ApiKey, api_versions
from kproto.kafka_releases import (
    KAFKA_RELEASES,
    UnknownReleaseError,
    release_api_versions,
    release_name,
)

ZOOKEEPER = [name for name in KAFKA_RELEASES if name.endswith("-zk")]
KRAFT = [name for name in KAFKA_RELEASES if not name.endswith("-zk")]
TELEMETRY = {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY}


def _version(name: str) -> tuple[int, int]:
    major, minor = name.removesuffix("-zk").split(".")
    return int(major), int(minor)


def test_the_releases_covered() -> None:
    assert KRAFT == ["2.8"] + [f"3.{m}" for m in range(10)] + [
        f"4.{m}" for m in range(4)
    ]
    assert ZOOKEEPER == [f"2.{m}-zk" for m in range(9)] + [
        f"3.{m}-zk" for m in range(10)
    ]


@pytest.mark.parametrize("name", ZOOKEEPER)
def test_zookeeper_tables_equal_the_recorded_brokers(name: str) -> None:
    recorded = BROKER_API_VERSIONS[_version(name)]
    assert release_api_versions(name) == recorded


@pytest.mark.parametrize("name", ["4.0", "4.1", "4.2", "4.3"])
def test_kraft_4_tables_equal_the_recorded_brokers(name: str) -> None:
    recorded = BROKER_API_VERSIONS[_version(name)]
    assert release_api_versions(name) == recorded


@pytest.mark.parametrize("name", [n for n in KRAFT if n.startswith(("2.", "3."))])
def test_kraft_3_tables_agree_with_zookeeper_mode(name: str) -> None:
    kraft = release_api_versions(name)
    zookeeper = release_api_versions(f"{name}-zk")
    shared = set(kraft) & set(zookeeper)
    assert {k: kraft[k] for k in shared} == {k: zookeeper[k] for k in shared}
    # what only a KRaft broker lists: the quorum, unregistration, client
    # metrics resources, DescribeTopicPartitions, voters (and Envelope early on)
    assert set(kraft) - set(zookeeper) <= {
        ApiKey.DESCRIBE_QUORUM,
        ApiKey.ENVELOPE,
        ApiKey.UNREGISTER_BROKER,
        ApiKey.LIST_CONFIG_RESOURCES,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        ApiKey.ADD_RAFT_VOTER,
        ApiKey.REMOVE_RAFT_VOTER,
    }
    # a KRaft broker lists none of the ZooKeeper-era inter-broker APIs
    assert not set(kraft) & {
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.ALTER_PARTITION,
        ApiKey.ALLOCATE_PRODUCER_IDS,
    }


@pytest.mark.parametrize("names", [KRAFT, ZOOKEEPER], ids=["kraft", "zookeeper"])
def test_a_newer_release_never_lowers_a_max_version(names: list[str]) -> None:
    for older, newer in itertools.pairwise(names):
        before, after = release_api_versions(older), release_api_versions(newer)
        lowered = {
            k.name: (before[k], after[k])
            for k in set(before) & set(after)
            if after[k][1] < before[k][1]
        }
        assert not lowered, f"{older} -> {newer}: {lowered}"


@pytest.mark.parametrize("name", KAFKA_RELEASES)
def test_every_version_is_one_kproto_generates(name: str) -> None:
    for api_key, (low, high) in release_api_versions(name).items():
        known = api_versions(api_key)
        assert known.start <= low <= high < known.stop, (api_key.name, low, high)


def test_kafka_4_keeps_produce_v0_in_api_versions() -> None:
    # KAFKA-18659: 4.0 lists Produce v0-v2 for librdkafka, though it refuses them
    assert release_api_versions("4.0")[ApiKey.PRODUCE] == (0, 12)
    assert release_api_versions("4.0")[ApiKey.FETCH] == (4, 17)  # KIP-896


def test_kafka_3_7_as_kafka_python_and_franz_go_record_it() -> None:
    table = release_api_versions("3.7")
    assert table[ApiKey.PRODUCE] == (0, 10)
    assert table[ApiKey.FETCH] == (0, 16)
    assert table[ApiKey.API_VERSIONS] == (0, 3)
    assert table[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 0)
    assert ApiKey.SHARE_FETCH not in table
    assert ApiKey.CONSUMER_GROUP_DESCRIBE not in table  # 3.8


def test_client_telemetry_is_listed_from_3_7_on_kraft_only() -> None:
    assert not TELEMETRY & set(release_api_versions("3.7"))
    with_telemetry = release_api_versions("3.7", client_telemetry=True)
    assert {k: with_telemetry[k] for k in TELEMETRY} == dict.fromkeys(TELEMETRY, (0, 0))
    assert not TELEMETRY & set(release_api_versions("3.6", client_telemetry=True))
    assert not TELEMETRY & set(release_api_versions("3.9-zk", client_telemetry=True))


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("3.7", "3.7"),
        ("3.7.1", "3.7"),
        ("v3.7.0", "3.7"),
        (" 4.1 ", "4.1"),
        ("3.7-zk", "3.7-zk"),
        ("v3.7.2-zk", "3.7-zk"),
        ("03.07", "3.7"),
    ],
)
def test_release_names(given: str, name: str) -> None:
    assert release_name(given) == name


@pytest.mark.parametrize("given", ["3.10", "1.1", "2.7", "4.0-zk", "latest", "", "3"])
def test_an_unknown_release_lists_the_known_ones(given: str) -> None:
    with pytest.raises(UnknownReleaseError, match="known releases are 2.8, 3.0") as err:
        release_api_versions(given)
    assert isinstance(err.value, LookupError)
    assert "4.3" in str(err.value) and "3.9-zk" in str(err.value)
