"""Connection against librdkafka's mock cluster: negotiation, metadata, groups,
produce/fetch, and the error paths."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kproto.connection import (
    Connection,
    ConnectionClosedError,
    CorrelationIdMismatchError,
    FrameTooLargeError,
    KafkaConnectionError,
    NotNegotiatedError,
    RequestTimeoutError,
)
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.records import Compression, decode_batches, encode_batch
from kproto.schema.api_versions.v0 import ApiVersionsRequest, ApiVersionsResponse
from kproto.schema.metadata.v1 import MetadataRequest
from tests.live.mock_cluster import (
    Brokers,
    MockCluster,
    consumer_protocol_bytes,
    fetch_all,
    produce_batch,
)

pytestmark = pytest.mark.live


def _connect(cluster: MockCluster, node: int = 1, **kw: Any) -> Connection:
    host, port = cluster.brokers[node]
    return Connection(host, port, timeout_s=10.0, **kw)


def test_negotiate_falls_back_to_v0(cluster: MockCluster) -> None:
    with _connect(cluster) as conn:
        with pytest.raises(NotNegotiatedError):
            conn.version_for(ApiKey.METADATA)
        versions = conn.negotiate()
        # the mock supports ApiVersions v0-v2 only: v3 fails, v0 answers
        assert conn.api_versions_version == 0
        assert conn.broker_api_versions is not None
        assert conn.broker_api_versions[ApiKey.API_VERSIONS] == (0, 2)
        assert versions[ApiKey.METADATA] == conn.version_for(ApiKey.METADATA) == 13
        assert versions[ApiKey.API_VERSIONS] == 2
        for key, v in versions.items():
            lo, hi = conn.broker_api_versions[key]
            assert lo <= v <= hi
        with pytest.raises(NotNegotiatedError):
            conn.version_for(ApiKey.CREATE_TOPICS)  # the mock has none
        # the connection is still usable after the failed v3 probe
        assert isinstance(conn.send(ApiVersionsRequest()), ApiVersionsResponse)


def test_negotiate_caps(cluster: MockCluster) -> None:
    with _connect(cluster) as conn:
        versions = conn.negotiate(caps={ApiKey.JOIN_GROUP: 2, ApiKey.FETCH: -1})
        assert versions[ApiKey.JOIN_GROUP] == 2
        assert ApiKey.FETCH not in versions


def test_metadata_auto_create_and_leftover_warning(
    cluster: MockCluster, caplog: pytest.LogCaptureFixture
) -> None:
    with _connect(cluster) as conn:
        conn.negotiate()
        with caplog.at_level(logging.WARNING, logger="kproto.connection"):
            md = conn.request(
                ApiKey.METADATA,
                topics=[{"name": "live-meta-a"}, {"name": "live-meta-b"}],
                allow_auto_topic_creation=True,
            )
        # the mock appends one byte to Metadata v13 responses
        assert any("left over" in r.getMessage() for r in caplog.records)
        assert {b.node_id for b in md.brokers} == set(cluster.brokers)
        assert {(b.host, b.port) for b in md.brokers} == set(cluster.brokers.values())
        assert [t.name for t in md.topics] == ["live-meta-a", "live-meta-b"]
        for t in md.topics:
            assert t.error_code == 0 and len(t.partitions) >= 1
            assert all(p.leader_id in cluster.brokers for p in t.partitions)
        # an older version through send(): v1 has no flexible encoding, no topic ids
        old = conn.send(MetadataRequest(topics=None))  # v1: null means all topics
        assert "live-meta-a" in {t.name for t in old.topics}


def test_correlation_ids_increase(cluster: MockCluster) -> None:
    with _connect(cluster) as conn:
        ids = []
        for _ in range(3):
            conn.send(ApiVersionsRequest())
            ids.append(conn._correlation_id)
        assert ids == sorted(ids) and len(set(ids)) == 3


def test_frame_too_large_closes(cluster: MockCluster) -> None:
    conn = _connect(cluster, max_frame_bytes=16)
    with pytest.raises(FrameTooLargeError) as info:
        conn.send(ApiVersionsRequest())
    assert info.value.limit == 16 and info.value.size > 16
    assert "exceeds the limit" in str(info.value)
    assert conn.closed
    with pytest.raises(ConnectionClosedError):
        conn.send(ApiVersionsRequest())
    conn.close()  # idempotent


def test_unknown_field_is_type_error(cluster: MockCluster) -> None:
    with _connect(cluster) as conn:
        with pytest.raises(TypeError, match="no_such_field"):
            conn.request(ApiKey.METADATA, no_such_field=1)


def test_connect_refused() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(KafkaConnectionError, match="cannot connect"):
        Connection("127.0.0.1", port, timeout_s=2.0)


def test_group_join_flow(brokers: Brokers) -> None:
    group = "live-group"
    coord = brokers.any.request(ApiKey.FIND_COORDINATOR, key=group, key_type=0)
    assert coord.error_code == 0 and coord.node_id in brokers.addresses
    conn = brokers.get(coord.node_id)
    sub = consumer_protocol_bytes("ConsumerProtocolSubscription", 1, topics=["x"])
    join_fields: dict[str, Any] = dict(
        group_id=group,
        session_timeout_ms=6000,
        rebalance_timeout_ms=6000,
        member_id="",
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": sub}],
    )
    join = conn.request(ApiKey.JOIN_GROUP, **join_fields)
    if join.error_code == ErrorCode.MEMBER_ID_REQUIRED:
        join = conn.request(
            ApiKey.JOIN_GROUP, **{**join_fields, "member_id": join.member_id}
        )
    assert join.error_code == 0
    assert join.leader == join.member_id and join.protocol_name == "range"
    assert [m.member_id for m in join.members] == [join.member_id]
    assert join.members[0].metadata == sub
    blob = consumer_protocol_bytes(
        "ConsumerProtocolAssignment",
        1,
        assigned_partitions=[{"topic": "x", "partitions": [0, 1]}],
    )
    sync = conn.request(
        ApiKey.SYNC_GROUP,
        group_id=group,
        generation_id=join.generation_id,
        member_id=join.member_id,
        assignments=[{"member_id": join.member_id, "assignment": blob}],
    )
    assert sync.error_code == 0 and sync.assignment == blob
    hb = conn.request(
        ApiKey.HEARTBEAT,
        group_id=group,
        generation_id=join.generation_id,
        member_id=join.member_id,
    )
    assert hb.error_code == 0
    bad = conn.request(
        ApiKey.HEARTBEAT,
        group_id=group,
        generation_id=join.generation_id,
        member_id="nobody",
    )
    assert bad.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    leave = conn.request(ApiKey.LEAVE_GROUP, group_id=group, member_id=join.member_id)
    assert leave.error_code == 0


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.label)
def test_produce_fetch_roundtrip(
    brokers: Brokers, new_topic: Any, codec: Compression
) -> None:
    topic = new_topic("rt")
    conn = brokers.get(topic.leaders[0])
    batches = []
    for n in range(3):
        recs = [
            (
                f"k{n}-{i}".encode(),
                None if i == 2 else b"v" * (i * 50),
                [("h", b"x"), ("n", None)],
                1_700_000_000_000 + i,
            )
            for i in range(4)
        ]
        batches.append(recs)
        res = produce_batch(conn, topic.name, 0, encode_batch(recs, compression=codec))
        assert res.error_code == 0 and res.base_offset == 4 * n
    raw, data = fetch_all(conn, topic.name, 0, topic_id=topic.topic_id)
    assert data.high_watermark == 12
    got = list(decode_batches(raw))
    assert [b.compression for b in got] == [codec] * 3
    assert [b.base_offset for b in got] == [0, 4, 8]
    flat = [r for b in got for r in b.records]
    assert [r.offset for r in flat] == list(range(12))
    expect = [r for recs in batches for r in recs]
    assert [(r.key, r.value, list(r.headers), r.timestamp) for r in flat] == [
        (k, v, h, ts) for k, v, h, ts in expect
    ]


def test_produce_acks0_returns_none(cluster: MockCluster, new_topic: Any) -> None:
    topic = new_topic("acks0")
    conn = _connect(cluster, topic.leaders[0])
    conn.negotiate()
    assert (
        produce_batch(conn, topic.name, 0, encode_batch([(b"k", b"v")]), acks=0) is None
    )
    # Kafka never answers acks=0; the mock does. kproto does not read that stray
    # response, so it surfaces on the next request as a correlation id mismatch,
    # which closes the connection (its stream is out of step).
    with pytest.raises(CorrelationIdMismatchError) as info:
        conn.send(ApiVersionsRequest())
    assert info.value.received == info.value.expected - 1
    assert conn.closed


def test_request_on_every_fetch_version(brokers: Brokers, new_topic: Any) -> None:
    topic = new_topic("fv")
    conn = brokers.get(topic.leaders[0])
    produce_batch(conn, topic.name, 0, encode_batch([(b"k", b"v", [], 1)]))
    for v in (4, 7, 11, 12, 13, conn.version_for(ApiKey.FETCH)):
        raw, _ = fetch_all(conn, topic.name, 0, topic_id=topic.topic_id, version=v)
        assert [r.value for b in decode_batches(raw) for r in b.records] == [b"v"], v
    assert request_type(ApiKey.FETCH, 13).__name__ == "FetchRequest"


def test_sync_timeout_against_silent_peer() -> None:
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    accepted: list[socket.socket] = []
    t = threading.Thread(
        target=lambda: accepted.append(server.accept()[0]), daemon=True
    )
    t.start()
    try:
        conn = Connection("127.0.0.1", server.getsockname()[1], timeout_s=0.3)
        with pytest.raises(RequestTimeoutError):
            conn.send(ApiVersionsRequest())
        assert conn.closed
    finally:
        t.join(2)
        for s in accepted:
            s.close()
        server.close()
