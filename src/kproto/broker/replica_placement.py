"""Where CreateTopics and CreatePartitions put a partition's replicas: Kafka's
striped placement (KRaft's ``StripedReplicaPlacer``, the placer of
``ReplicationControlManager``), racks first.

The brokers are grouped by rack (``broker.rack``; brokers without one form one
rack of their own), the racks sorted by name (no rack first) and the brokers of a
rack by id. Each partition takes its leader from the next rack in turn and its
followers from the racks after it, one each, round the racks again when the
replication factor exceeds them; within a rack the brokers are taken in turn too.
So the replicas of a partition span as many racks as they can, and consecutive
partitions' leaders stripe across racks and brokers:

    racks A (1, 4), B (2, 5), C (3, 6), replication factor 3:
    partition 0: 1, 2, 3    partition 1: 5, 6, 4    partition 2: 3, 1, 2 ...

After as many partitions as brokers, the order of racks and of each rack's
brokers is shuffled, so the next round does not repeat the same sets.

Kafka starts each placement at random offsets; kproto starts at ``start`` (the
cluster rotates it per topic, so a test sees the same placement every run) and
shuffles with a generator seeded by it. CreatePartitions continues after the
topic's last partition, as Kafka's placer does from the existing assignment (the
rack after the last partition's leader's, and in each rack the broker after the
one it used last). Kafka also places followers on fenced brokers when it runs
short of unfenced ones; kproto places replicas on listening nodes only.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from kproto.broker.errors import TopicError
from kproto.errors import ErrorCode

__all__ = ["striped_placement"]


class _Brokers:
    """The brokers of one rack, taken in turn: each placement round (``epoch``)
    starts one further along and hands out each broker at most once."""

    def __init__(self, brokers: list[int], offset: int) -> None:
        self.brokers = sorted(brokers)
        self.offset = offset % len(self.brokers)
        self.index = 0
        self.epoch = 0

    def next(self, epoch: int) -> int | None:
        """The next broker of this round, None when every one was handed out."""
        size = len(self.brokers)
        if self.epoch != epoch:
            self.epoch, self.index = epoch, 0
            self.offset = (self.offset + 1) % size
        if self.index >= size:
            return None
        broker = self.brokers[(self.index + self.offset) % size]
        self.index += 1
        return broker


class _Racks:
    """The racks, taken in turn (Kafka's ``StripedReplicaPlacer.RackList``)."""

    def __init__(
        self,
        racks: Mapping[str | None, list[int]],
        start: int,
        existing: Sequence[Sequence[int]],
    ) -> None:
        self.random = random.Random(start)
        self.names = sorted(racks, key=lambda r: (r is not None, r or ""))
        rack_of = {b: r for r, brokers in racks.items() for b in brokers}
        self.racks: dict[str | None, _Brokers] = {}
        for name, brokers in racks.items():
            previous = _previous_broker(rack_of, existing, name)
            ordered = sorted(brokers)
            offset = start if previous is None else ordered.index(previous) + 1
            self.racks[name] = _Brokers(ordered, offset)
        self.size = sum(len(b) for b in racks.values())
        last_leader = existing[-1][0] if existing and existing[-1] else None
        if last_leader in rack_of:
            at = self.names.index(rack_of[last_leader])
            self.offset = (at + 1) % len(self.names)
        else:
            self.offset = start % len(self.names)
        self.epoch = 0

    def place(self, replication_factor: int) -> list[int]:
        if self.epoch == self.size and self.size > 1:
            self._shuffle()
            self.epoch = 0
        names = self.names
        if self.offset == len(names):
            self.offset = 0
        # the leader: the first rack from the offset with a broker left this round
        first = self.offset
        while (leader := self.racks[names[first]].next(self.epoch)) is None:
            first = (first + 1) % len(names)
        replicas = [leader]
        at = self.offset
        skip: int | None = first  # the leader's rack is passed over once
        while len(replicas) < replication_factor:
            found = None
            if at == skip:
                skip = None
            else:
                found = self.racks[names[at]].next(self.epoch)
            at = (at + 1) % len(names)
            if found is not None:
                replicas.append(found)
        self.epoch += 1
        self.offset += 1
        return replicas

    def _shuffle(self) -> None:
        self.random.shuffle(self.names)
        for rack in self.racks.values():
            self.random.shuffle(rack.brokers)


def _previous_broker(
    rack_of: Mapping[int, str | None],
    existing: Sequence[Sequence[int]],
    rack: str | None,
) -> int | None:
    """The broker of ``rack`` the latest existing partition used (its first
    replica on that rack), if any (Kafka's ``tryGetPreviousBrokerOffset``)."""
    for replicas in reversed(existing):
        for broker in replicas:
            if broker in rack_of and rack_of[broker] == rack:
                return broker
    return None


def striped_placement(
    racks: Mapping[int, str | None],
    count: int,
    replication_factor: int,
    *,
    start: int = 0,
    existing: Sequence[Sequence[int]] = (),
) -> list[list[int]]:
    """Replica lists of ``count`` new partitions on the brokers ``racks`` (node
    id -> rack, ``None``: none), each ``replication_factor`` long and led by its
    first replica (see the module docstring). ``start`` rotates where a topic
    without ``existing`` partitions (their replica lists, for CreatePartitions)
    begins.

    Raises:
        TopicError: INVALID_REPLICATION_FACTOR, ``replication_factor`` below 1
            or above the brokers (Kafka's messages, as
            ``ReplicationControlManager`` wraps the placer's).
    """
    if replication_factor < 1:
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Invalid replication factor {replication_factor}: the replication "
            "factor must be positive.",
        )
    if replication_factor > len(racks):
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): "
            f"The target replication factor of {replication_factor} cannot be "
            f"reached because only {len(racks)} broker(s) are registered.",
        )
    by_rack: dict[str | None, list[int]] = {}
    for broker, rack in racks.items():
        by_rack.setdefault(rack, []).append(broker)
    placer = _Racks(by_rack, start, existing)
    return [placer.place(replication_factor) for _ in range(count)]
