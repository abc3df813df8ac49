"""Every version of every group API, over the wire with kproto's own Connection.

The clients' tests cover the versions they negotiate; these cover the rest (JoinGroup
v0-v9, OffsetFetch v0-v10 including v8+ batching and v10 topic ids, FindCoordinator
v0-v6, LeaveGroup before and after batching, ...), checking the version-specific
fields Kafka's JSON definitions give each version.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.acl import ResourceType
from kproto.broker.authorized_operations import supported_operations
from kproto.broker.dispatch import build
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions, request_type
from tests.broker.conftest import cluster_with_topic

TOPIC = "vt"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from cluster_with_topic(TOPIC, 2, nodes=3)


def connect(cluster: Cluster, node_id: int) -> Connection:
    node = cluster.state.nodes[node_id]
    return Connection(node.host, node.port, client_id="versions", timeout_s=20)


def call(conn: Connection, api_key: int, version: int, **fields: Any) -> Any:
    return conn.send(build(request_type(api_key, version), fields))


def coordinator(cluster: Cluster, group_id: str) -> Connection:
    node_id = cluster.groups.coordinator_for(group_id)
    return connect(cluster, node_id)


def neighbour(cluster: Cluster, group_id: str) -> str:
    """Another group id with the same coordinator as ``group_id``."""
    node = cluster.groups.coordinator_for(group_id)
    return next(
        name
        for name in (f"{group_id}-other-{i}" for i in range(1000))
        if cluster.groups.coordinator_for(name) == node
    )


def versions(api_key: int) -> list[int]:
    return list(api_versions(api_key))


@pytest.mark.parametrize("version", versions(10))
def test_find_coordinator(cluster: Cluster, version: int) -> None:
    expected = cluster.state.nodes[cluster.groups.coordinator_for("g-find")]
    with connect(cluster, 1) as conn:
        if version >= 4:
            r = call(
                conn, 10, version, key_type=0, coordinator_keys=["g-find", "g-other"]
            )
            first, second = r.coordinators
            assert (first.key, first.error_code) == ("g-find", 0)
            assert (first.node_id, first.host, first.port) == (
                expected.node_id,
                expected.host,
                expected.port,
            )
            assert second.node_id == cluster.groups.coordinator_for("g-other")
            txn = call(
                conn, 10, version, key_type=1, coordinator_keys=["txn"]
            ).coordinators
            assert (txn[0].error_code, txn[0].node_id) == (
                ErrorCode.NONE,
                cluster.txn.coordinator_for("txn"),
            )
        else:
            r = call(conn, 10, version, key="g-find", key_type=0)
            assert (r.error_code, r.node_id, r.port) == (
                0,
                expected.node_id,
                expected.port,
            )
            if version >= 1:
                txn = call(conn, 10, version, key="txn", key_type=1)
                assert (txn.error_code, txn.node_id) == (
                    ErrorCode.NONE,
                    cluster.txn.coordinator_for("txn"),
                )


def _protocols() -> list[dict[str, Any]]:
    return [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00"}]


@pytest.mark.parametrize("version", versions(11))
def test_join_sync_heartbeat_leave(cluster: Cluster, version: int) -> None:
    group = f"jg-{version}"
    join = {
        "group_id": group,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "protocol_type": "consumer",
        "protocols": _protocols(),
    }
    with coordinator(cluster, group) as conn:
        r = call(conn, 11, version, member_id="", **join)
        if version >= 4:  # KIP-394
            assert (r.error_code, r.generation_id) == (ErrorCode.MEMBER_ID_REQUIRED, -1)
            r = call(conn, 11, version, member_id=r.member_id, **join)
        assert (r.error_code, r.generation_id, r.leader) == (0, 1, r.member_id)
        assert [m.member_id for m in r.members] == [r.member_id]
        assert r.protocol_name == "range"
        if version >= 7:
            assert r.protocol_type == "consumer"
        member = r.member_id
        sync_v = min(version, max(versions(14)))
        s = call(
            conn,
            14,
            sync_v,
            group_id=group,
            generation_id=1,
            member_id=member,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[{"member_id": member, "assignment": b"A"}],
        )
        assert (s.error_code, s.assignment) == (0, b"A")
        hb_v = min(version, max(versions(12)))
        hb = call(conn, 12, hb_v, group_id=group, generation_id=1, member_id=member)
        assert hb.error_code == 0
        stale = call(conn, 12, hb_v, group_id=group, generation_id=0, member_id=member)
        assert stale.error_code == ErrorCode.ILLEGAL_GENERATION
        leave_v = min(version, max(versions(13)))
        if leave_v >= 3:
            lv = call(
                conn,
                13,
                leave_v,
                group_id=group,
                members=[{"member_id": member}, {"member_id": "ghost"}],
            )
            assert lv.error_code == 0
            assert [m.error_code for m in lv.members] == [
                0,
                ErrorCode.UNKNOWN_MEMBER_ID,
            ]
        else:
            lv = call(conn, 13, leave_v, group_id=group, member_id=member)
            assert lv.error_code == 0
            again = call(conn, 13, leave_v, group_id=group, member_id=member)
            assert again.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert cluster.groups.describe_group(group).state == "Empty"


def test_requests_to_a_node_that_is_not_the_coordinator(cluster: Cluster) -> None:
    group = "elsewhere"
    other = next(
        n for n in cluster.state.nodes if n != cluster.groups.coordinator_for(group)
    )
    with connect(cluster, other) as conn:
        r = call(
            conn,
            11,
            5,
            group_id=group,
            member_id="",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=_protocols(),
        )
        assert r.error_code == ErrorCode.NOT_COORDINATOR
        c = call(
            conn,
            8,
            8,
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                {
                    "name": TOPIC,
                    "partitions": [{"partition_index": 0, "committed_offset": 1}],
                }
            ],
        )
        assert c.topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
        f = call(conn, 9, 8, groups=[{"group_id": group, "topics": None}])
        assert f.groups[0].error_code == ErrorCode.NOT_COORDINATOR
        # OffsetFetch v0-v1 have no group-level error: each partition carries it.
        old = call(
            conn,
            9,
            1,
            group_id=group,
            topics=[{"name": TOPIC, "partition_indexes": [0]}],
        )
        assert [p.error_code for p in old.topics[0].partitions] == [
            ErrorCode.NOT_COORDINATOR
        ]
        d = call(conn, 15, 5, groups=[group])
        assert (d.groups[0].error_code, d.groups[0].group_state) == (
            ErrorCode.NOT_COORDINATOR,
            "",
        )
        lv = call(conn, 13, 0, group_id=group, member_id="m")
        assert lv.error_code == ErrorCode.NOT_COORDINATOR
        dg = call(conn, 42, 2, groups_names=[group])
        assert dg.results[0].error_code == ErrorCode.NOT_COORDINATOR


def _commit_topics(cluster: Cluster, version: int, offset: int) -> list[dict[str, Any]]:
    partitions = [
        {
            "partition_index": p,
            "committed_offset": offset + p,
            "committed_metadata": "m",
        }
        for p in (0, 1)
    ]
    if version >= 10:
        return [
            {"topic_id": cluster.state.topics[TOPIC].topic_id, "partitions": partitions}
        ]
    return [{"name": TOPIC, "partitions": partitions}]


def _admin_commit(
    conn: Connection, cluster: Cluster, group: str, version: int, offset: int
) -> Any:
    """OffsetCommit ``version`` from outside ``group`` (generation -1, no member)
    of ``offset`` and ``offset + 1`` to partitions 0 and 1 of TOPIC."""
    return call(
        conn,
        ApiKey.OFFSET_COMMIT,
        version,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=_commit_topics(cluster, version, offset),
    )


@pytest.mark.parametrize("version", versions(8))
def test_offset_commit_then_fetch_all_topics(cluster: Cluster, version: int) -> None:
    group = f"oc-{version}"
    with coordinator(cluster, group) as conn:
        c = _admin_commit(conn, cluster, group, version, 10 * version)
        assert [p.error_code for t in c.topics for p in t.partitions] == [0, 0]
        if version >= 10:
            assert c.topics[0].topic_id == cluster.state.topics[TOPIC].topic_id
        missing = call(
            conn,
            8,
            min(version, 9),
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[{"name": "no-such-topic", "partitions": [{"partition_index": 0}]}],
        )
        assert (
            missing.topics[0].partitions[0].error_code
            == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
    committed = cluster.groups.fetch_offsets(group, None)
    assert {tp: c.offset for tp, c in committed.items()} == {
        (TOPIC, 0): 10 * version,
        (TOPIC, 1): 10 * version + 1,
    }


@pytest.mark.parametrize("version", versions(9))
def test_offset_fetch(cluster: Cluster, version: int) -> None:
    group = f"of-{version}"
    topic_id = cluster.state.topics[TOPIC].topic_id
    with coordinator(cluster, group) as conn:
        _admin_commit(conn, cluster, group, 8, 5)
        asked = (
            {"topic_id": topic_id, "partition_indexes": [0, 1]}
            if version >= 10
            else {"name": TOPIC, "partition_indexes": [0, 1]}
        )
        if version >= 8:
            r = call(
                conn,
                9,
                version,
                groups=[
                    {"group_id": group, "topics": [asked]},
                    {"group_id": group, "topics": None},
                    {"group_id": neighbour(cluster, group), "topics": [asked]},
                ],
            )
            named, everything, none = r.groups
            assert named.error_code == everything.error_code == none.error_code == 0
            assert named.topics == everything.topics
            topics = named.topics
            assert [p.committed_offset for p in none.topics[0].partitions] == [-1, -1]
        else:
            r = call(conn, 9, version, group_id=group, topics=[asked])
            topics = r.topics
            if version >= 2:
                assert r.error_code == 0
                everything = call(conn, 9, version, group_id=group, topics=None)
                assert everything.topics == r.topics
        (topic,) = topics
        if version >= 10:
            assert topic.topic_id == topic_id
        else:
            assert topic.name == TOPIC
        assert [
            (p.partition_index, p.committed_offset, p.metadata)
            for p in topic.partitions
        ] == [
            (0, 5, "m"),
            (1, 6, "m"),
        ]


@pytest.mark.parametrize("version", versions(15))
def test_describe_groups(cluster: Cluster, version: int) -> None:
    group = f"dg-{version}"
    cluster.groups.coordinator_for(group)
    with coordinator(cluster, group) as conn:
        _admin_commit(conn, cluster, group, 8, 1)
        r = call(
            conn,
            15,
            version,
            groups=[group, neighbour(cluster, group)],
            include_authorized_operations=True,
        )
        found, absent = r.groups
        assert (found.error_code, found.group_state, found.members) == (0, "Empty", ())
        assert absent.group_state == "Dead"
        assert absent.error_code == (
            ErrorCode.GROUP_ID_NOT_FOUND if version >= 6 else 0
        )
        if version >= 3:
            # no authorizer: every operation a group supports (KIP-430)
            assert found.authorized_operations == supported_operations(
                ResourceType.GROUP
            )


@pytest.mark.parametrize("version", versions(16))
def test_list_groups_each_node_lists_the_groups_it_coordinates(
    cluster: Cluster, version: int
) -> None:
    listed: list[str] = []
    for node_id in cluster.state.nodes:
        with connect(cluster, node_id) as conn:
            fields: dict[str, Any] = {}
            if version >= 4:
                fields["states_filter"] = ["Empty"]
            if version >= 5:
                fields["types_filter"] = ["classic"]
            r = call(conn, 16, version, **fields)
            assert r.error_code == 0
            for g in r.groups:
                assert cluster.groups.coordinator_for(g.group_id) == node_id
                if version >= 4:
                    assert g.group_state == "Empty"
                listed.append(g.group_id)
    assert sorted(listed) == sorted(
        g for g, *_ in cluster.groups.list_groups(["Empty"])
    )


@pytest.mark.parametrize("version", versions(42))
def test_delete_groups_and_offset_delete(cluster: Cluster, version: int) -> None:
    group = f"del-{version}"
    with coordinator(cluster, group) as conn:
        _admin_commit(conn, cluster, group, 8, 1)
        od = call(
            conn,
            47,
            0,
            group_id=group,
            topics=[{"name": TOPIC, "partitions": [{"partition_index": 1}]}],
        )
        assert (od.error_code, od.topics[0].partitions[0].error_code) == (0, 0)
        assert list(cluster.groups.fetch_offsets(group, None)) == [(TOPIC, 0)]
        r = call(conn, 42, version, groups_names=[group])
        assert [(x.group_id, x.error_code) for x in r.results] == [(group, 0)]
        again = call(conn, 42, version, groups_names=[group])
        assert again.results[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
        od = call(conn, 47, 0, group_id=group, topics=[])
        assert od.error_code == ErrorCode.GROUP_ID_NOT_FOUND
