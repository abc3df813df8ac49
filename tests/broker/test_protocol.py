"""Broker answers checked at the protocol level with kproto's own Connection."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.meta import build_entity
from kproto.records import decode_records, encode_batch, encode_legacy
from tests.broker import wire
from tests.broker.conftest import cluster_with_topic


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from cluster_with_topic("p", 2, nodes=2)


def connect(cluster: Cluster, node_id: int) -> Connection:
    return wire.connect(cluster, node_id, timeout_s=30)


def produce(
    conn: Connection,
    cluster: Cluster,
    topic: str,
    partition: int,
    records: bytes,
    acks: int = -1,
) -> object:
    return wire.produce(
        conn, topic, {partition: records}, cluster=cluster, acks=acks, timeout_ms=1000
    )


def fetch(
    conn: Connection,
    cluster: Cluster,
    topic: str,
    partition: int,
    offset: int,
    **kw: int,
) -> object:
    topic_id = cluster.state.topics[topic].topic_id
    fields = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 10**6,
        "session_id": 0,
        "session_epoch": -1,
        **kw,
    }
    part_max = fields.pop("partition_max_bytes", 10**6)
    return conn.request(
        ApiKey.FETCH,
        topics=[
            {
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition": partition,
                        "fetch_offset": offset,
                        "partition_max_bytes": part_max,
                    }
                ],
            }
        ],
        **fields,
    )


def test_non_leader_answers_not_leader_or_follower(cluster: Cluster) -> None:
    leader = cluster.state.leader("p", 0)
    other = next(n for n in cluster.state.nodes if n != leader)
    with connect(cluster, other) as conn:
        response = produce(conn, cluster, "p", 0, encode_batch([(None, b"x")]))
        assert response.responses[0].partition_responses[0].error_code == 6
        part = fetch(conn, cluster, "p", 0, 0).responses[0].partitions[0]
        assert part.error_code == 6
    with connect(cluster, leader) as conn:
        response = produce(conn, cluster, "p", 0, encode_batch([(None, b"x")]))
        assert response.responses[0].partition_responses[0].error_code == 0


def _fetch_waiting(cluster: Cluster) -> bool:
    # the event the next append sets (asyncio.Event keeps its waiters in _waiters)
    event = cluster.state.append_waiters.event()
    return bool(getattr(event, "_waiters", None))


def test_fetch_long_poll_is_woken_by_produce(cluster: Cluster) -> None:
    leader = cluster.state.leader("p", 1)
    start = cluster.state.partition_log("p", 1).high_watermark
    with connect(cluster, leader) as conn, connect(cluster, leader) as producer_conn:
        result: list[object] = []
        # max_wait_ms 10 min, longer than the socket timeout: only a wake-up by the
        # append can answer it in time.
        poll = threading.Thread(
            target=lambda: result.append(
                fetch(conn, cluster, "p", 1, start, max_wait_ms=600_000, min_bytes=1)
            )
        )
        poll.start()
        # the fetch is parked once it waits on the cluster's append event (the
        # request log records a request only when it is answered)
        while poll.is_alive() and not _fetch_waiting(cluster):
            poll.join(0.01)
        assert poll.is_alive(), "the fetch answered before any append"
        produce(producer_conn, cluster, "p", 1, encode_batch([(None, b"wake")]))
        poll.join(30)
        assert result, "the long poll was not woken"
        part = result[0].responses[0].partitions[0]
        assert [r.value for r in decode_records(part.records)] == [b"wake"]
        assert part.high_watermark == start + 1


def test_fetch_limits_follow_kip_74(cluster: Cluster) -> None:
    cluster.create_topic("big", 1)
    leader = cluster.state.leader("big", 0)
    with connect(cluster, leader) as conn:
        batches = [encode_batch([(None, bytes([i]) * 1000)]) for i in range(3)]
        for b in batches:
            produce(conn, cluster, "big", 0, b)
        one = fetch(conn, cluster, "big", 0, 0, max_bytes=10).responses[0].partitions[0]
        assert len(one.records) == len(
            batches[0]
        )  # the first batch, whole, above the limit
        two = fetch(
            conn, cluster, "big", 0, 0, partition_max_bytes=2 * len(batches[0])
        ).responses[0]
        assert [r.offset for r in decode_records(two.partitions[0].records)] == [0, 1]
        out = fetch(conn, cluster, "big", 0, 99).responses[0].partitions[0]
        assert out.error_code == 1  # OFFSET_OUT_OF_RANGE
        session = fetch(conn, cluster, "big", 0, 0, session_id=12, session_epoch=1)
        assert session.error_code == 70  # FETCH_SESSION_ID_NOT_FOUND


def test_acks_0_gets_no_response_and_still_appends(cluster: Cluster) -> None:
    cluster.create_topic("a0", 1)
    before = len(cluster.records("a0", 0))
    with connect(cluster, cluster.state.leader("a0", 0)) as conn:
        assert (
            produce(conn, cluster, "a0", 0, encode_batch([(None, b"z")]), acks=0)
            is None
        )
        conn.request(ApiKey.METADATA, topics=[])  # the connection stays in step
    assert len(cluster.records("a0", 0)) == before + 1


def test_metadata_without_auto_create() -> None:
    with Cluster(auto_create_topics=False) as cluster, connect(cluster, 1) as conn:
        md = conn.request(
            ApiKey.METADATA, topics=[{"name": "nope"}], allow_auto_topic_creation=True
        )
        assert md.topics[0].error_code == 3
        assert "nope" not in cluster.state.topics


def test_cli_broker_runs_until_sigint(tmp_path: object) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kproto",
            "broker",
            "--nodes",
            "2",
            "--data-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip()
        assert bootstrap.count("127.0.0.1:") == 2
        host, port = bootstrap.split(",")[0].split(":")
        with Connection(host, int(port), timeout_s=10) as conn:
            assert len(conn.request(ApiKey.METADATA, topics=[]).brokers) == 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_taken_port_fails_cleanly(tmp_path: Path) -> None:
    with Cluster() as first:
        port = int(first.bootstrap_servers.split(":")[1])
        second = Cluster(port=port, data_dir=tmp_path / "d")
        with pytest.raises(OSError):
            second.__enter__()
        assert second._thread is None
        with Connection(
            "127.0.0.1", port, timeout_s=10
        ) as conn:  # the first one still serves
            assert conn.request(ApiKey.METADATA, topics=[]).brokers


def test_create_topics_errors(cluster: Cluster) -> None:
    with connect(cluster, 1) as conn:
        response = conn.request(
            ApiKey.CREATE_TOPICS,
            timeout_ms=1000,
            topics=[
                {"name": "bad name!", "num_partitions": 1, "replication_factor": 1},
                {"name": "rf", "num_partitions": 1, "replication_factor": 3},
                {
                    "name": "cfg",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [{"name": "no.such.config", "value": "1"}],
                },
                {"name": "zero", "num_partitions": 0, "replication_factor": 1},
                {"name": "ok", "num_partitions": -1, "replication_factor": -1},
            ],
        )
    codes = {t.name: t.error_code for t in response.topics}
    assert codes == {"bad name!": 17, "rf": 38, "cfg": 40, "zero": 37, "ok": 0}
    assert set(cluster.state.topics) >= {"ok"} and "cfg" not in cluster.state.topics
    created = next(t for t in response.topics if t.name == "ok")
    assert created.topic_id == cluster.state.topics["ok"].topic_id


def test_produce_to_an_unknown_partition(cluster: Cluster) -> None:
    with connect(cluster, 1) as conn:
        response = produce(conn, cluster, "p", 7, encode_batch([(None, b"x")]))
    assert response.responses[0].partition_responses[0].error_code == 3


def test_request_log_is_bounded() -> None:
    with Cluster(request_log_size=3) as cluster, connect(cluster, 1) as conn:
        for _ in range(5):
            conn.request(ApiKey.METADATA, topics=[])
        assert len(cluster.requests) == 3
        assert [r.api_key for r in cluster.requests] == [3, 3, 3]
        assert cluster.requests.filter(api_key=18) == []  # ApiVersions fell out


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_is_advertised_but_refused(
    cluster: Cluster, version: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Kafka 4 (KAFKA-18659): ApiVersions lists Produce from v0 so that older
    librdkafka compresses, while a v0-v2 request (magic 0/1 message sets) stores
    nothing; here each partition is answered UNSUPPORTED_VERSION."""
    cluster.create_topic(f"old{version}", 1)
    name = f"old{version}"
    leader = cluster.state.leader(name, 0)
    produce_v = request_type(ApiKey.PRODUCE, version)
    message_set = encode_legacy([(None, b"old")], magic=min(version, 1))
    with connect(cluster, leader) as conn:
        assert conn.broker_api_versions is not None
        assert conn.broker_api_versions[ApiKey.PRODUCE][0] == 0
        request = build_entity(
            produce_v,
            {
                "acks": -1,
                "timeout_ms": 1000,
                "topic_data": [
                    {
                        "name": name,
                        "partition_data": [{"index": 0, "records": message_set}],
                    }
                ],
            },
        )
        with caplog.at_level("WARNING", logger="kproto.broker"):
            response = conn.send(request)
        assert f"ProduceRequest v{version} from" in caplog.text
        assert "refused (UNSUPPORTED_VERSION): this broker serves v3+" in caplog.text
        (topic,) = response.responses
        (partition,) = topic.partition_responses
        assert (topic.name, partition.index) == (name, 0)
        assert partition.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert partition.base_offset == -1
        # the connection stays open and in step, and a v3+ produce still works
        produce(conn, cluster, name, 0, encode_batch([(None, b"new")]))
    assert [r.value for r in cluster.records(name, 0)] == [b"new"]


def test_warm_codecs_builds_every_served_produce_and_fetch_codec() -> None:
    from kproto.broker.dispatch import SERVED_APIS, WARM_APIS, warm_codecs
    from kproto.index import response_type
    from kproto.serial import entity_reader, entity_writer

    warm_codecs()
    readers, writers = entity_reader.cache_info(), entity_writer.cache_info()
    assert set(WARM_APIS) == {ApiKey.PRODUCE, ApiKey.FETCH}
    for api_key in WARM_APIS:
        low, high = SERVED_APIS[api_key]
        for version in range(low, high + 1):
            entity_reader(request_type(api_key, version))
            entity_writer(response_type(api_key, version))
    # every one was built already: no new reader or writer
    assert entity_reader.cache_info().misses == readers.misses
    assert entity_writer.cache_info().misses == writers.misses
