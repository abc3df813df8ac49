"""KIP-714 client metrics: subscriptions on CLIENT_METRICS config resources,
GetTelemetrySubscriptions / PushTelemetry, and what clients push, with
confluent-kafka (librdkafka pushes telemetry when offered) and kafka-python's admin
as the peers, and kproto's own Connection for the protocol's corners."""

from __future__ import annotations

import gzip
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from opentelemetry.proto.metrics.v1 import metrics_pb2

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.records import Compression
from kproto.records._codecs import compress
from tests.broker.groups.fakes import ManualClock
from tests.broker.wire import incremental_alter_configs
from tests.eventually import eventually


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(nodes=1, data_dir=tmp_path / "data") as c:
        yield c


@pytest.fixture
def clock(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> ManualClock:
    """The cluster's clock, moved by the test."""
    clock = ManualClock()
    monkeypatch.setattr(cluster.state, "now_ms", clock)
    return clock


@pytest.fixture
def admin(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


def subscribe(admin: KafkaAdminClient, name: str, **configs: str) -> None:
    resource = ConfigResource(
        ConfigResourceType.CLIENT_METRICS,
        name,
        configs={k.replace("_", "."): v for k, v in configs.items()},
    )
    # describe shows only a subscription's explicit configs (as Kafka), so
    # kafka-python's check for unknown names must be off
    result = admin.alter_configs([resource], raise_on_unknown=False)
    assert result == {"client_metrics": {name: "OK"}}


def connect(cluster: Cluster, client_id: str = "raw") -> Connection:
    info = cluster.state.nodes[cluster.state.node_ids[0]]
    conn = Connection(info.host, info.port, timeout_s=30, client_id=client_id)
    conn.negotiate()
    return conn


def metrics_data(*names: str) -> bytes:
    data = metrics_pb2.MetricsData()
    scope = data.resource_metrics.add().scope_metrics.add()
    for name in names:
        point = scope.metrics.add(name=name).gauge.data_points.add()
        point.as_double = 1.0
    return bytes(data.SerializeToString())


def produce_until_pushed(cluster: Cluster, client_id: str) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id}
    )
    for _ in range(10):
        producer.produce("metered", b"value")
    assert producer.flush(10) == 0
    eventually(
        lambda: producer.poll(0.05) or cluster.client_metrics(client_id=client_id),
        20.0,
        message="no PushTelemetry from librdkafka",
    )
    producer.flush(1)


def test_confluent_producer_pushes_the_subscribed_metrics(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    subscribe(
        admin,
        "producers",
        metrics="org.apache.kafka.producer.",
        interval_ms="200",
        match="client_id=tm-.*",
    )
    produce_until_pushed(cluster, "tm-producer")
    # the producer is gone: librdkafka sent its terminating push on destroy
    pushes = cluster.client_metrics(client_id="tm-producer")
    names = {n for p in pushes for n in p.metric_names}
    assert names and all(n.startswith("org.apache.kafka.producer.") for n in names)
    assert {p.compression for p in pushes} <= {Compression.ZSTD, Compression.LZ4}
    assert len({p.client_instance_id for p in pushes}) == 1
    assert eventually(
        lambda: any(p.terminating for p in cluster.client_metrics()), 10.0
    )


def test_a_client_no_subscription_matches_is_asked_for_nothing(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    subscribe(admin, "others", metrics="*", match="client_id=someone-else")
    with connect(cluster, "lonely") as conn:
        answer = conn.request(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, client_instance_id=uuid.UUID(int=0)
        )
    assert answer.error_code == ErrorCode.NONE
    assert answer.client_instance_id.int != 0
    assert list(answer.requested_metrics) == []
    assert answer.push_interval_ms == 300_000
    assert list(answer.accepted_compression_types) == [
        Compression.ZSTD,
        Compression.LZ4,
        Compression.GZIP,
        Compression.SNAPPY,
    ]


def test_push_telemetry_follows_kafkas_rules(
    cluster: Cluster, admin: KafkaAdminClient, clock: ManualClock
) -> None:
    subscribe(admin, "all", metrics="*", interval_ms="1000")
    with connect(cluster, "raw-client") as conn:
        get = conn.request(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, client_instance_id=uuid.UUID(int=0)
        )
        assert list(get.requested_metrics) == ["*"]
        assert get.push_interval_ms == 1000
        instance = get.client_instance_id

        def push(sub: int = get.subscription_id, **fields: object) -> int:
            defaults: dict[str, object] = {
                "client_instance_id": instance,
                "subscription_id": sub,
                "terminating": False,
                "compression_type": Compression.GZIP,
                "metrics": gzip.compress(metrics_data("m.one", "m.two")),
            }
            defaults.update(fields)
            return int(conn.request(ApiKey.PUSH_TELEMETRY, **defaults).error_code)

        # asking again before the interval is throttled
        again = conn.request(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, client_instance_id=instance
        )
        assert again.error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        # the first push after GetTelemetrySubscriptions is accepted at once
        assert push() == ErrorCode.NONE
        assert push() == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        clock.ms += 1000
        assert push(get.subscription_id + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        clock.ms += 1000
        assert push(metrics=b"not gzip") == ErrorCode.INVALID_RECORD
        clock.ms += 1000
        too_big = compress(Compression.ZSTD, b"\0" * (1024 * 1024 + 1))
        assert (
            push(compression_type=Compression.ZSTD, metrics=too_big)
            == ErrorCode.TELEMETRY_TOO_LARGE
        )
        clock.ms += 1000
        snappy = compress(Compression.SNAPPY, metrics_data("m.three"))
        assert push(compression_type=Compression.SNAPPY, metrics=snappy) == 0
        # a terminating push is taken inside the interval; nothing after it is
        assert push(terminating=True, metrics=b"", compression_type=0) == 0
        clock.ms += 1000
        assert push() == ErrorCode.INVALID_REQUEST
        reserved = conn.request(
            ApiKey.PUSH_TELEMETRY,
            client_instance_id=uuid.UUID(int=1),
            subscription_id=0,
            terminating=False,
            compression_type=0,
            metrics=b"",
        )
        assert reserved.error_code == ErrorCode.INVALID_REQUEST
    pushes = cluster.client_metrics(client_instance_id=instance)
    assert [p.metric_names for p in pushes] == [["m.one", "m.two"], ["m.three"]]
    assert [p.compression for p in pushes] == [Compression.GZIP, Compression.SNAPPY]
    assert all(p.client_id == "raw-client" for p in pushes)


def test_a_changed_subscription_changes_the_subscription_id(
    cluster: Cluster, admin: KafkaAdminClient, clock: ManualClock
) -> None:
    subscribe(admin, "s", metrics="a.", interval_ms="1000")
    with connect(cluster) as conn:
        first = conn.request(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, client_instance_id=uuid.UUID(int=0)
        )
        subscribe(admin, "s", metrics="b.", interval_ms="1000")
        answer = conn.request(
            ApiKey.PUSH_TELEMETRY,
            client_instance_id=first.client_instance_id,
            subscription_id=first.subscription_id,
            terminating=False,
            compression_type=0,
            metrics=metrics_data("a.x"),
        )
        assert answer.error_code == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        # after UNKNOWN_SUBSCRIPTION_ID the client may ask again at once
        second = conn.request(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
            client_instance_id=first.client_instance_id,
        )
    assert second.error_code == ErrorCode.NONE
    assert list(second.requested_metrics) == ["b."]
    assert second.subscription_id != first.subscription_id


def test_subscription_configs_are_validated_described_and_listed(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    bad = {
        "interval.ms": "99",
        "match": "client_software_name=librdkafka",
        "unknown.config": "1",
    }
    for key, value in bad.items():
        resource = ConfigResource(ConfigResourceType.CLIENT_METRICS, "x", {key: value})
        result = admin.alter_configs([resource], raise_on_unknown=False)
        assert "InvalidConfigurationError" in result["client_metrics"]["x"], key
    subscribe(admin, "sub", metrics="a.", interval_ms="5000")
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.CLIENT_METRICS, "sub")]
    )
    entries = described["client_metrics"]["sub"]
    assert {k: v["value"] for k, v in entries.items()} == {
        "metrics": "a.",
        "interval.ms": "5000",
    }
    assert {v["config_source"] for v in entries.values()} == {
        "DYNAMIC_CLIENT_METRICS_CONFIG"
    }
    listed = admin.list_config_resources()
    assert listed["client_metrics"] == ["sub"]
    # APPEND on the LIST config, through IncrementalAlterConfigs
    with connect(cluster) as conn:
        answer = incremental_alter_configs(conn, 16, "sub", ("metrics", 2, "b."))
        assert answer.error_code == ErrorCode.NONE
        v0 = conn.send(request_type(ApiKey.LIST_CONFIG_RESOURCES, 0)())
        assert [r.resource_name for r in v0.config_resources] == ["sub"]
    assert cluster.state.client_metrics.subscriptions["sub"].metrics == {"a.", "b."}


def test_subscriptions_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Cluster(nodes=1, data_dir=data) as first:
        admin = KafkaAdminClient(bootstrap_servers=first.bootstrap_servers)
        subscribe(admin, "kept", metrics="org.", interval_ms="2000")
        admin.close()
    with Cluster(nodes=1, data_dir=data) as second:
        kept = second.state.client_metrics.subscriptions["kept"]
        assert (kept.metrics, kept.interval_ms) == ({"org."}, 2000)
