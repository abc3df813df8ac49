"""Server-side partition assignors of KIP-848 consumer groups: ``uniform`` and ``range``.

An assignor maps a :class:`GroupSpec` (every member's subscribed topic ids and its
current target assignment) and the partition count of each topic to a new target
assignment, ``member_id -> {topic_id: frozenset(partitions)}``. Pure functions, no
I/O. Kafka's ``group.consumer.assignors`` default is ``uniform,range``, the first
being the default when a member names none (``server_assignor``).

- :func:`uniform_assign` follows Kafka's ``UniformAssignor``: balanced (the member
  counts of partitions differ by at most one among members that could take more) and
  sticky (a member keeps the partitions it had unless balance needs them moved).
  Kafka uses two builders (homogeneous and heterogeneous subscriptions); here one
  greedy algorithm covers both: keep, fill the least loaded, then move partitions
  from the most to the least loaded eligible member until no move helps.
- :func:`range_assign` follows Kafka's server-side ``RangeAssignor``: per topic,
  quotas of ``partitions // members`` (the remainder one more each), a member keeps
  its current partitions within its quota, the rest go out as ascending ranges in
  member id order (so co-partitioned topics line up).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

import attrs

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "GroupSpec",
    "MemberSpec",
    "range_assign",
    "uniform_assign",
]

#: ``{topic_id: partitions}`` of one member.
Assignment = dict[uuid.UUID, frozenset[int]]


@attrs.frozen
class MemberSpec:
    """One member as an assignor sees it: the topic ids it subscribes to (resolved
    from names and regex) and its current target assignment."""

    subscribed: frozenset[uuid.UUID]
    current: Mapping[uuid.UUID, frozenset[int]] = attrs.field(factory=dict)


#: ``member_id -> MemberSpec``.
GroupSpec = Mapping[str, MemberSpec]


def uniform_assign(
    members: GroupSpec, partitions: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    """Kafka's ``UniformAssignor``: balanced and sticky (see the module docstring).

    ``partitions`` is ``{topic_id: partition count}``; topics missing from it are
    ignored (a subscribed topic that does not exist). Returns an assignment for
    every member (empty for a member subscribed to nothing that exists).
    """
    owner: dict[tuple[uuid.UUID, int], str] = {}
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in members}
    eligible: dict[uuid.UUID, list[str]] = {}
    for member_id in sorted(members):
        for topic in members[member_id].subscribed:
            if topic in partitions:
                eligible.setdefault(topic, []).append(member_id)
    # 1. stickiness: keep what is still subscribed and still exists (first claim wins)
    for member_id in sorted(members):
        spec = members[member_id]
        for topic, parts in spec.current.items():
            if topic not in spec.subscribed or topic not in partitions:
                continue
            for p in parts:
                if p < partitions[topic] and (topic, p) not in owner:
                    owner[(topic, p)] = member_id
                    owned[member_id].add((topic, p))
    # 2. fill: unassigned partitions, topics with fewer candidates first
    free = sorted(
        (
            (topic, p)
            for topic in eligible
            for p in range(partitions[topic])
            if (topic, p) not in owner
        ),
        key=lambda tp: (len(eligible[tp[0]]), str(tp[0]), tp[1]),
    )
    for tp in free:
        target = min(eligible[tp[0]], key=lambda m: (len(owned[m]), m))
        owner[tp] = target
        owned[target].add(tp)
    # 3. balance: move from the most loaded to a member with at least two fewer
    for _ in range(len(owner) * max(len(members), 1) + 1):
        if not _move_one(owned, owner, eligible):
            break
    return {m: _as_assignment(owned[m]) for m in members}


def _move_one(
    owned: dict[str, set[tuple[uuid.UUID, int]]],
    owner: dict[tuple[uuid.UUID, int], str],
    eligible: dict[uuid.UUID, list[str]],
) -> bool:
    """Move one partition to improve balance; False when none can move."""
    loads = [len(tps) for tps in owned.values()]
    if not loads or max(loads) - min(loads) <= 1:
        return False
    for donor in sorted(owned, key=lambda m: (-len(owned[m]), m)):
        for tp in sorted(owned[donor], key=lambda tp: (str(tp[0]), -tp[1])):
            takers = [
                m for m in eligible[tp[0]] if len(owned[m]) + 1 < len(owned[donor])
            ]
            if takers:
                taker = min(takers, key=lambda m: (len(owned[m]), m))
                owned[donor].discard(tp)
                owned[taker].add(tp)
                owner[tp] = taker
                return True
    return False


def range_assign(
    members: GroupSpec, partitions: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    """Kafka's server-side ``RangeAssignor``, per topic: each subscribed member's
    quota is ``count // n``, ``count % n`` of them one more; a member keeps its
    lowest current partitions up to its quota (sticky), and the members still short
    get the remaining partitions as ascending ranges, in member id order (so
    co-partitioned topics line up when nothing was assigned before)."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for topic, count in partitions.items():
        subscribers = sorted(
            m for m, spec in members.items() if topic in spec.subscribed
        )
        if not subscribers:
            continue
        quota, extra = divmod(count, len(subscribers))
        kept: set[int] = set()
        short: list[tuple[str, int]] = []
        for member_id in subscribers:
            current = sorted(
                p for p in members[member_id].current.get(topic, ()) if p < count
            )
            keep = current[:quota]
            remaining = quota - len(current)
            if remaining < 0 and extra > 0:
                extra -= 1
                keep = current[: quota + 1]
            else:
                short.append((member_id, remaining))
            if keep:
                out[member_id][topic] = set(keep)
                kept.update(keep)
        free = [p for p in range(count) if p not in kept]
        start = 0
        for member_id, remaining in short:
            if extra > 0:
                remaining += 1
                extra -= 1
            if remaining > 0:
                taken = free[start : start + remaining]
                start += remaining
                out[member_id].setdefault(topic, set()).update(taken)
    return {
        m: {t: frozenset(ps) for t, ps in topics.items() if ps}
        for m, topics in out.items()
    }


def _as_assignment(tps: set[tuple[uuid.UUID, int]]) -> Assignment:
    grouped: dict[uuid.UUID, set[int]] = {}
    for topic, p in tps:
        grouped.setdefault(topic, set()).add(p)
    return {t: frozenset(ps) for t, ps in grouped.items()}


#: Assignors by the name clients give in ``server_assignor`` (Kafka's ``name()``).
ASSIGNORS: Mapping[
    str, Callable[[GroupSpec, Mapping[uuid.UUID, int]], dict[str, Assignment]]
] = {"uniform": uniform_assign, "range": range_assign}
