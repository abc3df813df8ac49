"""Mixed classic/consumer groups at the protocol level: a classic member inside a
KIP-848 consumer group (JoinGroup generation = member epoch, SyncGroup carrying the
server assignor's partitions, REBALANCE_IN_PROGRESS on Heartbeat, OffsetCommit,
LeaveGroup), the conversions in both directions, and the migration policy."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, data_type
from kproto.serial import decode, encode
from tests.broker.wire import heartbeat, join_classic
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(60)
_ids = itertools.count()
CAPS = {ApiKey.JOIN_GROUP: 3, ApiKey.OFFSET_COMMIT: 8, ApiKey.OFFSET_FETCH: 8}


def subscription(*topics: str, owned: dict[str, list[int]] | None = None) -> bytes:
    """A ``ConsumerProtocolSubscription`` v1 (int16 version prefix)."""
    cls = data_type("ConsumerProtocolSubscription", 1)
    tp = __import__(cls.__module__, fromlist=["TopicPartition"]).TopicPartition
    entity = cls(
        topics=topics,
        user_data=None,
        owned_partitions=tuple(
            tp(topic=t, partitions=tuple(ps)) for t, ps in (owned or {}).items()
        ),
    )
    return b"\x00\x01" + encode(entity)


def assignment(data: bytes) -> set[int]:
    cls = data_type("ConsumerProtocolAssignment", 0)
    return {
        p for tp in decode(cls, data[2:]).assigned_partitions for p in tp.partitions
    }


def classic_join(
    conn: Connection, group: str, member: str, topic: str, rebalance_ms: int = 6000
) -> Any:
    return conn.request(
        ApiKey.JOIN_GROUP,
        group_id=group,
        session_timeout_ms=6000,
        rebalance_timeout_ms=rebalance_ms,
        member_id=member,
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": subscription(topic)}],
    )


def sync(conn: Connection, group: str, member: str, generation: int) -> Any:
    return conn.request(
        ApiKey.SYNC_GROUP,
        group_id=group,
        generation_id=generation,
        member_id=member,
        assignments=[],
    )


def beat(conn: Connection, group: str, member: str, generation: int) -> int:
    answer = conn.request(
        ApiKey.HEARTBEAT, group_id=group, generation_id=generation, member_id=member
    )
    return int(answer.error_code)


def hb(conn: Connection, group: str, member: str, epoch: int, **fields: Any) -> Any:
    if epoch == 0:
        fields.setdefault("rebalance_timeout_ms", 2000)
        fields.setdefault("topic_partitions", [])
    api = ApiKey.CONSUMER_GROUP_HEARTBEAT
    return heartbeat(conn, api, group, member, epoch, **fields)


def join(conn: Connection, group: str, member: str, topic: str) -> Any:
    """A consumer-protocol member joining ``group`` subscribed to ``topic``."""
    return hb(conn, group, member, 0, subscribed_topic_names=[topic])


def parts(answer: Any) -> set[int]:
    return {p for tp in answer.assignment.topic_partitions for p in tp.partitions}


def _connect(
    cluster: Cluster, caps: dict[ApiKey, int] | None = None
) -> Iterator[Connection]:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=20) as c:
        c.negotiate(caps=caps or CAPS)
        yield c


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1, consumer_heartbeat_interval_ms=100) as c:
        yield c


@pytest.fixture
def conn(cluster: Cluster) -> Iterator[Connection]:
    yield from _connect(cluster)


def fresh(cluster: Cluster, n: int = 4) -> tuple[str, str]:
    i = next(_ids)
    cluster.create_topic(f"mx{i}", n)
    return f"g{i}", f"mx{i}"


def test_classic_member_in_a_consumer_group(cluster: Cluster, conn: Connection) -> None:
    group, topic = fresh(cluster)
    a = join(conn, group, "m1", topic)
    assert (a.error_code, parts(a)) == (0, {0, 1, 2, 3})
    tid = cluster.state.topics[topic].topic_id
    owned = [{"topic_id": tid, "partitions": [0, 1, 2, 3]}]
    hb(conn, group, "m1", 1, topic_partitions=owned)
    # a classic member joins: generation = its member epoch, no leader, no list
    j = classic_join(conn, group, "", topic)
    assert j.error_code == ErrorCode.NONE
    assert (j.generation_id, j.protocol_name) == (2, "range")  # v3: no protocol_type
    assert (j.leader, list(j.members)) == ("", [])
    member = j.member_id
    s = sync(conn, group, member, j.generation_id)
    # m1 still holds everything: nothing yet for the classic member
    assert (s.error_code, assignment(s.assignment)) == (0, set())
    assert sync(conn, group, member, 7).error_code == ErrorCode.ILLEGAL_GENERATION
    # m1 revokes two partitions; then the classic member is told to rejoin
    m1 = hb(conn, group, "m1", 1, topic_partitions=owned)
    kept = sorted(parts(m1))
    assert len(kept) == 2
    hb(conn, group, "m1", 1, topic_partitions=[{"topic_id": tid, "partitions": kept}])
    assert beat(conn, group, member, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    j2 = classic_join(conn, group, member, topic)
    s2 = sync(conn, group, member, j2.generation_id)
    assert assignment(s2.assignment) == {0, 1, 2, 3} - set(kept)
    assert beat(conn, group, member, j2.generation_id) == ErrorCode.NONE
    # offsets: a classic commit (v8) at its generation; a ConsumerGroupHeartbeat
    # with its member id is refused
    commit = conn.request(
        ApiKey.OFFSET_COMMIT,
        group_id=group,
        generation_id_or_member_epoch=j2.generation_id,
        member_id=member,
        topics=[
            {
                "name": topic,
                "partitions": [{"partition_index": 0, "committed_offset": 5}],
            }
        ],
    )
    assert commit.topics[0].partitions[0].error_code == ErrorCode.NONE
    stale = conn.request(
        ApiKey.OFFSET_COMMIT,
        group_id=group,
        generation_id_or_member_epoch=j2.generation_id - 1,
        member_id=member,
        topics=[
            {
                "name": topic,
                "partitions": [{"partition_index": 0, "committed_offset": 6}],
            }
        ],
    )
    assert stale.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
    assert (
        hb(conn, group, member, j2.generation_id).error_code
        == ErrorCode.UNKNOWN_MEMBER_ID
    )
    # a classic join with a subscription that does not decode is refused
    bad = join_classic(conn, group, metadata=b"\x00")
    assert bad.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # ConsumerGroupDescribe v1 tells the member types apart
    (d,) = conn.request(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=[group]).groups
    assert {m.member_id: m.member_type for m in d.members} == {"m1": 1, member: 0}
    # the classic member leaves: the consumer group stays, m1 alone
    left = conn.request(
        ApiKey.LEAVE_GROUP, group_id=group, members=[{"member_id": member}]
    )
    assert (left.error_code, left.members[0].error_code) == (0, 0)
    assert set(cluster.groups.consumer.groups[group].members) == {"m1"}


def test_upgrade_then_downgrade(cluster: Cluster, conn: Connection) -> None:
    group, topic = fresh(cluster)
    j = classic_join(conn, group, "", topic)
    member = j.member_id
    assert j.leader == member
    leader_assignment = b"\x00\x00" + encode(
        data_type("ConsumerProtocolAssignment", 0)(
            assigned_partitions=(
                __import__(
                    data_type("ConsumerProtocolAssignment", 0).__module__,
                    fromlist=["TopicPartition"],
                ).TopicPartition(topic=topic, partitions=(0, 1, 2, 3)),
            ),
            user_data=None,
        )
    )
    s = conn.request(
        ApiKey.SYNC_GROUP,
        group_id=group,
        generation_id=j.generation_id,
        member_id=member,
        assignments=[{"member_id": member, "assignment": leader_assignment}],
    )
    assert assignment(s.assignment) == {0, 1, 2, 3}
    # upgrade: the classic member keeps its partitions at its generation
    a = join(conn, group, "m1", topic)
    assert a.error_code == ErrorCode.NONE
    upgraded = cluster.groups.consumer.groups[group]
    assert upgraded.members[member].member_epoch == j.generation_id
    assert beat(conn, group, member, j.generation_id) == ErrorCode.REBALANCE_IN_PROGRESS
    j2 = classic_join(conn, group, member, topic)  # eager: owns nothing now
    assert assignment(sync(conn, group, member, j2.generation_id).assignment)
    # downgrade: the consumer member leaves, the classic member is told to rejoin
    assert hb(conn, group, "m1", -1).error_code == ErrorCode.NONE
    assert group not in cluster.groups.consumer.groups
    classic = cluster.groups.groups[group]
    assert classic.protocol_type == "consumer" and member in classic.members
    assert (
        beat(conn, group, member, j2.generation_id) == ErrorCode.REBALANCE_IN_PROGRESS
    )
    j3 = classic_join(conn, group, member, topic)
    assert (j3.error_code, j3.leader) == (0, member)
    assert j3.generation_id == classic.generation_id


def test_upgrade_refused_for_another_protocol_type(
    cluster: Cluster, conn: Connection
) -> None:
    group, topic = fresh(cluster)
    joined = join_classic(conn, group, protocol_type="connect", protocol="default")
    assert joined.error_code == ErrorCode.NONE
    refused = join(conn, group, "m1", topic)
    assert refused.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert "not 'consumer'" in refused.error_message


def test_policy_disabled_refuses_both_directions() -> None:
    with Cluster(nodes=1, consumer_migration_policy="disabled") as cluster:
        for conn in _connect(cluster):
            group, topic = fresh(cluster)
            joined = join(conn, group, "m1", topic)
            assert joined.error_code == ErrorCode.NONE
            refused = classic_join(conn, group, "", topic)
            assert refused.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
            other, topic2 = fresh(cluster)
            assert classic_join(conn, other, "", topic2).error_code == ErrorCode.NONE
            up = join(conn, other, "m2", topic2)
            assert up.error_code == ErrorCode.GROUP_ID_NOT_FOUND
            assert "group.consumer.migration.policy is disabled" in up.error_message


def test_policy_upgrade_keeps_a_consumer_group_of_classic_members() -> None:
    with Cluster(nodes=1, consumer_migration_policy="upgrade") as c:
        for conn in _connect(c):
            group, topic = fresh(c)
            j = classic_join(conn, group, "", topic)
            sync(conn, group, j.member_id, j.generation_id)
            assert join(conn, group, "m1", topic).error_code == 0
            assert hb(conn, group, "m1", -1).error_code == 0
            # no downgrade: the classic member stays in the consumer group
            assert set(c.groups.consumer.groups[group].members) == {j.member_id}


def test_classic_member_that_does_not_rejoin_is_fenced(
    cluster: Cluster, conn: Connection
) -> None:
    group, topic = fresh(cluster)
    assert join(conn, group, "m1", topic).error_code == 0
    j = classic_join(conn, group, "", topic, rebalance_ms=300)
    assert join(conn, group, "m2", topic).error_code == 0
    assert (
        beat(conn, group, j.member_id, j.generation_id)
        == ErrorCode.REBALANCE_IN_PROGRESS
    )
    errors: list[int] = []

    def settled() -> bool:  # heartbeating, never rejoining
        errors.append(beat(conn, group, j.member_id, j.generation_id))
        return errors[-1] != ErrorCode.REBALANCE_IN_PROGRESS

    eventually(settled, 10, interval_s=0.05, retry_on=())
    assert errors[-1] == ErrorCode.UNKNOWN_MEMBER_ID
    assert set(cluster.groups.consumer.groups[group].members) == {"m1", "m2"}


def test_static_classic_member_restart_takes_its_place(cluster: Cluster) -> None:
    for conn in _connect(cluster, {ApiKey.JOIN_GROUP: 5, ApiKey.HEARTBEAT: 3}):
        _static_restart(cluster, conn)


def _static_restart(cluster: Cluster, conn: Connection) -> None:
    group, topic = fresh(cluster)
    assert join(conn, group, "m1", topic).error_code == 0

    def static_join(member: str) -> Any:
        return conn.request(
            ApiKey.JOIN_GROUP,
            group_id=group,
            session_timeout_ms=6000,
            rebalance_timeout_ms=6000,
            member_id=member,
            group_instance_id="i-1",
            protocol_type="consumer",
            protocols=[{"name": "range", "metadata": subscription(topic)}],
        )

    first = static_join("")
    epoch = cluster.groups.consumer.groups[group].group_epoch
    second = static_join("")  # restarted: a new member id, same instance id
    assert second.member_id != first.member_id
    assert second.generation_id == first.generation_id
    assert cluster.groups.consumer.groups[group].group_epoch == epoch  # no rebalance
    members = set(cluster.groups.consumer.groups[group].members)
    assert members == {"m1", second.member_id}
    answer = conn.request(
        ApiKey.HEARTBEAT,
        group_id=group,
        generation_id=first.generation_id,
        member_id=first.member_id,
        group_instance_id="i-1",
    )
    assert answer.error_code == ErrorCode.FENCED_INSTANCE_ID
