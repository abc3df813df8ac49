"""One KIP-848 consumer group: members, epochs, target and current assignments.

Pure state, no I/O and no timers: :class:`~kproto.broker.groups.consumer_coordinator.ConsumerGroups`
drives it. Follows Kafka's ``ConsumerGroup``, ``ConsumerGroupMember`` and
``MemberState`` (group-coordinator module, ``modern.consumer``); what streams groups
share (epochs, target and current assignments, :func:`.modern.reconcile`) is in
:mod:`.modern`. The group epoch is bumped when membership, a subscription or the
metadata of a subscribed topic changes; a member that must give partitions up stays
at its epoch in UNREVOKED_PARTITIONS until its heartbeat no longer reports them.
"""

from __future__ import annotations

import enum
import functools
import uuid

import attrs

from .modern import ModernGroup, ModernGroupMember
from .timers import TimerHandle
from .topic_regex import TopicRegex

__all__ = [
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "MemberState",
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
class ConsumerGroupMember(ModernGroupMember[uuid.UUID]):
    """One member (Kafka's ``ConsumerGroupMember``): the common fields of
    :class:`.modern.ModernGroupMember` (``assigned``: partitions by topic id) and
    its subscription. ``member_epoch`` -2 marks a static member that left and is
    expected back (KIP-848 ``LEAVE_GROUP_STATIC_MEMBER_EPOCH``). A member using the
    classic protocol (JoinGroup/SyncGroup, Kafka's ``classicMemberMetadata``) has
    its ``classic_protocols`` (``(name, metadata)`` in preference order) and
    ``classic_session_timeout_ms``; both are None for consumer-protocol members.
    """

    STABLE_STATE = MemberState.STABLE
    UNREVOKED_STATE = MemberState.UNREVOKED_PARTITIONS
    UNRELEASED_STATE = MemberState.UNRELEASED_PARTITIONS

    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    classic_protocols: tuple[tuple[str, bytes], ...] | None = None
    classic_session_timeout_ms: int | None = None
    #: a classic member told to rejoin must do so within its rebalance timeout
    join_timer: TimerHandle | None = None

    def cancel_timers(self) -> None:
        super().cancel_timers()
        if self.join_timer is not None:
            self.join_timer.cancel()
        self.join_timer = None

    @property
    def uses_classic_protocol(self) -> bool:
        """Kafka's ``ConsumerGroupMember.useClassicProtocol``."""
        return self.classic_protocols is not None

    def subscribes(self, topic: str, internal: bool = False) -> bool:
        """Whether ``topic`` is in the subscribed names or fully matches the regex
        (:class:`.topic_regex.TopicRegex`, linear time, RE2 constructs only); an
        ``internal`` topic is subscribed to only by name."""
        if topic in self.subscribed_topic_names:
            return True
        if self.subscribed_topic_regex and not internal:
            return regex_matches(self.subscribed_topic_regex, topic)
        return False


@attrs.define(eq=False)
class ConsumerGroup(ModernGroup[ConsumerGroupMember, uuid.UUID]):
    """A consumer group (Kafka's ``ConsumerGroup``): the state of
    :class:`.modern.ModernGroup` (``partition_epochs`` keyed by ``(topic_id,
    partition)``) and ``subscription_metadata``, which maps subscribed topic names
    to ``(topic_id, partitions)`` as last seen (a change bumps the group epoch).
    """

    STATES = ConsumerGroupState

    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = attrs.field(factory=dict)
    preferred_assignor: str | None = None
