"""Share groups and their membership: ShareGroupHeartbeat and the simple assignor.

Follows Kafka's ``GroupMetadataManager.shareGroupHeartbeat`` and ``ShareGroup``
(group-coordinator module) and KIP-932:

- a member joins with epoch 0 and a non-empty subscription (topic names), leaves
  with epoch -1, and otherwise heartbeats with the epoch it was given; an unknown
  member gets UNKNOWN_MEMBER_ID, a wrong epoch FENCED_MEMBER_EPOCH;
- the coordinator assigns partitions itself (:func:`simple_assign`, Kafka's
  ``SimpleAssignor``): every partition of a subscribed topic goes to at least one
  member, and a partition may go to several members, since a share partition
  hands each record to one member at a time;
- a change of members, subscriptions or topic partitions bumps the group epoch and
  the target assignment; a member gets its new assignment (and the group epoch as
  its member epoch) on its next heartbeat, at once: share groups need no
  revocation step, as no two members conflict over a partition;
- a member not heard from within ``group.share.session.timeout.ms`` is removed.

The group's own records (``ShareGroupMetadata``, ``ShareGroupMemberMetadata``, ...)
are not written: membership is soft state, rebuilt by the members' heartbeats
after a restart (their next heartbeat gets UNKNOWN_MEMBER_ID and they rejoin).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

import attrs

from kproto.broker.groups.timers import Scheduler, TimerHandle
from kproto.errors import ErrorCode

__all__ = [
    "HeartbeatResult",
    "ShareGroup",
    "ShareMember",
    "simple_assign",
]

log = logging.getLogger("kproto.broker.share")

#: ``{topic: [partition, ...]}``: a member's assignment.
Assignment = dict[str, list[int]]


@attrs.define
class ShareMember:
    """One member of a share group."""

    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topics: tuple[str, ...]
    member_epoch: int = 0
    assignment: Assignment = attrs.field(factory=dict)


@attrs.define
class ShareGroup:
    """A share group: members, the group epoch and the target assignment."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = attrs.field(factory=dict)
    target: dict[str, Assignment] = attrs.field(factory=dict)

    @property
    def state(self) -> str:
        """``Empty`` or ``Stable`` (Kafka's ``ShareGroup.ShareGroupState``)."""
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topics}


@attrs.frozen
class HeartbeatResult:
    """A ShareGroupHeartbeat answer: ``assignment`` ``None`` when unchanged."""

    error_code: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    assignment: Assignment | None = None


def simple_assign(
    members: Mapping[str, tuple[str, ...]], partitions: Mapping[str, int]
) -> dict[str, Assignment]:
    """Kafka's ``SimpleAssignor`` balance rules, without its stickiness: with at
    least as many partitions as members, the partitions go round-robin over the
    members (sorted by id); with more members than partitions, member ``i`` gets
    partition ``i % n``, so every member has one and every partition is shared by
    ``ceil(members / partitions)`` or one fewer. Members with the same subscription
    share the partitions of all their topics (``SimpleHomogeneousAssignmentBuilder``);
    otherwise each topic is spread over the members subscribed to it.

    Args:
        members: member id -> subscribed topic names.
        partitions: topic name -> partition count (topics that do not exist are
            left out).
    """
    out: dict[str, Assignment] = {m: {} for m in members}

    def spread(member_ids: list[str], targets: list[tuple[str, int]]) -> None:
        if not member_ids or not targets:
            return
        if len(member_ids) <= len(targets):
            pairs = [
                (member_ids[i % len(member_ids)], t) for i, t in enumerate(targets)
            ]
        else:
            pairs = [(m, targets[i % len(targets)]) for i, m in enumerate(member_ids)]
        for member, (topic, partition) in pairs:
            out[member].setdefault(topic, []).append(partition)

    def targets_of(topics: Iterable[str]) -> list[tuple[str, int]]:
        return [(t, p) for t in sorted(topics) for p in range(partitions.get(t) or 0)]

    if len({frozenset(ts) for ts in members.values()}) == 1:
        spread(sorted(members), targets_of(next(iter(members.values()))))
    else:
        for topic in sorted({t for ts in members.values() for t in ts}):
            spread(
                sorted(m for m, ts in members.items() if topic in ts),
                targets_of([topic]),
            )
    return out


class ShareGroups:
    """Every share group's membership (the heartbeat state machine) and its
    members' session timeouts.

    Args:
        topic_partitions: topic name -> partition count, or None if unknown.
        on_assigned: called with ``(group id, {topic: [partition]})`` of every
            partition newly in a target assignment (share partitions start there).
        on_member_gone: called with ``(group id, member id)`` when a member is
            removed for missing its session timeout (its sessions end and its
            acquired records are released).
        scheduler: runs the session timeouts.
        session_timeout_ms: a group id -> its members' session timeout (ms,
            ``group.share.session.timeout.ms`` or the group's config).
    """

    def __init__(
        self,
        topic_partitions: Callable[[str], int | None],
        on_assigned: Callable[[str, Assignment], None],
        on_member_gone: Callable[[str, str], None],
        *,
        scheduler: Scheduler,
        session_timeout_ms: Callable[[str], int],
    ) -> None:
        self.groups: dict[str, ShareGroup] = {}
        self._topic_partitions = topic_partitions
        self._on_assigned = on_assigned
        self._on_member_gone = on_member_gone
        self._scheduler = scheduler
        self._session_timeout_ms = session_timeout_ms
        #: (group id, member id) -> the member's session timeout
        self._sessions: dict[tuple[str, str], TimerHandle] = {}
        #: target assignments a test set, used instead of the simple assignor:
        #: group id -> member id -> {topic: [partition]}
        self.target_overrides: dict[str, dict[str, Assignment]] = {}

    def set_target_assignment(
        self, group_id: str, target: Mapping[str, Assignment] | None
    ) -> None:
        """Use ``target`` (``{member_id: {topic: [partition]}}``; members not named
        get nothing) as the group's target assignment instead of the simple
        assignor's, now (the group epoch is bumped; members get it at their next
        heartbeat); ``None``: back to the assignor."""
        if target is None:
            self.target_overrides.pop(group_id, None)
        else:
            self.target_overrides[group_id] = {
                member: {topic: sorted(ps) for topic, ps in topics.items()}
                for member, topics in target.items()
            }
        group = self.groups.get(group_id)
        if group is not None:
            self._reassign(group)

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed: tuple[str, ...] | None,
        client_id: str,
        client_host: str,
    ) -> HeartbeatResult:
        """One ShareGroupHeartbeat (request fields as in
        ShareGroupHeartbeatRequest.json v1): a heartbeat answered with an
        assignment epoch re-arms the member's session timeout, a leave ends it,
        and an error leaves it running (Kafka's GroupMetadataManager schedules
        the timeout only on success), so a member that is refused and then goes
        quiet is still removed."""
        if not group_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if not member_id:
            return HeartbeatResult(
                ErrorCode.INVALID_REQUEST, "MemberId can't be empty."
            )
        group = self.groups.get(group_id)
        if member_epoch == -1:
            # Leaving does not end the member's share sessions: its client closes
            # them (ShareFetch/ShareAcknowledge epoch -1) after the heartbeat.
            self._end_session(group_id, member_id)
            if group is not None and group.members.pop(member_id, None) is not None:
                self._reassign(group)
            return HeartbeatResult(ErrorCode.NONE, None, member_id, -1)
        if member_epoch == 0:
            if not subscribed:
                return HeartbeatResult(
                    ErrorCode.INVALID_REQUEST,
                    "SubscribedTopicNames must be set in first request.",
                )
            if group is None:
                group = self.groups[group_id] = ShareGroup(group_id)
            member = group.members.get(member_id)
            if member is None:
                member = group.members[member_id] = ShareMember(
                    member_id, client_id, client_host, rack_id, tuple(subscribed)
                )
            member.member_epoch = 0
            member.assignment = {}
        else:
            member = None if group is None else group.members.get(member_id)
            if group is None or member is None:
                return HeartbeatResult(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            if member_epoch != member.member_epoch:
                return HeartbeatResult(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The share group member has a smaller or larger member epoch "
                    f"({member_epoch}) than the one known by the group coordinator "
                    f"({member.member_epoch}).",
                )
        if subscribed is not None:
            if not subscribed:
                return HeartbeatResult(
                    ErrorCode.INVALID_REQUEST, "SubscribedTopicNames can't be empty."
                )
            member.subscribed_topics = tuple(subscribed)
        if rack_id is not None:
            member.rack_id = rack_id
        self._reassign(group)
        changed = member.member_epoch != group.group_epoch
        member.member_epoch = group.group_epoch
        wanted = group.target.get(member_id, {})
        if member.assignment != wanted or member_epoch == 0:
            changed = True
            member.assignment = wanted
        self._end_session(group_id, member_id)
        self._sessions[(group_id, member_id)] = self._scheduler.call_later(
            self._session_timeout_ms(group_id),
            lambda: self._expire(group_id, member_id),
        )
        return HeartbeatResult(
            ErrorCode.NONE,
            None,
            member_id,
            member.member_epoch,
            member.assignment if changed else None,
        )

    def _reassign(self, group: ShareGroup) -> None:
        """Recompute the target assignment; bump the group epoch if it changed."""
        counts: dict[str, int] = {}
        for topic in group.subscribed_topics():
            count = self._topic_partitions(topic)
            if count:
                counts[topic] = count
        override = self.target_overrides.get(group.group_id)
        if override is None:
            target = simple_assign(
                {m.member_id: m.subscribed_topics for m in group.members.values()},
                counts,
            )
        else:
            target = {m: dict(override.get(m, {})) for m in group.members}
        if target == group.target and group.group_epoch:
            return
        before = {
            (t, p) for a in group.target.values() for t, ps in a.items() for p in ps
        }
        group.target = target
        group.group_epoch += 1
        group.assignment_epoch = group.group_epoch
        fresh: Assignment = {}
        for assignment in target.values():
            for topic, ps in assignment.items():
                for p in ps:
                    if (topic, p) not in before:
                        fresh.setdefault(topic, []).append(p)
        if fresh:
            self._on_assigned(group.group_id, fresh)

    def _expire(self, group_id: str, member_id: str) -> None:
        self._sessions.pop((group_id, member_id), None)
        if self.remove_member(group_id, member_id):
            log.info("share group %s: member %s timed out", group_id, member_id)

    def _end_session(self, group_id: str, member_id: str) -> None:
        session = self._sessions.pop((group_id, member_id), None)
        if session is not None:
            session.cancel()

    def cancel_timers(self) -> None:
        """Cancel every session timeout."""
        for handle in self._sessions.values():
            handle.cancel()
        self._sessions.clear()

    def remove_member(self, group_id: str, member_id: str) -> bool:
        """Remove a member (session timeout); True if it was there."""
        group = self.groups.get(group_id)
        if group is None or group.members.pop(member_id, None) is None:
            return False
        self._reassign(group)
        self._on_member_gone(group_id, member_id)
        return True
