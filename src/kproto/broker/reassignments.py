"""Partition reassignments (KIP-455) as Kafka's KRaft controller runs them:
started, completed, cancelled and listed.

After Kafka's ``ReplicationControlManager`` (``changePartitionReassignment``,
``cancelPartitionReassignment``, ``listPartitionReassignments``),
``PartitionReassignmentReplicas`` and ``PartitionReassignmentRevert``:

* A reassignment of a partition to ``target`` replicas computes the replicas to
  add (in ``target``, not in the current replicas) and to remove (the other
  way), both sorted, and makes the partition's replicas ``target`` followed by
  those being removed. It completes when the in-sync replicas other than those
  being removed are not empty and hold every remaining replica: the replicas are
  then ``target``, and a leader outside it (or on a stopped node) hands over to
  the first in-sync replica of ``target`` (leader epoch bumped).
* Every node reads the same logs, so a replica is in sync as soon as its node is
  listed: a reassignment completes at once unless a replica it adds is on a
  stopped node; it then stays in progress (ListPartitionReassignments shows it,
  with ``adding_replicas`` and ``removing_replicas``; Metadata shows the merged
  replicas, the new one offline) until that node starts
  (:func:`complete_reassignments`).
* A reassignment of a partition already reassigning starts from its merged
  replicas, as Kafka's does.
* Cancelling (null replicas) a partition not reassigning is
  NO_REASSIGNMENT_IN_PROGRESS; else its replicas go back to the merged ones
  minus those being added, and a leader that was being added hands over to the
  first in-sync one of them. When none of them is in sync, the revert needs an
  unclean leader election: INVALID_REPLICA_ASSIGNMENT unless the topic has
  ``unclean.leader.election.enable``.

The partitions in progress are kept in :attr:`TopicMetadata.reassigning` (saved
in ``kproto-topics.json``). Every function runs on the cluster's event-loop
thread; the caller saves the topics.
"""

from __future__ import annotations

from typing import NamedTuple

from kproto.broker.errors import TopicError
from kproto.broker.leadership import OFFLINE, set_leader
from kproto.broker.state import ClusterState
from kproto.broker.topic_admin import check_replica_lists
from kproto.broker.topic_metadata import TopicMetadata
from kproto.errors import ErrorCode

__all__ = [
    "OngoingReassignment",
    "cancel_reassignment",
    "change_reassignment",
    "complete_reassignments",
    "ongoing_reassignments",
]


class OngoingReassignment(NamedTuple):
    """One partition being reassigned (ListPartitionReassignments'
    ``OngoingPartitionReassignment``): its ``replicas`` (the target, then those
    being removed), ``adding_replicas`` and ``removing_replicas``."""

    partition_index: int
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


def _partition(state: ClusterState, topic: str, partition: int) -> TopicMetadata:
    info = state.topics.get(topic)
    if info is None:
        raise TopicError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"Unable to find a topic named {topic}.",
        )
    if not 0 <= partition < info.partitions:
        raise TopicError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"Unable to find partition {topic}:{partition}.",
        )
    return info


def _set_replicas(info: TopicMetadata, partition: int, replicas: list[int]) -> None:
    while len(info.replicas) <= partition:
        info.replicas.append(info.replicas_of(len(info.replicas)))
    info.replicas[partition] = replicas


def _elect_if_needed(
    state: ClusterState, info: TopicMetadata, partition: int, replicas: list[int]
) -> None:
    """Hand the leadership to the first live replica of ``replicas`` when the
    leader is not one of them or its node is stopped (none live: offline)."""
    leader = info.leaders[partition]
    if leader in replicas and leader in state.nodes:
        return
    live = next((n for n in replicas if n in state.nodes), OFFLINE)
    if live != leader:
        set_leader(state, info.name, partition, live)


def change_reassignment(
    state: ClusterState,
    topic: str,
    partition: int,
    target: list[int],
    *,
    allow_replication_factor_change: bool = True,
) -> None:
    """Start reassigning ``topic``/``partition`` to ``target`` and complete it
    at once when its replicas are in sync (see the module docstring).

    Raises:
        TopicError: UNKNOWN_TOPIC_OR_PARTITION; INVALID_REPLICA_ASSIGNMENT (a
            target Kafka's ``validateManualPartitionAssignment`` refuses:
            :func:`kproto.broker.topic_admin.check_replica_lists`);
            INVALID_REPLICATION_FACTOR, a target of another size than the
            replicas before any reassignment while
            ``allow_replication_factor_change`` is false (KIP-860).
    """
    info = _partition(state, topic, partition)
    check_replica_lists(state, [target], first_partition=partition)
    current = info.replicas_of(partition)
    adding, _ = info.reassigning.get(partition, ([], []))
    original = [n for n in current if n not in adding]
    if not allow_replication_factor_change and len(target) != len(original):
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"The replication factor is changed from {len(original)} to "
            f"{len(target)}",
        )
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    _set_replicas(info, partition, list(target) + removing)
    if adding or removing:
        info.reassigning[partition] = (adding, removing)
    else:
        info.reassigning.pop(partition, None)
        _elect_if_needed(state, info, partition, list(target))
    _maybe_complete(state, info, partition)


def _maybe_complete(state: ClusterState, info: TopicMetadata, partition: int) -> bool:
    """Kafka's ``PartitionReassignmentReplicas.maybeCompleteReassignment``:
    finish the partition's reassignment when the in-sync replicas allow it;
    whether it finished."""
    if partition not in info.reassigning:
        return False
    _, removing = info.reassigning[partition]
    merged = info.replicas_of(partition)
    isr = [n for n in merged if n in state.nodes and n not in removing]
    remaining = [n for n in merged if n not in removing]
    if not isr or not remaining or not set(remaining) <= set(isr):
        return False
    del info.reassigning[partition]
    _set_replicas(info, partition, remaining)
    _elect_if_needed(state, info, partition, remaining)
    return True


def complete_reassignments(state: ClusterState) -> int:
    """Complete every reassignment the in-sync replicas now allow (after a node
    starts); return how many completed. The caller saves the topics when any
    did."""
    done = 0
    for info in list(state.topics.values()):
        for partition in sorted(info.reassigning):
            done += _maybe_complete(state, info, partition)
    return done


def cancel_reassignment(state: ClusterState, topic: str, partition: int) -> None:
    """Cancel the reassignment of ``topic``/``partition`` (Kafka's
    ``PartitionReassignmentRevert``): its replicas go back to those before it.

    Raises:
        TopicError: UNKNOWN_TOPIC_OR_PARTITION; NO_REASSIGNMENT_IN_PROGRESS;
            INVALID_REPLICA_ASSIGNMENT, a revert needing an unclean leader
            election on a topic without ``unclean.leader.election.enable``.
    """
    info = _partition(state, topic, partition)
    if partition not in info.reassigning:
        raise TopicError(
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            "No partition reassignment is in progress.",
        )
    adding, _ = info.reassigning[partition]
    reverted = [n for n in info.replicas_of(partition) if n not in adding]
    unclean = not any(n in state.nodes for n in reverted)
    if unclean and not info.topic_config.unclean_leader_election_enable:
        raise TopicError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Unable to revert partition assignment for {topic}:{partition} "
            "because it would require an unclean leader election.",
        )
    del info.reassigning[partition]
    _set_replicas(info, partition, reverted)
    _elect_if_needed(state, info, partition, reverted)


def ongoing_reassignments(
    state: ClusterState, wanted: list[tuple[str, list[int]]] | None
) -> list[tuple[str, list[OngoingReassignment]]]:
    """The reassignments in progress, per topic (topics without one left out):
    of every topic (``wanted`` None), else of the partitions named (unknown
    topics and partitions left out, as Kafka's ``listPartitionReassignments``)."""
    if wanted is None:
        wanted = [
            (name, sorted(info.reassigning))
            for name, info in sorted(state.topics.items())
            if info.reassigning
        ]
    out = []
    for name, partitions in wanted:
        info = state.topics.get(name)
        if info is None:
            continue
        found = [
            OngoingReassignment(
                p,
                info.replicas_of(p),
                list(info.reassigning[p][0]),
                list(info.reassigning[p][1]),
            )
            for p in partitions
            if p in info.reassigning
        ]
        if found:
            out.append((name, found))
    return out
