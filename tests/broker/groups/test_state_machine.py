"""The classic group coordinator as a state machine: no sockets, time driven by hand.

Each test runs the coordinator on an asyncio loop with a :class:`ManualScheduler`, so
session, rebalance and initial-delay timeouts fire exactly when the test advances the
clock; the expected error codes and state changes are Kafka's classic
``GroupCoordinator`` behaviour.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import pytest

from kproto.broker.groups import GroupCoordinator, GroupState, JoinResult
from kproto.broker.groups.records import decode_record
from kproto.errors import ErrorCode
from kproto.index import data_type
from kproto.serial import entity_writer

from .fakes import FakeState, ManualScheduler

T = TypeVar("T")
SESSION = 1_000
REBALANCE = 5_000


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0 as a Java consumer sends it."""
    cls = data_type("ConsumerProtocolSubscription", 0)
    buf = io.BytesIO()
    buf.write(b"\x00\x00")
    entity_writer(cls)(buf, cls(topics=topics))
    return buf.getvalue()


RANGE = (("range", subscription("t")),)


class Harness:
    def __init__(self, *, delay_ms: int = 0, state: FakeState | None = None) -> None:
        self.scheduler = ManualScheduler()
        self.state = state or FakeState()
        self.coord = GroupCoordinator(
            self.state, scheduler=self.scheduler, initial_rebalance_delay_ms=delay_ms
        )

    def join(
        self,
        member_id: str = "",
        *,
        group: str = "g",
        instance: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] = RANGE,
        protocol_type: str = "consumer",
        client_id: str = "c",
        require_known: bool = False,
    ) -> asyncio.Task[JoinResult]:
        return asyncio.ensure_future(
            self.coord.join_group(
                group,
                member_id,
                instance,
                protocol_type,
                protocols,
                session_timeout_ms=SESSION,
                rebalance_timeout_ms=REBALANCE,
                client_id=client_id,
                client_host="/127.0.0.1",
                require_known_member_id=require_known,
            )
        )

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
    ) -> asyncio.Task[Any]:
        return asyncio.ensure_future(
            self.coord.sync_group("g", generation, member_id, None, assignments or {})
        )

    async def advance(self, ms: int) -> None:
        await settle()  # let started requests reach the coordinator first
        self.scheduler.advance(ms)
        await settle()

    def group(self, group_id: str = "g") -> Any:
        return self.coord.groups[group_id]

    def records(self) -> list[Any]:
        out = []
        for (topic, _), plog in sorted(self.state.logs.items()):
            if topic == "__consumer_offsets":
                for batch in plog.batches():
                    out.extend(decode_record(r.key, r.value) for r in batch.records)
        return out


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def run(test: Callable[[Harness], Awaitable[T]], **kwargs: Any) -> T:
    async def body() -> T:
        h = Harness(**kwargs)
        await h.coord.start()
        try:
            # A coordinator bug must fail the test, not hang it.
            return await asyncio.wait_for(test(h), 20)
        finally:
            await h.coord.stop()

    coro: Coroutine[Any, Any, T] = body()  # type: ignore[assignment]
    return asyncio.run(coro)


async def stable_pair(h: Harness) -> tuple[str, str]:
    """Two members A (leader) and B in a Stable generation 2."""
    a = h.join(client_id="a")
    await settle()
    ra = await a
    await settle()
    b = h.join(client_id="b")
    await settle()
    a2 = h.join(ra.member_id, client_id="a")
    ra2, rb = await a2, await b
    assert ra2.generation_id == rb.generation_id == 2
    sa = h.sync(ra2.member_id, 2, {ra2.member_id: b"A", rb.member_id: b"B"})
    sb = h.sync(rb.member_id, 2)
    assert (await sa).assignment == b"A" and (await sb).assignment == b"B"
    return ra2.member_id, rb.member_id


def test_kip394_member_id_round_trip_then_sync_persists_metadata() -> None:
    async def body(h: Harness) -> None:
        first = await h.join(client_id="client-1", require_known=True)
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("client-1-")
        assert h.group().state is GroupState.EMPTY
        joined = await h.join(first.member_id, require_known=True)
        assert (joined.error_code, joined.generation_id) == (ErrorCode.NONE, 1)
        assert joined.leader == joined.member_id
        assert joined.protocol_name == "range"
        assert joined.members == ((joined.member_id, None, RANGE[0][1]),)
        assert h.group().state is GroupState.COMPLETING_REBALANCE
        synced = await h.sync(joined.member_id, 1, {joined.member_id: b"assign"})
        assert (synced.error_code, synced.assignment) == (ErrorCode.NONE, b"assign")
        assert h.group().state is GroupState.STABLE
        metadata = [r for r in h.records() if not hasattr(r, "topic")]
        value = metadata[-1].value
        assert (value.generation, value.protocol, value.leader) == (
            1,
            "range",
            joined.member_id,
        )
        assert value.members[0].assignment == b"assign"
        assert value.members[0].subscription == RANGE[0][1]

    run(body)


def test_pending_member_id_expires_after_session_timeout() -> None:
    async def body(h: Harness) -> None:
        first = await h.join(require_known=True)
        await h.advance(SESSION)
        late = await h.join(first.member_id, require_known=True)
        assert late.error_code == ErrorCode.UNKNOWN_MEMBER_ID

    run(body)


def test_second_member_triggers_rebalance_and_leader_assigns() -> None:
    async def body(h: Harness) -> None:
        a = await h.join(client_id="a")
        assert (
            await h.sync(a.member_id, 1, {a.member_id: b"all"})
        ).assignment == b"all"
        b = h.join(client_id="b")
        await settle()
        assert h.group().state is GroupState.PREPARING_REBALANCE
        assert not b.done()
        assert (
            h.coord.heartbeat("g", 1, a.member_id, None)
            == ErrorCode.REBALANCE_IN_PROGRESS
        )
        ra = await h.join(a.member_id, client_id="a")
        rb = await b
        assert ra.generation_id == rb.generation_id == 2
        assert ra.leader == rb.leader == a.member_id
        assert {m for m, _, _ in ra.members} == {a.member_id, rb.member_id}
        assert rb.members == ()
        # A follower's SyncGroup waits for the leader's.
        sb = h.sync(rb.member_id, 2)
        await settle()
        assert not sb.done()
        commit = await h.coord.commit_offsets(
            "g", 1, a.member_id, None, {("t", 0): (5, -1, "", -1)}
        )
        assert commit == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
        commit = await h.coord.commit_offsets(
            "g", 2, a.member_id, None, {("t", 0): (5, -1, "", -1)}
        )
        assert commit == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}
        sa = await h.sync(a.member_id, 2, {a.member_id: b"A", rb.member_id: b"B"})
        assert (sa.assignment, (await sb).assignment) == (b"A", b"B")
        assert h.group().state is GroupState.STABLE
        assert h.coord.heartbeat("g", 2, rb.member_id, None) == ErrorCode.NONE
        assert (
            h.coord.heartbeat("g", 1, rb.member_id, None)
            == ErrorCode.ILLEGAL_GENERATION
        )

    run(body)


def test_member_not_rejoining_is_removed_at_rebalance_timeout() -> None:
    async def body(h: Harness) -> None:
        a, b = await stable_pair(h)
        c = h.join(client_id="c")
        await settle()
        ra = h.join(a, client_id="a")
        await settle()
        # B keeps heartbeating but never rejoins: removed when the rebalance times out.
        for _ in range(REBALANCE // 500):
            assert h.coord.heartbeat("g", 2, b, None) == ErrorCode.REBALANCE_IN_PROGRESS
            await h.advance(500)
        rc, ra2 = await c, await ra
        assert ra2.generation_id == rc.generation_id == 3
        assert set(h.group().members) == {a, rc.member_id}
        assert h.coord.heartbeat("g", 3, b, None) == ErrorCode.UNKNOWN_MEMBER_ID

    run(body)


def test_session_timeout_expires_a_silent_member() -> None:
    async def body_waits(h: Harness) -> None:
        a, b = await stable_pair(h)
        await h.advance(SESSION // 2)
        assert h.coord.heartbeat("g", 2, a, None) == ErrorCode.NONE
        await h.advance(SESSION // 2)
        assert b not in h.group().members
        assert h.group().state is GroupState.PREPARING_REBALANCE
        assert h.coord.heartbeat("g", 2, a, None) == ErrorCode.REBALANCE_IN_PROGRESS
        again = await h.join(a, client_id="a")
        assert (again.generation_id, [m for m, _, _ in again.members]) == (3, [a])

    run(body_waits)


def test_protocol_chosen_by_vote_and_inconsistent_protocols_rejected() -> None:
    async def body(h: Harness) -> None:
        sub = subscription("t")
        a = h.join(client_id="a", protocols=(("range", sub), ("roundrobin", sub)))
        b = h.join(client_id="b", protocols=(("roundrobin", sub), ("range", sub)))
        c = h.join(client_id="c", protocols=(("roundrobin", sub), ("sticky", sub)))
        await h.advance(100)  # past the initial rebalance delay (10 ms, extended once)
        results = [await a, await b, await c]
        assert {r.protocol_name for r in results} == {"roundrobin"}
        bad_type = await h.join(
            protocol_type="connect", protocols=(("roundrobin", sub),)
        )
        assert bad_type.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        no_common = await h.join(protocols=(("sticky", sub),))
        assert no_common.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL

    run(body, delay_ms=10)


def test_initial_rebalance_delay_collects_members_that_arrive() -> None:
    async def body(h: Harness) -> None:
        a = h.join(client_id="a")
        await h.advance(60)
        assert not a.done()
        b = h.join(client_id="b")  # arrives inside the delay: extends it once more
        await h.advance(60)
        assert not a.done() and not b.done()
        await h.advance(100)
        ra, rb = await a, await b
        assert ra.generation_id == rb.generation_id == 1
        assert len(ra.members) + len(rb.members) == 2

    run(body, delay_ms=100)


def test_static_member_restart_takes_over_without_rebalance() -> None:
    async def body(h: Harness) -> None:
        leader = await h.join(client_id="l")
        await settle()
        s = h.join(client_id="s", instance="instance-1")
        await settle()
        rl = await h.join(leader.member_id, client_id="l")
        rs = await s
        await h.sync(rl.member_id, 2, {rl.member_id: b"L", rs.member_id: b"S"})
        assert (await h.sync(rs.member_id, 2)).assignment == b"S"
        # The static member restarts: no member id, same instance id.
        again = await h.join(client_id="s", instance="instance-1", require_known=True)
        assert again.error_code == ErrorCode.NONE and again.member_id != rs.member_id
        assert again.generation_id == 2
        assert h.group().state is GroupState.STABLE
        synced = await h.coord.sync_group("g", 2, again.member_id, "instance-1", {})
        assert synced.assignment == b"S"
        assert (
            h.coord.heartbeat("g", 2, rs.member_id, "instance-1")
            == ErrorCode.FENCED_INSTANCE_ID
        )
        assert (
            h.coord.heartbeat("g", 2, again.member_id, "instance-1") == ErrorCode.NONE
        )
        top, errors = h.coord.leave_group("g", [(rs.member_id, "instance-1")])
        assert (top, errors) == (ErrorCode.NONE, [ErrorCode.FENCED_INSTANCE_ID])
        top, errors = h.coord.leave_group("g", [("", "instance-1"), ("nobody", None)])
        assert errors == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
        assert h.group().state is GroupState.PREPARING_REBALANCE

    run(body)


def test_static_leader_restart_keeps_the_group_stable_unless_the_protocol_changes() -> (
    None
):
    """Kafka's ``classicGroupJoinExistingStaticMember``: a static leader rejoining
    a stable group with the same protocols is answered at once, with the members
    and ``skip_assignment`` (KIP-814); one whose new protocols change the group's
    selection rebalances."""

    async def body(h: Harness) -> None:
        first = await h.join(client_id="l", instance="lead")
        await h.sync(first.member_id, 1, {first.member_id: b"L"})
        s = h.join(client_id="s", instance="other")
        await settle()
        rl = await h.join(first.member_id, client_id="l", instance="lead")
        rs = await s
        assert rl.member_id == h.group().leader_id
        await h.sync(rl.member_id, 2, {rl.member_id: b"L", rs.member_id: b"S"})
        await h.sync(rs.member_id, 2)
        again = await h.join(client_id="l", instance="lead", require_known=True)
        assert again.error_code == ErrorCode.NONE and again.member_id != rl.member_id
        assert (again.generation_id, again.skip_assignment) == (2, True)
        assert again.leader == again.member_id == h.group().leader_id
        assert {m for m, _, _ in again.members} == {again.member_id, rs.member_id}
        assert h.group().state is GroupState.STABLE
        synced = await h.coord.sync_group("g", 2, again.member_id, "lead", {})
        assert synced.assignment == b"L"
        # Protocols that change the selection ("range" -> "roundrobin") rebalance.
        both = (("roundrobin", b""), ("range", subscription("t")))
        other = h.join(rs.member_id, client_id="s", instance="other", protocols=both)
        await settle()
        assert h.group().state is GroupState.PREPARING_REBALANCE
        lead = await h.join(
            again.member_id, client_id="l", instance="lead", protocols=both
        )
        await other
        assert lead.generation_id == 3 and lead.protocol_name == "roundrobin"
        await h.sync(lead.member_id, 3, {lead.member_id: b"L3", rs.member_id: b"S3"})
        # A static leader restarting with protocols that change it rebalances.
        changed = h.join(client_id="l", instance="lead", protocols=RANGE)
        await settle()
        assert h.group().state is GroupState.PREPARING_REBALANCE
        changed.cancel()

    run(body)


def test_leave_group_rebalances_and_last_member_empties_the_group() -> None:
    async def body(h: Harness) -> None:
        a, b = await stable_pair(h)
        assert h.coord.leave_group("g", [(b, None)]) == (
            ErrorCode.NONE,
            [ErrorCode.NONE],
        )
        again = await h.join(a, client_id="a")
        assert again.generation_id == 3
        # The last member leaving completes the rebalance at once (everyone left).
        assert h.coord.leave_group("g", [(a, None)]) == (
            ErrorCode.NONE,
            [ErrorCode.NONE],
        )
        assert h.group().state is GroupState.EMPTY
        assert h.group().generation_id == 4
        assert h.coord.leave_group("missing", [(a, None)]) == (
            ErrorCode.NONE,
            [ErrorCode.UNKNOWN_MEMBER_ID],
        )
        assert h.coord.heartbeat("g", 4, a, None) == ErrorCode.UNKNOWN_MEMBER_ID

    run(body)


def test_join_errors() -> None:
    async def body(h: Harness) -> None:
        assert (await h.join(group="")).error_code == ErrorCode.INVALID_GROUP_ID
        assert (
            await h.join("someone", group="new")
        ).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        sync = await h.coord.sync_group("absent", 1, "x", None, {})
        assert sync.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        rejected = await h.join(group="typeless", protocol_type="")
        assert rejected.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert "typeless" not in h.coord.groups
        bad_session = await h.coord.join_group(
            "g",
            "",
            None,
            "consumer",
            RANGE,
            session_timeout_ms=1,
            rebalance_timeout_ms=1,
        )
        assert bad_session.error_code == ErrorCode.INVALID_SESSION_TIMEOUT

    run(body)


def test_simple_commit_fetch_and_commit_errors() -> None:
    async def body(h: Harness) -> None:
        offsets = {("t", 0): (10, 3, "meta", -1), ("t", 7): (1, -1, None, -1)}
        offsets[("nope", 0)] = (1, -1, None, -1)
        offsets[("u", 0)] = (1, -1, "x" * 4097, -1)
        result = await h.coord.commit_offsets("simple", -1, "", None, offsets)
        assert result == {
            ("t", 0): ErrorCode.NONE,
            ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("u", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE,
        }
        fetched = h.coord.fetch_offsets("simple", [("t", 0), ("t", 1)])
        committed = fetched[("t", 0)]
        assert committed is not None and fetched[("t", 1)] is None
        assert (committed.offset, committed.leader_epoch, committed.metadata) == (
            10,
            3,
            "meta",
        )
        assert committed.commit_timestamp == h.state.clock
        assert list(h.coord.fetch_offsets("simple", None)) == [("t", 0)]
        assert h.coord.fetch_offsets("absent", None) == {}
        assert h.group("simple").state is GroupState.EMPTY
        member_commit = await h.coord.commit_offsets(
            "nogroup", 3, "m", None, {("t", 0): (1, -1, "", -1)}
        )
        assert member_commit == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
        a, _ = await stable_pair(h)
        no_generation = await h.coord.commit_offsets(
            "g", -1, "", None, {("t", 0): (1, -1, "", -1)}
        )
        # an admin commit to a group with members (Kafka's validateOffsetCommit)
        assert no_generation == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
        unknown = await h.coord.commit_offsets(
            "g", 2, "ghost", None, {("t", 0): (1, -1, "", -1)}
        )
        assert unknown == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
        ok = await h.coord.commit_offsets("g", 2, a, None, {("t", 0): (1, -1, "", -1)})
        assert ok == {("t", 0): ErrorCode.NONE}

    run(body)


def test_retention_time_sets_an_expire_timestamp_written_as_value_v1() -> None:
    async def body(h: Harness) -> None:
        await h.coord.commit_offsets(
            "r", -1, "", None, {("t", 0): (3, 7, "m", -1)}, retention_ms=60_000
        )
        await h.coord.commit_offsets("r", -1, "", None, {("t", 1): (4, 7, "m", -1)})
        first, second = [r.value for r in h.records() if r.group_id == "r"]
        assert (first.expire_timestamp, first.leader_epoch) == (
            h.state.clock + 60_000,
            -1,
        )
        assert (second.expire_timestamp, second.leader_epoch) == (-1, 7)
        versions = [
            int.from_bytes(rec.value[:2], "big")
            for plog in h.state.logs.values()
            for batch in plog.batches()
            for rec in batch.records
        ]
        assert versions == [1, 3]

    run(body)


def test_failed_append_is_reported_not_applied() -> None:
    async def body(h: Harness) -> None:
        h.coord.coordinator_for("x")
        for plog in h.state.logs.values():
            plog.fail = True
        result = await h.coord.commit_offsets(
            "x", -1, "", None, {("t", 0): (1, -1, "", -1)}
        )
        # Kafka's normalizeException: a storage error answers NOT_COORDINATOR
        assert result == {("t", 0): ErrorCode.NOT_COORDINATOR}
        assert h.coord.fetch_offsets("x", [("t", 0)]) == {("t", 0): None}

    run(body)


def test_delete_groups_and_offset_delete() -> None:
    async def body(h: Harness) -> None:
        a, _ = await stable_pair(h)
        commit = {("t", 0): (4, -1, "", -1), ("u", 0): (2, -1, "", -1)}
        assert set(
            (await h.coord.commit_offsets("g", 2, a, None, commit)).values()
        ) == {ErrorCode.NONE}
        top, per = await h.coord.delete_offsets("g", [("t", 0), ("u", 0)])
        assert top == ErrorCode.NONE
        assert per == {
            ("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
            ("u", 0): ErrorCode.NONE,
        }
        assert list(h.coord.fetch_offsets("g", None)) == [("t", 0)]
        assert await h.coord.delete_offsets("absent", [("t", 0)]) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            {},
        )
        deleted = await h.coord.delete_groups(["g", "absent"])
        assert deleted == {
            "g": ErrorCode.NON_EMPTY_GROUP,
            "absent": ErrorCode.GROUP_ID_NOT_FOUND,
        }
        await h.coord.commit_offsets(
            "simple", -1, "", None, {("t", 1): (9, -1, "", -1)}
        )
        assert await h.coord.delete_groups(["simple"]) == {"simple": ErrorCode.NONE}
        assert "simple" not in h.coord.groups
        tombstones = [
            r for r in h.records() if r.group_id == "simple" and r.value is None
        ]
        assert {getattr(r, "topic", None) for r in tombstones} == {"t", None}

    run(body)


def test_describe_and_list_groups() -> None:
    async def body(h: Harness) -> None:
        a, b = await stable_pair(h)
        await h.coord.commit_offsets(
            "simple", -1, "", None, {("t", 1): (9, -1, "", -1)}
        )
        d = h.coord.describe_group("g")
        assert d is not None
        assert (d.state, d.protocol_type, d.protocol_data) == (
            "Stable",
            "consumer",
            "range",
        )
        assert [(m[0], m[4], m[5]) for m in d.members] == [
            (a, RANGE[0][1], b"A"),
            (b, RANGE[0][1], b"B"),
        ]
        assert h.coord.describe_group("absent") is None
        assert h.coord.list_groups() == [
            ("g", "consumer", "Stable", "classic"),
            ("simple", "", "Empty", "classic"),
        ]
        assert [g for g, *_ in h.coord.list_groups(states=["empty"])] == ["simple"]
        assert h.coord.list_groups(types=["consumer"]) == []

    run(body)


def test_restart_recovers_offsets_and_groups_from_the_log() -> None:
    async def body(h: Harness) -> None:
        a, b = await stable_pair(h)
        await h.coord.commit_offsets("g", 2, a, None, {("t", 0): (7, 1, "m", -1)})
        await h.coord.commit_offsets("g", 2, a, None, {("t", 0): (8, 1, "n", -1)})
        await h.coord.commit_offsets("gone", -1, "", None, {("t", 2): (3, -1, "", -1)})
        await h.coord.delete_groups(["gone"])
        await h.coord.stop()
        again = GroupCoordinator(h.state, scheduler=h.scheduler)
        await again.start()
        try:
            assert "gone" not in again.groups
            group = again.groups["g"]
            assert (group.state, group.generation_id, group.leader_id) == (
                GroupState.STABLE,
                2,
                a,
            )
            assert [m.assignment for m in group.members.values()] == [b"A", b"B"]
            committed = again.fetch_offsets("g", [("t", 0)])[("t", 0)]
            assert committed is not None and (committed.offset, committed.metadata) == (
                8,
                "n",
            )
            assert again.heartbeat("g", 2, b, None) == ErrorCode.NONE
            # Members that stay silent after the restart expire as usual.
            h.scheduler.advance(SESSION)
            await settle()
            assert (group.state, group.generation_id, group.members) == (
                GroupState.EMPTY,
                3,
                {},
            )
        finally:
            await again.stop()

    run(body)


def test_not_coordinator_on_another_node() -> None:
    async def body(h: Harness) -> None:
        partition = h.coord.partition_for("g")
        leader = h.coord.coordinator_for("g")
        assert leader == 1 + partition % 3
        other = 1 + (leader % 3)
        assert h.coord.check_coordinator("g", leader) == ErrorCode.NONE
        assert h.coord.check_coordinator("g", other) == ErrorCode.NOT_COORDINATOR

    run(body, state=FakeState(nodes=3))


def test_records_decode_as_decode_internal_topic_does() -> None:
    pytest.importorskip("pyspark")
    from kproto.spark._decode import _Dispatch

    async def body(h: Harness) -> list[tuple[bytes | None, bytes | None]]:
        await stable_pair(h)
        await h.coord.commit_offsets(
            "simple", -1, "", None, {("t", 1): (9, -1, "", -1)}
        )
        await h.coord.delete_groups(["simple"])
        return [
            (r.key, r.value)
            for (topic, _), plog in h.state.logs.items()
            if topic == "__consumer_offsets"
            for batch in plog.batches()
            for r in batch.records
        ]

    pairs = run(body)
    dispatch = _Dispatch("__consumer_offsets")
    decoded = [dispatch.decode(k, v) for k, v in pairs]
    assert all(error is None for *_, error in decoded)
    kinds = {(kv, vv, name) for kv, vv, name, *_ in decoded}
    assert kinds == {
        (2, 3, "GroupMetadataKey"),
        (1, 3, "OffsetCommitKey"),
        (1, None, "OffsetCommitKey"),
        (2, None, "GroupMetadataKey"),
    }


def test_recovery_skips_records_that_do_not_decode() -> None:
    async def body(h: Harness) -> None:
        await h.coord.commit_offsets("g", -1, "", None, {("t", 0): (4, -1, "", -1)})
        plog = h.state.partition_log("__consumer_offsets", h.coord.partition_for("g"))
        assert plog is not None
        from kproto.records import encode_batch

        plog.append_batches(
            encode_batch([(b"\x00\x09junk", b"\x00\x00", (), 1), (None, b"x", (), 1)])
        )
        await h.coord.commit_offsets("g", -1, "", None, {("t", 1): (6, -1, "", -1)})
        again = GroupCoordinator(h.state, scheduler=h.scheduler)
        await again.start()
        offsets = {tp: c.offset for tp, c in again.fetch_offsets("g", None).items()}
        assert offsets == {("t", 0): 4, ("t", 1): 6}
        await again.stop()

    run(body)


def test_a_retried_join_group_supersedes_the_first() -> None:
    async def body(h: Harness) -> None:
        a, b = await stable_pair(h)
        first = h.join(a, client_id="a")  # starts a rebalance (the leader rejoined)
        await settle()
        retried = h.join(a, client_id="a")  # the client timed out and sent it again
        await settle()
        assert (await first).error_code == ErrorCode.REBALANCE_IN_PROGRESS
        rb = await h.join(b, client_id="b")
        ra = await retried
        assert (ra.error_code, ra.generation_id, rb.generation_id) == (
            ErrorCode.NONE,
            3,
            3,
        )

    run(body)


def test_deleting_a_topic_drops_its_offsets_in_every_group() -> None:
    async def body(h: Harness) -> None:
        both = {("t", 0): (1, -1, "", -1), ("u", 0): (2, -1, "", -1)}
        await h.coord.commit_offsets("g1", -1, "", None, both)
        await h.coord.commit_offsets("g2", -1, "", None, {("t", 2): (3, -1, "", -1)})
        assert await h.coord.on_topic_deleted("t") == 2
        assert list(h.coord.fetch_offsets("g1", None)) == [("u", 0)]
        assert h.coord.fetch_offsets("g2", None) == {}
        again = GroupCoordinator(h.state, scheduler=h.scheduler)
        await again.start()
        assert list(again.fetch_offsets("g1", None)) == [("u", 0)]
        await again.stop()

    run(body)
