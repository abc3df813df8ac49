"""What the KIP-848 consumer and KIP-1071 streams group coordinators share.

:class:`ModernGroups` is the base of
:class:`~kproto.broker.groups.consumer_coordinator.ConsumerGroups` and
:class:`~kproto.broker.groups.streams_coordinator.StreamsGroups`; it follows the
parts of Kafka's ``GroupMetadataManager`` that ``consumerGroupHeartbeat`` and
``streamsGroupHeartbeat`` have alike:

- a heartbeat is validated and applied in memory, then its records are appended to
  ``__consumer_offsets``; a refusal answers its error code, a failed append the
  writer's (:class:`kproto.broker.coordinator_runtime.CoordinatorWriteError`:
  NOT_COORDINATOR for a storage error; Kafka would roll the in-memory state back);
- a group is created by a member joining with epoch 0; an empty classic group of
  the same id is converted, its offsets carried over and its classic record
  tombstoned (``maybeDeleteEmptyClassicGroup``); a group of another type answers
  GROUP_ID_NOT_FOUND (a consumer group upgrades a classic group with members first
  when its migration policy allows: :func:`.consumer_migration.upgrade`);
- a member's epoch is checked as ``throwIfMemberEpochIsInvalid``: FENCED_MEMBER_EPOCH
  unless it is the current one, or the previous one with nothing more than it holds;
- each member has a session timer and, while it owes a revocation, a rebalance
  timer (:func:`.timers.arm_member_timers`); either one firing fences the member:
  it is removed and the group epoch bumped;
- the session timeout and heartbeat interval of a group are its GROUP configs
  ``<type>.session.timeout.ms`` / ``<type>.heartbeat.interval.ms`` when set
  (``ClusterState.group_config``), else the coordinator's.

A subclass names its group type (``GROUP_TYPE``, ``ASSIGNMENT_UNIT``), its records
(``RECORDS``), and writes its own requests, results and group-level records.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from kproto.broker.coordinator_runtime import CoordinatorWriteError
from kproto.broker.errors import ApiError
from kproto.errors import ErrorCode

from .group_store import GroupStore
from .modern import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ModernGroup,
    ModernGroupMember,
)
from .records import (
    CoordinatorRecord,
    ModernRecords,
    Pair,
    group_metadata_record,
    offset_commit_record,
)
from .timers import arm_member_timers

__all__ = ["ModernGroups"]

log = logging.getLogger("kproto.broker.groups")
G = TypeVar("G", bound="ModernGroup[Any, Any]")
#: Kafka's ``group.consumer.session.timeout.ms`` and ``group.streams.session.timeout.ms``.
DEFAULT_SESSION_TIMEOUT_MS = 45_000
#: Kafka's ``group.consumer.heartbeat.interval.ms`` / ``group.streams.heartbeat.interval.ms``.
DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000
R = TypeVar("R")


class ModernGroups(ABC, Generic[G, R]):
    """Every group of one modern type (``G``) in a cluster; ``R`` is its heartbeat
    result. Options (ms): ``session_timeout_ms`` and ``heartbeat_interval_ms``,
    the broker's ``group.<type>.session.timeout.ms`` and
    ``group.<type>.heartbeat.interval.ms``."""

    #: ``consumer`` or ``streams``: the group type of ListGroups and of the configs.
    GROUP_TYPE: ClassVar[str]
    #: What a member holds, for the fencing message: ``partitions`` or ``tasks``.
    ASSIGNMENT_UNIT: ClassVar[str]
    RECORDS: ClassVar[ModernRecords]

    def __init__(
        self,
        store: GroupStore,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
    ) -> None:
        self.store = store
        self.groups: dict[str, G] = {}
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        store.register(self)

    # -- what a group type writes itself ---------------------------------------------

    @abstractmethod
    def _new_group(self, group_id: str) -> G: ...

    @abstractmethod
    def _validate(self, request: Any) -> None:
        """Raise ApiError(INVALID_REQUEST...) for a malformed heartbeat."""

    @abstractmethod
    def _leave(self, request: Any, records: list[Pair]) -> R:
        """Serve a leave (member epoch -1 or -2), adding its records."""

    @abstractmethod
    def _error_result(self, request: Any, code: ErrorCode, message: str) -> R: ...

    @abstractmethod
    def _epoch_records(self, group: G) -> list[Pair]:
        """The group-level records after a member was removed and the group epoch
        bumped."""

    @abstractmethod
    def group_tombstones(self, group: G) -> list[Pair]:
        """Tombstones of the group-level records (Kafka's
        ``createGroupTombstoneRecords``)."""

    @abstractmethod
    def _load_groups(
        self, records: Mapping[tuple[str, str, str], CoordinatorRecord]
    ) -> dict[str, G]: ...

    # -- heartbeat -------------------------------------------------------------------

    async def _serve(self, request: Any, heartbeat: Callable[[list[Pair]], R]) -> R:
        """Validate ``request``, leave or ``heartbeat`` (a join or heartbeat with
        member epoch >= 0, adding its records), then append the records."""
        records: list[Pair] = []
        try:
            self._validate(request)
            if request.member_epoch in (
                LEAVE_GROUP_MEMBER_EPOCH,
                LEAVE_GROUP_STATIC_MEMBER_EPOCH,
            ):
                result = self._leave(request, records)
            else:
                result = heartbeat(records)
            if records:
                self.store.append(request.group_id, records)
        except ApiError as error:  # CoordinatorWriteError too
            return self._error_result(request, error.error_code, error.message)
        return result

    @staticmethod
    def _invalid(message: str) -> ApiError:
        return ApiError(ErrorCode.INVALID_REQUEST, message)

    @classmethod
    def _validate_common(cls, r: Any) -> None:
        """The INVALID_REQUEST checks both heartbeats make first (Kafka's
        ``throwIf<Type>GroupHeartbeatRequestIsInvalid``): an empty GroupId,
        InstanceId or RackId, a join (epoch 0) without RebalanceTimeoutMs, a member
        epoch below -2."""
        invalid = cls._invalid
        if not r.group_id:
            raise invalid("GroupId can't be empty.")
        if r.instance_id is not None and not r.instance_id:
            raise invalid("InstanceId can't be empty.")
        if r.rack_id is not None and not r.rack_id:
            raise invalid("RackId can't be empty.")
        if r.member_epoch == 0 and r.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise invalid(f"MemberEpoch is invalid: {r.member_epoch}.")

    def _group(self, group_id: str) -> G:
        """The group, or ApiError(GROUP_ID_NOT_FOUND)."""
        group = self.groups.get(group_id)
        if group is None:
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return group

    def _group_for_join(self, group_id: str, records: list[Pair]) -> G:
        """The group, created for a member joining with epoch 0 (Kafka's
        ``getOrMaybeCreate<Type>Group``)."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        store = self.store
        classic = store.classic.get(group_id)
        other = store.taken_by_other(group_id, self)
        if other or (classic is not None and classic.members):
            raise ApiError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Group {group_id} is not a {self.GROUP_TYPE} group.",
            )
        group = self._new_group(group_id)
        if classic is not None:
            # online upgrade of an empty classic group: its offsets carry over
            group.offsets = classic.offsets
            del store.classic[group_id]
            records.append(group_metadata_record(group_id, None))
        self.groups[group_id] = group
        return group

    @staticmethod
    def _member(group: G, member_id: str) -> Any:
        """The member, or ApiError(UNKNOWN_MEMBER_ID)."""
        member = group.members.get(member_id)
        if member is None:
            raise ApiError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        return member

    def _check_epoch(
        self,
        member: ModernGroupMember[Any],
        epoch: int,
        owned: Mapping[Any, frozenset[int]] | None,
    ) -> None:
        """Kafka's ``throwIfMemberEpochIsInvalid``: a member may be one epoch behind
        only while it reports nothing it no longer holds."""
        if epoch > member.member_epoch or (
            epoch < member.member_epoch
            and (
                epoch != member.previous_member_epoch
                or owned is None
                or any(
                    not parts <= member.assigned.get(key, frozenset())
                    for key, parts in owned.items()
                )
            )
        ):
            raise ApiError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The {self.GROUP_TYPE} group member has a"
                f" {'greater' if epoch > member.member_epoch else 'smaller'} member"
                f" epoch ({epoch}) than the one known by the group coordinator"
                f" ({member.member_epoch}). The member must abandon all its"
                f" {self.ASSIGNMENT_UNIT} and rejoin.",
            )

    def _setting(self, group_id: str, name: str, own: int) -> int:
        """The group's ``<type>.<name>`` config when set, else ``own``."""
        return self.store.group_config(group_id, f"{self.GROUP_TYPE}.{name}", own)

    def session_timeout(self, group_id: str) -> int:
        """The session timeout of ``group_id``'s members (ms)."""
        return self._setting(group_id, "session.timeout.ms", self.session_timeout_ms)

    def heartbeat_interval(self, group_id: str) -> int:
        """The heartbeat interval given to ``group_id``'s members (ms)."""
        return self._setting(
            group_id, "heartbeat.interval.ms", self.heartbeat_interval_ms
        )

    # -- fencing and timers ----------------------------------------------------------

    def remove_member(
        self, group: G, member: ModernGroupMember[Any], records: list[Pair]
    ) -> None:
        """Remove ``member`` (leave, session or rebalance timeout) and bump the group
        epoch (Kafka's ``<type>GroupFenceMember``)."""
        group.remove_member(member.member_id)
        group.group_epoch += 1
        records += self.RECORDS.member_tombstones(group.group_id, member.member_id)
        records += self._epoch_records(group)

    def _arm_timers(self, group: G, member: ModernGroupMember[Any]) -> None:
        arm_member_timers(
            self.store.scheduler,
            member,
            self.session_timeout(group.group_id),
            member.revoking,
            lambda why, epoch: self.expire(group, member, why, epoch),
        )

    def expire(
        self, group: G, member: ModernGroupMember[Any], why: str, epoch: int | None
    ) -> None:
        """A timer fired: fence ``member`` unless it left, or (rebalance timer,
        armed at ``epoch``) it has revoked since."""
        if group.members.get(member.member_id) is not member or group.dead:
            return
        if epoch is not None:
            member.rebalance_timer = None
            if member.member_epoch != epoch or not member.revoking:
                return
        log.info(
            "%s group %s: member %s fenced (%s)",
            self.GROUP_TYPE,
            group.group_id,
            member.member_id,
            why,
        )
        records: list[Pair] = []
        self.remove_member(group, member, records)
        try:
            self.store.append(group.group_id, records)
        except CoordinatorWriteError:
            pass  # logged by the writer; the member is fenced in memory all the same

    async def stop(self) -> None:
        """Cancel every timer."""
        for group in self.groups.values():
            for member in group.members.values():
                member.cancel_timers()

    def load(self, records: Mapping[tuple[str, str, str], CoordinatorRecord]) -> None:
        """Rebuild the groups from the last record of each key; members get fresh
        session timers, as Kafka's loader gives them."""
        for group_id, group in self._load_groups(records).items():
            self.groups[group_id] = group
            for member in group.members.values():
                self._arm_timers(group, member)

    # -- offsets, list, delete -------------------------------------------------------

    def validate_commit(
        self,
        group: G,
        member_epoch: int,
        member_id: str,
        instance_id: str | None = None,
        *,
        transactional: bool = False,
    ) -> int:
        """OffsetCommit (or a ``transactional`` TxnOffsetCommit) to ``group``
        (:meth:`.modern.ModernGroup.validate_offset_commit`); a transactional commit
        at a stale epoch gets ILLEGAL_GENERATION, as Kafka's
        ``OffsetMetadataManager.validateTransactionalOffsetCommit`` answers."""
        error = group.validate_offset_commit(
            member_id, instance_id, member_epoch, transactional=transactional
        )
        if transactional and error == ErrorCode.STALE_MEMBER_EPOCH:
            return ErrorCode.ILLEGAL_GENERATION
        return error

    def validate_fetch(
        self, group_id: str, member_id: str | None, member_epoch: int
    ) -> int:
        """OffsetFetch v9+ from ``group_id`` (NONE when it is not of this type;
        :meth:`.modern.ModernGroup.validate_offset_fetch`)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE
        return group.validate_offset_fetch(member_id, member_epoch)

    def is_member(self, group_id: str, member_id: str) -> bool:
        """Whether ``member_id`` is a member of the group ``group_id``."""
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    def list_groups(
        self, states: set[str], types: set[str]
    ) -> list[tuple[str, str, str, str]]:
        """ListGroups rows ``(group_id, protocol_type, state, group type)``, filtered
        by lower-cased state names and group types."""
        if types and self.GROUP_TYPE not in types:
            return []
        return [
            (group_id, self.GROUP_TYPE, g.state.value, self.GROUP_TYPE)
            for group_id, g in sorted(self.groups.items())
            if not states or g.state.value.lower() in states
        ]

    async def delete_group(self, group_id: str) -> int:
        """DeleteGroups of one of these groups: NON_EMPTY_GROUP while it has
        members; otherwise tombstones for its offsets and records, in one batch."""
        group = self.groups[group_id]
        if not group.is_empty():
            return ErrorCode.NON_EMPTY_GROUP
        pairs = [offset_commit_record(group_id, t, p, None) for t, p in group.offsets]
        pairs += self.group_tombstones(group)
        try:
            self.store.append(group_id, pairs)
        except CoordinatorWriteError as err:
            return err.error_code
        group.dead = True
        del self.groups[group_id]
        return ErrorCode.NONE
