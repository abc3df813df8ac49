"""confluent-kafka's ``ShareConsumer`` (librdkafka 2.16) against the broker's share
groups (KIP-932): consumers sharing topics and partitions, release, reject, the
delivery-count limit, lock expiry, restart, group configs, three nodes.

Every test is bounded: short heartbeat intervals and lock durations, a deadline per
wait (:data:`~tests.broker.share.support.DEADLINE_S`), pytest's timeout as backstop.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.share.support import (
    DEADLINE_S,
    SHARE_CONFIGS,
    ck,
    deliveries,
    fresh,
    new_topic,
    poll_for,
    poll_until,
    produce,
    share_consumer,
    start_offsets,
)
from tests.broker.wire import heartbeat
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(120)


if not hasattr(ck, "ShareConsumer"):
    pytest.skip("this confluent-kafka has no ShareConsumer", allow_module_level=True)


# -- confluent-kafka's ShareConsumer --------------------------------------------------


def test_two_share_consumers_get_every_record_once(cluster: Cluster) -> None:
    topic, group = new_topic(cluster, "two", 60, 2), fresh("g")
    a, b = share_consumer(cluster, group), share_consumer(cluster, group)
    a.subscribe([topic])
    b.subscribe([topic])
    seen: dict[tuple[int, int], int] = {}
    by: dict[str, int] = {"a": 0, "b": 0}

    def all_seen() -> bool:
        for name, consumer in (("a", a), ("b", b)):
            for message in consumer.poll(0.1):
                assert message.error() is None
                key = (message.partition(), message.offset())
                seen[key] = seen.get(key, 0) + 1
                by[name] += 1
                assert message.delivery_count() == 1
        return len(seen) >= 60

    try:
        eventually(all_seen, DEADLINE_S, interval_s=0, retry_on=())
        # implicit mode accepts the last poll's records on commit (librdkafka's
        # close() sends no acknowledgements: its share session close releases them)
        a.commit_sync(10)
        b.commit_sync(10)
    finally:
        a.close()
        b.close()
    assert sorted(seen) == sorted((i % 2, i // 2) for i in range(60))
    assert set(seen.values()) == {1}, "a record was delivered twice"
    assert sum(by.values()) == 60
    assert start_offsets(cluster, group, topic) == {0: 30, 1: 30}


def test_two_share_consumers_share_one_partition(cluster: Cluster) -> None:
    """Both members are assigned the one partition; records one member holds
    (acquired, not yet acknowledged) go to the other only when released."""
    topic, group = fresh("one"), fresh("g")
    cluster.create_topic(topic, 1)
    a = share_consumer(cluster, group, explicit=True)
    b = share_consumer(cluster, group, explicit=True)
    a.subscribe([topic])
    b.subscribe([topic])
    try:
        produce(cluster, topic, 10)
        held = poll_until(a, lambda got: len(got) >= 10)
        assert [m.offset() for m in held] == list(range(10))
        produce(cluster, topic, 10)
        other = poll_until(b, lambda got: len(got) >= 10)
        # a holds 0-9 under its acquisition lock: b gets only the new records
        assert [m.offset() for m in other] == list(range(10, 20))
        for consumer, messages in ((a, held), (b, other)):
            for m in messages:
                consumer.acknowledge(m, ck.AcknowledgeType.ACCEPT)
            consumer.commit_sync(10)
        assert poll_for(b, 0.5) == []
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=10) as conn:
            (described,) = conn.request(
                ApiKey.SHARE_GROUP_DESCRIBE, group_ids=[group]
            ).groups
        assignments = [
            [list(tp.partitions) for tp in m.assignment.topic_partitions]
            for m in described.members
        ]
        assert assignments == [[[0]], [[0]]]
    finally:
        a.close()
        b.close()
    assert start_offsets(cluster, group, topic) == {0: 20}


def test_released_record_is_redelivered_and_rejected_never(cluster: Cluster) -> None:
    topic, group = new_topic(cluster, "rel", 5), fresh("g")
    consumer = share_consumer(cluster, group, explicit=True, topics=[topic])
    try:
        first = poll_until(consumer, lambda got: len(got) >= 5)
        assert [m.offset() for m in first] == [0, 1, 2, 3, 4]
        for m in first:
            kind = {1: ck.AcknowledgeType.RELEASE, 2: ck.AcknowledgeType.REJECT}.get(
                m.offset(), ck.AcknowledgeType.ACCEPT
            )
            consumer.acknowledge(m, kind)
        results = consumer.commit_sync(10)
        assert all(error is None for error in results.values())
        again = poll_until(consumer, lambda got: len(got) >= 1)
        assert [(m.offset(), m.delivery_count(), m.value()) for m in again] == [
            (1, 2, b"v1")
        ]
        consumer.acknowledge(again[0], ck.AcknowledgeType.ACCEPT)
        consumer.commit_sync(10)
        # the rejected record 2 never comes back
        assert poll_for(consumer, 1.5) == []
    finally:
        consumer.close()
    assert start_offsets(cluster, group, topic) == {0: 5}


def test_delivery_count_limit_archives_a_poison_record(cluster: Cluster) -> None:
    topic, group = new_topic(cluster, "poison", 1), fresh("g")
    consumer = share_consumer(cluster, group, explicit=True, topics=[topic])
    counts = []
    try:

        def released_five_times() -> bool:
            for message in consumer.poll(0.2):
                counts.append(message.delivery_count())
                consumer.acknowledge(message, ck.AcknowledgeType.RELEASE)
            consumer.commit_sync(10)
            return len(counts) >= 5

        eventually(released_five_times, DEADLINE_S, interval_s=0, retry_on=())
        # group.share.delivery.count.limit is 5: after the fifth release it is
        # archived and never delivered again
        assert poll_for(consumer, 1.5) == []
    finally:
        consumer.close()
    assert counts == [1, 2, 3, 4, 5]
    assert start_offsets(cluster, group, topic) == {0: 1}


def test_lock_timeout_makes_records_available_again() -> None:
    configs = dict(SHARE_CONFIGS, **{"group.share.record.lock.duration.ms": 1000})
    with Cluster(share_configs=configs) as cluster:
        topic, group = "locks", "g"
        cluster.create_topic(topic, 1)
        produce(cluster, topic, 3)
        holder = share_consumer(cluster, group, explicit=True, topics=[topic])
        other = share_consumer(cluster, group)
        try:
            held = poll_until(holder, lambda got: len(got) >= 3)
            assert [m.delivery_count() for m in held] == [1, 1, 1]
            started = time.monotonic()
            other.subscribe([topic])
            # the holder never acknowledges: after the 1 s lock the records are
            # AVAILABLE again and the other member acquires them
            got = poll_until(other, lambda got: len(got) >= 3)
            assert deliveries(got) == [(0, 2), (1, 2), (2, 2)]
            assert time.monotonic() - started >= 0.5
        finally:
            other.close()
            holder.close()


def test_restart_keeps_acknowledged_state(tmp_path: Path) -> None:
    topic, group = "durable", "g"
    with Cluster(data_dir=tmp_path, share_configs=SHARE_CONFIGS) as cluster:
        cluster.create_topic(topic, 1)
        produce(cluster, topic, 10)
        consumer = share_consumer(cluster, group, explicit=True, topics=[topic])
        try:
            got = poll_until(consumer, lambda got: len(got) >= 10)
            assert len(got) == 10
            for m in got[:5]:
                consumer.acknowledge(m, ck.AcknowledgeType.ACCEPT)
            consumer.acknowledge(got[5], ck.AcknowledgeType.REJECT)
            consumer.commit_sync(10)
            # offsets 6-9 stay acquired when the broker stops
        finally:
            cluster.close()
            consumer.close()
    with Cluster(data_dir=tmp_path, share_configs=SHARE_CONFIGS) as cluster:
        assert start_offsets(cluster, group, topic) == {0: 6}
        consumer = share_consumer(cluster, group, topics=[topic])
        try:
            again = poll_until(consumer, lambda got: len(got) >= 4)
            # locks are not persisted: the acquired records are available again,
            # with the delivery count they had
            assert deliveries(again) == [(6, 2), (7, 2), (8, 2), (9, 2)]
            assert poll_for(consumer, 1.0) == []
        finally:
            consumer.close()
        assert start_offsets(cluster, group, topic) == {0: 10}


def test_auto_offset_reset_latest_by_default_and_earliest_as_a_group_config() -> None:
    """``share.auto.offset.reset`` defaults to latest; an AdminClient sets it per
    group (IncrementalAlterConfigs on a GROUP resource), as with Kafka."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    with Cluster(share_configs={"group.share.heartbeat.interval.ms": 200}) as cluster:
        cluster.create_topic("reset", 1)
        produce(cluster, "reset", 3)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        resource = ConfigResource(
            ResourceType.GROUP,
            "early",
            incremental_configs=[
                ConfigEntry(
                    "share.auto.offset.reset",
                    "earliest",
                    incremental_operation=AlterConfigOpType.SET,
                )
            ],
        )
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(10)
        described = admin.describe_configs(
            [ConfigResource(ResourceType.GROUP, "early")]
        )
        (configs,) = [f.result(10) for f in described.values()]
        assert configs["share.auto.offset.reset"].value == "earliest"
        bad = ConfigResource(
            ResourceType.GROUP,
            "early",
            incremental_configs=[
                ConfigEntry(
                    "share.auto.offset.reset",
                    "sometimes",
                    incremental_operation=AlterConfigOpType.SET,
                )
            ],
        )
        with pytest.raises(ck.KafkaException):
            for future in admin.incremental_alter_configs([bad]).values():
                future.result(10)
        early = share_consumer(cluster, "early")
        late = share_consumer(cluster, "late")
        early.subscribe(["reset"])
        late.subscribe(["reset"])
        try:
            got = poll_until(early, lambda got: len(got) >= 3)
            assert [m.offset() for m in got] == [0, 1, 2]
            # "late" starts at the log end: it waits for the share partition to
            # start (its first heartbeat), then sees only what comes after
            eventually(
                lambda: late.poll(0.1) is not None
                and ("late", "reset", 0) in cluster.share.partitions,
                DEADLINE_S,
                interval_s=0,
            )
            produce(cluster, "reset", 1)
            after = poll_until(late, lambda got: len(got) >= 1)
            assert [m.offset() for m in after] == [3]
            early.commit_sync(10)
            late.commit_sync(10)
        finally:
            early.close()
            late.close()


def test_member_session_timeout_and_three_nodes() -> None:
    """On three nodes each partition's leader serves its share partition (one
    share session per node); a member that stops heartbeating is removed after
    ``group.share.session.timeout.ms`` and the others get its partitions."""
    configs = dict(SHARE_CONFIGS, **{"group.share.session.timeout.ms": 1000})
    with Cluster(nodes=3, share_configs=configs) as cluster:
        cluster.create_topic("spread", 3)
        produce(cluster, "spread", 30, partitions=3)
        consumer = share_consumer(cluster, "g3", topics=["spread"])
        try:
            got = poll_until(consumer, lambda got: len(got) >= 30)
            assert sorted((m.partition(), m.offset()) for m in got) == sorted(
                (i % 3, i // 3) for i in range(30)
            )
            consumer.commit_sync(10)
        finally:
            consumer.close()
        sessions = {node for node, group, _ in cluster.share.sessions if group == "g3"}
        assert sessions == set()  # closed by the consumer on each node
        coordinator = cluster.groups.coordinator_for("ghost")
        info = cluster.state.nodes[coordinator]
        with Connection(info.host, info.port, timeout_s=10) as conn:

            def beat(member: str, epoch: int) -> Any:
                topics = ["spread"] if epoch == 0 else None
                api = ApiKey.SHARE_GROUP_HEARTBEAT
                return heartbeat(
                    conn, api, "ghost", member, epoch, subscribed_topic_names=topics
                )

            assert beat("quiet", 0).member_epoch == 1
            live = beat("live", 0)
            assert list(live.assignment.topic_partitions[0].partitions) == [0, 2]
            epoch = live.member_epoch
            answer = beat("live", epoch)

            def reassigned() -> bool:
                nonlocal answer, epoch
                answer = beat("live", epoch)
                epoch = answer.member_epoch
                return answer.assignment is not None

            if answer.assignment is None:
                eventually(reassigned, DEADLINE_S, interval_s=0.2, retry_on=())
            # "quiet" missed its 1 s session timeout: "live" has every partition
            assert list(answer.assignment.topic_partitions[0].partitions) == [0, 1, 2]
            assert beat("quiet", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
