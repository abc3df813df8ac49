"""What the KIP-848 consumer and KIP-1071 streams groups share
(:mod:`kproto.broker.groups.modern`, :mod:`kproto.broker.groups.modern_coordinator`):
the per-group session and heartbeat settings, the online upgrade of an empty classic
group, and the member reconciliation both follow (Kafka's
``CurrentAssignmentBuilder``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.groups.consumer_group import ConsumerGroupMember, MemberState
from kproto.broker.groups.modern import reconcile
from kproto.broker.groups.streams_group import StreamsGroupMember, StreamsMemberState
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.wire import incremental_alter_configs, join_classic
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(60)
GROUP_RESOURCE = 32  # Kafka's ConfigResource.Type.GROUP
CAPS = {ApiKey.JOIN_GROUP: 3, ApiKey.LEAVE_GROUP: 2}


def _streams_join(conn: Connection, group: str, member: str, source: str) -> Any:
    return conn.request(
        ApiKey.STREAMS_GROUP_HEARTBEAT,
        group_id=group,
        member_id=member,
        member_epoch=0,
        endpoint_information_epoch=0,
        rebalance_timeout_ms=2000,
        topology={
            "epoch": 1,
            "subtopologies": [{"subtopology_id": "0", "source_topics": [source]}],
        },
        process_id="p",
        active_tasks=[],
        standby_tasks=[],
        warmup_tasks=[],
    )


def _set_group_config(conn: Connection, group: str, name: str, value: str) -> None:
    result = incremental_alter_configs(conn, GROUP_RESOURCE, group, (name, 0, value))
    assert result.error_code == 0, result.error_message


def test_streams_group_heartbeat_interval_follows_the_group_config() -> None:
    """KIP-1071: ``streams.heartbeat.interval.ms`` set on the group is the
    interval its members are given, as ``consumer.heartbeat.interval.ms`` is for
    consumer groups (both read through the shared coordinator base)."""
    with Cluster(nodes=1, streams_heartbeat_interval_ms=100) as cluster:
        cluster.create_topic("in", 1)
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=20) as conn:
            conn.negotiate()
            first = _streams_join(conn, "plain", "m1", "in")
            assert (first.error_code, first.heartbeat_interval_ms) == (0, 100)
            _set_group_config(conn, "tuned", "streams.heartbeat.interval.ms", "7000")
            tuned = _streams_join(conn, "tuned", "m1", "in")
            assert (tuned.error_code, tuned.heartbeat_interval_ms) == (0, 7000)


def _empty_classic_group(conn: Connection, group: str) -> None:
    """Join and leave with the classic protocol: the group's (empty)
    GroupMetadata record is in ``__consumer_offsets``."""
    joined = join_classic(conn, group)
    assert joined.error_code == 0
    left = conn.request(ApiKey.LEAVE_GROUP, group_id=group, member_id=joined.member_id)
    assert left.error_code == 0


def test_an_upgraded_classic_group_does_not_come_back_after_a_restart(
    tmp_path: Path,
) -> None:
    """Converting an empty classic group to a streams group writes the classic
    group's tombstone, as Kafka's ``maybeDeleteEmptyClassicGroup`` does: after a
    restart the group is a streams group only, not also an empty classic one."""
    with Cluster(nodes=1, data_dir=tmp_path) as cluster:
        cluster.create_topic("in", 1)
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=20) as conn:
            conn.negotiate(caps=CAPS)
            _empty_classic_group(conn, "app")
            assert cluster.groups.list_groups() == [
                ("app", "consumer", "Empty", "classic")
            ]
            joined = _streams_join(conn, "app", "m1", "in")
            assert joined.error_code == 0, joined.error_message
            assert [g[3] for g in cluster.groups.list_groups()] == ["streams"]
    with Cluster(nodes=1, data_dir=tmp_path) as cluster:
        assert [g[3] for g in cluster.groups.list_groups()] == ["streams"]
        assert "app" not in cluster.groups.groups


def test_reconcile_is_the_same_for_partitions_and_tasks() -> None:
    """One ``reconcile`` serves both member types, each in its own states."""
    consumer = ConsumerGroupMember("c", member_epoch=1, assigned={"t": frozenset({0})})
    streams = StreamsGroupMember("s", member_epoch=1, assigned={"t": frozenset({0})})
    for member in (consumer, streams):
        assert reconcile(member, 2, {"t": frozenset({1})}, {"t": frozenset({0})}, {})
        assert member.pending_revocation == {"t": frozenset({0})}
        assert member.member_epoch == 1
    assert consumer.state == MemberState.UNREVOKED_PARTITIONS
    assert streams.state == StreamsMemberState.UNREVOKED_TASKS
    for member in (consumer, streams):
        assert reconcile(member, 2, {"t": frozenset({1})}, {}, {("t", 1): 1})
        assert (member.member_epoch, member.assigned) == (2, {})
    assert consumer.state == MemberState.UNRELEASED_PARTITIONS
    assert streams.state == StreamsMemberState.UNRELEASED_TASKS


def test_static_leave_then_session_expiry_fences_the_consumer_member() -> None:
    """A static member that left (-2) keeps its place until its session expires;
    then the shared fencing removes it (no UNKNOWN state left behind)."""
    with Cluster(
        nodes=1, consumer_session_timeout_ms=300, consumer_heartbeat_interval_ms=50
    ) as cluster:
        cluster.create_topic("in", 2)
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=20) as conn:
            conn.negotiate()
            fields = {"group_id": "static", "instance_id": "i-1", "rack_id": None}
            joined = conn.request(
                ApiKey.CONSUMER_GROUP_HEARTBEAT,
                member_id="m1",
                member_epoch=0,
                rebalance_timeout_ms=1000,
                subscribed_topic_names=["in"],
                topic_partitions=[],
                **fields,
            )
            assert joined.error_code == 0
            left = conn.request(
                ApiKey.CONSUMER_GROUP_HEARTBEAT,
                member_id="m1",
                member_epoch=-2,
                **fields,
            )
            assert (left.error_code, left.member_epoch) == (0, -2)
            group = cluster.groups.consumer.groups["static"]
            assert set(group.members) == {"m1"}
            eventually(lambda: not group.members, 10, interval_s=0.05)
            assert group.members == {} and group.static_members == {}
            answer = conn.request(
                ApiKey.CONSUMER_GROUP_HEARTBEAT,
                member_id="m1",
                member_epoch=1,
                **fields,
            )
            assert answer.error_code == ErrorCode.UNKNOWN_MEMBER_ID
