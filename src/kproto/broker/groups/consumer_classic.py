"""Classic-protocol members inside a KIP-848 consumer group.

Follows Kafka's ``GroupMetadataManager`` (``classicGroupJoinToConsumerGroup``,
``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup``,
``classicGroupLeaveToConsumerGroup``) and ``ConsumerGroupMember.classicMemberMetadata``
(KIP-848 "Upgrade & Downgrade"; the conversions are in :mod:`.consumer_migration`):
:class:`ClassicMembers` serves JoinGroup, SyncGroup, Heartbeat and LeaveGroup of
classic members of a consumer group. Their partitions come from the group's server
assignor; JoinGroup answers the member epoch as generation (no leader, no member
list), SyncGroup the member's partitions as a ``ConsumerProtocolAssignment``, and
Heartbeat/SyncGroup REBALANCE_IN_PROGRESS once the group epoch passed the member's
(Kafka's ``throwIfRebalanceInProgress``), so the member rejoins; one that does not
rejoin within its rebalance timeout is fenced. Beyond Kafka, a member waiting for
partitions another member still holds (UNRELEASED_PARTITIONS) is also told to rejoin
once they are free, as a classic member has no other way to learn of them.
"""

from __future__ import annotations

import io
import uuid
from typing import Any, Protocol

from kproto.broker.errors import ApiError
from kproto.errors import ErrorCode
from kproto.index import data_type
from kproto.serial import DecodeError, encode, entity_reader

from .assignors import Assignment
from .consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState
from .consumer_records import (
    CONSUMER_RECORDS,
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    target_member_record,
)
from .group import JoinResult, SyncResult
from .group_store import GroupStore
from .records import Pair
from .timers import arm_member_timers

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "ClassicMembers",
    "ConsumerGroupOwner",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
]

#: The classic protocol type of consumers (Kafka's ``ConsumerProtocol.PROTOCOL_TYPE``).
CONSUMER_PROTOCOL_TYPE = "consumer"


# -- ConsumerProtocol bytes ------------------------------------------------------------


def _read(name: str, data: bytes) -> Any:
    """An int16 version then the entity ``name`` (newer versions read as the newest,
    as Kafka's ``ConsumerProtocol``). Raises DecodeError."""
    if len(data) < 2:
        raise DecodeError(f"{name} of {len(data)} bytes has no version")
    version = int.from_bytes(data[:2], "big", signed=True)
    try:
        cls = data_type(name, min(max(version, 0), 3))
    except LookupError as exc:
        raise DecodeError(f"{name} version {version}: {exc}") from None
    stream = io.BytesIO(data)
    stream.seek(2)
    try:
        return entity_reader(cls)(stream)
    except (ValueError, EOFError) as exc:
        raise DecodeError(f"{name}: {exc}") from None


def decode_subscription(
    data: bytes,
) -> tuple[tuple[str, ...], dict[str, frozenset[int]], str | None]:
    """``(topics, owned partitions by topic name, rack id)`` of a
    ``ConsumerProtocolSubscription`` (v0-v3). Raises DecodeError."""
    sub = _read("ConsumerProtocolSubscription", data)
    owned: dict[str, frozenset[int]] = {}
    for tp in getattr(sub, "owned_partitions", ()) or ():
        owned[tp.topic] = owned.get(tp.topic, frozenset()) | frozenset(tp.partitions)
    return tuple(sub.topics), owned, getattr(sub, "rack_id", None)


def decode_assignment(data: bytes) -> dict[str, frozenset[int]]:
    """The partitions by topic name of a ``ConsumerProtocolAssignment`` (empty for no
    bytes). Raises DecodeError."""
    if not data:
        return {}
    out: dict[str, frozenset[int]] = {}
    for tp in _read("ConsumerProtocolAssignment", data).assigned_partitions:
        out[tp.topic] = out.get(tp.topic, frozenset()) | frozenset(tp.partitions)
    return out


def encode_assignment(partitions: dict[str, frozenset[int]]) -> bytes:
    """A ``ConsumerProtocolAssignment`` v0 (int16 version prefix) of ``partitions``."""
    cls = data_type("ConsumerProtocolAssignment", 0)
    module = __import__(cls.__module__, fromlist=["TopicPartition"])
    entity = cls(
        assigned_partitions=tuple(
            module.TopicPartition(topic=t, partitions=tuple(sorted(ps)))
            for t, ps in sorted(partitions.items())
            if ps
        ),
        user_data=None,
    )
    return b"\x00\x00" + encode(entity)


# -- classic members of a consumer group -----------------------------------------------


class ConsumerGroupOwner(Protocol):
    """What :class:`ClassicMembers` uses of the consumer groups that hold it
    (:class:`.consumer_coordinator.ConsumerGroups`)."""

    store: GroupStore

    def topic_names(self) -> dict[uuid.UUID, str]: ...

    def session_timeout(self, group_id: str) -> int: ...

    def expire(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        why: str,
        epoch: int | None,
    ) -> None: ...

    def refresh_metadata(self, group: ConsumerGroup, records: list[Pair]) -> bool: ...

    def assign(self, group: ConsumerGroup, records: list[Pair]) -> None: ...

    def remove_member(
        self, group: ConsumerGroup, member: ConsumerGroupMember, records: list[Pair]
    ) -> None: ...


class ClassicMembers:
    """JoinGroup/SyncGroup/Heartbeat/LeaveGroup of classic members of the consumer
    groups of ``consumer`` (see the module docstring)."""

    def __init__(self, consumer: ConsumerGroupOwner) -> None:
        self.consumer = consumer

    def _names(self) -> dict[uuid.UUID, str]:
        return self.consumer.topic_names()

    def _by_name(self, assignment: Assignment) -> dict[str, frozenset[int]]:
        names = self._names()
        return {names[t]: ps for t, ps in assignment.items() if t in names}

    def _by_id(self, partitions: dict[str, frozenset[int]]) -> Assignment:
        topics = self.consumer.store.state.topics
        return {
            topics[t].topic_id: ps for t, ps in partitions.items() if t in topics and ps
        }

    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerGroupMember:
        """Kafka's ``validateConsumerGroupMember`` plus
        ``throwIfMemberDoesNotUseClassicProtocol``."""
        member = group.members.get(member_id)
        if member is None or not member.uses_classic_protocol:
            if instance_id is not None and instance_id in group.static_members:
                raise ApiError(ErrorCode.FENCED_INSTANCE_ID, "")
            raise ApiError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a classic member of group"
                f" {group.group_id}.",
            )
        if instance_id is not None and member.instance_id != instance_id:
            raise ApiError(ErrorCode.FENCED_INSTANCE_ID, "")
        return member

    def _check_rebalance(
        self, group: ConsumerGroup, member: ConsumerGroupMember
    ) -> None:
        """Kafka's ``throwIfRebalanceInProgress``, plus: partitions the member waits for
        are free now."""
        behind = group.group_epoch > member.member_epoch
        if (behind and member.state != MemberState.UNREVOKED_PARTITIONS) or (
            member.state == MemberState.UNRELEASED_PARTITIONS
            and self._released(group, member)
        ):
            self._arm_join_timeout(group, member)
            raise ApiError(
                ErrorCode.REBALANCE_IN_PROGRESS,
                f"A new rebalance is triggered in group {group.group_id} and member"
                f" {member.member_id} should rejoin to catch up.",
            )

    def _arm_join_timeout(
        self, group: ConsumerGroup, member: ConsumerGroupMember
    ) -> None:
        """Kafka's ``scheduleConsumerGroupJoinTimeoutIfAbsent``: a member that does
        not rejoin within its rebalance timeout is fenced."""
        if member.join_timer is not None:
            return
        epoch = member.member_epoch

        def expired() -> None:
            member.join_timer = None
            if (
                member.member_epoch == epoch
                and group.members.get(member.member_id) is member
            ):
                self.consumer.expire(group, member, "join timeout", None)

        member.join_timer = self.consumer.store.scheduler.call_later(
            member.rebalance_timeout_ms, expired
        )

    @staticmethod
    def _released(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
        for topic_id, parts in group.target.get(member.member_id, {}).items():
            have = member.assigned.get(topic_id, frozenset())
            for p in parts - have:
                if (topic_id, p) not in group.partition_epochs:
                    return True
        return False

    def arm(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """(Re)arm the session and rebalance timers of a classic member."""
        consumer = self.consumer
        arm_member_timers(
            consumer.store.scheduler,
            member,
            member.classic_session_timeout_ms
            or consumer.session_timeout(group.group_id),
            member.revoking,
            lambda why, epoch: consumer.expire(group, member, why, epoch),
        )

    async def join(
        self,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str | None,
        protocol_type: str,
        protocols: tuple[tuple[str, bytes], ...],
        *,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str = "",
        client_host: str = "",
        require_known_member_id: bool = False,
    ) -> JoinResult:
        """JoinGroup of a classic member to a non-empty consumer group (Kafka's
        ``classicGroupJoinToConsumerGroup``). Errors: INCONSISTENT_GROUP_PROTOCOL (not
        protocol type ``consumer``, no protocol the classic members share, a
        subscription that does not decode), MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID (a
        consumer-protocol member's id), the writer's error when the append failed."""
        unknown = not member_id
        if unknown:
            member_id = str(uuid.uuid4())
        names = {name for name, _ in protocols}
        common = _common_protocols(group)
        if (
            protocol_type != CONSUMER_PROTOCOL_TYPE
            or not protocols
            or (common is not None and not names & common)
        ):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        try:
            topics, owned, rack_id = decode_subscription(protocols[0][1])
        except DecodeError:
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if unknown and require_known_member_id and instance_id is None:
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        existing = group.members.get(member_id)
        if existing is not None and not existing.uses_classic_protocol:
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        records: list[Pair] = []
        consumer = self.consumer
        gid = group.group_id
        previous_id = group.static_members.get(instance_id or "")
        if previous_id is not None and previous_id != member_id:
            # KIP-345: a restarted static member takes its predecessor's place,
            # epoch and partitions, without a rebalance
            previous = group.members.pop(previous_id)
            previous.cancel_timers()
            target = group.target.pop(previous_id, {})
            records += CONSUMER_RECORDS.member_tombstones(gid, previous_id)
            previous.member_id = member_id
            group.add_member(previous)
            group.target[member_id] = target
            records.append(target_member_record(gid, member_id, target))
        bump = False
        member = group.members.get(member_id)
        if member is None:
            member = ConsumerGroupMember(member_id, instance_id=instance_id)
            group.add_member(member)
            bump = True
        before = (member.subscribed_topic_names, member.subscribed_topic_regex)
        member.subscribed_topic_names = topics
        member.subscribed_topic_regex = None
        member.server_assignor = None
        member.rack_id = rack_id or member.rack_id
        member.instance_id = instance_id
        # JoinGroup v0 has no rebalance timeout: the session timeout, as Kafka
        member.rebalance_timeout_ms = (
            rebalance_timeout_ms if rebalance_timeout_ms >= 0 else session_timeout_ms
        )
        member.client_id, member.client_host = client_id, client_host
        member.classic_protocols = protocols
        member.classic_session_timeout_ms = session_timeout_ms
        bump = bump or before != (topics, None)
        records.append(member_metadata_record(gid, member_id, member))
        if consumer.refresh_metadata(group, records):
            bump = True
        if bump:
            group.group_epoch += 1
            records.append(group_epoch_record(gid, group.group_epoch))
        if group.group_epoch > group.assignment_epoch:
            consumer.assign(group, records)
        if member.join_timer is not None:
            member.join_timer.cancel()
            member.join_timer = None
        group.reconcile_member(member, self._by_id(owned))
        records.append(current_assignment_record(gid, member_id, member))
        try:
            consumer.store.append(gid, records)
        except ApiError as err:  # CoordinatorWriteError
            return JoinResult(err.error_code, member_id)
        self.arm(group, member)
        return JoinResult(
            ErrorCode.NONE,
            member_id,
            generation_id=member.member_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=protocols[0][0],
        )

    def sync(
        self,
        group: ConsumerGroup,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> SyncResult:
        """SyncGroup of a classic member (Kafka's ``classicGroupSyncToConsumerGroup``):
        its assigned partitions as a ``ConsumerProtocolAssignment``. Errors:
        UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
        INCONSISTENT_GROUP_PROTOCOL, REBALANCE_IN_PROGRESS."""
        try:
            member = self._classic_member(group, member_id, instance_id)
            if generation_id != member.member_epoch:
                return SyncResult(ErrorCode.ILLEGAL_GENERATION)
            name = (member.classic_protocols or (("", b""),))[0][0]
            if (
                protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE
            ) or (protocol_name is not None and protocol_name != name):
                return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            self._check_rebalance(group, member)
        except ApiError as error:
            return SyncResult(error.error_code)
        self.arm(group, member)
        assignment = encode_assignment(self._by_name(member.assigned))
        return SyncResult(ErrorCode.NONE, assignment, CONSUMER_PROTOCOL_TYPE, name)

    def heartbeat(
        self,
        group: ConsumerGroup,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
    ) -> int:
        """Heartbeat of a classic member (Kafka's
        ``classicGroupHeartbeatToConsumerGroup``): NONE, REBALANCE_IN_PROGRESS,
        UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION."""
        try:
            member = self._classic_member(group, member_id, instance_id)
            if generation_id != member.member_epoch:
                return ErrorCode.ILLEGAL_GENERATION
            self.arm(group, member)
            self._check_rebalance(group, member)
        except ApiError as error:
            return error.error_code
        return ErrorCode.NONE

    async def leave(
        self, group: ConsumerGroup, members: list[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """LeaveGroup from a consumer group (Kafka's
        ``classicGroupLeaveToConsumerGroup``): each named classic member is removed
        (the group epoch bumps); per member UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID.
        The top-level error is the writer's when the append fails."""
        records: list[Pair] = []
        errors: list[int] = []
        for member_id, instance_id in members:
            if instance_id is not None:
                current = group.static_members.get(instance_id)
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != current:
                    errors.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                member_id = current
            member = group.members.get(member_id)
            if member is None or not member.uses_classic_protocol:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            errors.append(ErrorCode.NONE)
            self.consumer.remove_member(group, member, records)
        if records:
            try:
                self.consumer.store.append(group.group_id, records)
            except ApiError as err:  # CoordinatorWriteError
                return err.error_code, []
        return ErrorCode.NONE, errors


def _common_protocols(group: ConsumerGroup) -> set[str] | None:
    """The protocol names every classic member supports (None: no classic member;
    Kafka's ``ConsumerGroup.supportsClassicProtocols``)."""
    common: set[str] | None = None
    for m in group.members.values():
        if m.classic_protocols is not None:
            names = {name for name, _ in m.classic_protocols}
            common = names if common is None else common & names
    return common
