"""Share groups (KIP-932) against the broker: the protocol rules at the wire, and
confluent-kafka's ``ShareConsumer`` (librdkafka 2.16) sharing topics.

Every client test is bounded: short heartbeat intervals and lock durations, a
deadline per wait (:data:`DEADLINE_S`), pytest's timeout as the backstop.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey

ck = pytest.importorskip("confluent_kafka")
if not hasattr(ck, "ShareConsumer"):
    pytest.skip("this confluent-kafka has no ShareConsumer", allow_module_level=True)

pytestmark = pytest.mark.timeout(120)

DEADLINE_S = 20.0
SHARE_CONFIGS = {
    "share.auto.offset.reset": "earliest",
    "group.share.heartbeat.interval.ms": 200,
}
_names = itertools.count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(share_configs=SHARE_CONFIGS) as c:
        yield c


def fresh(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


def produce(cluster: Cluster, topic: str, count: int, partitions: int = 1) -> None:
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(count):
        producer.produce(topic, f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(10) == 0


def share_consumer(cluster: Cluster, group: str, *, explicit: bool = False) -> Any:
    config = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": group,
        "log_level": 3,
    }
    if explicit:
        config["share.acknowledgement.mode"] = "explicit"
    return ck.ShareConsumer(config)


def poll_until(
    consumer: Any, done: Callable[[list[Any]], bool], seconds: float = DEADLINE_S
) -> list[Any]:
    """Poll (accepting nothing explicitly) until ``done(messages)`` or the deadline."""
    got: list[Any] = []
    deadline = time.monotonic() + seconds
    while not done(got) and time.monotonic() < deadline:
        for message in consumer.poll(0.2):
            assert message.error() is None, message.error()
            got.append(message)
    return got


def start_offsets(cluster: Cluster, group: str, topic: str) -> dict[int, int]:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        answer = conn.request(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            groups=[{"group_id": group, "topics": None}],
        )
    (g,) = answer.groups
    assert g.error_code == 0
    return {
        p.partition_index: p.start_offset
        for t in g.topics
        if t.topic_name == topic
        for p in t.partitions
    }


# -- the protocol ---------------------------------------------------------------------


def test_heartbeat_assigns_every_partition_and_fences(cluster: Cluster) -> None:
    topic, group = fresh("hb"), fresh("g")
    cluster.create_topic(topic, 3)
    topic_id = cluster.state.topics[topic].topic_id
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:

        def beat(member: str, epoch: int, topics: list[str] | None = None) -> Any:
            return conn.request(
                ApiKey.SHARE_GROUP_HEARTBEAT,
                group_id=group,
                member_id=member,
                member_epoch=epoch,
                subscribed_topic_names=topics,
            )

        one = beat("m1", 0, [topic])
        assert (one.error_code, one.member_epoch, one.heartbeat_interval_ms) == (
            0,
            1,
            200,
        )
        (tp,) = one.assignment.topic_partitions
        assert (tp.topic_id, list(tp.partitions)) == (topic_id, [0, 1, 2])
        two = beat("m2", 0, [topic])
        assert two.member_epoch == 2
        assert list(two.assignment.topic_partitions[0].partitions) == [1]
        # m1 learns its smaller assignment and the new epoch on its next heartbeat
        again = beat("m1", 1)
        assert again.member_epoch == 2
        assert list(again.assignment.topic_partitions[0].partitions) == [0, 2]
        # unchanged: no assignment sent
        assert beat("m1", 2).assignment is None
        assert beat("m1", 1).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        assert beat("nobody", 2).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert beat("m3", 0).error_code == ErrorCode.INVALID_REQUEST
        assert beat("", 0, [topic]).error_code == ErrorCode.INVALID_REQUEST
        described = conn.request(ApiKey.SHARE_GROUP_DESCRIBE, group_ids=[group, "none"])
        found, missing = described.groups
        assert (found.group_state, found.group_epoch, found.assignor_name) == (
            "Stable",
            2,
            "simple",
        )
        members = {m.member_id: m for m in found.members}
        assert list(members["m2"].assignment.topic_partitions[0].partitions) == [1]
        assert list(members["m2"].subscribed_topic_names) == [topic]
        assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        left = beat("m2", -1)
        assert (left.error_code, left.member_epoch) == (0, -1)
        assert list(beat("m1", 2).assignment.topic_partitions[0].partitions) == [
            0,
            1,
            2,
        ]


def test_share_session_rules(cluster: Cluster) -> None:
    topic, group = fresh("ss"), fresh("g")
    cluster.create_topic(topic, 1)
    produce(cluster, topic, 3)
    topic_id = cluster.state.topics[topic].topic_id
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:

        def fetch(epoch: int, acks: list[dict[str, Any]] | None = None) -> Any:
            return conn.request(
                ApiKey.SHARE_FETCH,
                group_id=group,
                member_id="m",
                share_session_epoch=epoch,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                max_records=100,
                batch_size=100,
                topics=[
                    {
                        "topic_id": topic_id,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "acknowledgement_batches": acks or [],
                            }
                        ],
                    }
                ],
            )

        accept = [{"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}]
        assert fetch(1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert fetch(0, accept).error_code == ErrorCode.INVALID_REQUEST
        first = fetch(0)
        assert first.error_code == 0
        assert first.acquisition_lock_timeout_ms == 30_000
        (part,) = first.responses[0].partitions
        assert [
            (a.first_offset, a.last_offset, a.delivery_count)
            for a in part.acquired_records
        ] == [(0, 2, 1)]
        assert fetch(5).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        # epoch 1 with an acknowledgement piggybacked: accepted, nothing new
        second = fetch(1, accept)
        (part,) = second.responses[0].partitions
        assert (part.acknowledge_error_code, list(part.acquired_records)) == (0, [])
        ack = conn.request(
            ApiKey.SHARE_ACKNOWLEDGE,
            group_id=group,
            member_id="m",
            share_session_epoch=0,
            topics=[],
        )
        assert ack.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        again = conn.request(
            ApiKey.SHARE_ACKNOWLEDGE,
            group_id=group,
            member_id="m",
            share_session_epoch=2,
            topics=[
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {"partition_index": 0, "acknowledgement_batches": accept}
                    ],
                }
            ],
        )
        # offset 0 was accepted already: no longer acquired
        assert (
            again.responses[0].partitions[0].error_code
            == ErrorCode.INVALID_RECORD_STATE
        )
        # closing the session (epoch -1) releases offsets 1-2 for redelivery
        closed = fetch(-1)
        assert closed.error_code == 0
        assert fetch(3).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        reopened = fetch(0)
        (part,) = reopened.responses[0].partitions
        assert [
            (a.first_offset, a.last_offset, a.delivery_count)
            for a in part.acquired_records
        ] == [(1, 2, 2)]


def test_share_group_offsets_admin(cluster: Cluster) -> None:
    topic, group = fresh("adm"), fresh("g")
    cluster.create_topic(topic, 2)
    produce(cluster, topic, 10, partitions=2)
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        join = conn.request(
            ApiKey.SHARE_GROUP_HEARTBEAT,
            group_id=group,
            member_id="m",
            member_epoch=0,
            subscribed_topic_names=[topic],
        )
        assert join.error_code == 0
        assert start_offsets(cluster, group, topic) == {0: 0, 1: 0}
        alter = {
            "group_id": group,
            "topics": [
                {
                    "topic_name": topic,
                    "partitions": [{"partition_index": 1, "start_offset": 3}],
                }
            ],
        }
        busy = conn.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, **alter)
        assert busy.error_code == ErrorCode.NON_EMPTY_GROUP
        conn.request(
            ApiKey.SHARE_GROUP_HEARTBEAT, group_id=group, member_id="m", member_epoch=-1
        )
        done = conn.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, **alter)
        assert done.error_code == 0
        assert done.responses[0].partitions[0].error_code == 0
        assert start_offsets(cluster, group, topic) == {0: 0, 1: 3}
        alter["topics"][0]["partitions"][0]["start_offset"] = 99
        too_far = conn.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, **alter)
        assert (
            too_far.responses[0].partitions[0].error_code
            == ErrorCode.OFFSET_OUT_OF_RANGE
        )
        deleted = conn.request(
            ApiKey.DELETE_SHARE_GROUP_OFFSETS,
            group_id=group,
            topics=[{"topic_name": topic}],
        )
        assert (deleted.error_code, deleted.responses[0].error_code) == (0, 0)
        assert start_offsets(cluster, group, topic) == {}
        # ListGroups lists share groups (type "share"); DeleteGroups deletes them
        listed = conn.request(
            ApiKey.LIST_GROUPS, states_filter=[], types_filter=["share"]
        )
        entry = [g for g in listed.groups if g.group_id == group]
        assert [(g.protocol_type, g.group_state, g.group_type) for g in entry] == [
            ("share", "Empty", "share")
        ]
        classic_only = conn.request(
            ApiKey.LIST_GROUPS, states_filter=[], types_filter=["classic"]
        )
        assert group not in {g.group_id for g in classic_only.groups}
        gone = conn.request(ApiKey.DELETE_GROUPS, groups_names=[group])
        assert gone.results[0].error_code == 0
        again = conn.request(ApiKey.DELETE_GROUPS, groups_names=[group])
        assert again.results[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND


# -- confluent-kafka's ShareConsumer --------------------------------------------------


def test_two_share_consumers_get_every_record_once(cluster: Cluster) -> None:
    topic, group = fresh("two"), fresh("g")
    cluster.create_topic(topic, 2)
    produce(cluster, topic, 60, partitions=2)
    a, b = share_consumer(cluster, group), share_consumer(cluster, group)
    a.subscribe([topic])
    b.subscribe([topic])
    seen: dict[tuple[int, int], int] = {}
    by: dict[str, int] = {"a": 0, "b": 0}
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(seen) < 60 and time.monotonic() < deadline:
            for name, consumer in (("a", a), ("b", b)):
                for message in consumer.poll(0.1):
                    assert message.error() is None
                    key = (message.partition(), message.offset())
                    seen[key] = seen.get(key, 0) + 1
                    by[name] += 1
                    assert message.delivery_count() == 1
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
        assert poll_until(b, lambda got: False, seconds=0.5) == []
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
    topic, group = fresh("rel"), fresh("g")
    cluster.create_topic(topic, 1)
    produce(cluster, topic, 5)
    consumer = share_consumer(cluster, group, explicit=True)
    consumer.subscribe([topic])
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
        assert poll_until(consumer, lambda got: False, seconds=1.5) == []
    finally:
        consumer.close()
    assert start_offsets(cluster, group, topic) == {0: 5}


def test_delivery_count_limit_archives_a_poison_record(cluster: Cluster) -> None:
    topic, group = fresh("poison"), fresh("g")
    cluster.create_topic(topic, 1)
    produce(cluster, topic, 1)
    consumer = share_consumer(cluster, group, explicit=True)
    consumer.subscribe([topic])
    counts = []
    try:
        deadline = time.monotonic() + DEADLINE_S
        while len(counts) < 5 and time.monotonic() < deadline:
            for message in consumer.poll(0.2):
                counts.append(message.delivery_count())
                consumer.acknowledge(message, ck.AcknowledgeType.RELEASE)
            consumer.commit_sync(10)
        # group.share.delivery.count.limit is 5: after the fifth release it is
        # archived and never delivered again
        assert poll_until(consumer, lambda got: False, seconds=1.5) == []
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
        holder = share_consumer(cluster, group, explicit=True)
        holder.subscribe([topic])
        other = share_consumer(cluster, group)
        try:
            held = poll_until(holder, lambda got: len(got) >= 3)
            assert [m.delivery_count() for m in held] == [1, 1, 1]
            started = time.monotonic()
            other.subscribe([topic])
            # the holder never acknowledges: after the 1 s lock the records are
            # AVAILABLE again and the other member acquires them
            got = poll_until(other, lambda got: len(got) >= 3)
            assert [(m.offset(), m.delivery_count()) for m in got] == [
                (0, 2),
                (1, 2),
                (2, 2),
            ]
            assert time.monotonic() - started >= 0.5
        finally:
            other.close()
            holder.close()


def test_restart_keeps_acknowledged_state(tmp_path: Path) -> None:
    topic, group = "durable", "g"
    with Cluster(data_dir=tmp_path, share_configs=SHARE_CONFIGS) as cluster:
        cluster.create_topic(topic, 1)
        produce(cluster, topic, 10)
        consumer = share_consumer(cluster, group, explicit=True)
        consumer.subscribe([topic])
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
        consumer = share_consumer(cluster, group)
        consumer.subscribe([topic])
        try:
            again = poll_until(consumer, lambda got: len(got) >= 4)
            # locks are not persisted: the acquired records are available again,
            # with the delivery count they had
            assert [(m.offset(), m.delivery_count()) for m in again] == [
                (6, 2),
                (7, 2),
                (8, 2),
                (9, 2),
            ]
            assert poll_until(consumer, lambda got: False, seconds=1.0) == []
        finally:
            consumer.close()
        assert start_offsets(cluster, group, topic) == {0: 10}


def test_state_records_are_kafkas(cluster: Cluster) -> None:
    """``__share_group_state`` holds ShareSnapshot records as Kafka's share
    coordinator writes them (dump-log's share-group-state decoder reads them)."""
    from kproto.broker.share.records import decode_state_record

    group = fresh("g")
    topic = fresh("rec")
    cluster.create_topic(topic, 1)
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        conn.request(
            ApiKey.SHARE_GROUP_HEARTBEAT,
            group_id=group,
            member_id="m",
            member_epoch=0,
            subscribed_topic_names=[topic],
        )
    time.sleep(0.2)
    topic_id = cluster.state.topics[topic].topic_id
    found = []
    for p in range(5):
        try:
            records = cluster.records("__share_group_state", p)
        except KeyError:
            continue
        for r in records:
            decoded = decode_state_record(r.key, r.value)
            if decoded.group_id == group:
                found.append((p, decoded))
    assert found, "no ShareSnapshot record written"
    p, record = found[-1]
    assert record.snapshot and record.topic_id == topic_id and record.partition == 0
    assert record.value.start_offset == 0 and isinstance(topic_id, uuid.UUID)
    # kproto dump-log --share-group-state-decoder prints them as Kafka's tool does
    from kproto.cli._log_decoders import decode_record

    last = [
        r for r in cluster.records("__share_group_state", p) if group.encode() in r.key
    ][-1]
    key_text, value_text = decode_record("share-group-state", last)
    assert f'"groupId":"{group}"' in key_text and '"type":"0"' in key_text
    assert '"startOffset":0' in value_text and '"stateBatches":[]' in value_text


def test_api_versions_advertise_the_stable_share_versions(cluster: Cluster) -> None:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        conn.negotiate()
        versions = conn.broker_api_versions
    assert versions is not None
    assert versions[ApiKey.SHARE_GROUP_HEARTBEAT] == (1, 1)
    assert versions[ApiKey.SHARE_GROUP_DESCRIBE] == (1, 1)
    assert versions[ApiKey.SHARE_FETCH] == (1, 2)
    assert versions[ApiKey.SHARE_ACKNOWLEDGE] == (1, 2)
    assert versions[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS] == (0, 1)
    assert versions[ApiKey.ALTER_SHARE_GROUP_OFFSETS] == (0, 0)
    assert versions[ApiKey.DELETE_SHARE_GROUP_OFFSETS] == (0, 0)


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
            deadline = time.monotonic() + DEADLINE_S
            while (
                "late",
                "reset",
                0,
            ) not in cluster.share.partitions and time.monotonic() < deadline:
                late.poll(0.1)
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
        consumer = share_consumer(cluster, "g3")
        consumer.subscribe(["spread"])
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
                return conn.request(
                    ApiKey.SHARE_GROUP_HEARTBEAT,
                    group_id="ghost",
                    member_id=member,
                    member_epoch=epoch,
                    subscribed_topic_names=["spread"] if epoch == 0 else None,
                )

            assert beat("quiet", 0).member_epoch == 1
            live = beat("live", 0)
            assert list(live.assignment.topic_partitions[0].partitions) == [0, 2]
            epoch = live.member_epoch
            deadline = time.monotonic() + DEADLINE_S
            answer = beat("live", epoch)
            while answer.assignment is None and time.monotonic() < deadline:
                time.sleep(0.2)
                answer = beat("live", epoch)
                epoch = answer.member_epoch
            # "quiet" missed its 1 s session timeout: "live" has every partition
            assert list(answer.assignment.topic_partitions[0].partitions) == [0, 1, 2]
            assert beat("quiet", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_share_session_limit() -> None:
    configs = dict(SHARE_CONFIGS, **{"group.share.max.share.sessions": 1})
    with Cluster(share_configs=configs) as cluster:
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=10) as conn:

            def open_session(member: str) -> Any:
                return conn.request(
                    ApiKey.SHARE_FETCH,
                    group_id="g",
                    member_id=member,
                    share_session_epoch=0,
                    max_wait_ms=0,
                    min_bytes=1,
                    max_bytes=1024,
                    max_records=10,
                    batch_size=10,
                    topics=[],
                )

            assert open_session("a").error_code == 0
            assert open_session("a").error_code == 0  # replacing its own
            refused = open_session("b")
            assert refused.error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED


def test_replay_applies_share_updates_after_the_snapshot(tmp_path: Path) -> None:
    """Kafka's share coordinator writes ShareUpdate deltas between snapshots; a
    restart applies them on top of the last ShareSnapshot."""
    import io

    import attrs

    from kproto.broker.groups.records import encode_records
    from kproto.broker.share.records import (
        SHARE_STATE_TOPIC,
        UPDATE_TYPE,
        state_partition_for,
    )
    from kproto.index import data_type
    from kproto.meta import WIRE
    from kproto.serial import entity_writer

    with Cluster(data_dir=tmp_path, share_configs=SHARE_CONFIGS) as cluster:
        cluster.create_topic("upd", 1)
        produce(cluster, "upd", 6)
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=10) as conn:
            conn.request(
                ApiKey.SHARE_GROUP_HEARTBEAT,
                group_id="gu",
                member_id="m",
                member_epoch=0,
                subscribed_topic_names=["upd"],
            )
        topic_id = cluster.state.topics["upd"].topic_id
        partition = state_partition_for("gu", topic_id, 0, 5)
        # the initial snapshot (SPSO 0) is written in the background: wait for it
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            try:
                if cluster.records(SHARE_STATE_TOPIC, partition):
                    break
            except KeyError:
                pass
            time.sleep(0.05)

        def encoded(name: str, version: int, **fields: Any) -> bytes:
            cls = data_type(name, version)
            buf = io.BytesIO()
            buf.write(version.to_bytes(2, "big"))
            entity_writer(cls)(buf, cls(**fields))
            return buf.getvalue()

        key = encoded(
            "ShareUpdateKey", UPDATE_TYPE, group_id="gu", topic_id=topic_id, partition=0
        )
        value_cls = data_type("ShareUpdateValue", 0)
        element = (
            attrs.fields_dict(value_cls)["state_batches"].metadata[WIRE].element.entity
        )
        value = encoded(
            "ShareUpdateValue",
            0,
            snapshot_epoch=0,
            leader_epoch=0,
            start_offset=2,
            state_batches=(
                element(
                    first_offset=2, last_offset=2, delivery_state=2, delivery_count=1
                ),
                element(
                    first_offset=3, last_offset=3, delivery_state=0, delivery_count=3
                ),
            ),
        )

        def append() -> None:
            plog = cluster.state.partition_log(SHARE_STATE_TOPIC, partition)
            assert plog is not None
            plog.append_batches(encode_records([(key, value)], 0))

        cluster._on_loop(append)
    with Cluster(data_dir=tmp_path, share_configs=SHARE_CONFIGS) as cluster:
        assert start_offsets(cluster, "gu", "upd") == {0: 3}  # 2 was acknowledged
        consumer = share_consumer(cluster, "gu")
        consumer.subscribe(["upd"])
        try:
            got = poll_until(consumer, lambda got: len(got) >= 3)
            assert [(m.offset(), m.delivery_count()) for m in got] == [
                (3, 4),
                (4, 1),
                (5, 1),
            ]
            consumer.commit_sync(10)
        finally:
            consumer.close()
