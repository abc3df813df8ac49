"""The classic group membership protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Behaviour follows Kafka's classic ``GroupCoordinator`` (``GroupMetadataManager``'s
classic-group part in the group-coordinator module), cut to what one in-process broker
needs:

- a rebalance moves a group Stable/Empty -> PreparingRebalance -> CompletingRebalance
  -> Stable; JoinGroup responses wait until every known member rejoined or the largest
  rebalance timeout passed (members that did not rejoin are removed); the first
  rebalance of an Empty group waits ``initial_rebalance_delay_ms`` and again while new
  members arrive, up to the rebalance timeout (Kafka's ``InitialDelayedJoin``);
- KIP-394: JoinGroup v4+ without a member id gets MEMBER_ID_REQUIRED and a member id
  that must join within the session timeout;
- KIP-345 static membership: a known ``group.instance.id`` joining again takes over
  its member's place (the old member id gets FENCED_INSTANCE_ID);
- a member that sends no heartbeat within its session timeout is removed; members
  that do not SyncGroup within the rebalance timeout are removed (Kafka's pending
  sync timeout); both trigger a rebalance.

Waiting uses asyncio futures and timers from a :class:`Scheduler` (``loop.call_later``
by default; tests drive a manual one), never sleep loops. Offsets live in :mod:`kproto.broker.groups.offsets`, group lookup
and persistence in :mod:`kproto.broker.groups.coordinator`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from kproto.errors import ErrorCode

from .group import ClassicGroup, GroupState, JoinResult, Member, SyncResult
from .timers import Scheduler, TimerHandle

__all__ = ["Membership"]

log = logging.getLogger("kproto.broker.groups")

# Kafka's ClassicGroupMember / GroupMetadataManager constants.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


def _cancel(handle: TimerHandle | None) -> None:
    if handle is not None:
        handle.cancel()


@attrs.define(eq=False)
class Membership:
    """Join/sync/heartbeat/leave over a shared ``groups`` dict (group_id -> group).

    ``persist_group(group)`` is awaited to append the group's metadata record and
    returns the error code of the write (NONE: stored);
    ``now_ms()`` gives the wall clock in ms. The timeouts are ms (Kafka's
    ``group.initial.rebalance.delay.ms``, ``group.min.session.timeout.ms`` and
    ``group.max.session.timeout.ms``).
    """

    groups: dict[str, ClassicGroup]
    scheduler: Scheduler
    now_ms: Callable[[], int]
    persist_group: Callable[[ClassicGroup], Awaitable[ErrorCode]]
    initial_rebalance_delay_ms: int = attrs.field(kw_only=True)
    min_session_timeout_ms: int = attrs.field(kw_only=True)
    max_session_timeout_ms: int = attrs.field(kw_only=True)
    _tasks: set[asyncio.Task[Any]] = attrs.field(init=False, factory=set)

    # -- JoinGroup -------------------------------------------------------------------

    async def join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: tuple[tuple[str, bytes], ...],
        *,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str = "",
        client_host: str = "",
        require_known_member_id: bool = False,
    ) -> JoinResult:
        """Handle one JoinGroup; returns when the response may be sent.

        ``rebalance_timeout_ms`` -1 (JoinGroup v0) means the session timeout.
        Errors (as ``JoinResult.error_code``): INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT,
        UNKNOWN_MEMBER_ID, INCONSISTENT_GROUP_PROTOCOL, MEMBER_ID_REQUIRED (with the
        new ``member_id``), FENCED_INSTANCE_ID, COORDINATOR_NOT_AVAILABLE (dead group).
        """
        if not group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID, member_id)
        if (
            not self.min_session_timeout_ms
            <= session_timeout_ms
            <= self.max_session_timeout_ms
        ):
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            group = ClassicGroup(group_id, state_timestamp_ms=self.now_ms())
        if group.is_(GroupState.DEAD):
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports_protocols(protocol_type, {name for name, _ in protocols}):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        # A new group exists from its first valid JoinGroup on (a rejected one
        # leaves nothing behind).
        self.groups.setdefault(group_id, group)
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()

        def respond(result: JoinResult) -> None:
            if not future.done():
                future.set_result(result)

        template = Member(
            member_id=member_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            awaiting_join=respond,
        )
        if member_id:
            self._join_known(group, template)
        else:
            self._join_unknown(group, template, require_known_member_id)
        return await future

    def _join_unknown(
        self, group: ClassicGroup, new: Member, require_known: bool
    ) -> None:
        new.member_id = f"{new.client_id}-{uuid.uuid4()}"
        if new.group_instance_id is not None:
            old_id = group.static_member_id(new.group_instance_id)
            if old_id is not None:
                self._rejoin_static(group, old_id, new)
                return
        elif require_known:
            # KIP-394: hand out the id; the member must come back with it.
            member_id = new.member_id
            group.pending_members[member_id] = self.scheduler.call_later(
                new.session_timeout_ms, lambda: self._expire_pending(group, member_id)
            )
            new.complete_join(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
            return
        self._add_and_rebalance(group, new, f"new member {new.member_id} joined")

    def _join_known(self, group: ClassicGroup, new: Member) -> None:
        member_id = new.member_id
        if member_id in group.pending_members:
            _cancel(group.pending_members.pop(member_id))
            self._add_and_rebalance(group, new, f"pending member {member_id} joined")
            return
        if group.is_static_member_fenced(member_id, new.group_instance_id):
            new.complete_join(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            return
        member = group.members.get(member_id)
        if member is None or group.state in (GroupState.EMPTY, GroupState.DEAD):
            new.complete_join(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._update_member(group, member, new)
            self._try_complete_join(group)
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            if member.matches(new.protocols):
                # The member missed its JoinGroup response: send the same again.
                assert new.awaiting_join is not None
                new.awaiting_join(self._join_result(group, member))
            else:
                self._update_member(group, member, new)
                self.prepare_rebalance(group, f"member {member_id} changed protocols")
        else:  # Stable
            if member_id == group.leader_id or not member.matches(new.protocols):
                self._update_member(group, member, new)
                self.prepare_rebalance(group, f"member {member_id} rejoined")
            else:
                assert new.awaiting_join is not None
                new.awaiting_join(self._join_result(group, member))

    def _rejoin_static(self, group: ClassicGroup, old_id: str, new: Member) -> None:
        """KIP-345: the static member ``new.group_instance_id`` restarted.

        Follows Kafka's ``GroupMetadataManager.classicGroupJoinExistingStaticMember``:
        in a Stable group the member takes its predecessor's place without a
        rebalance unless the protocol the group would select changes (the leader
        too: it is told ``skip_assignment``, KIP-814); in CompletingRebalance the
        group rebalances (the leader may already hold the old member id)."""
        old = group.members[old_id]
        old.complete_join(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        old.complete_sync(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        same_type = old.protocol_type == new.protocol_type
        member = group.replace_static_member(
            new.group_instance_id or "", old_id, new.member_id
        )
        self._update_member(group, member, new)
        if (
            group.is_(GroupState.STABLE)
            and same_type
            and group.select_protocol() == group.protocol_name
        ):
            # The selected protocol stays: keep every assignment, no rebalance.
            respond = member.awaiting_join
            member.awaiting_join = None
            self.schedule_heartbeat(group, member)
            result = self._join_result(group, member)
            if member.member_id == group.leader_id:
                result = attrs.evolve(result, skip_assignment=True)
            self._spawn(self._persist_then(group, lambda: respond and respond(result)))
            return
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        else:
            self.prepare_rebalance(
                group, f"static member {new.group_instance_id} rejoined"
            )

    def _update_member(self, group: ClassicGroup, member: Member, new: Member) -> None:
        member.protocols = new.protocols
        member.session_timeout_ms = new.session_timeout_ms
        member.rebalance_timeout_ms = new.rebalance_timeout_ms
        member.client_id = new.client_id or member.client_id
        member.client_host = new.client_host or member.client_host
        if (
            member.awaiting_join is not None
            and member.awaiting_join is not new.awaiting_join
        ):
            # A second JoinGroup (a client that timed out and retried on another
            # connection) replaces the first. Kafka drops the first future unanswered;
            # answering keeps that connection's later responses flowing, and
            # REBALANCE_IN_PROGRESS only makes a client rejoin with its member id.
            member.complete_join(
                JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id)
            )
        member.awaiting_join = new.awaiting_join

    def _add_and_rebalance(
        self, group: ClassicGroup, member: Member, reason: str
    ) -> None:
        member.is_new = True
        group.add(member)
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and group.initial_delay_left_ms >= 0
        ):
            group.new_member_added = True
        self.schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        else:
            self.prepare_rebalance(group, reason)

    # -- rebalance -------------------------------------------------------------------

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        """Move ``group`` to PreparingRebalance (Kafka's ``prepareRebalance``)."""
        log.debug("group %s: preparing rebalance: %s", group.group_id, reason)
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._reset_sync(group, ErrorCode.REBALANCE_IN_PROGRESS)
        _cancel(group.sync_timer)
        group.sync_timer = None
        initial = group.is_(GroupState.EMPTY)
        group.transition(GroupState.PREPARING_REBALANCE, self.now_ms())
        _cancel(group.join_timer)
        if initial and self.initial_rebalance_delay_ms > 0:
            delay = min(self.initial_rebalance_delay_ms, group.rebalance_timeout_ms())
            group.initial_delay_left_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            group.join_timer = self.scheduler.call_later(
                delay, lambda: self._initial_join_expired(group)
            )
            return
        group.initial_delay_left_ms = -1
        group.join_timer = self.scheduler.call_later(
            group.rebalance_timeout_ms(), lambda: self._complete_join(group)
        )
        self._try_complete_join(group)

    def _initial_join_expired(self, group: ClassicGroup) -> None:
        if group.new_member_added and group.initial_delay_left_ms > 0:
            group.new_member_added = False
            delay = min(self.initial_rebalance_delay_ms, group.initial_delay_left_ms)
            group.initial_delay_left_ms -= delay
            group.join_timer = self.scheduler.call_later(
                delay, lambda: self._initial_join_expired(group)
            )
            return
        self._complete_join(group)

    def _try_complete_join(self, group: ClassicGroup) -> None:
        """Complete the join phase early once everyone rejoined (not during the
        initial delay, which always runs its course)."""
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and group.initial_delay_left_ms < 0
            and group.all_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        """Kafka's ``onCompleteJoin``: drop members that did not rejoin, start the
        next generation and answer every waiting JoinGroup."""
        if not group.is_(GroupState.PREPARING_REBALANCE):
            return
        _cancel(group.join_timer)
        group.join_timer = None
        group.initial_delay_left_ms = -1
        for member in list(group.members.values()):
            if member.awaiting_join is None:
                self._remove_member(group, member)
        group.generation_id += 1
        if not group.members:
            group.protocol_name = None
            group.transition(GroupState.EMPTY, self.now_ms())
            self._spawn(self._persist_then(group, None))
            return
        group.protocol_name = group.select_protocol()
        group.transition(GroupState.COMPLETING_REBALANCE, self.now_ms())
        group.pending_sync = set(group.members)
        for member in list(group.members.values()):
            member.complete_join(self._join_result(group, member))
            member.is_new = False
            self.schedule_heartbeat(group, member)
        generation = group.generation_id
        group.sync_timer = self.scheduler.call_later(
            group.rebalance_timeout_ms(),
            lambda: self._expire_pending_sync(group, generation),
        )

    def _join_result(self, group: ClassicGroup, member: Member) -> JoinResult:
        protocol = group.protocol_name or ""
        leader = member.member_id == group.leader_id
        members = (
            tuple(
                (m.member_id, m.group_instance_id, m.metadata(protocol))
                for m in group.members.values()
            )
            if leader
            else ()
        )
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            members,
        )

    def _reset_sync(self, group: ClassicGroup, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.complete_sync(SyncResult(error))

    def _expire_pending_sync(self, group: ClassicGroup, generation: int) -> None:
        if generation != group.generation_id or not group.pending_sync:
            return
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        for member_id in list(group.pending_sync):
            member = group.members.get(member_id)
            if member is not None:
                self._remove_member(group, member)
        group.pending_sync.clear()
        self.prepare_rebalance(
            group, "members did not sync within the rebalance timeout"
        )

    # -- SyncGroup -------------------------------------------------------------------

    async def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: dict[str, bytes],
        *,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResult:
        """Handle one SyncGroup; the leader's ``assignments`` (member_id -> bytes)
        complete the generation. Errors: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
        ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, REBALANCE_IN_PROGRESS,
        COORDINATOR_NOT_AVAILABLE (a dead group), the write's error when the
        group's metadata could not be stored (NOT_COORDINATOR)."""
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.DEAD):
            return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.is_static_member_fenced(member_id, group_instance_id):
            return SyncResult(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None or group.is_(GroupState.EMPTY):
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation_id:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        self.schedule_heartbeat(group, member)
        if group.is_(GroupState.STABLE):
            group.pending_sync.discard(member_id)
            return self._sync_result(group, member)
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()

        def respond(result: SyncResult) -> None:
            if not future.done():
                future.set_result(result)

        member.complete_sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = respond
        group.pending_sync.discard(member_id)
        if member_id == group.leader_id:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            generation = group.generation_id
            error = await self.persist_group(group)
            current = (
                group.is_(GroupState.COMPLETING_REBALANCE)
                and group.generation_id == generation
            )
            if current and error:
                # Kafka: a failed metadata append resets the assignment and rebalances.
                self._reset_sync(group, error)
                self.prepare_rebalance(group, "storing the group metadata failed")
            elif current:
                group.transition(GroupState.STABLE, self.now_ms())
                for m in group.members.values():
                    m.complete_sync(self._sync_result(group, m))
        return await future

    def _sync_result(self, group: ClassicGroup, member: Member) -> SyncResult:
        return SyncResult(
            ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name
        )

    # -- Heartbeat and LeaveGroup ----------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
    ) -> int:
        """Handle one Heartbeat; returns its error code (NONE, REBALANCE_IN_PROGRESS
        while a rebalance waits for this member, UNKNOWN_MEMBER_ID,
        ILLEGAL_GENERATION, FENCED_INSTANCE_ID, COORDINATOR_NOT_AVAILABLE)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None or group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        self.schedule_heartbeat(group, member)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """Handle one LeaveGroup of ``(member_id, group_instance_id)`` pairs.

        Returns ``(top-level error, one error per member)``: UNKNOWN_MEMBER_ID for an
        unknown member or group, FENCED_INSTANCE_ID for a static member named with
        another member id, COORDINATOR_NOT_AVAILABLE for a dead group."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, [ErrorCode.NONE] * len(members)
        errors: list[int] = []
        for member_id, instance_id in members:
            if instance_id is not None:
                current = group.static_member_id(instance_id)
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                elif member_id and member_id != current:
                    errors.append(ErrorCode.FENCED_INSTANCE_ID)
                else:
                    errors.append(ErrorCode.NONE)
                    self._remove_and_update(group, group.members[current])
            elif member_id in group.pending_members:
                _cancel(group.pending_members.pop(member_id))
                errors.append(ErrorCode.NONE)
                self._try_complete_join(group)
            elif member_id in group.members:
                errors.append(ErrorCode.NONE)
                self._remove_and_update(group, group.members[member_id])
            else:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
        return ErrorCode.NONE, errors

    # -- timers and removal ----------------------------------------------------------

    def schedule_heartbeat(
        self, group: ClassicGroup, member: Member, timeout_ms: int | None = None
    ) -> None:
        """(Re)start ``member``'s session timer: ``timeout_ms``, default its session
        timeout (Kafka's ``completeAndScheduleNextHeartbeatExpiration``)."""
        _cancel(member.heartbeat_timer)
        delay = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_timer = self.scheduler.call_later(
            delay, lambda: self._heartbeat_expired(group, member)
        )

    def _heartbeat_expired(self, group: ClassicGroup, member: Member) -> None:
        member.heartbeat_timer = None
        if group.members.get(member.member_id) is not member:
            return
        # Kafka's shouldKeepAlive: a member waiting in JoinGroup/SyncGroup is alive,
        # unless it is new and did not complete its first join in time.
        if (member.awaiting_join is not None and not member.is_new) or (
            member.awaiting_sync is not None
        ):
            self.schedule_heartbeat(group, member)
            return
        log.info(
            "group %s: member %s session expired", group.group_id, member.member_id
        )
        self._remove_and_update(group, member)

    def _expire_pending(self, group: ClassicGroup, member_id: str) -> None:
        if group.pending_members.pop(member_id, None) is not None:
            self._try_complete_join(group)

    def _remove_member(self, group: ClassicGroup, member: Member) -> None:
        _cancel(member.heartbeat_timer)
        member.heartbeat_timer = None
        member.complete_join(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        member.complete_sync(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)

    def _remove_and_update(self, group: ClassicGroup, member: Member) -> None:
        """Kafka's ``removeMemberAndUpdateGroup``."""
        self._remove_member(group, member)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        elif group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.prepare_rebalance(group, f"member {member.member_id} left")

    # -- background work -------------------------------------------------------------

    async def _persist_then(
        self, group: ClassicGroup, then: Callable[[], Any] | None
    ) -> None:
        await self.persist_group(group)
        if then is not None:
            then()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel_timers(self) -> None:
        """Cancel every timer of every group (the coordinator is stopping)."""
        for group in self.groups.values():
            _cancel(group.join_timer)
            _cancel(group.sync_timer)
            for handle in group.pending_members.values():
                _cancel(handle)
            for member in group.members.values():
                _cancel(member.heartbeat_timer)
                member.heartbeat_timer = None

    async def drain(self) -> None:
        """Wait for background metadata appends to finish."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
