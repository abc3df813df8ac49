"""Real consumer groups against kproto's broker (loopback only, bounded in time).

confluent-kafka (librdkafka), kafka-python and aiokafka consumers join groups,
rebalance, commit and resume; their admin clients list, describe and delete groups.
Session timeouts and the initial rebalance delay are small so every test finishes
in seconds.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.groups.records import GroupRecord, decode_record
from kproto.records import decode_records
from tests.broker.groups.support import MANUAL_COMMIT_MEMBER
from tests.eventually import during, eventually

confluent_kafka = pytest.importorskip("confluent_kafka")

DEADLINE_S = 30.0


def _until(check: Callable[[], bool], what: str, timeout_s: float = DEADLINE_S) -> None:
    """Run ``check`` (a polling step) until it is true; its assertions fail at once."""
    eventually(check, timeout_s, interval_s=0, message=what, retry_on=())


def _produce(bootstrap: str, topic: str, values: range) -> None:
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5}
    )
    for i in values:
        producer.produce(topic, key=b"%d" % i, value=b"%d" % i)
    assert producer.flush(DEADLINE_S) == 0


def _consumer(bootstrap: str, group: str, **extra: Any) -> Any:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
        "topic.metadata.refresh.interval.ms": 1000,
        **extra,
    }
    return confluent_kafka.Consumer(conf)


def _drain(consumers: dict[str, Any], seen: list[tuple[str, int]], total: int) -> None:
    """Poll every consumer until ``seen`` holds ``total`` values; commit each message
    synchronously right after it is taken (so nothing is lost or read twice)."""

    def step() -> bool:
        for name, consumer in consumers.items():
            message = consumer.poll(0.05)
            if message is None:
                continue
            assert message.error() is None, message.error()
            seen.append((name, int(message.value())))
            consumer.commit(message=message, asynchronous=False)
        return len(seen) >= total

    _until(step, f"{total} messages (have {len(seen)})")


def _split_between(
    bootstrap: str,
    group: str,
    topic: str,
    first: dict[str, str],
    second: dict[str, str],
) -> tuple[Any, Any]:
    """Two consumers of ``group`` on the two partitions of ``topic``: one with
    configuration ``first`` that holds both alone, then one with ``second``
    joining, until each holds one partition."""
    one = _consumer(bootstrap, group, **first)
    one.subscribe([topic])
    _until(
        lambda: one.poll(0.05) is None and len(one.assignment()) == 2,
        "the first member",
    )
    two = _consumer(bootstrap, group, **second)
    two.subscribe([topic])

    def split() -> bool:
        one.poll(0.05)
        two.poll(0.05)
        return len(one.assignment()) == len(two.assignment()) == 1

    _until(split, "the two members to share the partitions")
    return one, two


def test_confluent_group_rebalances_commits_and_resumes_after_restart(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    seen: list[tuple[str, int]] = []
    with Cluster(nodes=3, data_dir=data_dir, num_partitions=4) as cluster:
        cluster.create_topic("orders", 4)
        _produce(cluster.bootstrap_servers, "orders", range(0, 100))
        c1 = _consumer(cluster.bootstrap_servers, "billing")
        c2 = _consumer(cluster.bootstrap_servers, "billing")
        c1.subscribe(["orders"])
        c2.subscribe(["orders"])
        _drain({"c1": c1, "c2": c2}, seen, 100)
        # Both members got partitions in the shared generation.
        assert {name for name, _ in seen} == {"c1", "c2"}
        assert len(c1.assignment()) + len(c2.assignment()) == 4
        c2.close()  # LeaveGroup: c1 takes over all four partitions
        _until(
            lambda: c1.poll(0.05) is None and len(c1.assignment()) == 4, "c1 to own 4"
        )
        _produce(cluster.bootstrap_servers, "orders", range(100, 150))
        _drain({"c1": c1}, seen, 150)
        c1.close()
        joins = cluster.requests.filter(api_key=11)
        # librdkafka went through the KIP-394 member id round trip and two generations.
        assert any(r.response.error_code == 79 for r in joins)
        assert max(r.response.generation_id for r in joins) >= 2
    # Restart on the same data directory: committed offsets come back.
    with Cluster(nodes=3, data_dir=data_dir, num_partitions=4) as cluster:
        _produce(cluster.bootstrap_servers, "orders", range(150, 200))
        c3 = _consumer(cluster.bootstrap_servers, "billing")
        c3.subscribe(["orders"])
        _drain({"c3": c3}, seen, 200)

        def nothing_more() -> None:  # anything read twice would show up here
            message = c3.poll(0.1)
            assert message is None or message.error() is not None, message.value()

        during(nothing_more, 1.0)
        committed = c3.committed(c3.assignment(), timeout=10)
        c3.close()
    values = [value for _, value in seen]
    assert sorted(values) == list(range(200))  # nothing lost, nothing twice
    assert sum(p.offset for p in committed) == 200
    assert {name for name, v in seen if v >= 150} == {"c3"}
    # The segments on disk hold Kafka's __consumer_offsets records: the last commit
    # per partition adds up to everything consumed, and the group's metadata is there.
    latest: dict[tuple[str, int], int] = {}
    generations = []
    for segment in sorted(data_dir.glob("__consumer_offsets-*/*.log")):
        for record in decode_records(segment.read_bytes()):
            decoded = decode_record(record.key, record.value)
            if isinstance(decoded, GroupRecord):
                generations.append(decoded.value.generation)
            elif decoded.group_id == "billing" and decoded.value is not None:
                latest[(decoded.topic, decoded.partition)] = decoded.value.offset
    assert sum(latest.values()) == 200
    assert max(generations) >= 3


def test_confluent_static_member_restart_keeps_its_partitions() -> None:
    with Cluster(nodes=1) as cluster:
        cluster.create_topic("static", 2)
        bootstrap = cluster.bootstrap_servers
        seen: list[tuple[str, int]] = []
        leader, static = _split_between(
            bootstrap, "static-g", "static", {}, {"group.instance.id": "i-1"}
        )
        group = cluster.groups.groups["static-g"]
        generation = group.generation_id
        (owned,) = static.assignment()
        old_member = group.static_members["i-1"]
        static.close()  # a static member sends no LeaveGroup: its place is kept
        assert old_member in group.members
        again = _consumer(bootstrap, "static-g", **{"group.instance.id": "i-1"})
        again.subscribe(["static"])
        _produce(bootstrap, "static", range(20))
        _drain({"leader": leader, "static": again}, seen, 20)
        # Same generation (no rebalance), the same partition, a new member id.
        assert group.generation_id == generation
        assert [tp.partition for tp in again.assignment()] == [owned.partition]
        assert group.static_members["i-1"] != old_member
        assert old_member not in group.members
        again.close()
        leader.close()
    assert sorted(v for _, v in seen) == list(range(20))


def test_confluent_static_leader_restart_keeps_the_generation() -> None:
    """The group leader is static and restarts: Kafka's
    ``classicGroupJoinExistingStaticMember`` keeps the group stable (the selected
    protocol does not change), so the generation and the assignment stay."""
    with Cluster(nodes=1) as cluster:
        cluster.create_topic("static-lead", 2)
        bootstrap = cluster.bootstrap_servers
        seen: list[tuple[str, int]] = []
        lead, other = _split_between(
            bootstrap, "lead-g", "static-lead", {"group.instance.id": "lead"}, {}
        )
        group = cluster.groups.groups["lead-g"]
        assert group.leader_id == group.static_members["lead"]
        generation = group.generation_id
        (owned,) = lead.assignment()
        lead.close()
        again = _consumer(bootstrap, "lead-g", **{"group.instance.id": "lead"})
        again.subscribe(["static-lead"])
        _produce(bootstrap, "static-lead", range(20))
        _drain({"lead": again, "other": other}, seen, 20)
        assert group.generation_id == generation
        assert group.leader_id == group.static_members["lead"]
        assert [tp.partition for tp in again.assignment()] == [owned.partition]
        again.close()
        other.close()
    assert sorted(v for _, v in seen) == list(range(20))


def test_confluent_admin_lists_describes_and_deletes_groups() -> None:
    admin_mod = pytest.importorskip("confluent_kafka.admin")
    with Cluster(nodes=2) as cluster:
        cluster.create_topic("a", 2)
        _produce(cluster.bootstrap_servers, "a", range(6))
        consumer = _consumer(cluster.bootstrap_servers, "live")
        consumer.subscribe(["a"])
        seen: list[tuple[str, int]] = []
        _drain({"c": consumer}, seen, 6)
        # A group that only commits offsets (no membership).
        simple = _consumer(cluster.bootstrap_servers, "simple")
        simple.commit(
            offsets=[confluent_kafka.TopicPartition("a", 0, 1)], asynchronous=False
        )
        simple.close()
        admin = admin_mod.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        listed = admin.list_consumer_groups().result(timeout=DEADLINE_S)
        states = {g.group_id: g.state for g in listed.valid}
        assert states == {
            "live": confluent_kafka.ConsumerGroupState.STABLE,
            "simple": confluent_kafka.ConsumerGroupState.EMPTY,
        }
        described = admin.describe_consumer_groups(["live", "simple"])
        live = described["live"].result(timeout=DEADLINE_S)
        assert live.state == confluent_kafka.ConsumerGroupState.STABLE
        assert live.partition_assignor == "range"
        (member,) = live.members
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [
            0,
            1,
        ]
        assert member.client_id == "rdkafka"
        offsets = admin.list_consumer_group_offsets(
            [confluent_kafka.ConsumerGroupTopicPartitions("simple")]
        )["simple"].result(timeout=DEADLINE_S)
        assert [
            (tp.topic, tp.partition, tp.offset) for tp in offsets.topic_partitions
        ] == [("a", 0, 1)]
        futures = admin.delete_consumer_groups(["live", "simple"])
        with pytest.raises(confluent_kafka.KafkaException) as err:
            futures["live"].result(timeout=DEADLINE_S)
        assert err.value.args[0].code() == confluent_kafka.KafkaError.NON_EMPTY_GROUP
        futures["simple"].result(timeout=DEADLINE_S)
        consumer.close()
        listed = admin.list_consumer_groups().result(timeout=DEADLINE_S)
        assert {g.group_id for g in listed.valid} == {"live"}


def test_kafka_python_consumer_group_and_admin() -> None:
    kafka = pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition

    with Cluster(nodes=2) as cluster:
        cluster.create_topic("kp", 3)
        _produce(cluster.bootstrap_servers, "kp", range(30))

        def consume(expected: int) -> list[int]:
            consumer = kafka.KafkaConsumer(
                "kp",
                bootstrap_servers=cluster.bootstrap_servers,
                group_id="kp-group",
                consumer_timeout_ms=2000,
                **MANUAL_COMMIT_MEMBER,
            )
            got: list[int] = []

            def polled() -> bool:
                for records in consumer.poll(timeout_ms=200).values():
                    got.extend(int(r.value) for r in records)
                return len(got) >= expected

            _until(polled, f"{expected} values")
            consumer.commit()
            committed = sum(
                consumer.committed(TopicPartition("kp", p)) or 0 for p in range(3)
            )
            consumer.close()
            assert committed == len(got) + (30 if expected == 5 else 0)
            return got

        assert sorted(consume(30)) == list(range(30))
        _produce(cluster.bootstrap_servers, "kp", range(30, 35))
        assert sorted(consume(5)) == list(range(30, 35))
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            assert admin.list_groups() == [
                {
                    "group_id": "kp-group",
                    "protocol_type": "consumer",
                    "group_state": "Empty",
                    "group_type": "classic",
                }
            ]
            assert admin.list_groups(states_filter=["Stable"]) == []
            described = admin.describe_groups(["kp-group"])["kp-group"]
            assert (described["group_state"], described["error"]) == ("Empty", None)
            offsets = admin.list_group_offsets({"kp-group": None})["kp-group"]
            assert sum(o.offset for o in offsets.values()) == 35
            assert admin.delete_groups(["kp-group", "nope"]) == {
                "kp-group": "OK",
                "nope": "GroupIdNotFoundError",
            }
            assert admin.list_groups() == []
        finally:
            admin.close()


def test_aiokafka_consumer_group() -> None:
    aiokafka = pytest.importorskip("aiokafka")

    async def body() -> tuple[list[int], list[int]]:
        async with Cluster(nodes=1) as cluster:
            cluster.state.create_topic("aio", 2)
            producer = aiokafka.AIOKafkaProducer(
                bootstrap_servers=cluster.bootstrap_servers
            )
            await producer.start()
            try:
                for i in range(20):
                    await producer.send_and_wait("aio", b"%d" % i)
            finally:
                await producer.stop()

            async def consume(expected: int) -> list[int]:
                consumer = aiokafka.AIOKafkaConsumer(
                    "aio",
                    bootstrap_servers=cluster.bootstrap_servers,
                    group_id="aio-group",
                    **MANUAL_COMMIT_MEMBER,
                )
                await consumer.start()
                got: list[int] = []
                try:
                    while len(got) < expected:
                        batches = await consumer.getmany(timeout_ms=200)
                        got.extend(int(r.value) for rs in batches.values() for r in rs)
                    await consumer.commit()
                finally:
                    await consumer.stop()
                return got

            first = await asyncio.wait_for(consume(20), DEADLINE_S)
            producer = aiokafka.AIOKafkaProducer(
                bootstrap_servers=cluster.bootstrap_servers
            )
            await producer.start()
            try:
                for i in range(20, 25):
                    await producer.send_and_wait("aio", b"%d" % i)
            finally:
                await producer.stop()
            second = await asyncio.wait_for(consume(5), DEADLINE_S)
            return first, second

    first, second = asyncio.run(body())
    assert sorted(first) == list(range(20))
    assert sorted(second) == list(range(20, 25))


def test_confluent_consumer_rides_through_a_broker_restart(tmp_path: Path) -> None:
    """Kafka loads a group with members as Stable: a consumer that keeps running
    while the cluster restarts (same data_dir and port) goes on heartbeating in the
    same generation, with no rebalance and nothing read twice."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    seen: list[tuple[str, int]] = []
    with Cluster(nodes=1, data_dir=tmp_path, port=port) as cluster:
        cluster.create_topic("ride", 2)
        _produce(cluster.bootstrap_servers, "ride", range(20))
        consumer = _consumer(
            cluster.bootstrap_servers,
            "ride-g",
            **{"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200},
        )
        consumer.subscribe(["ride"])
        _drain({"c": consumer}, seen, 20)
        before = cluster.groups.groups["ride-g"]
        generation, members = before.generation_id, list(before.members)
    with Cluster(nodes=1, data_dir=tmp_path, port=port) as cluster:
        try:
            after = cluster.groups.groups["ride-g"]
            assert (after.state.value, after.generation_id) == ("Stable", generation)
            assert list(after.members) == members
            _produce(cluster.bootstrap_servers, "ride", range(20, 30))
            _drain({"c": consumer}, seen, 30)
            assert after.generation_id == generation  # no rebalance happened
        finally:
            consumer.close()
    assert sorted(v for _, v in seen) == list(range(30))
