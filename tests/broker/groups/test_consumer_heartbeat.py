"""KIP-848 consumer groups at the protocol level: ConsumerGroupHeartbeat epochs,
revocation before assignment, fencing, static membership, timeouts, offsets checked
against member epochs, classic group conversion, ConsumerGroupDescribe, recovery
from ``__consumer_offsets``."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.groups.consumer_records import (
    CONSUMER_KEY_TYPES,
    decode_consumer_record,
)
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.wire import GROUP_CAPS, commit_offset, connect, heartbeat
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(60)
_ids = itertools.count()
SESSION_MS = 1500


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(
        nodes=1,
        consumer_heartbeat_interval_ms=100,
        consumer_session_timeout_ms=SESSION_MS,
    ) as c:
        yield c


@pytest.fixture
def fresh(cluster: Cluster) -> Callable[[int], tuple[str, str, uuid.UUID]]:
    """A new group id and a new topic of ``n`` partitions (name and id)."""

    def make(n: int = 4) -> tuple[str, str, uuid.UUID]:
        i = next(_ids)
        cluster.create_topic(f"hb{i}", n)
        return f"g{i}", f"hb{i}", cluster.state.topics[f"hb{i}"].topic_id

    return make


def hb(conn: Connection, group: str, member: str, epoch: int, **fields: Any) -> Any:
    api = ApiKey.CONSUMER_GROUP_HEARTBEAT
    return heartbeat(conn, api, group, member, epoch, **fields)


def join(conn: Connection, group: str, member: str, **fields: Any) -> Any:
    fields.setdefault("subscribed_topic_names", [])
    return hb(
        conn, group, member, 0, rebalance_timeout_ms=2000, topic_partitions=[], **fields
    )


def owned(topic_id: uuid.UUID, *partitions: int) -> list[dict[str, Any]]:
    return [{"topic_id": topic_id, "partitions": list(partitions)}]


def parts(answer: Any) -> set[int]:
    assert answer.assignment is not None
    return {p for tp in answer.assignment.topic_partitions for p in tp.partitions}


def test_revocation_before_assignment(conn: Connection, fresh: Any) -> None:
    group, topic, tid = fresh(4)
    a = join(conn, group, "m1", subscribed_topic_names=[topic])
    assert (a.error_code, a.member_epoch, parts(a)) == (0, 1, {0, 1, 2, 3})
    assert a.heartbeat_interval_ms == 100
    assert (
        hb(conn, group, "m1", 1, topic_partitions=owned(tid, 0, 1, 2, 3)).error_code
        == 0
    )
    b = join(conn, group, "m2", subscribed_topic_names=[topic])
    # m2 is at the new epoch but gets nothing m1 still holds
    assert (b.error_code, b.member_epoch, parts(b)) == (0, 2, set())
    (described,) = conn.request(
        ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=[group]
    ).groups
    assert (described.group_epoch, described.assignment_epoch) == (2, 2)
    assert described.group_state == "Reconciling"
    a = hb(conn, group, "m1", 1, topic_partitions=owned(tid, 0, 1, 2, 3))
    kept = parts(a)
    assert a.member_epoch == 1 and len(kept) == 2  # asked to revoke two, epoch kept
    b = hb(conn, group, "m2", 2, topic_partitions=[])
    assert b.assignment is None or parts(b) == set()
    a = hb(conn, group, "m1", 1, topic_partitions=owned(tid, *kept))
    assert (a.member_epoch, parts(a)) == (2, kept)
    b = hb(conn, group, "m2", 2, topic_partitions=[])
    assert parts(b) == {0, 1, 2, 3} - kept
    (described,) = conn.request(
        ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=[group]
    ).groups
    assert described.group_state == "Stable"
    assert described.assignor_name == "uniform"
    assert {m.member_id: m.member_epoch for m in described.members} == {
        "m1": 2,
        "m2": 2,
    }
    for m in described.members:
        (tp,) = m.assignment.topic_partitions
        assert tp.topic_name == topic
    # leaving gives the partitions back
    left = hb(conn, group, "m2", -1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    a = hb(conn, group, "m1", 2, topic_partitions=owned(tid, *kept))
    assert (a.member_epoch, parts(a)) == (3, {0, 1, 2, 3})


def test_fencing_and_validation(conn: Connection, fresh: Any) -> None:
    group, topic, tid = fresh(2)
    assert join(conn, group, "m1", subscribed_topic_names=[topic]).member_epoch == 1
    assert hb(conn, group, "m1", 5).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert hb(conn, group, "nobody", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert hb(conn, "no-such-group", "m1", 1).error_code == ErrorCode.GROUP_ID_NOT_FOUND
    bad_regex = join(conn, group, "m2", subscribed_topic_regex="(unclosed")
    assert bad_regex.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    backref = join(conn, group, "m2", subscribed_topic_regex=r"(a)\1")
    assert backref.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert "backreferences" in backref.error_message
    assignor = join(
        conn, group, "m2", subscribed_topic_names=[topic], server_assignor="x"
    )
    assert assignor.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert "uniform" in assignor.error_message
    no_timeout = hb(
        conn, group, "m2", 0, topic_partitions=[], subscribed_topic_names=[]
    )
    assert no_timeout.error_code == ErrorCode.INVALID_REQUEST
    assert hb(conn, "", "m1", 1).error_code == ErrorCode.INVALID_REQUEST
    no_id = join(conn, group, "", subscribed_topic_names=[topic])  # v1: KIP-1082
    assert no_id.error_code == ErrorCode.INVALID_REQUEST
    with Connection(conn.host, conn.port, timeout_s=20) as v0:
        v0.negotiate(caps={ApiKey.CONSUMER_GROUP_HEARTBEAT: 0})
        generated = join(v0, group, "", subscribed_topic_names=[topic])
        assert generated.error_code == 0 and len(generated.member_id) > 0
    # a rejoin with epoch 0 after fencing is accepted
    assert join(conn, group, "m1", subscribed_topic_names=[topic]).error_code == 0


def test_range_assignor_chosen_by_members(conn: Connection, fresh: Any) -> None:
    group, topic, tid = fresh(5)
    for m in ("b", "a"):
        join(conn, group, m, subscribed_topic_names=[topic], server_assignor="range")
    b = hb(conn, group, "b", 1, topic_partitions=owned(tid, 0, 1, 2, 3, 4))
    b = hb(conn, group, "b", 1, topic_partitions=owned(tid, *parts(b)))
    a = hb(conn, group, "a", 2, topic_partitions=[])
    # b had all five: it keeps its lowest three (sticky range), a gets the rest
    assert (parts(a), parts(b)) == ({3, 4}, {0, 1, 2})
    (described,) = conn.request(
        ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=[group]
    ).groups
    assert described.assignor_name == "range"


def test_offsets_check_member_epochs(conn: Connection, fresh: Any) -> None:
    group, topic, tid = fresh(1)
    join(conn, group, "m1", subscribed_topic_names=[topic])

    def commit(member: str, epoch: int) -> int:
        return commit_offset(
            conn, group, topic, 0, 7, member_id=member, member_epoch=epoch
        )

    assert commit("m1", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit("m9", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert (
        commit("", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    )  # admin commit to a non-empty group
    assert commit("m1", 1) == ErrorCode.NONE
    info = conn.host, conn.port
    with Connection(*info, timeout_s=20) as old:
        old.negotiate(caps={ApiKey.OFFSET_COMMIT: 8})
        answer = old.request(
            ApiKey.OFFSET_COMMIT,
            group_id=group,
            generation_id_or_member_epoch=1,
            member_id="m1",
            topics=[
                {
                    "name": topic,
                    "partitions": [{"partition_index": 0, "committed_offset": 9}],
                }
            ],
        )
        assert (
            answer.topics[0].partitions[0].error_code == ErrorCode.UNSUPPORTED_VERSION
        )

    def fetch(member: str | None, epoch: int) -> Any:
        (g,) = conn.request(
            ApiKey.OFFSET_FETCH,
            groups=[
                {
                    "group_id": group,
                    "member_id": member,
                    "member_epoch": epoch,
                    "topics": [{"name": topic, "partition_indexes": [0]}],
                }
            ],
        ).groups
        return g

    assert fetch("m1", 3).error_code == ErrorCode.STALE_MEMBER_EPOCH
    assert fetch("m7", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    for member, epoch in (("m1", 1), (None, -1)):
        g = fetch(member, epoch)
        assert (g.error_code, g.topics[0].partitions[0].committed_offset) == (0, 7)


def test_static_member_rejoins_with_its_assignment(
    conn: Connection, fresh: Any
) -> None:
    group, topic, tid = fresh(2)
    a = join(conn, group, "s1", instance_id="i1", subscribed_topic_names=[topic])
    assert parts(a) == {0, 1}
    clash = join(conn, group, "s2", instance_id="i1", subscribed_topic_names=[topic])
    assert clash.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    left = hb(conn, group, "s1", -2, instance_id="i1")
    assert (left.error_code, left.member_epoch) == (0, -2)
    back = join(conn, group, "s2", instance_id="i1", subscribed_topic_names=[topic])
    assert (back.error_code, back.member_epoch, parts(back)) == (0, 1, {0, 1})
    (described,) = conn.request(
        ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=[group]
    ).groups
    assert [m.member_id for m in described.members] == ["s2"]
    assert described.group_epoch == 1  # no rebalance


def test_session_timeout_hands_partitions_over(conn: Connection, fresh: Any) -> None:
    group, topic, tid = fresh(2)
    join(conn, group, "quiet", subscribed_topic_names=[topic])
    b = join(conn, group, "live", subscribed_topic_names=[topic])
    assert parts(b) == set()
    got: set[int] = set()
    epoch = b.member_epoch

    def handed_over() -> bool:
        nonlocal got, epoch
        answer = hb(conn, group, "live", epoch, topic_partitions=owned(tid, *got))
        assert answer.error_code == 0
        epoch = answer.member_epoch
        if answer.assignment is not None:
            got = parts(answer)
        return got == {0, 1}

    eventually(handed_over, SESSION_MS / 1000 * 4, interval_s=0.1, retry_on=())
    assert hb(conn, group, "quiet", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_fences_a_member_that_does_not_revoke(
    conn: Connection, fresh: Any
) -> None:
    group, topic, tid = fresh(2)
    join(conn, group, "slow", subscribed_topic_names=[topic])
    new = join(conn, group, "new", subscribed_topic_names=[topic])
    # 'slow' is asked to revoke and never acknowledges (rebalance timeout 2 s)
    asked = hb(conn, group, "slow", 1, topic_partitions=owned(tid, 0, 1))
    assert len(parts(asked)) == 1
    got: set[int] = set()

    def fenced() -> bool:
        nonlocal new
        answer = hb(conn, group, "slow", 1, topic_partitions=owned(tid, 0, 1))
        fresh_answer = hb(conn, group, "new", new.member_epoch, topic_partitions=[])
        assert fresh_answer.error_code == 0  # 'new' stays alive meanwhile
        new = fresh_answer
        return bool(answer.error_code == ErrorCode.UNKNOWN_MEMBER_ID)

    eventually(fenced, 8, interval_s=0.2, retry_on=())

    # the fenced member's partitions go to the one that stayed
    def taken_over() -> bool:
        nonlocal new, got
        new = hb(conn, group, "new", new.member_epoch, topic_partitions=[])
        if new.assignment is not None:
            got = parts(new)
        return got == {0, 1}

    eventually(taken_over, 8, interval_s=0, retry_on=())


def test_groups_listed_with_their_type(conn: Connection, fresh: Any) -> None:
    group, topic, _ = fresh(1)
    join(conn, group, "m1", subscribed_topic_names=[topic])
    listed = conn.request(
        ApiKey.LIST_GROUPS, states_filter=[], types_filter=["consumer"]
    )
    assert (group, "consumer", "consumer") in {
        (g.group_id, g.group_type, g.protocol_type) for g in listed.groups
    }
    classic_only = conn.request(
        ApiKey.LIST_GROUPS, states_filter=[], types_filter=["classic"]
    )
    assert group not in {g.group_id for g in classic_only.groups}
    (described,) = conn.request(ApiKey.DESCRIBE_GROUPS, groups=[group]).groups
    assert described.error_code == ErrorCode.GROUP_ID_NOT_FOUND  # as Kafka 4 answers v6
    assert described.error_message == f"Group {group} is not a classic group."
    assert described.group_state == "Dead"
    (missing,) = conn.request(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=["nope"]).groups
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_classic_and_consumer_group_conversion(
    cluster: Cluster, conn: Connection, fresh: Any
) -> None:
    group, topic, tid = fresh(1)
    assert commit_offset(conn, group, topic, 0, 3) == ErrorCode.NONE
    # an empty classic group (offsets only) is upgraded; its offsets carry over
    assert join(conn, group, "m1", subscribed_topic_names=[topic]).error_code == 0
    (g,) = conn.request(
        ApiKey.OFFSET_FETCH, groups=[{"group_id": group, "topics": None}]
    ).groups
    assert g.topics[0].partitions[0].committed_offset == 3
    classic_join = {
        "group_id": group,
        "session_timeout_ms": 6000,
        "rebalance_timeout_ms": 6000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    # a classic member whose subscription does not decode cannot join (mixed groups:
    # test_mixed_protocol.py)
    refused = conn.request(ApiKey.JOIN_GROUP, **classic_join)
    assert refused.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert hb(conn, group, "m1", -1).error_code == 0
    # now empty: a classic join downgrades it; a consumer join cannot upgrade a
    # group whose member's subscription does not decode
    with connect(cluster, caps=GROUP_CAPS, timeout_s=20) as other:
        joined = other.request(ApiKey.JOIN_GROUP, **classic_join)
        assert joined.error_code == 0
        again = join(conn, group, "m2", subscribed_topic_names=[topic])
        assert again.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        (g,) = conn.request(
            ApiKey.OFFSET_FETCH, groups=[{"group_id": group, "topics": None}]
        ).groups
        assert g.topics[0].partitions[0].committed_offset == 3


def test_group_recovered_after_restart(tmp_path: Path) -> None:
    def connect(cluster: Cluster) -> Connection:
        info = cluster.state.nodes[1]
        return Connection(info.host, info.port, timeout_s=20)

    with Cluster(nodes=1, data_dir=tmp_path, consumer_session_timeout_ms=30_000) as c:
        c.create_topic("r", 3)
        tid = c.state.topics["r"].topic_id
        with connect(c) as conn:
            a = join(conn, "rg", "m1", subscribed_topic_names=["r"], instance_id="i")
            join(conn, "rg", "m2", subscribed_topic_regex="r")
            hb(conn, "rg", "m1", 1, topic_partitions=owned(tid, *parts(a)))
            before = conn.request(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=["rg"])
        partition = c.groups.partition_for("rg")
        written = {
            decoded.name
            for r in c.records("__consumer_offsets", partition)
            if (decoded := decode_consumer_record(r.key or b"", r.value)) is not None
        }
        assert written == set(CONSUMER_KEY_TYPES.values())
    with Cluster(nodes=1, data_dir=tmp_path, consumer_session_timeout_ms=30_000) as c:
        with connect(c) as conn:
            after = conn.request(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=["rg"])
            assert after.groups == before.groups
            # the members carry on at their epochs
            m2 = hb(conn, "rg", "m2", 2, topic_partitions=[])
            assert m2.error_code == 0
            (records,) = {
                name for name in c.groups.consumer.groups["rg"].subscription_metadata
            }
            assert records == "r"


def test_new_partitions_and_topics_bump_the_group_epoch(
    conn: Connection, fresh: Any, cluster: Cluster
) -> None:
    group, topic, tid = fresh(1)
    a = join(conn, group, "m1", subscribed_topic_names=[topic, f"{topic}-later"])
    assert (a.member_epoch, parts(a)) == (1, {0})
    grown = conn.request(
        ApiKey.CREATE_PARTITIONS,
        topics=[{"name": topic, "count": 3, "assignments": None}],
        timeout_ms=5000,
        validate_only=False,
    )
    assert grown.results[0].error_code == 0
    a = hb(conn, group, "m1", 1, topic_partitions=owned(tid, 0))
    assert (a.member_epoch, parts(a)) == (2, {0, 1, 2})
    # a topic subscribed by name that did not exist yet is picked up once created
    cluster.create_topic(f"{topic}-later", 1)
    a = hb(conn, group, "m1", 2, topic_partitions=owned(tid, 0, 1, 2))
    assert a.member_epoch == 3
    later = cluster.state.topics[f"{topic}-later"].topic_id
    assert {
        tp.topic_id: set(tp.partitions) for tp in a.assignment.topic_partitions
    } == {
        tid: {0, 1, 2},
        later: {0},
    }
