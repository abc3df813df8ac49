"""The KIP-848 consumer groups of one cluster: heartbeats, assignment, timers, records.

:class:`ConsumerGroups` is owned by :class:`~kproto.broker.groups.GroupCoordinator`
(``coordinator.consumer``) and follows Kafka's ``GroupMetadataManager``
(``consumerGroupHeartbeat`` and its helpers):

1. validate the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR,
   INVALID_REGULAR_EXPRESSION);
2. find or create the group (epoch 0 only; an empty classic group is converted, a
   non-empty one answers GROUP_ID_NOT_FOUND) and the member (epoch 0 joins, a static
   member replaces its departed predecessor; otherwise UNKNOWN_MEMBER_ID and
   FENCED_MEMBER_EPOCH as ``throwIfMemberEpochIsInvalid``);
3. bump the group epoch when the member is new, its subscription or assignor changed,
   or the subscribed topics' metadata changed (new topic matching a regex, new
   partitions); recompute the target assignment when the group epoch passed the
   assignment epoch;
4. reconcile the member towards its target (:func:`.consumer_group.reconcile`),
   append the changed records to ``__consumer_offsets`` and (re)arm the session
   timer and, while the member must revoke, the rebalance timer.

State changes are applied in memory before the append; a failed append answers
COORDINATOR_NOT_AVAILABLE (Kafka would roll the in-memory state back).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import uuid
from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any

import attrs

from kproto.errors import ErrorCode

from .assignors import ASSIGNORS, Assignment, MemberSpec
from .consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    compile_regex,
    reconcile,
)
from .consumer_lifecycle import load_groups
from .consumer_records import (
    ConsumerRecord,
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    partition_metadata_record,
    target_member_record,
    target_metadata_record,
)
from .records import group_metadata_record
from .timers import arm_member_timers

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

__all__ = ["ConsumerGroups", "HeartbeatRequest", "HeartbeatResult"]

log = logging.getLogger("kproto.broker.groups")
E = ErrorCode
Pair = tuple[bytes, bytes | None]

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
DEFAULT_SESSION_TIMEOUT_MS = 45_000
DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000
DEFAULT_ASSIGNORS = ("uniform", "range")


@attrs.frozen
class HeartbeatRequest:
    """The fields of a ConsumerGroupHeartbeat request (``None``: unchanged)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@attrs.frozen
class HeartbeatResult:
    """A ConsumerGroupHeartbeat answer; ``assignment`` ``None``: not sent."""

    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


class _Error(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ConsumerGroups:
    """Every consumer group of a cluster, driven by ConsumerGroupHeartbeat.

    Options (ms): ``session_timeout_ms`` (``group.consumer.session.timeout.ms``),
    ``heartbeat_interval_ms`` (``group.consumer.heartbeat.interval.ms``),
    ``assignors`` (``group.consumer.assignors``, the first is the default).
    """

    def __init__(
        self,
        coordinator: GroupCoordinator,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
        assignors: Iterable[str] = DEFAULT_ASSIGNORS,
    ) -> None:
        self.coordinator = coordinator
        self.groups: dict[str, ConsumerGroup] = {}
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.assignors = tuple(assignors)
        unknown = [a for a in self.assignors if a not in ASSIGNORS]
        if unknown or not self.assignors:
            raise ValueError(
                f"group.consumer.assignors must name some of {sorted(ASSIGNORS)},"
                f" got {list(self.assignors)}"
            )
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- heartbeat -------------------------------------------------------------------

    async def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        """Serve one ConsumerGroupHeartbeat (see the module docstring)."""
        records: list[Pair] = []
        try:
            self._validate(request)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                result = self._leave(request, records)
            else:
                result = self._heartbeat(request, records)
        except _Error as error:
            return HeartbeatResult(error.code, error.message, request.member_id or None)
        if records and not await self.coordinator._append(request.group_id, records):
            return HeartbeatResult(
                E.COORDINATOR_NOT_AVAILABLE, "cannot write to __consumer_offsets"
            )
        return result

    def _validate(self, r: HeartbeatRequest) -> None:
        def invalid(message: str) -> _Error:
            return _Error(E.INVALID_REQUEST, message)

        if not r.group_id:
            raise invalid("GroupId can't be empty.")
        if r.instance_id is not None and not r.instance_id:
            raise invalid("InstanceId can't be empty.")
        if r.rack_id is not None and not r.rack_id:
            raise invalid("RackId can't be empty.")
        if r.member_epoch == 0:
            if r.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if r.owned is None or r.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if r.subscribed_topic_names is None and r.subscribed_topic_regex is None:
                raise invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in"
                    " first request."
                )
        elif r.member_epoch == STATIC_LEAVE_EPOCH:
            if r.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif r.member_epoch < STATIC_LEAVE_EPOCH:
            raise invalid(f"MemberEpoch is invalid: {r.member_epoch}.")
        if (r.member_epoch != 0 or r.api_version >= 1) and not r.member_id:
            # v1+ members generate their own id (KIP-1082); v0 joins get one
            raise invalid("MemberId can't be empty.")
        if r.subscribed_topic_regex is not None:
            try:
                compile_regex(r.subscribed_topic_regex)
            except ValueError as exc:
                raise _Error(
                    E.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex {r.subscribed_topic_regex!r} is not a"
                    f" valid regular expression: {exc}.",
                ) from None
        if r.server_assignor is not None and r.server_assignor not in self.assignors:
            raise _Error(
                E.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {r.server_assignor} is not supported. Supported"
                f" assignors: {', '.join(self.assignors)}.",
            )

    def _group_for_join(self, group_id: str, records: list[Pair]) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if group_id in self.coordinator.streams.groups:  # KIP-1071
            raise _Error(
                E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        classic = self.coordinator.groups.get(group_id)
        group = ConsumerGroup(group_id)
        if classic is not None:
            if classic.members:
                raise _Error(
                    E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
                )
            # online upgrade of an empty classic group: its offsets carry over
            group.offsets = classic.offsets
            del self.coordinator.groups[group_id]
            records.append(group_metadata_record(group_id, None))
        self.groups[group_id] = group
        return group

    def _heartbeat(self, r: HeartbeatRequest, records: list[Pair]) -> HeartbeatResult:
        if r.member_epoch == 0:
            group = self._group_for_join(r.group_id, records)
        else:
            found = self.groups.get(r.group_id)
            if found is None:
                raise _Error(E.GROUP_ID_NOT_FOUND, f"Group {r.group_id} not found.")
            group = found
        bump = False
        member_id = r.member_id or str(uuid.uuid4())
        member = group.members.get(member_id)
        if r.member_epoch == 0:
            member, bump = self._join(group, member_id, member, r, records)
        else:
            if member is None:
                raise _Error(
                    E.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {r.group_id}.",
                )
            self._check_epoch(member, r)
        if self._update_member(member, r):
            bump = True
            records.append(member_metadata_record(group.group_id, member_id, member))
        if self._refresh_metadata(group, records):
            bump = True
        if bump:
            group.group_epoch += 1
            records.append(group_epoch_record(group.group_id, group.group_epoch))
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, records)
        group.release(member)
        changed = reconcile(
            member,
            group.assignment_epoch,
            group.target.get(member_id, {}),
            r.owned,
            group.partition_epochs,
        )
        group.hold(member)
        if changed or r.member_epoch == 0:
            records.append(current_assignment_record(group.group_id, member_id, member))
        self._arm_timers(group, member)
        full = r.member_epoch == 0 or r.owned is not None
        return HeartbeatResult(
            E.NONE,
            None,
            member_id,
            member.member_epoch,
            self._setting(group.group_id, "consumer.heartbeat.interval.ms"),
            member.assigned if changed or full else None,
        )

    def _join(
        self,
        group: ConsumerGroup,
        member_id: str,
        member: ConsumerGroupMember | None,
        r: HeartbeatRequest,
        records: list[Pair],
    ) -> tuple[ConsumerGroupMember, bool]:
        """The member joining with epoch 0, and whether the group epoch must bump."""
        previous_id = group.static_members.get(r.instance_id or "")
        if r.instance_id is not None and previous_id not in (None, member_id):
            previous = group.members[previous_id or ""]
            if previous.member_epoch != STATIC_LEAVE_EPOCH:
                raise _Error(
                    E.UNRELEASED_INSTANCE_ID,
                    f"Static member {previous_id} with instance id {r.instance_id}"
                    " is not released yet.",
                )
            # KIP-848 static membership: the new member id takes over the departed
            # member's assignment and epoch without a rebalance
            group.members.pop(previous.member_id)
            previous.cancel_timers()
            target = group.target.pop(previous.member_id, {})
            for pair in self._member_tombstones(group.group_id, previous.member_id):
                records.append(pair)
            previous.member_id = member_id
            previous.member_epoch = previous.previous_member_epoch
            group.add_member(previous)
            group.target[member_id] = target
            records.append(member_metadata_record(group.group_id, member_id, previous))
            records.append(target_member_record(group.group_id, member_id, target))
            return previous, False
        if member is not None:
            # rejoining with epoch 0: it gives up what it held and starts over
            group.release(member)
            member.assigned, member.pending_revocation = {}, {}
            member.state = MemberState.STABLE
            member.member_epoch, member.previous_member_epoch = 0, -1
            return member, False
        member = ConsumerGroupMember(member_id, instance_id=r.instance_id)
        group.add_member(member)
        return member, True

    @staticmethod
    def _check_epoch(member: ConsumerGroupMember, r: HeartbeatRequest) -> None:
        """Kafka's ``throwIfMemberEpochIsInvalid``."""
        fenced = _Error(
            E.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch"
            f" ({r.member_epoch}) than the one known by the group coordinator"
            f" ({member.member_epoch}). The member must abandon all its partitions"
            " and rejoin.",
        )
        if r.member_epoch > member.member_epoch:
            raise _Error(
                E.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch"
                f" ({r.member_epoch}) than the one known by the group coordinator"
                f" ({member.member_epoch}). The member must abandon all its"
                " partitions and rejoin.",
            )
        if r.member_epoch < member.member_epoch:
            if r.member_epoch != member.previous_member_epoch or r.owned is None:
                raise fenced
            for topic, parts in r.owned.items():
                if not parts <= member.assigned.get(topic, frozenset()):
                    raise fenced

    def _update_member(self, member: ConsumerGroupMember, r: HeartbeatRequest) -> bool:
        """Apply the request's non-null fields; True if the subscription changed."""
        before = (
            member.subscribed_topic_names,
            member.subscribed_topic_regex,
            member.server_assignor,
        )
        if r.instance_id is not None:
            member.instance_id = r.instance_id
        if r.rack_id is not None:
            member.rack_id = r.rack_id
        if r.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = r.rebalance_timeout_ms
        if r.subscribed_topic_names is not None:
            member.subscribed_topic_names = tuple(r.subscribed_topic_names)
        if r.subscribed_topic_regex is not None:
            member.subscribed_topic_regex = r.subscribed_topic_regex or None
        if r.server_assignor is not None:
            member.server_assignor = r.server_assignor
        member.client_id, member.client_host = r.client_id, r.client_host
        after = (
            member.subscribed_topic_names,
            member.subscribed_topic_regex,
            member.server_assignor,
        )
        return before != after or member.member_epoch == 0

    # -- metadata and assignment -----------------------------------------------------

    def _subscribed_metadata(
        self, group: ConsumerGroup
    ) -> dict[str, tuple[uuid.UUID, int]]:
        """``{topic: (topic_id, partitions)}`` of the existing topics some member
        subscribes to; regexes do not match internal topics."""
        out: dict[str, tuple[uuid.UUID, int]] = {}
        for name, info in self.coordinator.state.topics.items():
            if any(m.subscribes(name, info.internal) for m in group.members.values()):
                out[name] = (info.topic_id, info.partitions)
        return out

    def _refresh_metadata(self, group: ConsumerGroup, records: list[Pair]) -> bool:
        """Update the group's subscription metadata; True (record added) if changed."""
        current = self._subscribed_metadata(group)
        if current == group.subscription_metadata:
            return False
        group.subscription_metadata = current
        records.append(partition_metadata_record(group.group_id, current))
        return True

    def _assignor(self, group: ConsumerGroup) -> str:
        """The most used ``server_assignor`` of the members, else the default
        (Kafka's ``ConsumerGroup.computePreferredServerAssignor``)."""
        counts = collections.Counter(
            m.server_assignor for m in group.members.values() if m.server_assignor
        )
        if counts:
            return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        return self.assignors[0]

    def _assign(self, group: ConsumerGroup, records: list[Pair]) -> None:
        """Compute the target assignment at the group epoch (Kafka's
        ``TargetAssignmentBuilder``); records for the members whose target changed."""
        ids = {name: tid for name, (tid, _) in group.subscription_metadata.items()}
        counts = {tid: n for tid, n in group.subscription_metadata.values()}
        topics = self.coordinator.state.topics
        internal = {t for t in ids if t in topics and topics[t].internal}
        specs = {
            member_id: MemberSpec(
                frozenset(ids[t] for t in ids if m.subscribes(t, t in internal)),
                group.target.get(member_id, {}),
            )
            for member_id, m in group.members.items()
        }
        group.preferred_assignor = self._assignor(group)
        new = ASSIGNORS[group.preferred_assignor](specs, counts)
        for member_id, assignment in new.items():
            if group.target.get(member_id) != assignment:
                records.append(
                    target_member_record(group.group_id, member_id, assignment)
                )
        group.target = dict(new)
        group.assignment_epoch = group.group_epoch
        records.append(target_metadata_record(group.group_id, group.assignment_epoch))

    # -- leaving, fencing, timers ----------------------------------------------------

    def _leave(self, r: HeartbeatRequest, records: list[Pair]) -> HeartbeatResult:
        group = self.groups.get(r.group_id)
        if group is None:
            raise _Error(E.GROUP_ID_NOT_FOUND, f"Group {r.group_id} not found.")
        member_id = r.member_id
        if r.instance_id is not None:
            member_id = group.static_members.get(r.instance_id, member_id)
        member = group.members.get(member_id)
        if member is None:
            raise _Error(
                E.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {r.group_id}.",
            )
        if r.member_epoch == STATIC_LEAVE_EPOCH:
            # the static member keeps its assignment until its session expires
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = STATIC_LEAVE_EPOCH
            records.append(current_assignment_record(group.group_id, member_id, member))
            self._arm_timers(group, member)
        else:
            self._remove(group, member, records)
        return HeartbeatResult(E.NONE, None, r.member_id, r.member_epoch, 0, None)

    def _member_tombstones(self, group_id: str, member_id: str) -> list[Pair]:
        return [
            current_assignment_record(group_id, member_id, None),
            target_member_record(group_id, member_id, None),
            member_metadata_record(group_id, member_id, None),
        ]

    def _remove(
        self, group: ConsumerGroup, member: ConsumerGroupMember, records: list[Pair]
    ) -> None:
        """Remove ``member`` (leave, session or rebalance timeout) and bump the epoch."""
        group.remove_member(member.member_id)
        records.extend(self._member_tombstones(group.group_id, member.member_id))
        self._refresh_metadata(group, records)
        group.group_epoch += 1
        records.append(group_epoch_record(group.group_id, group.group_epoch))

    def _setting(self, group_id: str, name: str) -> int:
        """``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms`` of
        the group: its GROUP config when set (``ClusterState.group_config``), else
        this coordinator's (Kafka's ``GroupMetadataManager`` per-group lookup)."""
        own = (
            self.session_timeout_ms
            if name == "consumer.session.timeout.ms"
            else self.heartbeat_interval_ms
        )
        lookup = getattr(self.coordinator.state, "group_config", None)
        return own if lookup is None else int(lookup(group_id, name, str(own)))

    def _arm_timers(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        arm_member_timers(
            self.coordinator.scheduler,
            member,
            self._setting(group.group_id, "consumer.session.timeout.ms"),
            member.state == MemberState.UNREVOKED_PARTITIONS,
            lambda why, epoch: self._expire(group, member, why, epoch),
        )

    def _expire(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        why: str,
        epoch: int | None,
    ) -> None:
        if group.members.get(member.member_id) is not member or group.dead:
            return
        if epoch is not None:
            member.rebalance_timer = None
            if member.member_epoch != epoch or (
                member.state != MemberState.UNREVOKED_PARTITIONS
            ):
                return
        log.info(
            "group %s: member %s fenced (%s)", group.group_id, member.member_id, why
        )
        records: list[Pair] = []
        self._remove(group, member, records)
        self._spawn(self.coordinator._append(group.group_id, records))

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        """Cancel every timer and wait for pending appends."""
        for group in self.groups.values():
            for member in group.members.values():
                member.cancel_timers()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- offsets, describe, delete ---------------------------------------------------

    def validate_commit(
        self,
        group: ConsumerGroup,
        member_epoch: int,
        member_id: str,
        instance_id: str | None,
    ) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetCommit``: a commit without member
        (epoch < 0, no ids) only to an empty group, else UNKNOWN_MEMBER_ID; a member's
        commit at another epoch than its own STALE_MEMBER_EPOCH."""
        if member_epoch < 0 and not member_id and instance_id is None:
            return E.NONE if group.is_empty() else E.UNKNOWN_MEMBER_ID
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return E.STALE_MEMBER_EPOCH
        return E.NONE

    def is_member(self, group_id: str, member_id: str) -> bool:
        """Whether ``member_id`` is a member of the consumer group ``group_id``."""
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    def validate_fetch(
        self, group_id: str, member_id: str | None, member_epoch: int
    ) -> int:
        """Kafka's ``ConsumerGroup.validateOffsetFetch`` (OffsetFetch v9+): no member
        id and epoch -1 fetch freely; otherwise UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH.
        """
        group = self.groups.get(group_id)
        if group is None or (member_id is None and member_epoch < 0):
            return E.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE if member_epoch == member.member_epoch else E.STALE_MEMBER_EPOCH

    def delete_records(self, group: ConsumerGroup) -> list[Pair]:
        """Tombstones of an (empty) group's consumer records (Kafka's
        ``ConsumerGroup.createGroupTombstoneRecords``)."""
        return [
            target_metadata_record(group.group_id, None),
            partition_metadata_record(group.group_id, None),
            group_epoch_record(group.group_id, None),
        ]

    def topic_names(self) -> dict[uuid.UUID, str]:
        return {
            info.topic_id: name for name, info in self.coordinator.state.topics.items()
        }

    # -- recovery --------------------------------------------------------------------

    def load(self, records: dict[tuple[str, str, str], ConsumerRecord]) -> None:
        """Rebuild the groups from the last record of each key
        (:func:`.consumer_lifecycle.load_groups`); members get fresh session
        timers, as Kafka's loader gives them."""
        for group_id, group in load_groups(records).items():
            self.groups[group_id] = group
            for member in group.members.values():
                self._arm_timers(group, member)
