"""A cluster that answers as one Kafka release would (``Cluster.emulate_version``,
the ``kproto.emulate.version`` config; franz-go kfake's ``--as-version``): its
ApiVersions lists that release's versions, seen by kproto's connection,
kafka-python (which probes) and confluent-kafka, and a newer request is refused as
that release refuses it."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer

from kproto.broker import Cluster
from kproto.broker.broker_config import BrokerConfigError
from kproto.broker.dispatch import SERVED_APIS
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.framing import ConnectionClosedError, encode_request
from kproto.index import ApiKey, request_type
from kproto.kafka_releases import UnknownReleaseError, release_api_versions
from kproto.meta import build_entity
from kproto.schema.api_versions.v0 import ApiVersionsResponse
from kproto.schema.api_versions.v4 import ApiVersionsRequest
from kproto.serial import entity_reader
from tests.broker.test_bad_input import connect as raw_connect
from tests.broker.test_bad_input import read_frame

KAFKA_3_7 = release_api_versions("3.7")
#: what kproto cannot serve of 3.7's list: the inter-broker WriteTxnMarkers, log
#: dirs, delegation tokens, the KRaft quorum and broker unregistration
UNSERVED_3_7 = {
    ApiKey.WRITE_TXN_MARKERS,
    ApiKey.ALTER_REPLICA_LOG_DIRS,
    ApiKey.CREATE_DELEGATION_TOKEN,
    ApiKey.RENEW_DELEGATION_TOKEN,
    ApiKey.EXPIRE_DELEGATION_TOKEN,
    ApiKey.DESCRIBE_DELEGATION_TOKEN,
    ApiKey.DESCRIBE_QUORUM,
    ApiKey.UNREGISTER_BROKER,
}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1) as c:
        c.create_topic("t", 1)
        assert set(c.emulate_version("3.7")) == UNSERVED_3_7
        yield c


def served_3_7() -> dict[ApiKey, tuple[int, int]]:
    """3.7's list as kproto serves it: its APIs kproto has, Fetch from v4."""
    return {
        k: (max(low, SERVED_APIS[k][0]), high)
        for k, (low, high) in KAFKA_3_7.items()
        if k not in UNSERVED_3_7
    }


def rdkafka_versions(cluster: Cluster) -> dict[ApiKey, set[int]]:
    seen: dict[ApiKey, set[int]] = {}
    for r in cluster.request_log():
        if r.client_id == "rdkafka":
            seen.setdefault(ApiKey(r.api_key), set()).add(r.api_version)
    return seen


def test_api_versions_lists_kafka_3_7(cluster: Cluster) -> None:
    conn = Connection(cluster.servers[0].host, cluster.servers[0].port, timeout_s=10)
    conn.negotiate()
    assert conn.broker_api_versions == served_3_7()
    assert conn.broker_api_versions[ApiKey.PRODUCE] == (0, 10)
    assert conn.broker_api_versions[ApiKey.FETCH] == (4, 16)
    assert conn.versions[ApiKey.METADATA] == 12
    assert conn.request(ApiKey.METADATA, topics=None).brokers[0].node_id == 1
    # Metadata v13 came with 4.0: 3.7 closes the connection
    newer = build_entity(request_type(ApiKey.METADATA, 13), {"topics": None})
    with pytest.raises(ConnectionClosedError):
        conn.send(newer)
    conn.close()


def test_a_newer_api_versions_gets_the_3_7_list(cluster: Cluster) -> None:
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    with raw_connect(cluster) as s:
        s.sendall(encode_request(request, correlation_id=42, client_id="t"))
        payload = read_frame(s)
    assert int.from_bytes(payload[:4], "big") == 42
    body = entity_reader(ApiVersionsResponse)(io.BytesIO(payload[4:]))
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    listed = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert listed == served_3_7()
    assert listed[ApiKey.API_VERSIONS] == (0, 3)


def test_kafka_python_probes_and_finds_3_7(cluster: Cluster) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        # it asked with ApiVersions v4, got UNSUPPORTED_VERSION, asked again at v3
        assert producer.config["api_version"] == (3, 7)
        producer.send("t", b"v").get(timeout=10)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(
        "t",
        bootstrap_servers=cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    try:
        assert [m.value for m in consumer] == [b"v"]
    finally:
        consumer.close()
    requests = cluster.request_log()
    assert {r.api_version for r in requests if r.api_key == ApiKey.API_VERSIONS} == {3}
    for r in requests:
        low, high = KAFKA_3_7[ApiKey(r.api_key)]
        assert low <= r.api_version <= high, (ApiKey(r.api_key).name, r.api_version)


def test_confluent_kafka_uses_3_7_versions(cluster: Cluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce("t", b"v")
    assert producer.flush(10) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "g",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["t"])
    try:
        message = None
        for _ in range(40):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.value() == b"v"
    finally:
        consumer.close()
    seen = rdkafka_versions(cluster)
    assert seen[ApiKey.METADATA] == {12}  # 13 against kproto's own list
    assert seen[ApiKey.PRODUCE] == {10}
    assert max(seen[ApiKey.FETCH]) <= 16
    # a stock 3.7 broker offers no client telemetry, so librdkafka asks none
    assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in seen
    for api_key, versions in seen.items():
        low, high = KAFKA_3_7[api_key]
        assert low <= min(versions) and max(versions) <= high, api_key.name


def test_client_telemetry_is_kept_on_request(cluster: Cluster) -> None:
    cluster.emulate_version("3.7", client_telemetry=True)
    assert cluster.api_version_range(ApiKey.PUSH_TELEMETRY) == (0, 0)
    cluster.emulate_version("3.6", client_telemetry=True)  # before KIP-714
    assert cluster.api_version_range(ApiKey.PUSH_TELEMETRY) is None


def test_an_older_release_and_back(cluster: Cluster) -> None:
    # 2.8 as an early-access KRaft broker: no transactions yet
    assert 27 in cluster.emulate_version("2.8")
    assert cluster.api_version_range(ApiKey.INIT_PRODUCER_ID) is None
    assert cluster.api_version_range(ApiKey.PRODUCE) == (0, 9)
    cluster.emulate_version("2.8-zk")
    assert cluster.api_version_range(ApiKey.INIT_PRODUCER_ID) == (0, 4)
    assert cluster.api_version_range(ApiKey.FETCH) == (4, 12)
    cluster.reset_api_versions()
    assert cluster.api_version_range(ApiKey.FETCH) == SERVED_APIS[ApiKey.FETCH]
    with pytest.raises(UnknownReleaseError, match="known releases are 2.8, 3.0"):
        cluster.emulate_version("3.10")
    assert cluster.api_version_range(ApiKey.FETCH) == SERVED_APIS[ApiKey.FETCH]


def test_emulate_version_from_config() -> None:
    config = {
        "kproto.emulate.version": "v3.7.1",
        "kproto.api.versions": "PRODUCE:3-9",  # applied on top of the release
    }
    with Cluster(nodes=1, config=config) as cluster:
        assert cluster.api_version_range(ApiKey.PRODUCE) == (3, 9)
        assert cluster.api_version_range(ApiKey.FETCH) == (4, 16)
        assert cluster.api_version_range(ApiKey.SHARE_FETCH) is None
    with pytest.raises(BrokerConfigError, match="unknown Kafka release '3.10'"):
        Cluster(nodes=1, config={"kproto.emulate.version": "3.10"})
