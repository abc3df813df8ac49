"""Fault injection proved by confluent-kafka (librdkafka): retries of injected
errors, an idempotent producer through errors and a node restart, a consumer group
through a coordinator move."""

from __future__ import annotations

import functools
import time
from pathlib import Path

import pytest

from kproto.broker import Cluster
from kproto.client import Client
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.records import decode_records
from tests.broker.conftest import segment_files
from tests.consuming import read_into
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")


def produce_errors(cluster: Cluster, node: int | None = None) -> list[int]:
    """The partition error codes of every Produce answered (on ``node``), in order."""
    return [
        p.error_code
        for r in cluster.requests.filter(api_key=ApiKey.PRODUCE, node_id=node)
        for t in r.response.responses
        for p in t.partition_responses
    ]


def test_librdkafka_retries_injected_produce_errors() -> None:
    with Cluster(nodes=3) as cluster:
        cluster.create_topic("t", 1)
        leader = cluster.leader("t", 0)
        cluster.inject_errors(
            ApiKey.PRODUCE,
            [
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                ErrorCode.REQUEST_TIMED_OUT,
                "disconnect",
            ],
            node=leader,
        )
        delivered: list[object] = []
        producer = ck.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "enable.idempotence": True,
                "retry.backoff.ms": 20,
                "log_level": 2,
            }
        )
        producer.produce(
            "t", b"once", partition=0, on_delivery=lambda e, m: delivered.append(e)
        )
        assert producer.flush(30) == 0
        assert delivered == [None]
        assert [r.value for r in cluster.records("t", 0)] == [b"once"]
        # the disconnected request is not answered (nor recorded); the retry is
        assert produce_errors(cluster, leader) == [
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            ErrorCode.REQUEST_TIMED_OUT,
            ErrorCode.NONE,
        ]
        assert cluster.faults.pending() == 0


def test_librdkafka_sees_latency() -> None:
    with Cluster(nodes=1) as cluster:
        cluster.create_topic("t", 1)
        delivered: list[float] = []
        producer = ck.Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 2}
        )
        producer.produce("t", b"warm", partition=0)
        assert producer.flush(30) == 0
        cluster.set_latency(1, 800)
        sent = time.monotonic()
        producer.produce(
            "t",
            b"slow",
            partition=0,
            on_delivery=lambda e, m: delivered.append(time.monotonic() - sent),
        )
        assert producer.flush(30) == 0
        assert delivered and delivered[0] >= 0.8


def test_idempotent_producer_through_errors_and_a_node_restart(
    tmp_path: Path,
) -> None:
    """Every acknowledged message is stored exactly once, in order per partition,
    while Produce answers NOT_LEADER_OR_FOLLOWER / REQUEST_TIMED_OUT and the leader
    of partition 0 stops (leaders move) and comes back."""
    partitions, total = 4, 3000
    with Cluster(nodes=3, data_dir=tmp_path, request_log_size=20_000) as cluster:
        cluster.create_topic("t", partitions)
        acked: dict[int, list[int]] = {p: [] for p in range(partitions)}
        failed: list[object] = []

        def on_delivery(err: object, msg: object) -> None:
            if err is not None:
                failed.append(err)
            else:
                acked[msg.partition()].append(int(msg.value()))  # type: ignore[attr-defined]

        producer = ck.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "enable.idempotence": True,
                "linger.ms": 2,
                "batch.num.messages": 40,
                "retry.backoff.ms": 20,
                "message.timeout.ms": 60_000,
                "topic.metadata.refresh.interval.ms": 1000,
                "log_level": 2,
            }
        )
        stopped = cluster.leader("t", 0)
        next_seq = [0] * partitions
        in_flight_max = 200  # faults strike while this many wait for their ack

        def in_flight_below_max(sent: int) -> bool:
            producer.poll(0.01)
            return sent - sum(map(len, acked.values())) - len(failed) <= in_flight_max

        for i in range(total):
            p = i % partitions
            producer.produce(
                "t", b"%d" % next_seq[p], partition=p, on_delivery=on_delivery
            )
            next_seq[p] += 1
            eventually(functools.partial(in_flight_below_max, i + 1), 90, interval_s=0)
            if i == 600:
                cluster.inject_errors(
                    ApiKey.PRODUCE,
                    [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT] * 3,
                )
            elif i == 1200:
                assert sum(map(len, acked.values())) >= 900
                cluster.stop_node(stopped)
            elif i == 2000:
                cluster.start_node(stopped)
                cluster.inject_errors(
                    ApiKey.PRODUCE,
                    [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER],
                )
        assert producer.flush(90) == 0
        assert failed == []
        assert cluster.leader("t", 0) != stopped  # leadership moved and stayed
        # partition 0 was written by the stopped node, then by its successor
        writers = [
            r.node_id
            for r in cluster.requests.filter(api_key=ApiKey.PRODUCE)
            for t in r.response.responses
            for q in t.partition_responses
            if q.index == 0 and q.error_code == ErrorCode.NONE
        ]
        assert writers[0] == stopped and writers[-1] == cluster.leader("t", 0)
        injected = produce_errors(cluster)
        assert injected.count(ErrorCode.NOT_LEADER_OR_FOLLOWER) >= 4
        assert injected.count(ErrorCode.REQUEST_TIMED_OUT) >= 4
        for p in range(partitions):
            sent = list(range(next_seq[p]))
            assert acked[p] == sent  # every message acknowledged, in order
            stored = cluster.records("t", p)
            assert [int(r.value) for r in stored] == sent  # once each, in order
            assert [r.offset for r in stored] == list(range(len(sent)))
        files = segment_files(tmp_path, "t")
    # the segment files, read after the cluster stopped, say the same
    for p in range(partitions):
        values = [
            int(r.value)
            for f in files
            if f.parent.name == f"t-{p}"
            for r in decode_records(f.read_bytes())
        ]
        assert values == list(range(next_seq[p]))


def test_consumer_group_rides_through_a_coordinator_move() -> None:
    count = 300
    with Cluster(nodes=3, request_log_size=20_000) as cluster:
        cluster.create_topic("t", 3)
        with Client(cluster.bootstrap_servers) as client:
            for p in range(3):
                client.produce(
                    "t", [(None, b"%d" % i) for i in range(p, count, 3)], partition=p
                )
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "g",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 300,
                "fetch.wait.max.ms": 100,
                "log_level": 2,
            }
        )
        consumer.subscribe(["t"])
        seen: list[int] = []

        read_into(consumer, seen, count // 2, 60)
        consumer.commit(asynchronous=False)
        coordinator = cluster.coordinator("g")
        cluster.stop_node(coordinator)
        moved_to = cluster.coordinator("g")
        assert moved_to not in (coordinator, -1)
        read_into(consumer, seen, count, 60)
        consumer.commit(asynchronous=False)
        committed = consumer.committed(
            [ck.TopicPartition("t", p) for p in range(3)], timeout=20
        )
        consumer.close()
        assert sorted(set(seen)) == list(range(count))
        assert [tp.offset for tp in committed] == [100, 100, 100]
        # the group found its new coordinator and committed there
        assert cluster.requests.filter(api_key=ApiKey.OFFSET_COMMIT, node_id=moved_to)
        cluster.start_node(coordinator)
        # the commits survive the coordinator's return (a new client, new lookup)
        with Client(cluster.bootstrap_servers) as client:
            offsets = client.fetch_offsets("g", None)
        assert {(tp.topic, tp.partition): o for tp, o in offsets.items()} == {
            ("t", p): 100 for p in range(3)
        }


def test_consumer_follows_leader_moves_through_a_fenced_epoch() -> None:
    """A leader moved away and back (epoch 0 -> 2) fences the consumer's Fetch at
    the same node: librdkafka refreshes its metadata and goes on."""
    with Cluster(nodes=2, request_log_size=20_000) as cluster:
        cluster.create_topic("t", 1)
        home = cluster.leader("t", 0)
        with Client(cluster.bootstrap_servers) as client:
            client.produce("t", [(None, b"%d" % i) for i in range(100)], partition=0)
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "g",
                "fetch.wait.max.ms": 100,
                "log_level": 2,
            }
        )
        consumer.assign([ck.TopicPartition("t", 0, 0)])
        seen: list[int] = []

        read_into(consumer, seen, 100, 30)
        cluster.move_leader("t", 0, home % 2 + 1)
        assert cluster.move_leader("t", 0, home) == 2
        with Client(cluster.bootstrap_servers) as client:
            client.produce(
                "t", [(None, b"%d" % i) for i in range(100, 200)], partition=0
            )
        read_into(consumer, seen, 200, 30)
        consumer.close()
        assert seen == list(range(200))
        fetch_errors = [
            p.error_code
            for r in cluster.requests.filter(api_key=ApiKey.FETCH, node_id=home)
            for t in r.response.responses
            for p in t.partitions
        ]
        assert ErrorCode.FENCED_LEADER_EPOCH in fetch_errors
