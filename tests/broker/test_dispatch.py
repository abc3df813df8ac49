"""The API versions a cluster serves, narrowed or removed at run time
(``Cluster.set_api_version``, :class:`kproto.broker.dispatch.ApiVersionTable`):
reflected in ApiVersions and enforced by dispatch, proved with kproto's connection,
confluent-kafka and kafka-python."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from kafka import KafkaProducer

from kproto.broker import Cluster
from kproto.broker.dispatch import SERVED_APIS, ApiVersionTable
from kproto.errors import ErrorCode
from kproto.framing import ConnectionClosedError
from kproto.index import ApiKey, request_type
from kproto.meta import build_entity
from kproto.schema.api_versions.v0 import ApiVersionsResponse
from kproto.serial import entity_reader
from tests.broker.conftest import cluster_with_topic
from tests.broker.wire import connect


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    yield from cluster_with_topic("t", 1, nodes=1)


def test_narrowed_versions_are_advertised_and_enforced(cluster: Cluster) -> None:
    cluster.set_api_version(ApiKey.METADATA, 4, 9)
    assert cluster.api_version_range(ApiKey.METADATA) == (4, 9)
    conn = connect(cluster)
    assert conn.broker_api_versions is not None
    assert conn.broker_api_versions[ApiKey.METADATA] == (4, 9)
    assert conn.versions[ApiKey.METADATA] == 9
    assert conn.request(ApiKey.METADATA, topics=None).brokers[0].node_id == 1
    # a version no longer served closes the connection, as Kafka's SocketServer
    newer = build_entity(request_type(ApiKey.METADATA, 12), {"topics": None})
    with pytest.raises(ConnectionClosedError):
        conn.send(newer)
    conn.close()
    cluster.reset_api_versions()
    conn = connect(cluster)
    assert conn.broker_api_versions is not None
    assert conn.broker_api_versions[ApiKey.METADATA] == SERVED_APIS[ApiKey.METADATA]
    assert conn.send(newer).brokers[0].node_id == 1
    conn.close()


def test_a_removed_api_disappears_from_api_versions(cluster: Cluster) -> None:
    cluster.set_api_version(ApiKey.DESCRIBE_CLUSTER, -1, -1)
    assert cluster.api_version_range(ApiKey.DESCRIBE_CLUSTER) is None
    conn = connect(cluster)
    assert conn.broker_api_versions is not None
    assert ApiKey.DESCRIBE_CLUSTER not in conn.broker_api_versions
    request = build_entity(request_type(ApiKey.DESCRIBE_CLUSTER, 0), {})
    with pytest.raises(ConnectionClosedError):
        conn.send(request)
    conn.close()


def test_librdkafka_produces_at_the_narrowed_version(cluster: Cluster) -> None:
    cluster.set_api_version(ApiKey.PRODUCE, 3, 7)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce("t", b"v")
    assert producer.flush(10) == 0
    versions = {r.api_version for r in cluster.requests.filter(api_key=ApiKey.PRODUCE)}
    assert versions == {7}
    assert [r.value for r in cluster.records("t", 0)] == [b"v"]


def test_kafka_python_produces_at_the_narrowed_version(cluster: Cluster) -> None:
    cluster.set_api_version(ApiKey.PRODUCE, 3, 5)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        producer.send("t", b"v").get(timeout=10)
    finally:
        producer.close(timeout=5)
    versions = {r.api_version for r in cluster.requests.filter(api_key=ApiKey.PRODUCE)}
    assert versions == {5}


def test_bad_ranges_are_refused() -> None:
    table = ApiVersionTable()
    high = SERVED_APIS[ApiKey.FETCH][1]
    with pytest.raises(ValueError, match="FETCH versions 0..99"):
        table.set(ApiKey.FETCH, 0, 99)
    with pytest.raises(ValueError, match="FETCH versions 5..4"):
        table.set(ApiKey.FETCH, 5, 4)
    with pytest.raises(ValueError, match="not served"):
        table.set(ApiKey.LEADER_AND_ISR, 0, 1)
    table.set(ApiKey.FETCH, 4, high - 1)
    assert (ApiKey.FETCH, high) not in table.routes
    assert (ApiKey.FETCH, high - 1) in table.routes
    table.reset()
    assert (ApiKey.FETCH, high) in table.routes


def test_a_too_new_api_versions_lists_the_narrowed_versions(cluster: Cluster) -> None:
    from tests.broker.test_bad_input import connect as raw_connect
    from tests.broker.test_bad_input import frame, read_frame

    cluster.set_api_version(ApiKey.METADATA, 1, 4)
    with raw_connect(cluster) as s:
        s.sendall(frame(ApiKey.API_VERSIONS, 99, 42))
        payload = read_frame(s)
    body = entity_reader(ApiVersionsResponse)(io.BytesIO(payload[4:]))
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert versions[ApiKey.METADATA] == (1, 4)


def test_api_versions_from_config() -> None:
    config = {"kproto.api.versions": "produce:3-7,DESCRIBE_CLUSTER:none"}
    with Cluster(nodes=1, config=config) as cluster:
        assert cluster.api_version_range(ApiKey.PRODUCE) == (3, 7)
        assert cluster.api_version_range(ApiKey.DESCRIBE_CLUSTER) is None
        cluster.create_topic("t", 1)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        producer.produce("t", b"v")
        assert producer.flush(10) == 0
        produced = cluster.request_log(api_key=ApiKey.PRODUCE)
        assert {r.api_version for r in produced} == {7}
    with pytest.raises(ValueError, match="FETCH versions 0..99"):
        Cluster(nodes=1, config={"kproto.api.versions": "fetch:0-99"})


def test_look_like_kafka_3_7_from_a_recorded_table(cluster: Cluster) -> None:
    # kafka-python records what each Kafka release's ApiVersions listed
    from kafka.protocol.broker_version_data import BROKER_API_VERSIONS

    release = BROKER_API_VERSIONS[(3, 7)]
    unserved = cluster.set_api_versions(release)
    assert ApiKey.LEADER_AND_ISR in unserved  # broker-to-broker: not served
    conn = connect(cluster)
    assert conn.broker_api_versions is not None
    advertised = conn.broker_api_versions
    assert advertised[ApiKey.PRODUCE] == release[ApiKey.PRODUCE] == (0, 10)
    assert release[ApiKey.FETCH] == (0, 16)
    assert advertised[ApiKey.FETCH] == (4, 16)  # cut to what kproto serves
    assert advertised[ApiKey.METADATA] == (0, 12)
    assert ApiKey.SHARE_FETCH not in advertised  # no share groups in 3.7
    assert set(advertised) <= set(release)
    conn.close()
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce("t", b"v")
    assert producer.flush(10) == 0
    versions = {r.api_version for r in cluster.requests.filter(api_key=ApiKey.PRODUCE)}
    assert max(versions) <= 10
