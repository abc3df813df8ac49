"""The KIP-848 consumer groups of one cluster: heartbeats, assignment, timers, records.

:class:`ConsumerGroups` is owned by :class:`~kproto.broker.groups.GroupCoordinator`
(``coordinator.consumer``) and follows Kafka's ``GroupMetadataManager``
(``consumerGroupHeartbeat`` and its helpers):

1. validate the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR,
   INVALID_REGULAR_EXPRESSION);
2. find or create the group (epoch 0 only; a classic group is converted: an empty
   one always, a non-empty one as ``group.consumer.migration.policy`` allows,
   :func:`.consumer_migration.upgrade`) and the member (epoch 0 joins, a static
   member replaces its departed predecessor; otherwise UNKNOWN_MEMBER_ID and
   FENCED_MEMBER_EPOCH as ``throwIfMemberEpochIsInvalid``);
3. bump the group epoch when the member is new, its subscription or assignor changed,
   or the subscribed topics' metadata changed (new topic matching a regex, new
   partitions); recompute the target assignment when the group epoch passed the
   assignment epoch;
4. reconcile the member towards its target (:func:`.modern.reconcile`), append the
   changed records to ``__consumer_offsets`` and (re)arm the session timer and,
   while the member must revoke, the rebalance timer.

Classic-protocol members of a consumer group (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup) are served by :class:`.consumer_classic.ClassicMembers` (``classic``);
when the last consumer-protocol member leaves or is fenced, a group of classic
members is converted back (:func:`.consumer_migration.maybe_downgrade`).

What streams groups do alike (the append, group creation and conversion, epoch
checks, fencing, timers, offset validation, deletion) is in
:class:`.modern_coordinator.ModernGroups`.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Iterable, Mapping

import attrs

from kproto.broker.errors import ApiError
from kproto.errors import ErrorCode

from .assignors import ASSIGNORS, Assignment, MemberSpec
from .consumer_classic import ClassicMembers
from .consumer_group import ConsumerGroup, ConsumerGroupMember, compile_regex
from .consumer_loader import load_groups
from .consumer_migration import MigrationPolicy, maybe_downgrade, upgrade
from .consumer_records import (
    CONSUMER_RECORDS,
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    partition_metadata_record,
    target_member_record,
    target_metadata_record,
)
from .group_store import GroupStore
from .membership import Membership
from .modern import LEAVE_GROUP_STATIC_MEMBER_EPOCH, ModernGroupMember
from .modern_coordinator import (
    DEFAULT_HEARTBEAT_INTERVAL_MS,
    DEFAULT_SESSION_TIMEOUT_MS,
    ModernGroups,
)
from .records import CoordinatorRecord, Pair

__all__ = ["ConsumerGroups", "HeartbeatRequest", "HeartbeatResult"]


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


class ConsumerGroups(ModernGroups[ConsumerGroup, HeartbeatResult]):
    """Every consumer group of a cluster, driven by ConsumerGroupHeartbeat.

    Options (ms): ``session_timeout_ms`` (``group.consumer.session.timeout.ms``),
    ``heartbeat_interval_ms`` (``group.consumer.heartbeat.interval.ms``),
    ``assignors`` (``group.consumer.assignors``, the first is the default),
    ``migration_policy`` (``group.consumer.migration.policy``: ``disabled``,
    ``upgrade``, ``downgrade`` or ``bidirectional``, the default).
    """

    GROUP_TYPE = "consumer"
    ASSIGNMENT_UNIT = "partitions"
    RECORDS = CONSUMER_RECORDS

    def __init__(
        self,
        store: GroupStore,
        membership: Membership,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
        assignors: Iterable[str] = DEFAULT_ASSIGNORS,
        migration_policy: str | MigrationPolicy = MigrationPolicy.BIDIRECTIONAL,
    ) -> None:
        super().__init__(
            store,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
        )
        self.assignors = tuple(assignors)
        unknown = [a for a in self.assignors if a not in ASSIGNORS]
        if unknown or not self.assignors:
            raise ValueError(
                f"group.consumer.assignors must name some of {sorted(ASSIGNORS)},"
                f" got {list(self.assignors)}"
            )
        self.migration_policy = MigrationPolicy.parse(migration_policy)
        #: the classic groups' membership protocol (a downgraded group rejoins it)
        self.membership = membership
        #: classic-protocol members of consumer groups
        self.classic = ClassicMembers(self)
        #: target assignments a test set, used instead of the assignor:
        #: group id -> member id -> topic name -> partitions
        self.target_overrides: dict[str, dict[str, dict[str, frozenset[int]]]] = {}
        #: groups whose next heartbeat bumps the group epoch (a new target)
        self._retarget: set[str] = set()

    def set_target_assignment(
        self, group_id: str, target: Mapping[str, Mapping[str, Iterable[int]]] | None
    ) -> None:
        """Use ``target`` (``{member_id: {topic: partitions}}``; members not named
        get nothing) as the group's target assignment instead of the assignor's,
        from the next heartbeat of any member on, which bumps the group epoch so
        that every member reconciles towards it (librdkafka's mock
        ``rd_kafka_mock_cgrp_consumer_target_assignment``); ``None``: back to the
        assignor."""
        if target is None:
            self.target_overrides.pop(group_id, None)
        else:
            self.target_overrides[group_id] = {
                member: {topic: frozenset(parts) for topic, parts in topics.items()}
                for member, topics in target.items()
            }
        self._retarget.add(group_id)

    # -- heartbeat -------------------------------------------------------------------

    async def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        """Serve one ConsumerGroupHeartbeat (see the module docstring)."""
        classic = self.store.classic.get(request.group_id)
        if (
            request.member_epoch == 0
            and request.group_id not in self.groups
            and classic is not None
            and classic.members
        ):
            # the upgrade is appended on its own, whatever the join's fate
            records: list[Pair] = []
            try:
                self._validate(request)
                upgrade(self, classic, records)
                self.store.append(request.group_id, records)
            except ApiError as error:  # CoordinatorWriteError too
                return self._error_result(request, error.error_code, error.message)
        return await self._serve(
            request, lambda records: self._heartbeat(request, records)
        )

    def _error_result(
        self, request: HeartbeatRequest, code: ErrorCode, message: str
    ) -> HeartbeatResult:
        return HeartbeatResult(code, message, request.member_id or None)

    def _new_group(self, group_id: str) -> ConsumerGroup:
        return ConsumerGroup(group_id)

    def _validate(self, r: HeartbeatRequest) -> None:
        invalid = self._invalid
        self._validate_common(r)
        if r.member_epoch == 0:
            if r.owned is None or r.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if r.subscribed_topic_names is None and r.subscribed_topic_regex is None:
                raise invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in"
                    " first request."
                )
        elif r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if r.instance_id is None:
                raise invalid("InstanceId can't be null.")
        if (r.member_epoch != 0 or r.api_version >= 1) and not r.member_id:
            # v1+ members generate their own id (KIP-1082); v0 joins get one
            raise invalid("MemberId can't be empty.")
        if r.subscribed_topic_regex is not None:
            try:
                compile_regex(r.subscribed_topic_regex)
            except ValueError as exc:
                raise ApiError(
                    ErrorCode.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex {r.subscribed_topic_regex!r} is not a"
                    f" valid regular expression: {exc}.",
                ) from None
        if r.server_assignor is not None and r.server_assignor not in self.assignors:
            raise ApiError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {r.server_assignor} is not supported. Supported"
                f" assignors: {', '.join(self.assignors)}.",
            )

    def _heartbeat(self, r: HeartbeatRequest, records: list[Pair]) -> HeartbeatResult:
        if r.member_epoch == 0:
            group = self._group_for_join(r.group_id, records)
        else:
            group = self._group(r.group_id)
        bump = False
        member_id = r.member_id or str(uuid.uuid4())
        existing = group.members.get(member_id)
        if existing is not None and existing.uses_classic_protocol:
            raise ApiError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} uses the classic protocol in group"
                f" {group.group_id}.",
            )
        if r.member_epoch == 0:
            member, bump = self._join(
                group, member_id, group.members.get(member_id), r, records
            )
        else:
            member = self._member(group, member_id)
            self._check_epoch(member, r.member_epoch, r.owned)
        if self._update_member(member, r):
            bump = True
            records.append(member_metadata_record(group.group_id, member_id, member))
        if self.refresh_metadata(group, records):
            bump = True
        if group.group_id in self._retarget:
            self._retarget.discard(group.group_id)
            bump = True
        if bump:
            group.group_epoch += 1
            records.append(group_epoch_record(group.group_id, group.group_epoch))
        if group.group_epoch > group.assignment_epoch:
            self.assign(group, records)
        changed = group.reconcile_member(member, r.owned)
        if changed or r.member_epoch == 0:
            records.append(current_assignment_record(group.group_id, member_id, member))
        self._arm_timers(group, member)
        full = r.member_epoch == 0 or r.owned is not None
        return HeartbeatResult(
            ErrorCode.NONE,
            None,
            member_id,
            member.member_epoch,
            self.heartbeat_interval(group.group_id),
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
            if previous.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise ApiError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {previous_id} with instance id {r.instance_id}"
                    " is not released yet.",
                )
            # KIP-848 static membership: the new member id takes over the departed
            # member's assignment and epoch without a rebalance
            group.members.pop(previous.member_id)
            previous.cancel_timers()
            target = group.target.pop(previous.member_id, {})
            records += self.RECORDS.member_tombstones(
                group.group_id, previous.member_id
            )
            previous.member_id = member_id
            previous.member_epoch = previous.previous_member_epoch
            group.add_member(previous)
            group.target[member_id] = target
            records.append(member_metadata_record(group.group_id, member_id, previous))
            records.append(target_member_record(group.group_id, member_id, target))
            return previous, False
        if member is not None:
            group.rejoin(member)
            return member, False
        member = ConsumerGroupMember(member_id, instance_id=r.instance_id)
        group.add_member(member)
        return member, True

    def _update_member(self, member: ConsumerGroupMember, r: HeartbeatRequest) -> bool:
        """Apply the request's non-null fields; True if the subscription changed."""
        before = (
            member.subscribed_topic_names,
            member.subscribed_topic_regex,
            member.server_assignor,
        )
        member.update_from(r, r.client_id, r.client_host)
        if r.subscribed_topic_names is not None:
            member.subscribed_topic_names = tuple(r.subscribed_topic_names)
        if r.subscribed_topic_regex is not None:
            member.subscribed_topic_regex = r.subscribed_topic_regex or None
        if r.server_assignor is not None:
            member.server_assignor = r.server_assignor
        after = (
            member.subscribed_topic_names,
            member.subscribed_topic_regex,
            member.server_assignor,
        )
        return before != after or member.member_epoch == 0

    # -- metadata and assignment -----------------------------------------------------

    def subscribed_metadata(
        self, group: ConsumerGroup
    ) -> dict[str, tuple[uuid.UUID, int]]:
        """``{topic: (topic_id, partitions)}`` of the existing topics some member
        subscribes to; regexes do not match internal topics."""
        out: dict[str, tuple[uuid.UUID, int]] = {}
        for name, info in self.store.state.topics.items():
            if any(m.subscribes(name, info.internal) for m in group.members.values()):
                out[name] = (info.topic_id, info.partitions)
        return out

    def refresh_metadata(self, group: ConsumerGroup, records: list[Pair]) -> bool:
        """Update the group's subscription metadata; True (record added) if changed."""
        current = self.subscribed_metadata(group)
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

    def assign(self, group: ConsumerGroup, records: list[Pair]) -> None:
        """Compute the target assignment at the group epoch (Kafka's
        ``TargetAssignmentBuilder``); records for the members whose target changed."""
        ids = {name: tid for name, (tid, _) in group.subscription_metadata.items()}
        counts = {tid: n for tid, n in group.subscription_metadata.values()}
        topics = self.store.state.topics
        internal = {t for t in ids if t in topics and topics[t].internal}
        specs = {
            member_id: MemberSpec(
                frozenset(ids[t] for t in ids if m.subscribes(t, t in internal)),
                group.target.get(member_id, {}),
            )
            for member_id, m in group.members.items()
        }
        group.preferred_assignor = self._assignor(group)
        override = self.target_overrides.get(group.group_id)
        if override is None:
            new = ASSIGNORS[group.preferred_assignor](specs, counts)
        else:
            new = {
                member_id: {
                    topics[t].topic_id: parts
                    for t, parts in override.get(member_id, {}).items()
                    if t in topics
                }
                for member_id in group.members
            }
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
        group = self._group(r.group_id)
        member_id = r.member_id
        if r.instance_id is not None:
            member_id = group.static_members.get(r.instance_id, member_id)
        member = self._member(group, member_id)
        if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # the static member keeps its assignment until its session expires
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            records.append(current_assignment_record(group.group_id, member_id, member))
            self._arm_timers(group, member)
        else:
            self.remove_member(group, member, records)
        return HeartbeatResult(
            ErrorCode.NONE, None, r.member_id, r.member_epoch, 0, None
        )

    def remove_member(
        self,
        group: ConsumerGroup,
        member: ModernGroupMember[uuid.UUID],
        records: list[Pair],
    ) -> None:
        """Remove ``member`` and bump the group epoch; a group left with classic
        members only is converted back when the policy allows
        (:func:`.consumer_migration.maybe_downgrade`)."""
        super().remove_member(group, member, records)
        maybe_downgrade(self, group, records)

    def is_member(self, group_id: str, member_id: str) -> bool:
        """Whether ``member_id`` is a consumer-protocol member of ``group_id`` (its
        classic members commit offsets with any OffsetCommit version)."""
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        return member is not None and not member.uses_classic_protocol

    def _epoch_records(self, group: ConsumerGroup) -> list[Pair]:
        """A removed member's subscription may change the subscribed topics' metadata;
        then the new group epoch."""
        records: list[Pair] = []
        self.refresh_metadata(group, records)
        records.append(group_epoch_record(group.group_id, group.group_epoch))
        return records

    def group_tombstones(self, group: ConsumerGroup) -> list[Pair]:
        """Tombstones of an (empty) group's consumer records (Kafka's
        ``ConsumerGroup.createGroupTombstoneRecords``)."""
        return [
            target_metadata_record(group.group_id, None),
            partition_metadata_record(group.group_id, None),
            group_epoch_record(group.group_id, None),
        ]

    def topic_names(self) -> dict[uuid.UUID, str]:
        return {info.topic_id: name for name, info in self.store.state.topics.items()}

    def _load_groups(
        self, records: Mapping[tuple[str, str, str], CoordinatorRecord]
    ) -> dict[str, ConsumerGroup]:
        return load_groups(records)
