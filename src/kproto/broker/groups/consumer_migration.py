"""The online upgrade and downgrade between classic and KIP-848 consumer groups.

Follows Kafka's ``GroupMetadataManager`` (``convertToConsumerGroup``,
``convertToClassicGroup``, ``validateOnlineUpgrade``,
``validateOnlineDowngradeWithFencedMembers``), ``ConsumerGroup.fromClassicGroup`` and
``ClassicGroup.fromConsumerGroup`` (KIP-848 "Upgrade & Downgrade"):
:class:`MigrationPolicy` is Kafka's ``group.consumer.migration.policy``
(``bidirectional`` by default, as Kafka 4). With ``upgrade`` or ``bidirectional`` a
consumer-protocol member joining a non-empty classic group (protocol type
``consumer``) converts it (:func:`upgrade`): each classic member becomes a member of
the consumer group at the group's generation, keeping its assignment. With
``downgrade`` or ``bidirectional``, a consumer group whose last consumer-protocol
member leaves or is fenced while classic members remain becomes a classic group
again (:func:`maybe_downgrade`) and rebalances. ``disabled`` keeps both conversions
off (GROUP_ID_NOT_FOUND / INCONSISTENT_GROUP_PROTOCOL). A conversion is one batch of
the old type's tombstones and the new type's records (an upgrade is appended before
the join that caused it; a downgrade with the records of the leave or fencing).
"""

from __future__ import annotations

import enum
import uuid
from typing import Protocol

from kproto.broker.errors import ApiError
from kproto.errors import ErrorCode
from kproto.serial import DecodeError

from .consumer_classic import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicMembers,
    ConsumerGroupOwner,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from .consumer_group import ConsumerGroup, ConsumerGroupMember
from .consumer_records import CONSUMER_RECORDS, group_records
from .group import ClassicGroup, GroupState, JoinResult, Member, SyncResult
from .membership import Membership
from .records import Pair, group_metadata_record

__all__ = ["ConsumerGroupsView", "MigrationPolicy", "maybe_downgrade", "upgrade"]


class MigrationPolicy(enum.Enum):
    """Kafka's ``ConsumerGroupMigrationPolicy`` (``group.consumer.migration.policy``)."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @classmethod
    def parse(cls, name: str | MigrationPolicy) -> MigrationPolicy:
        """The policy named ``name`` (case-insensitive).

        Raises:
            ValueError: not one of the four names."""
        if isinstance(name, MigrationPolicy):
            return name
        try:
            return cls(name.lower())
        except ValueError:
            raise ValueError(
                f"group.consumer.migration.policy must be one of"
                f" {[p.value for p in cls]}, got {name!r}"
            ) from None

    @property
    def upgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)


class ConsumerGroupsView(ConsumerGroupOwner, Protocol):
    """What the conversions use of the consumer groups
    (:class:`.consumer_coordinator.ConsumerGroups`)."""

    groups: dict[str, ConsumerGroup]
    classic: ClassicMembers
    membership: Membership
    migration_policy: MigrationPolicy

    def subscribed_metadata(
        self, group: ConsumerGroup
    ) -> dict[str, tuple[uuid.UUID, int]]: ...

    def group_tombstones(self, group: ConsumerGroup) -> list[Pair]: ...


def upgrade(
    consumer: ConsumerGroupsView, classic: ClassicGroup, records: list[Pair]
) -> ConsumerGroup:
    """The consumer group made of the non-empty classic group ``classic`` (Kafka's
    ``ConsumerGroup.fromClassicGroup`` and ``convertToConsumerGroup``): its
    members at the generation as member and group epoch, their assignments as
    current and target assignment, its offsets. Adds the classic tombstone and the
    consumer group's records; the classic group's pending JoinGroup/SyncGroup
    answers REBALANCE_IN_PROGRESS.

    Raises:
        ApiError: GROUP_ID_NOT_FOUND when the policy forbids the upgrade or the
            group's protocol type is not ``consumer`` or a member's subscription or
            assignment does not decode."""
    store = consumer.store
    gid = classic.group_id

    def refuse(why: str) -> ApiError:
        return ApiError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group {gid} to consumer group: {why}.",
        )

    if not consumer.migration_policy.upgrade_enabled:
        raise refuse(
            f"group.consumer.migration.policy is {consumer.migration_policy.value}"
        )
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise refuse(f"its protocol type is {classic.protocol_type!r}, not 'consumer'")
    topics = store.state.topics
    epoch = classic.generation_id
    group = ConsumerGroup(gid, group_epoch=epoch, assignment_epoch=epoch)
    members = []
    for m in classic.members.values():
        try:
            protocol = classic.protocol_name or m.protocols[0][0]
            subscribed, _, rack = decode_subscription(m.metadata(protocol))
            held = decode_assignment(m.assignment)
        except DecodeError as exc:
            raise refuse(f"member {m.member_id}: {exc}") from None
        member = ConsumerGroupMember(
            m.member_id,
            instance_id=m.group_instance_id,
            rack_id=rack,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            member_epoch=epoch,
            previous_member_epoch=epoch,
            subscribed_topic_names=subscribed,
            classic_protocols=m.protocols,
            classic_session_timeout_ms=m.session_timeout_ms,
        )
        member.assigned = {
            topics[t].topic_id: ps for t, ps in held.items() if t in topics and ps
        }
        group.add_member(member)
        group.target[member.member_id] = dict(member.assigned)
        group.add_partition_epochs(member)
        members.append((m, member))
    group.offsets = classic.offsets
    group.subscription_metadata = consumer.subscribed_metadata(group)
    # the classic group ends: pending answers, timers, its record
    for m, _ in members:
        m.complete_join(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, m.member_id))
        m.complete_sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
    _cancel_timers(classic)
    classic.transition(GroupState.DEAD, store.now_ms())
    del store.classic[gid]
    records.append(group_metadata_record(gid, None))
    records += group_records(group)
    consumer.groups[gid] = group
    for _, member in members:
        consumer.classic.arm(group, member)
    return group


def _cancel_timers(group: ClassicGroup) -> None:
    for handle in (group.join_timer, group.sync_timer, *group.pending_members.values()):
        if handle is not None:
            handle.cancel()
    group.join_timer = group.sync_timer = None
    group.pending_members.clear()
    for member in group.members.values():
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
        member.heartbeat_timer = None


def maybe_downgrade(
    consumer: ConsumerGroupsView, group: ConsumerGroup, records: list[Pair]
) -> bool:
    """Convert ``group`` back to a classic group when members remain and all use the
    classic protocol, and the policy allows it (Kafka's
    ``validateOnlineDowngradeWithFencedMembers``, ``ClassicGroup.fromConsumerGroup``
    and ``convertToClassicGroup``): generation = group epoch, each member's target
    assignment as its classic assignment, then a rebalance. Adds the consumer
    tombstones and the classic ``GroupMetadata`` record; True when converted."""
    if (
        not group.members
        or not consumer.migration_policy.downgrade_enabled
        or not all(m.uses_classic_protocol for m in group.members.values())
    ):
        return False
    store = consumer.store
    gid = group.group_id
    names = consumer.topic_names()
    classic = ClassicGroup(
        gid,
        state=GroupState.STABLE,
        # the members' epoch, not the bump of the leave that ends the consumer group
        generation_id=max(m.member_epoch for m in group.members.values()),
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        state_timestamp_ms=store.now_ms(),
    )
    for m in group.members.values():
        target = group.target.get(m.member_id, m.assigned)
        classic.add(
            Member(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.classic_session_timeout_ms
                or consumer.session_timeout(gid),
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocols=m.classic_protocols or (),
                assignment=encode_assignment(
                    {names[t]: ps for t, ps in target.items() if t in names}
                ),
            )
        )
    classic.protocol_name = classic.select_protocol()
    classic.offsets = group.offsets
    for m in list(group.members.values()):
        m.cancel_timers()
        records += CONSUMER_RECORDS.member_tombstones(gid, m.member_id)
    records += consumer.group_tombstones(group)
    records.append(group_metadata_record(gid, classic.metadata_value()))
    group.dead = True
    del consumer.groups[gid]
    store.classic[gid] = classic
    membership = consumer.membership
    for member in classic.members.values():
        membership.schedule_heartbeat(classic, member)
    membership.prepare_rebalance(classic, "downgraded from a consumer group")
    return True
