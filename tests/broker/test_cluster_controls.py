"""The shaping and maintenance controls of ``Cluster``
(:mod:`kproto.broker.cluster_controls`): racks, coordinators pinned to a node,
retention on demand, KIP-714 telemetry settings, the request log; proved with
confluent-kafka and kproto's own connection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.eventually import eventually


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=3) as c:
        yield c


def test_racks_reach_describe_cluster(cluster: Cluster) -> None:
    cluster.set_rack(None, "rack-a")
    cluster.set_rack(2, "rack-b")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    described = admin.describe_cluster(request_timeout=10).result(10)
    assert {n.id: n.rack for n in described.nodes} == {
        1: "rack-a",
        2: "rack-b",
        3: "rack-a",
    }
    cluster.stop_node(2)
    cluster.start_node(2)  # a restarted node keeps its rack
    cluster.set_rack(3, None)
    described = admin.describe_cluster(request_timeout=10).result(10)
    assert {n.id: n.rack for n in described.nodes} == {
        1: "rack-a",
        2: "rack-b",
        3: None,
    }
    with pytest.raises(ValueError, match="no node 7"):
        cluster.set_rack(7, "x")


def test_transaction_coordinator_pinned_to_a_node(cluster: Cluster) -> None:
    before = cluster.transaction_coordinator("tx")
    target = next(n for n in (1, 2, 3) if n != before)
    cluster.coordinator_set("transaction", "tx", target)
    assert cluster.transaction_coordinator("tx") == target
    cluster.create_topic("t", 1)
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "tx"}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("t", b"v")
    producer.commit_transaction(10)
    finds = cluster.request_log(api_key=ApiKey.FIND_COORDINATOR)
    answered = set()
    for r in finds:
        if r.api_version >= 4:  # KIP-699: a batch of keys
            answered |= {c.node_id for c in r.response.coordinators if c.key == "tx"}
        elif r.request.key == "tx":
            answered.add(r.response.node_id)
    assert answered == {target}
    data = [r.value for r in cluster.records("t", 0) if r.control is None]
    assert data == [b"v"]  # and the commit marker after it


def test_group_coordinator_pinned_to_a_node(cluster: Cluster) -> None:
    before = cluster.coordinator("g")
    target = next(n for n in (1, 2, 3) if n != before)
    cluster.coordinator_set("group", "g", target)
    assert cluster.coordinator("g") == target
    server = cluster.servers[0]
    with Connection(server.host, server.port, timeout_s=10) as conn:
        conn.negotiate()
        response = conn.request(
            ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=["g"]
        )
        assert response.coordinators[0].node_id == target
    with pytest.raises(ValueError, match="key_type"):
        cluster.coordinator_set("cluster", "g", 1)


def test_apply_retention_on_demand() -> None:
    with Cluster(nodes=1, segment_bytes=1024) as cluster:
        retention_on_demand(cluster)


def retention_on_demand(cluster: Cluster) -> None:
    cluster.create_topic("t", 1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    old = int(time.time() * 1000) - 3_600_000
    for i in range(40):
        producer.produce("t", b"x" * 100, partition=0, timestamp=old + i)
        producer.flush(10)
    stored = len(cluster.records("t", 0))
    assert stored == 40
    # retention.ms is now shorter than the records' age; nothing ran yet
    cluster.alter_topic_configs("t", {"retention.ms": "60000"})
    dropped = cluster.apply_retention("t")
    assert dropped > 0
    left = cluster.records("t", 0)
    assert len(left) == stored - dropped and left[0].offset == dropped
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "r"}
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("t", 0), 10)
    finally:
        consumer.close()
    assert (low, high) == (dropped, 40)
    with pytest.raises(KeyError):
        cluster.apply_retention("missing")


def test_telemetry_settings_reach_librdkafka() -> None:
    with Cluster(nodes=1) as cluster:
        cluster.create_topic("metered", 1)
        cluster.telemetry_set_push_interval(200)
        cluster.telemetry_set_requested_metrics(["org.apache.kafka.producer."])
        producer = Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "client.id": "tm"}
        )
        producer.produce("metered", b"v")
        assert producer.flush(10) == 0
        eventually(
            lambda: producer.poll(0.05) or cluster.client_metrics(client_id="tm"),
            20.0,
            message="no PushTelemetry from librdkafka",
        )
        names = {
            n for p in cluster.client_metrics(client_id="tm") for n in p.metric_names
        }
        assert names and all(n.startswith("org.apache.kafka.producer.") for n in names)
        subscriptions = cluster.request_log(api_key=ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)
        last = subscriptions[-1].response
        assert last.push_interval_ms == 200
        assert list(last.requested_metrics) == ["org.apache.kafka.producer."]
        cluster.telemetry_set_requested_metrics(None)  # nothing asked any more
        assert not cluster.state.client_metrics.subscriptions
        producer.flush(1)


def test_request_log_has_timestamps_and_clears(cluster: Cluster) -> None:
    cluster.create_topic("t", 1)
    started = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce("t", b"v")
    assert producer.flush(10) == 0
    produced = cluster.request_log(api_key=ApiKey.PRODUCE)
    assert len(produced) == 1
    assert produced[0].node_id == cluster.leader("t", 0)
    assert started <= produced[0].time_ms <= int(time.time() * 1000)
    assert produced[0].response.responses[0].partition_responses[0].error_code == (
        ErrorCode.NONE
    )
    cluster.clear_request_log()
    assert cluster.request_log(api_key=ApiKey.PRODUCE) == []


def kip848_consumer(cluster: Cluster, group: str, topic: str) -> Consumer:
    c = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "group.protocol": "consumer",
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    c.subscribe([topic])
    return c


def test_consumer_group_target_assignment_set_by_the_test() -> None:
    with Cluster(nodes=1) as cluster:
        cluster.create_topic("tg", 4)
        consumer = kip848_consumer(cluster, "cg", "tg")
        try:

            def assigned() -> set[int]:
                consumer.poll(0.05)
                return {tp.partition for tp in consumer.assignment()}

            eventually(lambda: assigned() == {0, 1, 2, 3}, 20, retry_on=())
            member = consumer.memberid()
            assert member
            cluster.set_consumer_group_target_assignment("cg", {member: {"tg": [1, 3]}})
            eventually(lambda: assigned() == {1, 3}, 20, retry_on=())
            cluster.set_consumer_group_target_assignment("cg", None)
            eventually(lambda: assigned() == {0, 1, 2, 3}, 20, retry_on=())
        finally:
            consumer.close()


def test_initial_rebalance_delay_from_config_and_at_run_time() -> None:
    config = {"group.initial.rebalance.delay.ms": 0}
    with Cluster(nodes=1, config=config) as cluster:
        assert cluster.groups.membership.initial_rebalance_delay_ms == 0
        cluster.create_topic("t", 1)
        cluster.set_group_initial_rebalance_delay_ms(1500)
        consumer = Consumer(
            {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "slow"}
        )
        try:
            started = time.monotonic()
            consumer.subscribe(["t"])

            def assigned() -> bool:
                consumer.poll(0.05)
                return bool(consumer.assignment())

            eventually(assigned, 20, retry_on=())
            assert time.monotonic() - started >= 1.5  # the first rebalance waited
        finally:
            consumer.close()
        with pytest.raises(ValueError, match=">= 0 ms"):
            cluster.set_group_initial_rebalance_delay_ms(-1)


def test_seed_topics_exist_at_start() -> None:
    config = {"kproto.seed.topics": "orders:3,events", "num.partitions": 2}
    with Cluster(nodes=1, config=config) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        topics = admin.list_topics(timeout=10).topics
        assert len(topics["orders"].partitions) == 3
        assert len(topics["events"].partitions) == 2


def listed(cluster: Cluster) -> set[int]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    return set(admin.list_topics(timeout=10).brokers)


def test_add_a_node_and_move_a_leader_to_it() -> None:
    with Cluster(nodes=1) as cluster:
        cluster.create_topic("t", 1)
        added = cluster.add_node(rack="r2")
        assert added == 2
        assert listed(cluster) == {1, 2}
        cluster.move_leader("t", 0, added)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        producer.produce("t", b"v", partition=0)
        assert producer.flush(10) == 0
        produced = cluster.request_log(api_key=ApiKey.PRODUCE)
        assert {r.node_id for r in produced} == {added}
        with pytest.raises(ValueError, match="taken"):
            cluster.add_node(1)


def test_decommission_moves_leaders_and_hides_the_node(cluster: Cluster) -> None:
    cluster.create_topic("t", 6)
    led = [p for p in range(6) if cluster.leader("t", p) == 2]
    assert led
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for p in range(6):
        producer.produce("t", b"before", partition=p)
    assert producer.flush(10) == 0
    cluster.decommission_node(2)
    assert listed(cluster) == {1, 3}
    assert all(cluster.leader("t", p) != 2 for p in range(6))
    for p in range(6):
        producer.produce("t", b"after", partition=p)
    assert producer.flush(15) == 0
    assert all(len(cluster.records("t", p)) == 2 for p in range(6))
    cluster.create_topic("new", 4)
    assert all(cluster.leader("new", p) != 2 for p in range(4))


def test_remove_a_node_for_good(cluster: Cluster) -> None:
    cluster.create_topic("t", 3)
    cluster.remove_node(3)
    assert listed(cluster) == {1, 2}
    assert all(cluster.leader("t", p) in (1, 2) for p in range(3))
    with pytest.raises(ValueError, match="no node 3"):
        cluster.start_node(3)
    assert cluster.add_node() == 3  # its id is free again


def test_share_group_target_assignment_set_by_the_test() -> None:
    from tests.broker.share.support import SHARE_CONFIGS, ck, share_consumer

    if not hasattr(ck, "ShareConsumer"):
        pytest.skip("this confluent-kafka has no ShareConsumer")
    with Cluster(nodes=1, share_configs=SHARE_CONFIGS) as cluster:
        cluster.create_topic("st", 4)
        topic_id = cluster.state.topics["st"].topic_id
        consumer = share_consumer(cluster, "sg")
        try:
            consumer.subscribe(["st"])

            def heartbeats() -> list[Any]:
                consumer.poll(0.1)
                return cluster.request_log(api_key=ApiKey.SHARE_GROUP_HEARTBEAT)

            seen = eventually(heartbeats, 20, retry_on=())
            member = seen[-1].request.member_id
            cluster.set_share_group_target_assignment("sg", {member: {"st": [2]}})

            def assigned_only_2() -> bool:
                # an assignment is sent once, by the heartbeat that moves the epoch
                return any(
                    beat.response.assignment is not None
                    and [
                        (t.topic_id, list(t.partitions))
                        for t in beat.response.assignment.topic_partitions
                    ]
                    == [(topic_id, [2])]
                    for beat in heartbeats()[len(seen) :]
                )

            eventually(assigned_only_2, 20, retry_on=())

            def forgot_the_others() -> bool:
                # librdkafka drops the revoked partitions from its share session
                consumer.poll(0.1)
                fetches = cluster.request_log(api_key=ApiKey.SHARE_FETCH)
                forgotten = {
                    p
                    for r in fetches
                    for t in r.request.forgotten_topics_data
                    for p in t.partitions
                }
                return forgotten == {0, 1, 3}

            eventually(forgot_the_others, 20, retry_on=())
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
            for p in range(4):
                producer.produce("st", b"v%d" % p, partition=p)
                producer.produce("st", b"w%d" % p, partition=p)
            assert producer.flush(10) == 0
            got: list[Any] = []

            def two() -> bool:
                got.extend(m for m in consumer.poll(0.2) if m.error() is None)
                return len(got) >= 2

            eventually(two, 20, retry_on=())
            assert {m.partition() for m in got} == {2}
        finally:
            consumer.close()


def test_shuffle_partition_leaders_bumps_every_epoch(cluster: Cluster) -> None:
    cluster.create_topic("t", 6)
    epochs = [cluster.leader_epoch("t", p) for p in range(6)]
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for p in range(6):
        producer.produce("t", b"before", partition=p)
    assert producer.flush(10) == 0
    moved = cluster.shuffle_partition_leaders(seed=7)
    assert moved > 0
    assert [cluster.leader_epoch("t", p) for p in range(6)] == [e + 1 for e in epochs]
    for p in range(6):
        producer.produce("t", b"after", partition=p)
    assert producer.flush(15) == 0  # librdkafka follows the new leaders
    assert all(len(cluster.records("t", p)) == 2 for p in range(6))
