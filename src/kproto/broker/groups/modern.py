"""What KIP-848 consumer groups and KIP-1071 streams groups share: members, epochs,
target assignments and the reconciliation of a member towards its target.

Pure state, no I/O and no timers. Follows Kafka's ``ModernGroup`` and
``ModernGroupMember`` (group-coordinator module, ``modern``), which
``ConsumerGroup``/``ConsumerGroupMember`` extend, and the ``CurrentAssignmentBuilder``
that consumer and streams groups each have with the same rules:

- the *group epoch* is bumped when the membership or what the members ask for
  changes; the *assignment epoch* is the group epoch the target assignment was
  computed at;
- each member has a *member epoch* and converges towards its target through
  :func:`reconcile`: a partition (of a topic, or of a subtopology: a task) goes to
  its new owner only once no other member holds it, and a member that must give
  some up stays at its epoch, *unrevoked*, until its heartbeat no longer reports
  them.

The assignment keys are topic ids for consumer groups and subtopology ids for
streams groups (``K``); :class:`ModernGroup` maps ``(key, partition)`` to the epoch
of the member holding it (Kafka's ``currentPartitionEpoch``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

import attrs

from kproto.errors import ErrorCode

from .group import CommittedOffset
from .timers import TimerHandle

__all__ = [
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "ModernGroup",
    "ModernGroupMember",
    "reconcile",
]

#: The member epoch of a heartbeat that leaves the group (Kafka's
#: ``ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH``).
LEAVE_GROUP_MEMBER_EPOCH = -1
#: The member epoch of a static member leaving for a while (its assignment is
#: kept until its session expires).
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

K = TypeVar("K")
M = TypeVar("M", bound="ModernGroupMember[Any]")
S = TypeVar("S", bound=enum.Enum)


@attrs.define(eq=False)
class ModernGroupMember(Generic[K]):
    """A member of a consumer or streams group (Kafka's ``ModernGroupMember``);
    timeouts in ms.

    ``assigned`` (partitions of topic ids, or tasks of subtopologies) excludes
    ``pending_revocation``: what the member must give up and has not yet
    acknowledged. ``state`` is one of the subclass's member states, whose three
    reconciliation states are named by ``STABLE_STATE``, ``UNREVOKED_STATE`` and
    ``UNRELEASED_STATE``.
    """

    STABLE_STATE: ClassVar[enum.IntEnum]
    UNREVOKED_STATE: ClassVar[enum.IntEnum]
    UNRELEASED_STATE: ClassVar[enum.IntEnum]

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: enum.IntEnum = attrs.field(
        default=attrs.Factory(lambda self: self.STABLE_STATE, takes_self=True)
    )
    assigned: dict[K, frozenset[int]] = attrs.field(factory=dict)
    pending_revocation: dict[K, frozenset[int]] = attrs.field(factory=dict)
    session_timer: TimerHandle | None = None
    rebalance_timer: TimerHandle | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        """Whether the member joined with JoinGroup/SyncGroup (only a consumer
        group's may: :class:`.consumer_group.ConsumerGroupMember`)."""
        return False

    @property
    def revoking(self) -> bool:
        """Whether the member still owes a revocation (its rebalance timer runs)."""
        return self.state == self.UNREVOKED_STATE

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        """Kafka's ``ModernGroupMember.isReconciledTo``: stable at that epoch."""
        return (
            self.state == self.STABLE_STATE
            and self.member_epoch == target_assignment_epoch
        )

    def update_member_epoch(self, epoch: int) -> None:
        """Kafka's ``Builder.updateMemberEpoch``: the old epoch becomes the previous
        one when it changes."""
        if epoch != self.member_epoch:
            self.previous_member_epoch = self.member_epoch
            self.member_epoch = epoch

    def reset(self) -> None:
        """Start over, as a member rejoining with epoch 0: nothing held, epoch 0."""
        self.assigned, self.pending_revocation = {}, {}
        self.state = self.STABLE_STATE
        self.member_epoch, self.previous_member_epoch = 0, -1

    def cancel_timers(self) -> None:
        for timer in (self.session_timer, self.rebalance_timer):
            if timer is not None:
                timer.cancel()
        self.session_timer = self.rebalance_timer = None

    def update_from(self, request: Any, client_id: str, client_host: str) -> None:
        """Take a heartbeat's non-null ``instance_id``, ``rack_id`` and
        ``rebalance_timeout_ms`` (-1: unchanged) and the client's id and host
        (Kafka's ``Builder.maybeUpdate*``)."""
        if request.instance_id is not None:
            self.instance_id = request.instance_id
        if request.rack_id is not None:
            self.rack_id = request.rack_id
        if request.rebalance_timeout_ms != -1:
            self.rebalance_timeout_ms = request.rebalance_timeout_ms
        self.client_id, self.client_host = client_id, client_host

    def metadata_fields(self) -> dict[str, Any]:
        """The fields of its ``<Type>GroupMemberMetadataValue`` record that every
        modern member has."""
        return {
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
        }

    def replay_metadata(self, value: Any) -> None:
        """Take the common fields of a replayed ``MemberMetadata`` value."""
        self.instance_id, self.rack_id = value.instance_id, value.rack_id
        self.client_id, self.client_host = value.client_id, value.client_host
        self.rebalance_timeout_ms = value.rebalance_timeout_ms


@attrs.define(eq=False)
class ModernGroup(Generic[M, K]):
    """A consumer or streams group (Kafka's ``ModernGroup``).

    ``target`` is the target assignment per member (computed at
    ``assignment_epoch``); ``partition_epochs`` maps ``(key, partition)`` to the
    epoch of the member holding it, assigned or pending revocation (Kafka's
    ``currentPartitionEpoch``); ``static_members`` maps instance ids to member ids;
    ``offsets`` are the committed offsets, shared with OffsetCommit/OffsetFetch.
    """

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, M] = attrs.field(factory=dict)
    static_members: dict[str, str] = attrs.field(factory=dict)
    target: dict[str, dict[K, frozenset[int]]] = attrs.field(factory=dict)
    partition_epochs: dict[tuple[K, int], int] = attrs.field(factory=dict)
    offsets: dict[tuple[str, int], CommittedOffset] = attrs.field(factory=dict)
    dead: bool = False

    #: The group type's states: an enum with DEAD, EMPTY, ASSIGNING, RECONCILING
    #: and STABLE members, named as Kafka's.
    STATES: ClassVar[type[enum.Enum]]

    @property
    def state(self) -> enum.Enum:
        """The group's state (Kafka's ``maybeUpdateGroupState``)."""
        return self._state(self.STATES)

    def _state(self, states: type[S]) -> S:
        """Kafka's ``maybeUpdateGroupState`` in ``states`` (an enum with DEAD, EMPTY,
        ASSIGNING, RECONCILING and STABLE members)."""
        if self.dead:
            return states["DEAD"]
        if not self.members:
            return states["EMPTY"]
        if self.group_epoch > self.assignment_epoch:
            return states["ASSIGNING"]
        for member in self.members.values():
            if not member.is_reconciled_to(self.assignment_epoch):
                return states["RECONCILING"]
        return states["STABLE"]

    def is_empty(self) -> bool:
        return not self.members

    def add_member(self, member: M) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> M | None:
        """Remove a member, its timers, its target assignment and the partitions it
        held (Kafka's ``removeMember``)."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        member.cancel_timers()
        if member.instance_id is not None:
            if self.static_members.get(member.instance_id) == member_id:
                del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        self.remove_partition_epochs(member)
        return member

    def rejoin(self, member: M) -> None:
        """A known member joining again with epoch 0 gives up what it held."""
        self.remove_partition_epochs(member)
        member.reset()

    def remove_partition_epochs(self, member: M) -> None:
        """Forget the epochs of the partitions ``member`` holds (Kafka's
        ``removePartitionEpochs``)."""
        for assignment in (member.assigned, member.pending_revocation):
            for key, parts in assignment.items():
                for p in parts:
                    self.partition_epochs.pop((key, p), None)

    def add_partition_epochs(self, member: M) -> None:
        """Record the partitions ``member`` holds at its epoch (Kafka's
        ``addPartitionEpochs``)."""
        for assignment in (member.assigned, member.pending_revocation):
            for key, parts in assignment.items():
                for p in parts:
                    self.partition_epochs[(key, p)] = member.member_epoch

    def reconcile_member(
        self, member: M, owned: Mapping[K, frozenset[int]] | None
    ) -> bool:
        """Move ``member`` towards its target at the assignment epoch
        (:func:`reconcile`), keeping :attr:`partition_epochs` current; True when
        the member changed."""
        self.remove_partition_epochs(member)
        changed = reconcile(
            member,
            self.assignment_epoch,
            self.target.get(member.member_id, {}),
            owned,
            self.partition_epochs,
        )
        self.add_partition_epochs(member)
        return changed

    def validate_offset_commit(
        self,
        member_id: str,
        instance_id: str | None,
        member_epoch: int,
        *,
        transactional: bool = False,
    ) -> ErrorCode:
        """Kafka's ``ConsumerGroup.validateOffsetCommit`` (and ``StreamsGroup``'s):
        a commit with epoch < 0 to an empty group is accepted; a commit without
        member (epoch -1, no ids) to a group with members gets UNKNOWN_MEMBER_ID,
        unless it is ``transactional`` (TxnOffsetCommit v0-v2 carries no member, so
        Kafka accepts it); a member's commit at another epoch than its own
        STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION from a member using the classic
        protocol, as a classic group answers (``validateMemberEpoch``)."""
        if member_epoch < 0 and self.is_empty():
            return ErrorCode.NONE
        if member_epoch == -1 and not member_id and instance_id is None:
            return ErrorCode.NONE if transactional else ErrorCode.UNKNOWN_MEMBER_ID
        error = self.validate_offset_fetch(member_id, member_epoch)
        if (
            error == ErrorCode.STALE_MEMBER_EPOCH
            and self.members[member_id].uses_classic_protocol
        ):
            return ErrorCode.ILLEGAL_GENERATION
        return error

    def validate_offset_fetch(
        self, member_id: str | None, member_epoch: int
    ) -> ErrorCode:
        """Kafka's ``ModernGroup.validateOffsetFetch`` (OffsetFetch v9+): no member
        id and a negative epoch fetch freely; otherwise UNKNOWN_MEMBER_ID,
        STALE_MEMBER_EPOCH."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return (
            ErrorCode.NONE
            if member_epoch == member.member_epoch
            else ErrorCode.STALE_MEMBER_EPOCH
        )


def reconcile(
    member: ModernGroupMember[K],
    target_epoch: int,
    target: Mapping[K, frozenset[int]],
    owned: Mapping[K, frozenset[int]] | None,
    held_by_other: Mapping[tuple[K, int], int],
) -> bool:
    """Move ``member`` towards ``target`` (Kafka's ``CurrentAssignmentBuilder.build``,
    the same for partitions and tasks); True when the member changed.

    ``owned`` is what the heartbeat reports (``None``: not reported, so pending
    revocations are not acknowledged). ``held_by_other`` is the group's
    ``partition_epochs`` without this member's.
    """
    if member.revoking and _owns_any(owned, member.pending_revocation):
        return False
    if member.is_reconciled_to(target_epoch):
        return False
    before = (
        member.member_epoch,
        member.state,
        member.assigned,
        member.pending_revocation,
    )
    kept: dict[K, frozenset[int]] = {}
    revoke: dict[K, frozenset[int]] = {}
    newly: dict[K, frozenset[int]] = {}
    unreleased = False
    for key in set(target) | set(member.assigned):
        want = target.get(key, frozenset())
        have = member.assigned.get(key, frozenset())
        if want & have:
            kept[key] = want & have
        if have - want:
            revoke[key] = have - want
        free = frozenset(p for p in want - have if (key, p) not in held_by_other)
        unreleased = unreleased or len(free) < len(want - have)
        if free:
            newly[key] = free
    if revoke and _owns_any(owned, revoke):
        # keep the epoch; ask the member to revoke first
        member.state = member.UNREVOKED_STATE
        member.assigned = kept
        member.pending_revocation = revoke
    else:
        for key, parts in newly.items():
            kept[key] = kept.get(key, frozenset()) | parts
        member.state = member.UNRELEASED_STATE if unreleased else member.STABLE_STATE
        member.assigned = kept
        member.pending_revocation = {}
        member.update_member_epoch(target_epoch)
    after = (
        member.member_epoch,
        member.state,
        member.assigned,
        member.pending_revocation,
    )
    return before != after


def _owns_any(
    owned: Mapping[K, frozenset[int]] | None, pending: Mapping[K, frozenset[int]]
) -> bool:
    if owned is None:
        return True
    return any(owned.get(key, frozenset()) & parts for key, parts in pending.items())
