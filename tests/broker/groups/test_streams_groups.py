"""KIP-1071 streams groups on the broker, at the protocol level (no Python Kafka
Streams client exists): StreamsGroupHeartbeat joins with a topology, tasks split
and move after revocation, MISSING_SOURCE_TOPICS, internal topics created,
StreamsGroupDescribe, ListGroups/DescribeGroups/DeleteGroups, offsets committed
with member epochs, and the the group and its offsets recovered after a restart."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.groups.modern import reconcile
from kproto.broker.groups.streams_group import (
    InternalTopic,
    StreamsGroup,
    StreamsGroupMember,
    StreamsMemberState,
    Subtopology,
    configure_topology,
    sticky_assign,
)
from kproto.broker.groups.streams_records import (
    STREAMS_RECORDS,
    decode_streams_record,
    group_records,
    load_streams_groups,
    member_records,
)
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.wire import (
    GROUP_CAPS,
    commit_offset,
    connect,
    heartbeat,
    join_classic,
    join_consumer_group,
)

pytestmark = pytest.mark.timeout(60)
_ids = itertools.count()
MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS, STALE_TOPOLOGY = 1, 3, 0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(
        nodes=1, streams_heartbeat_interval_ms=100, streams_session_timeout_ms=1500
    ) as c:
        yield c


@pytest.fixture
def fresh(cluster: Cluster) -> Callable[[int], tuple[str, str]]:
    """A new application id and a new source topic of ``n`` partitions."""

    def make(n: int = 4) -> tuple[str, str]:
        i = next(_ids)
        cluster.create_topic(f"src{i}", n)
        return f"app{i}", f"src{i}"

    return make


def topology(source: str, app: str, epoch: int = 1) -> dict[str, Any]:
    """Two subtopologies: 0 reads ``source`` and writes a repartition topic that
    1 reads, with a state store (changelog)."""
    repartition = f"{app}-agg-repartition"
    return {
        "epoch": epoch,
        "subtopologies": [
            {
                "subtopology_id": "0",
                "source_topics": [source],
                "repartition_sink_topics": [repartition],
            },
            {
                "subtopology_id": "1",
                "repartition_source_topics": [{"name": repartition}],
                "state_changelog_topics": [
                    {
                        "name": f"{app}-store-changelog",
                        "topic_configs": [{"key": "min.insync.replicas", "value": "1"}],
                    }
                ],
            },
        ],
    }


def hb(conn: Connection, group: str, member: str, epoch: int, **fields: Any) -> Any:
    api = ApiKey.STREAMS_GROUP_HEARTBEAT
    return heartbeat(
        conn, api, group, member, epoch, endpoint_information_epoch=0, **fields
    )


def join(conn: Connection, group: str, member: str, topo: dict[str, Any]) -> Any:
    return hb(
        conn,
        group,
        member,
        0,
        rebalance_timeout_ms=2000,
        topology=topo,
        process_id=f"process-{member}",
        active_tasks=[],
        standby_tasks=[],
        warmup_tasks=[],
    )


def tasks(answer: Any) -> set[tuple[str, int]]:
    assert answer.error_code == 0, answer.error_message
    assert answer.active_tasks is not None
    return {(t.subtopology_id, p) for t in answer.active_tasks for p in t.partitions}


def owned(*held: tuple[str, int]) -> list[dict[str, Any]]:
    subs: dict[str, list[int]] = {}
    for sub, p in held:
        subs.setdefault(sub, []).append(p)
    return [{"subtopology_id": s, "partitions": ps} for s, ps in sorted(subs.items())]


ALL = {(s, p) for s in "01" for p in range(4)}


def test_two_members_split_the_tasks_and_one_leaving_moves_them(
    cluster: Cluster, conn: Connection, fresh: Any
) -> None:
    app, src = fresh(4)
    a = join(conn, app, "m1", topology(src, app))
    assert (a.member_epoch, tasks(a), a.status) == (1, ALL, ())
    assert a.heartbeat_interval_ms == 100 and a.standby_tasks == ()
    # internal topics were created: repartition as wide as its writer, changelog
    # one partition per task and compacted
    assert cluster.state.topic_partitions(f"{app}-agg-repartition") == 4
    changelog = cluster.state.topics[f"{app}-store-changelog"]
    assert changelog.partitions == 4
    assert changelog.configs["cleanup.policy"] == "compact"
    assert changelog.configs["min.insync.replicas"] == "1"
    assert hb(conn, app, "m1", 1, active_tasks=owned(*ALL)).error_code == 0
    b = join(conn, app, "m2", topology(src, app))
    # m2 is at the new epoch but gets nothing m1 still holds
    assert (b.member_epoch, tasks(b)) == (2, set())
    a = hb(conn, app, "m1", 1, active_tasks=owned(*ALL))
    kept = tasks(a)
    assert a.member_epoch == 1 and len(kept) == 4  # revoke first, same epoch
    a = hb(conn, app, "m1", 1, active_tasks=owned(*kept))
    assert (a.member_epoch, tasks(a)) == (2, kept)
    b = hb(conn, app, "m2", 2, active_tasks=[])
    assert tasks(b) == ALL - kept
    (described,) = conn.request(
        ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[app, "nope"]
    ).groups[:1]
    assert (described.group_state, described.group_epoch) == ("Stable", 2)
    assert [s.subtopology_id for s in described.topology.subtopologies] == ["0", "1"]
    members = {m.member_id: m for m in described.members}
    assert {m.process_id for m in members.values()} == {"process-m1", "process-m2"}
    active = {
        (t.subtopology_id, p)
        for t in members["m2"].assignment.active_tasks
        for p in t.partitions
    }
    assert active == ALL - kept
    # m1 leaves: its tasks go to m2 at the next epoch
    assert hb(conn, app, "m1", -1).error_code == 0
    b = hb(conn, app, "m2", 2, active_tasks=owned(*(ALL - kept)))
    assert (b.member_epoch, tasks(b)) == (3, ALL)
    # a stale epoch is fenced; an unknown member is refused
    fenced = hb(conn, app, "m2", 7, active_tasks=[])
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert hb(conn, app, "m9", 3).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_missing_source_topic_status(cluster: Cluster, conn: Connection) -> None:
    app = f"app{next(_ids)}"
    a = join(conn, app, "m1", topology("not-there", app))
    assert a.error_code == 0
    assert [s.status_code for s in a.status] == [MISSING_SOURCE_TOPICS]
    assert "not-there" in a.status[0].status_detail
    assert tasks(a) == set()
    (described,) = conn.request(ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[app]).groups
    assert described.group_state == "NotReady"
    assert described.topology.subtopologies is None
    # the topic appears: the next heartbeat configures the topology and assigns
    cluster.create_topic("not-there", 2)
    a = hb(conn, app, "m1", a.member_epoch, active_tasks=[])
    assert a.status == ()
    assert tasks(a) == {(s, p) for s in "01" for p in range(2)}


def test_internal_topic_that_cannot_be_created(
    cluster: Cluster, conn: Connection, fresh: Any
) -> None:
    app, src = fresh(2)
    topo = topology(src, app)
    huge = {"name": f"{app}-huge", "partitions": 2**31 - 1}
    topo["subtopologies"][1]["repartition_source_topics"].append(huge)
    a = join(conn, app, "m1", topo)
    assert [s.status_code for s in a.status] == [MISSING_INTERNAL_TOPICS]
    assert f"{app}-huge" in a.status[0].status_detail
    assert tasks(a) == set()
    assert cluster.state.topic_partitions(f"{app}-huge") is None
    (d,) = conn.request(ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[app]).groups
    assert d.group_state == "NotReady"


def test_invalid_requests_and_group_types(conn: Connection, fresh: Any) -> None:
    versions = conn.request(
        ApiKey.API_VERSIONS, client_software_name="t", client_software_version="1"
    ).api_keys
    advertised = {k.api_key: (k.min_version, k.max_version) for k in versions}
    assert advertised[ApiKey.STREAMS_GROUP_HEARTBEAT] == (0, 1)
    assert advertised[ApiKey.STREAMS_GROUP_DESCRIBE] == (0, 1)
    assert advertised[ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE] == (0, 0)
    app, src = fresh(1)
    no_topology = hb(conn, app, "m1", 0, rebalance_timeout_ms=1000)
    assert no_topology.error_code == ErrorCode.INVALID_REQUEST
    assert hb(conn, app, "", 0).error_code == ErrorCode.INVALID_REQUEST
    assert hb(conn, app, "m1", 3).error_code == ErrorCode.GROUP_ID_NOT_FOUND
    # a KIP-848 consumer group of the same id is not a streams group
    consumer = join_consumer_group(conn, app, "c1", [src])
    assert consumer.error_code == 0
    refused = join(conn, app, "m1", topology(src, app))
    assert refused.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    (d,) = conn.request(ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[app]).groups
    assert d.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert "not a streams group" in d.error_message
    # and the other way round: a streams group is not a consumer or classic group
    other, _ = fresh(1)
    assert join(conn, other, "m1", topology(src, other)).error_code == 0
    consumer = join_consumer_group(conn, other, "c1", [src])
    assert consumer.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    classic = join_classic(conn, other)
    assert classic.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_offsets_with_epochs_list_describe_delete(conn: Connection, fresh: Any) -> None:
    app, src = fresh(2)
    a = join(conn, app, "m1", topology(src, app))

    def commit(member: str, epoch: int) -> int:
        return commit_offset(
            conn, app, src, 1, 42, member_id=member, member_epoch=epoch
        )

    assert commit("m1", a.member_epoch + 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit("nobody", a.member_epoch) == ErrorCode.UNKNOWN_MEMBER_ID
    assert (
        commit("", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    )  # admin commit, group not empty
    assert commit("m1", a.member_epoch) == 0
    (g,) = conn.request(
        ApiKey.OFFSET_FETCH,
        groups=[
            {"group_id": app, "member_id": "m1", "member_epoch": 99, "topics": None}
        ],
    ).groups
    assert g.error_code == ErrorCode.STALE_MEMBER_EPOCH
    (g,) = conn.request(
        ApiKey.OFFSET_FETCH, groups=[{"group_id": app, "topics": None}]
    ).groups
    assert [
        (t.name, p.partition_index, p.committed_offset)
        for t in g.topics
        for p in t.partitions
    ] == [(src, 1, 42)]
    listed = conn.request(ApiKey.LIST_GROUPS, types_filter=["streams"]).groups
    mine = [x for x in listed if x.group_id == app]
    assert [(x.group_type, x.group_state, x.protocol_type) for x in mine] == [
        ("streams", "Stable", "streams")
    ]
    (d,) = conn.request(ApiKey.DESCRIBE_GROUPS, groups=[app]).groups
    assert d.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert d.error_message == f"Group {app} is not a classic group."
    deleted = conn.request(ApiKey.DELETE_GROUPS, groups_names=[app]).results
    assert deleted[0].error_code == ErrorCode.NON_EMPTY_GROUP
    assert hb(conn, app, "m1", -1).error_code == 0
    assert commit("", -1) == 0  # an empty group takes admin commits
    deleted = conn.request(ApiKey.DELETE_GROUPS, groups_names=[app]).results
    assert deleted[0].error_code == 0
    (g,) = conn.request(
        ApiKey.OFFSET_FETCH, groups=[{"group_id": app, "topics": None}]
    ).groups
    assert g.topics == ()


def test_topology_description_update_and_describe(conn: Connection, fresh: Any) -> None:
    app, src = fresh(1)
    a = join(conn, app, "m1", topology(src, app))
    assert a.topology_description_required is True
    description = {
        "subtopologies": [
            {
                "subtopology_id": "0",
                "nodes": [
                    {
                        "name": "KSTREAM-SOURCE-0000000000",
                        "node_type": 1,
                        "source_topics": [src],
                        "stores": [],
                        "successors": [],
                    }
                ],
            }
        ],
        "global_stores": [],
    }

    def update(topology_epoch: int) -> int:
        return int(
            conn.request(
                ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
                group_id=app,
                member_id="m1",
                topology_epoch=topology_epoch,
                topology_description=description,
            ).error_code
        )

    # only the group's current topology epoch (1) may be described
    assert update(2) == ErrorCode.INVALID_REQUEST
    assert update(1) == ErrorCode.NONE
    (d,) = conn.request(
        ApiKey.STREAMS_GROUP_DESCRIBE,
        group_ids=[app],
        include_topology_description=True,
    ).groups
    assert d.topology_description_status == 3
    node = d.topology_description.subtopologies[0].nodes[0]
    assert (node.name, node.source_topics) == ("KSTREAM-SOURCE-0000000000", (src,))
    b = hb(conn, app, "m1", a.member_epoch)
    assert b.topology_description_required is False


def test_session_timeout_removes_a_member(conn: Connection, fresh: Any) -> None:
    app, src = fresh(2)
    join(conn, app, "m1", topology(src, app))
    b = join(conn, app, "m2", topology(src, app))
    time.sleep(1.0)
    assert hb(conn, app, "m2", b.member_epoch).error_code == 0  # m2 stays alive
    time.sleep(1.0)  # m1 was silent longer than the 1.5 s session timeout
    assert hb(conn, app, "m1", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    b = hb(conn, app, "m2", b.member_epoch, active_tasks=[])
    assert (b.member_epoch, tasks(b)) == (3, {(s, p) for s in "01" for p in range(2)})


def test_sticky_assign_keeps_tasks_and_balances() -> None:
    tasks4 = {"0": 4, "1": 4}
    first = sticky_assign({"a": {}}, tasks4)
    assert first == {"a": {"0": frozenset(range(4)), "1": frozenset(range(4))}}
    second = sticky_assign({"a": first["a"], "b": {}}, tasks4)
    assert sorted(
        len([1 for ps in t.values() for _ in ps]) for t in second.values()
    ) == [4, 4]
    kept = {(s, p) for s, ps in second["a"].items() for p in ps}
    assert kept <= {(s, p) for s in "01" for p in range(4)}
    third = sticky_assign({"a": second["a"], "b": second["b"], "c": {}}, tasks4)
    sizes = sorted(sum(len(ps) for ps in t.values()) for t in third.values())
    assert sizes == [2, 3, 3]
    # each member keeps what it had, up to its share
    for m in "ab":
        had = {(s, p) for s, ps in second[m].items() for p in ps}
        has = {(s, p) for s, ps in third[m].items() for p in ps}
        assert len(had & has) >= 2


def test_group_and_offsets_recovered_after_restart(tmp_path: Path) -> None:
    with Cluster(nodes=1, data_dir=tmp_path) as c:
        c.create_topic("in", 2)
        with connect(c, caps=GROUP_CAPS, timeout_s=20) as conn:
            a = join(conn, "app", "m1", topology("in", "app"))
            held = tasks(a)
            assert len(held) == 4
            answer = conn.request(
                ApiKey.OFFSET_COMMIT,
                group_id="app",
                generation_id_or_member_epoch=a.member_epoch,
                member_id="m1",
                topics=[
                    {
                        "name": "in",
                        "partitions": [{"partition_index": 0, "committed_offset": 7}],
                    }
                ],
            )
            assert answer.topics[0].partitions[0].error_code == 0
            b = join(conn, "app", "m2", topology("in", "app"))
            assert (b.member_epoch, tasks(b)) == (2, set())
            assert hb(conn, "app", "m2", -1).error_code == 0  # epoch 3
    with Cluster(nodes=1, data_dir=tmp_path) as c:
        with connect(c, caps=GROUP_CAPS, timeout_s=20) as conn:
            # the member, its epoch and tasks come back; no new group epoch
            back = hb(conn, "app", "m1", a.member_epoch, active_tasks=owned(*held))
            assert back.error_code == 0, back.error_message
            assert (back.member_epoch, tasks(back)) == (3, held)
            (d,) = conn.request(ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=["app"]).groups
            assert (d.group_state, d.group_epoch, d.topology.epoch) == ("Stable", 3, 1)
            assert [m.member_id for m in d.members] == ["m1"]
            assert d.members[0].process_id == "process-m1"
            (g,) = conn.request(
                ApiKey.OFFSET_FETCH, groups=[{"group_id": "app", "topics": None}]
            ).groups
            assert [
                (p.partition_index, p.committed_offset)
                for t in g.topics
                for p in t.partitions
            ] == [(0, 7)]
            assert hb(conn, "app", "m1", 3).error_code == 0
            assert hb(conn, "app", "m1", -1).error_code == 0
            deleted = conn.request(ApiKey.DELETE_GROUPS, groups_names=["app"]).results
            assert deleted[0].error_code == 0
    with Cluster(nodes=1, data_dir=tmp_path) as c:
        # deleted: its tombstones leave nothing to recover
        assert "app" not in c.groups.streams.groups
        assert "app" not in c.groups.groups


def test_configure_topology_sizes_internal_topics() -> None:
    subs = (
        Subtopology("0", ("a", "b"), ("r",)),
        Subtopology(
            "1",
            repartition_source_topics=(InternalTopic("r"),),
            state_changelog_topics=(InternalTopic("c"),),
        ),
        Subtopology(
            "2", ("a",), repartition_source_topics=(InternalTopic("fixed", 5),)
        ),
    )
    configured = configure_topology(subs, {"a": 2, "b": 3})
    # the widest source topic numbers the tasks; "r" is as wide as its writer
    assert configured.tasks == {"0": 3, "1": 3, "2": 5}
    assert {i.name: n for i, n in configured.internal_topics} == {
        "r": 3,
        "c": 3,
        "fixed": 5,
    }
    missing = configure_topology(subs, {"a": 2})
    assert (missing.tasks, missing.missing_source_topics) == (None, ("b",))


def test_reconcile_revokes_before_assigning() -> None:
    m = StreamsGroupMember("m", member_epoch=1, assigned={"0": frozenset({0, 1})})
    # target moves task 1 away and adds task 2, held by another member
    target = {"0": frozenset({0, 2})}
    assert reconcile(m, 2, target, {"0": frozenset({0, 1})}, {("0", 2): 1})
    assert (m.member_epoch, m.state, m.active, m.pending_revocation) == (
        1,
        StreamsMemberState.UNREVOKED_TASKS,
        {"0": frozenset({0})},
        {"0": frozenset({1})},
    )
    # still reporting task 1: nothing changes
    assert not reconcile(m, 2, target, {"0": frozenset({0, 1})}, {("0", 2): 1})
    # revoked, but task 2 is still held elsewhere
    assert reconcile(m, 2, target, {"0": frozenset({0})}, {("0", 2): 1})
    assert (m.member_epoch, m.state, m.active) == (
        2,
        StreamsMemberState.UNRELEASED_TASKS,
        {"0": frozenset({0})},
    )
    assert reconcile(m, 2, target, {"0": frozenset({0})}, {})
    assert (m.state, m.active) == (StreamsMemberState.STABLE, target)


def test_records_roundtrip() -> None:
    group = StreamsGroup(
        "app",
        group_epoch=4,
        assignment_epoch=4,
        topology_epoch=2,
        topology=(
            Subtopology("0", ("in",), state_changelog_topics=(InternalTopic("c"),)),
        ),
        metadata={"in": 2},
    )
    member = StreamsGroupMember(
        "m1",
        process_id="p",
        user_endpoint=("localhost", 8080),
        member_epoch=4,
        previous_member_epoch=3,
        assigned={"0": frozenset({0, 1})},
        topology_epoch=2,
    )
    group.members["m1"] = member
    group.target["m1"] = {"0": frozenset({0, 1})}
    pairs = group_records(group, targets=True) + member_records("app", member)
    decoded = [decode_streams_record(k, v) for k, v in pairs]
    records = {r.replay_key: r for r in decoded if r is not None}
    assert len(records) == len(pairs) == 6
    (loaded,) = load_streams_groups(records).values()
    assert (loaded.group_epoch, loaded.assignment_epoch) == (4, 4)
    assert (loaded.topology, loaded.topology_epoch) == (group.topology, 2)
    assert loaded.target == group.target
    back = loaded.members["m1"]
    assert (back.member_epoch, back.previous_member_epoch, back.active) == (
        4,
        3,
        member.active,
    )
    assert (back.process_id, back.user_endpoint) == ("p", ("localhost", 8080))
    assert loaded.partition_epochs == {("0", 0): 4, ("0", 1): 4}
    # tombstones remove the member
    for k, v in STREAMS_RECORDS.member_tombstones("app", "m1"):
        rec = decode_streams_record(k, v)
        assert rec is not None and rec.value is None
        records[rec.replay_key] = rec
    assert load_streams_groups(records)["app"].members == {}


def test_sticky_assign_is_balanced_and_complete_from_any_start() -> None:
    rng = random.Random(7)
    for _ in range(200):
        tasks = {str(s): rng.randint(0, 6) for s in range(rng.randint(1, 3))}
        every = {(s, p) for s, n in tasks.items() for p in range(n)}
        previous: dict[str, dict[str, frozenset[int]]] = {}
        for m in range(rng.randint(1, 5)):
            held = [t for t in every if rng.random() < 0.5]
            held += [("9", 0), ("0", 99)]  # tasks that no longer exist
            grouped: dict[str, set[int]] = {}
            for s, p in held:
                grouped.setdefault(s, set()).add(p)
            previous[f"m{m}"] = {s: frozenset(ps) for s, ps in grouped.items()}
        out = sticky_assign(previous, tasks)
        flat = [(s, p) for t in out.values() for s, ps in t.items() for p in ps]
        assert sorted(flat) == sorted(every)  # each task exactly once
        loads = [sum(len(ps) for ps in t.values()) for t in out.values()]
        assert max(loads) - min(loads) <= 1
