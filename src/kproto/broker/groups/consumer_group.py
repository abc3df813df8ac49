"""One KIP-848 consumer group: members, epochs, target and current assignments.

Pure state, no I/O and no timers: :class:`~kproto.broker.groups.consumer_coordinator.ConsumerGroups`
drives it. Follows Kafka's ``ConsumerGroup``, ``ConsumerGroupMember``, ``MemberState``
and ``CurrentAssignmentBuilder`` (group-coordinator module, ``modern.consumer``):

- the *group epoch* is bumped when membership, a subscription or the metadata of a
  subscribed topic changes; the *assignment epoch* is the group epoch the target
  assignment was computed at;
- each member has a *member epoch* and converges towards its target assignment
  through :func:`reconcile`: a partition is given to its new owner only once no other
  member holds it (assigned or pending revocation), and a member that must give
  partitions up stays at its epoch in UNREVOKED_PARTITIONS until its heartbeat no
  longer reports them.
"""

from __future__ import annotations

import enum
import functools
import uuid
from collections.abc import Mapping

import attrs

from .assignors import Assignment
from .group import CommittedOffset
from .timers import TimerHandle
from .topic_regex import TopicRegex

__all__ = [
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "MemberState",
    "reconcile",
    "regex_matches",
]


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> TopicRegex:
    """The compiled subscription regex (cached). Raises ValueError as
    :class:`TopicRegex`."""
    return TopicRegex(pattern)


@functools.lru_cache(maxsize=65536)
def regex_matches(pattern: str, topic: str) -> bool:
    """Whether ``topic`` fully matches ``pattern`` (False for an invalid pattern);
    cached, as every heartbeat asks again."""
    try:
        return compile_regex(pattern).fullmatch(topic)
    except ValueError:
        return False


class MemberState(enum.IntEnum):
    """Kafka's ``MemberState`` (the int8 of ``ConsumerGroupCurrentMemberAssignmentValue``)."""

    STABLE = 1
    UNREVOKED_PARTITIONS = 2
    UNRELEASED_PARTITIONS = 3
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    """Kafka's ``ConsumerGroup.ConsumerGroupState`` (names as DescribeGroups shows)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@attrs.define(eq=False)
class ConsumerGroupMember:
    """One member (Kafka's ``ConsumerGroupMember``); timeouts in ms.

    ``assigned`` excludes ``pending_revocation`` (partitions the member must give up
    and has not yet acknowledged). ``member_epoch`` -2 marks a static member that
    left and is expected back (KIP-848 ``LEAVE_GROUP_STATIC_MEMBER_EPOCH``).
    """

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = attrs.field(factory=dict)
    pending_revocation: Assignment = attrs.field(factory=dict)
    session_timer: TimerHandle | None = None
    rebalance_timer: TimerHandle | None = None

    def subscribes(self, topic: str, internal: bool = False) -> bool:
        """Whether ``topic`` is in the subscribed names or fully matches the regex
        (:class:`.topic_regex.TopicRegex`, linear time, RE2 constructs only); an
        ``internal`` topic is subscribed to only by name."""
        if topic in self.subscribed_topic_names:
            return True
        if self.subscribed_topic_regex and not internal:
            return regex_matches(self.subscribed_topic_regex, topic)
        return False

    def cancel_timers(self) -> None:
        for timer in (self.session_timer, self.rebalance_timer):
            if timer is not None:
                timer.cancel()
        self.session_timer = self.rebalance_timer = None


@attrs.define(eq=False)
class ConsumerGroup:
    """A consumer group (Kafka's ``ConsumerGroup``).

    ``target`` is the target assignment per member (computed at
    ``assignment_epoch``); ``partition_epochs`` maps ``(topic_id, partition)`` to the
    epoch of the member that holds it (assigned or pending revocation);
    ``subscription_metadata`` maps subscribed topic names to ``(topic_id,
    partitions)`` as last seen (a change bumps the group epoch). ``offsets`` are the
    committed offsets, shared with the classic group APIs.
    """

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = attrs.field(factory=dict)
    static_members: dict[str, str] = attrs.field(factory=dict)
    target: dict[str, Assignment] = attrs.field(factory=dict)
    partition_epochs: dict[tuple[uuid.UUID, int], int] = attrs.field(factory=dict)
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = attrs.field(factory=dict)
    offsets: dict[tuple[str, int], CommittedOffset] = attrs.field(factory=dict)
    preferred_assignor: str | None = None
    dead: bool = False

    @property
    def state(self) -> ConsumerGroupState:
        """Kafka's ``ConsumerGroup.maybeUpdateGroupState``."""
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if (
                member.member_epoch != self.assignment_epoch
                or member.state != MemberState.STABLE
            ):
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def add_member(self, member: ConsumerGroupMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        """Remove a member, its target assignment and the partitions it held."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        member.cancel_timers()
        if member.instance_id is not None:
            if self.static_members.get(member.instance_id) == member_id:
                del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        self.release(member)
        return member

    def release(self, member: ConsumerGroupMember) -> None:
        """Forget the partition epochs held by ``member``."""
        for assignment in (member.assigned, member.pending_revocation):
            for topic, parts in assignment.items():
                for p in parts:
                    self.partition_epochs.pop((topic, p), None)

    def hold(self, member: ConsumerGroupMember) -> None:
        """Record the partitions ``member`` holds at its epoch."""
        for assignment in (member.assigned, member.pending_revocation):
            for topic, parts in assignment.items():
                for p in parts:
                    self.partition_epochs[(topic, p)] = member.member_epoch


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Mapping[uuid.UUID, frozenset[int]],
    owned: Mapping[uuid.UUID, frozenset[int]] | None,
    held_by_other: Mapping[tuple[uuid.UUID, int], int],
) -> bool:
    """Move ``member`` towards ``target`` (Kafka's ``CurrentAssignmentBuilder.build``);
    True when the member changed.

    ``owned`` is what the heartbeat reports (``None``: not reported, so pending
    revocations are not acknowledged). ``held_by_other`` is the group's
    ``partition_epochs`` after :meth:`ConsumerGroup.release` of this member.
    """
    before = (
        member.member_epoch,
        member.state,
        dict(member.assigned),
        dict(member.pending_revocation),
    )
    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            _next(
                member, member.member_epoch, target_epoch, target, owned, held_by_other
            )
    elif member.state == MemberState.UNREVOKED_PARTITIONS:
        if not _owns_any(owned, member.pending_revocation):
            _next(
                member, member.member_epoch, target_epoch, target, owned, held_by_other
            )
    else:  # UNRELEASED_PARTITIONS, UNKNOWN
        _next(member, member.member_epoch, target_epoch, target, owned, held_by_other)
    after = (
        member.member_epoch,
        member.state,
        member.assigned,
        member.pending_revocation,
    )
    return before != after


def _owns_any(
    owned: Mapping[uuid.UUID, frozenset[int]] | None, pending: Assignment
) -> bool:
    if owned is None:
        return True
    return any(
        owned.get(topic, frozenset()) & parts for topic, parts in pending.items()
    )


def _next(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: Mapping[uuid.UUID, frozenset[int]],
    owned: Mapping[uuid.UUID, frozenset[int]] | None,
    held_by_other: Mapping[tuple[uuid.UUID, int], int],
) -> None:
    """Kafka's ``CurrentAssignmentBuilder.computeNextAssignment``."""
    kept: Assignment = {}
    revoke: Assignment = {}
    newly: Assignment = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        want = target.get(topic, frozenset())
        have = member.assigned.get(topic, frozenset())
        if want & have:
            kept[topic] = want & have
        if have - want:
            revoke[topic] = have - want
        free = frozenset(p for p in want - have if (topic, p) not in held_by_other)
        if len(free) < len(want - have):
            unreleased = True
        if free:
            newly[topic] = free
    if revoke and _owns_any(owned, revoke):
        # keep the epoch; ask the member to revoke first
        member.state = MemberState.UNREVOKED_PARTITIONS
        member.assigned = kept
        member.pending_revocation = revoke
        _set_epoch(member, member_epoch)
        return
    for topic, parts in newly.items():
        kept[topic] = kept.get(topic, frozenset()) | parts
    member.state = (
        MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    )
    member.assigned = kept
    member.pending_revocation = {}
    _set_epoch(member, target_epoch)


def _set_epoch(member: ConsumerGroupMember, epoch: int) -> None:
    """Kafka's ``ConsumerGroupMember.Builder.updateMemberEpoch``."""
    if epoch != member.member_epoch:
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = epoch
