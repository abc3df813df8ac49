"""Random interleavings of JoinGroup, SyncGroup, Heartbeat, LeaveGroup and time.

A Hypothesis rule-based state machine plays four clients (one static) against one
coordinator on a manual clock and checks, after every step, the invariants of
Kafka's classic group: the leader is a member, Empty means no members, generations
only grow, every member of one generation hears the same leader and protocol and gets
the assignment its leader chose; and at the end, that silence expires every member
and answers every waiting request (nothing hangs).
"""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kproto.broker.groups import GroupCoordinator, GroupState, JoinResult, SyncResult
from kproto.errors import ErrorCode

from .fakes import FakeState, ManualScheduler
from .test_state_machine import RANGE

SESSION = 1_000
REBALANCE = 3_000
CLIENTS = 4
STATIC = 3  # client 3 uses group.instance.id "static"


@attrs.define
class Client:
    index: int
    member_id: str = ""
    generation: int = -1
    join: asyncio.Task[JoinResult] | None = None
    sync: asyncio.Task[SyncResult] | None = None
    leader_members: tuple[str, ...] = ()

    @property
    def instance(self) -> str | None:
        return "static" if self.index == STATIC else None


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.scheduler = ManualScheduler()
        self.coord = GroupCoordinator(
            FakeState(), scheduler=self.scheduler, initial_rebalance_delay_ms=50
        )
        self.loop.run_until_complete(self.coord.start())
        self.clients = [Client(i) for i in range(CLIENTS)]
        self.last_generation = 0
        self.joins: dict[int, tuple[str, str | None]] = (
            {}
        )  # generation -> leader, protocol
        self.assigned: dict[tuple[int, str], bytes] = {}  # what each leader chose
        self.orphans: list[asyncio.Task[Any]] = []  # requests of a restarted client

    # -- plumbing ----------------------------------------------------------------

    def settle(self) -> None:
        async def spin() -> None:
            for _ in range(20):
                await asyncio.sleep(0)

        self.loop.run_until_complete(spin())
        for client in self.clients:
            self.collect(client)

    def collect(self, client: Client) -> None:
        if client.join is not None and client.join.done():
            result, client.join = client.join.result(), None
            event(f"JoinGroup error {result.error_code}")
            if result.error_code == ErrorCode.NONE:
                client.member_id, client.generation = (
                    result.member_id,
                    result.generation_id,
                )
                client.leader_members = tuple(m for m, _, _ in result.members)
                if result.skip_assignment:
                    # KIP-345/814: the static leader took its place back within
                    # the generation, under a new member id; the protocol stays
                    known = self.joins.get(result.generation_id)
                    assert known is None or known[1] == result.protocol_name
                    assert result.leader == result.member_id
                    self.joins[result.generation_id] = (
                        result.leader,
                        result.protocol_name,
                    )
                seen = self.joins.setdefault(
                    result.generation_id, (result.leader, result.protocol_name)
                )
                assert seen == (result.leader, result.protocol_name)
            elif result.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                client.member_id = result.member_id
            elif result.error_code == ErrorCode.REBALANCE_IN_PROGRESS:
                pass  # superseded by a later JoinGroup of the same member
            elif result.error_code in (
                ErrorCode.UNKNOWN_MEMBER_ID,
                ErrorCode.FENCED_INSTANCE_ID,
            ):
                client.member_id, client.generation = "", -1
            else:
                raise AssertionError(f"unexpected JoinGroup error {result.error_code}")
        if client.sync is not None and client.sync.done():
            result, client.sync = client.sync.result(), None
            event(f"SyncGroup error {result.error_code}")
            if result.error_code == ErrorCode.NONE:
                # A restarted static member inherits its instance's assignment.
                key = (client.generation, client.instance or client.member_id)
                assert result.assignment == self.assigned.get(key, b""), key
            else:
                assert result.error_code in (
                    ErrorCode.REBALANCE_IN_PROGRESS,
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    ErrorCode.ILLEGAL_GENERATION,
                    ErrorCode.FENCED_INSTANCE_ID,
                ), result.error_code

    def on_loop(self, call: Any) -> Any:
        """Run a synchronous coordinator call on the loop, as a handler does."""

        async def run() -> Any:
            return call()

        return self.loop.run_until_complete(run())

    def identity(self, member_id: str) -> str:
        """A member's identity across restarts: its instance id if static."""
        group = self.group()
        member = None if group is None else group.members.get(member_id)
        return (
            member.group_instance_id or member_id if member is not None else member_id
        )

    def group(self) -> Any:
        return self.coord.groups.get("g")

    # -- rules ---------------------------------------------------------------------

    @rule(i=st.integers(0, CLIENTS - 1))
    def join(self, i: int) -> None:
        client = self.clients[i]
        if client.join is not None:
            return
        client.join = self.loop.create_task(
            self.coord.join_group(
                "g",
                client.member_id,
                client.instance,
                "consumer",
                RANGE,
                session_timeout_ms=SESSION,
                rebalance_timeout_ms=REBALANCE,
                client_id=f"c{i}",
                require_known_member_id=True,
            )
        )
        self.settle()

    @rule(i=st.integers(0, CLIENTS - 1))
    def sync(self, i: int) -> None:
        client = self.clients[i]
        if client.sync is not None or client.generation < 0:
            return
        assignments = {
            m: f"{client.generation}:{m}".encode() for m in client.leader_members
        }
        for m, data in assignments.items():
            self.assigned.setdefault((client.generation, self.identity(m)), data)
        client.sync = self.loop.create_task(
            self.coord.sync_group(
                "g", client.generation, client.member_id, client.instance, assignments
            )
        )
        self.settle()

    @rule(i=st.integers(0, CLIENTS - 1))
    def heartbeat(self, i: int) -> None:
        client = self.clients[i]
        error = self.on_loop(
            lambda: self.coord.heartbeat(
                "g", client.generation, client.member_id, client.instance
            )
        )
        group = self.group()
        if error == ErrorCode.NONE:
            assert group is not None and client.member_id in group.members
            assert client.generation == group.generation_id
        if error == ErrorCode.UNKNOWN_MEMBER_ID and client.join is None:
            client.member_id, client.generation = "", -1

    @rule(i=st.integers(0, CLIENTS - 1))
    def leave(self, i: int) -> None:
        client = self.clients[i]
        if not client.member_id:
            return
        top, errors = self.on_loop(
            lambda: self.coord.leave_group("g", [(client.member_id, client.instance)])
        )
        assert top == ErrorCode.NONE and errors[0] in (
            ErrorCode.NONE,
            ErrorCode.UNKNOWN_MEMBER_ID,
            ErrorCode.FENCED_INSTANCE_ID,
        )
        client.member_id, client.generation = "", -1
        self.settle()

    @rule(ms=st.sampled_from([10, 100, 500, SESSION, REBALANCE]))
    def advance(self, ms: int) -> None:
        self.settle()

        self.on_loop(lambda: self.scheduler.advance(ms))  # timers fire on the loop
        self.settle()

    @rule()
    def restart_static(self) -> None:
        """The static client's process restarts: no LeaveGroup, its requests in
        flight are abandoned, and it joins again without a member id (KIP-345)."""
        client = self.clients[STATIC]
        self.orphans += [t for t in (client.join, client.sync) if t is not None]
        self.clients[STATIC] = Client(STATIC)
        self.join(STATIC)
        for task in self.orphans:
            if task.done():
                event(f"abandoned request answered {task.result().error_code}")

    @rule()
    def cooperate(self) -> None:
        """Every client (re)joins, time passes the join phase, everyone syncs: the
        well-behaved path, so random runs reach Stable often."""
        for i in range(CLIENTS):
            self.join(i)
        for i in range(CLIENTS):
            if self.clients[i].join is not None and self.clients[i].member_id:
                continue
            self.join(i)  # the KIP-394 second JoinGroup
        self.advance(100)
        for i in range(CLIENTS):
            self.sync(i)

    # -- invariants ----------------------------------------------------------------

    @invariant()
    def group_is_consistent(self) -> None:
        group = self.group()
        if group is None:
            return
        assert group.generation_id >= self.last_generation
        self.last_generation = group.generation_id
        event(f"state {group.state.value}")
        if group.members:
            assert group.leader_id in group.members
            assert group.state is not GroupState.EMPTY
        else:
            assert group.state in (GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
        if group.is_(GroupState.PREPARING_REBALANCE):
            assert group.join_timer is not None
        for instance, member_id in group.static_members.items():
            assert group.members[member_id].group_instance_id == instance
        if group.is_(GroupState.STABLE):
            # Stable: the leader's assignment is everyone's.
            for member in group.members.values():
                identity = member.group_instance_id or member.member_id
                chosen = self.assigned.get((group.generation_id, identity))
                assert chosen is None or member.assignment == chosen

    def teardown(self) -> None:
        try:
            for _ in range(6):  # silence: every member expires, every wait ends
                self.advance(REBALANCE)
            assert all(c.join is None and c.sync is None for c in self.clients)
            assert all(task.done() for task in self.orphans)
            group = self.group()
            assert group is None or (group.is_(GroupState.EMPTY) and not group.members)
            self.loop.run_until_complete(self.coord.stop())
        finally:
            self.loop.close()


# At least 50 runs even under the CI profile (8): about 3 s, and the runs are cheap.
GroupMachine.TestCase.settings = settings(
    max_examples=max(50, settings.default.max_examples),
    stateful_step_count=40,
    deadline=None,
)
test_group_state_machine = GroupMachine.TestCase
