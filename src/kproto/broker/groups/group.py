"""One classic consumer group: its members, generation, protocol and offsets.

Pure state, no I/O and no timers: :class:`~kproto.broker.groups.coordinator.GroupCoordinator`
drives it. Follows Kafka's classic ``GroupMetadata`` / ``MemberMetadata`` (now
``ClassicGroup`` / ``ClassicGroupMember`` in the group-coordinator module): the group
states and their allowed transitions, leader election (the first member to join, or
any remaining member when the leader leaves), and protocol selection by vote.
"""

from __future__ import annotations

import enum
import io
from collections.abc import Callable
from typing import Any

import attrs

from kproto.index import data_type
from kproto.serial import DecodeError, entity_reader

from .timers import TimerHandle

__all__ = [
    "ClassicGroup",
    "CommittedOffset",
    "GroupState",
    "JoinResult",
    "Member",
    "SyncResult",
]


class GroupState(enum.Enum):
    """The states of a classic group, named as Kafka's ``ClassicGroupState``."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's ClassicGroupState valid previous states.
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(
        {
            GroupState.STABLE,
            GroupState.PREPARING_REBALANCE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
            GroupState.DEAD,
        }
    ),
}


@attrs.frozen
class JoinResult:
    """What a JoinGroup response carries (error codes are ``kproto.errors.ErrorCode``).

    ``members`` is non-empty only in the leader's response: ``(member_id,
    group_instance_id, metadata)`` of every member, metadata for the chosen protocol.
    ``skip_assignment`` (JoinGroup v9, KIP-814): the leader need not assign (a
    static leader rejoined a stable group).
    """

    error_code: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()
    skip_assignment: bool = False


@attrs.frozen
class SyncResult:
    """What a SyncGroup response carries."""

    error_code: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@attrs.frozen
class CommittedOffset:
    """A committed offset: ``offset``, ``leader_epoch`` (-1 unknown), client
    ``metadata``, ``commit_timestamp`` and ``expire_timestamp`` (ms since the
    epoch; -1: none, set only by OffsetCommit v2-v4 with a ``retention_time_ms``)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


@attrs.define(eq=False)
class Member:
    """One member of a classic group (Kafka's ``ClassicGroupMember``).

    ``protocols`` are ``(name, metadata)`` in the member's order of preference;
    timeouts are in ms. ``awaiting_join`` / ``awaiting_sync`` hold the callback that
    completes a pending JoinGroup / SyncGroup response.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: Callable[[JoinResult], None] | None = None
    awaiting_sync: Callable[[SyncResult], None] | None = None
    is_new: bool = False
    heartbeat_timer: TimerHandle | None = None

    def metadata(self, protocol: str) -> bytes:
        """The member's metadata for ``protocol`` (b"" if it does not support it)."""
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """Whether ``protocols`` equal the member's, names, order and metadata."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The first of the member's protocols that is a candidate."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(
            f"member {self.member_id} supports none of {sorted(candidates)}"
        )

    def complete_join(self, result: JoinResult) -> None:
        callback, self.awaiting_join = self.awaiting_join, None
        if callback is not None:
            callback(result)

    def complete_sync(self, result: SyncResult) -> None:
        callback, self.awaiting_sync = self.awaiting_sync, None
        if callback is not None:
            callback(result)


@attrs.define(eq=False)
class ClassicGroup:
    """A classic group: members in join order, generation, selected protocol, offsets.

    ``pending_members`` are member ids handed out by a KIP-394 MEMBER_ID_REQUIRED
    answer and not yet joined (value: their expiry timer). ``offsets`` maps
    ``(topic, partition)`` to :class:`CommittedOffset`.
    """

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    state_timestamp_ms: int = -1
    members: dict[str, Member] = attrs.field(factory=dict)
    static_members: dict[str, str] = attrs.field(factory=dict)
    pending_members: dict[str, TimerHandle | None] = attrs.field(factory=dict)
    pending_sync: set[str] = attrs.field(factory=set)
    offsets: dict[tuple[str, int], CommittedOffset] = attrs.field(factory=dict)
    join_timer: TimerHandle | None = None
    sync_timer: TimerHandle | None = None
    initial_delay_left_ms: int = -1
    new_member_added: bool = False

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition(self, state: GroupState, now_ms: int) -> None:
        """Move to ``state``.

        Raises:
            RuntimeError: a transition Kafka's ``ClassicGroup`` does not allow
                (a coordinator bug, never a client's fault).
        """
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(
                f"group {self.group_id!r}: illegal transition {self.state.value} -> {state.value}"
            )
        self.state = state
        self.state_timestamp_ms = now_ms

    def add(self, member: Member) -> None:
        """Add ``member``; the first member becomes the leader."""
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        """Remove a member; a new leader is any remaining member (Kafka: the first)."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None:
            if self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(
        self, instance_id: str, old_id: str, new_id: str
    ) -> Member:
        """Give the static member ``instance_id`` the member id ``new_id``
        (KIP-345: a restarted static member takes over its predecessor's place)."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A static member whose instance id now belongs to another member id."""
        if instance_id is None:
            return False
        current = self.static_members.get(instance_id)
        return current is not None and current != member_id

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Whether a member with these protocols may join (Kafka's
        ``supportsProtocols``): an empty group takes any non-empty type and list;
        otherwise the type must match and one protocol be supported by everyone."""
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidates())

    def candidates(self) -> set[str]:
        """The protocols every member supports."""
        common: set[str] | None = None
        for member in self.members.values():
            names = {name for name, _ in member.protocols}
            common = names if common is None else common & names
        return common or set()

    def select_protocol(self) -> str:
        """The protocol chosen by vote: each member votes for its most preferred
        candidate; most votes wins, ties go to the first member's preference.

        Raises:
            ValueError: no members, or no protocol every member supports.
        """
        if not self.members:
            raise ValueError(
                f"group {self.group_id!r} has no members to select a protocol"
            )
        candidates = self.candidates()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        first = next(iter(self.members.values()))
        order = {name: i for i, (name, _) in enumerate(first.protocols)}
        return max(votes, key=lambda name: (votes[name], -order.get(name, 0)))

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def all_joined(self) -> bool:
        """Every member rejoined and no KIP-394 member id is pending."""
        return (
            self.awaiting_join_count() == len(self.members) and not self.pending_members
        )

    def rebalance_timeout_ms(self) -> int:
        """The largest rebalance timeout of the members (ms)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def metadata_value(self) -> dict[str, Any]:
        """The fields of this group's ``GroupMetadataValue`` record (v3+)."""
        protocol = self.protocol_name
        return {
            "protocol_type": self.protocol_type or "",
            "generation": self.generation_id,
            "protocol": protocol,
            "leader": self.leader_id,
            "current_state_timestamp": self.state_timestamp_ms,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "rebalance_timeout": m.rebalance_timeout_ms,
                    "session_timeout": m.session_timeout_ms,
                    "subscription": m.metadata(protocol or ""),
                    "assignment": m.assignment,
                }
                for m in self.members.values()
            ],
        }

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, from their ``consumer`` protocol
        metadata (``ConsumerProtocolSubscription``); ``None`` when unknown."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_subscription(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics


def parse_subscription(data: bytes) -> set[str] | None:
    """The topics of a ``ConsumerProtocolSubscription`` (int16 version, then the
    generated entity of that version; newer versions than kproto knows are read as
    its newest, as Kafka's ``ConsumerProtocol`` does), ``None`` if it does not parse."""
    if len(data) < 2:
        return None
    version = int.from_bytes(data[:2], "big", signed=True)
    stream = io.BytesIO(data)
    stream.seek(2)
    try:
        cls = data_type("ConsumerProtocolSubscription", min(max(version, 0), 3))
        return set(entity_reader(cls)(stream).topics)
    except (LookupError, DecodeError):
        return None
