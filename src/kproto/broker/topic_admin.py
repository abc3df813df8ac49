"""CreateTopics and CreatePartitions as bounded, all-or-nothing operations.

Follows Kafka's controller (``ReplicationControlManager.createTopics`` /
``createPartitions``): the partitions of one request are capped at
:data:`MAX_PARTITIONS_PER_REQUEST` (``QuorumController.MAX_RECORDS_PER_USER_OP``,
10,000; over it every topic is answered POLICY_VIOLATION "Excessively large number of
partitions per request."), every topic is validated completely before anything is
created, and a topic is applied whole or not at all: a topic whose logs cannot be
created (EMFILE, ENOSPC ...) leaves no directory and no metadata behind and is
answered KAFKA_STORAGE_ERROR while the others proceed. Metadata
(``kproto-topics.json``) is saved once per request.

The event loop is never held longer than :data:`STEP` partition creations: the work
yields (``asyncio.sleep(0)``) between steps, so other clients are answered while
10,000 topics are created. A topic being created is reserved by name
(:attr:`ClusterState.pending_topics`) and published only when all its logs exist.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence

import attrs

from kproto.broker.errors import TopicError
from kproto.broker.state import ClusterState, TopicMetadata
from kproto.errors import ErrorCode

__all__ = [
    "MAX_PARTITIONS_PER_REQUEST",
    "STEP",
    "NewTopic",
    "TopicOutcome",
    "create_topics",
    "create_partitions",
    "check_replica_lists",
]

#: Kafka's ``QuorumController.MAX_RECORDS_PER_USER_OP``: partitions one request may create.
MAX_PARTITIONS_PER_REQUEST = 10_000
#: Partition logs created between two yields to the event loop.
STEP = 64
_TOO_MANY = "Excessively large number of partitions per request."


@attrs.frozen
class NewTopic:
    """One topic of a CreateTopics request: ``num_partitions`` (-1: the cluster
    default), ``replication_factor`` (-1: default), its manual ``assignments``
    (``(partition_index, broker ids)`` per partition; empty: none) and its
    ``configs``."""

    name: str
    num_partitions: int
    replication_factor: int = -1
    assignments: tuple[tuple[int, tuple[int, ...]], ...] = ()
    configs: dict[str, str] = attrs.field(factory=dict)


def check_replica_lists(
    state: ClusterState, replica_lists: Sequence[Sequence[int]]
) -> None:
    """Kafka's ``ReplicationControlManager.validateManualPartitionAssignment``
    for each list, and that all lists have the same length.

    Raises:
        TopicError: INVALID_REPLICA_ASSIGNMENT (an empty list, a broker twice, a
            broker id that is not a node of the cluster, lists of different sizes).
    """
    sizes = set()
    for replicas in replica_lists:
        if not replicas:
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        if len(set(replicas)) != len(replicas):
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes duplicate replicas "
                f"{list(replicas)}.",
            )
        for broker in replicas:
            if broker not in state.node_ids:
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker}, "
                    "but no such broker is registered.",
                )
        sizes.add(len(replicas))
    if len(sizes) > 1:
        raise TopicError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "All partitions in the manual partition assignment must have the same "
            "number of replicas.",
        )


def _assignment_leaders(state: ClusterState, topic: NewTopic) -> list[int]:
    """The leaders (first replicas) of a manual assignment, checked as Kafka's
    ``ReplicationControlManager.createTopic``.

    Raises:
        TopicError: INVALID_REQUEST (``num_partitions`` or ``replication_factor``
            not -1), INVALID_REPLICA_ASSIGNMENT (indexes not 0..n-1, or a replica
            list :func:`check_replica_lists` refuses).
    """
    if topic.num_partitions != -1 or topic.replication_factor != -1:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions or "
            "replicationFactor was not set to -1.",
        )
    by_index = dict(topic.assignments)
    if sorted(by_index) != list(range(len(topic.assignments))):
        raise TopicError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
    replica_lists = [by_index[p] for p in range(len(by_index))]
    check_replica_lists(state, replica_lists)
    return [replicas[0] for replicas in replica_lists]


@attrs.define
class TopicOutcome:
    """The answer for one topic: ``error_code`` (NONE on success), ``message`` and
    the topic created (or that would be, with ``validate_only``)."""

    name: str
    error_code: ErrorCode = ErrorCode.NONE
    message: str | None = None
    info: TopicMetadata | None = None


def _requested_partitions(topic: NewTopic, default: int) -> int:
    """Kafka's ``validateTotalNumberOfPartitions`` count for one topic."""
    if topic.assignments:
        return len(topic.assignments)
    if topic.num_partitions == -1:
        return default
    return max(topic.num_partitions, 0)


async def create_topics(
    state: ClusterState, topics: Sequence[NewTopic], *, validate_only: bool = False
) -> list[TopicOutcome]:
    """Validate every topic, then create the valid ones (unless
    ``validate_only``), one at a time in steps of :data:`STEP` partitions; save
    the metadata once. Returns one outcome per requested topic, in order.

    Errors per topic: POLICY_VIOLATION (over the per-request cap: every topic;
    over the cluster's ``max_partitions``), INVALID_REQUEST (a name given twice),
    INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT (a manual assignment
    Kafka refuses; an accepted one's first replicas lead), and those of
    :meth:`ClusterState.plan_topic`; KAFKA_STORAGE_ERROR when its logs cannot be
    created.
    """
    outcomes = [TopicOutcome(t.name) for t in topics]
    total = sum(_requested_partitions(t, state.num_partitions) for t in topics)
    if total > MAX_PARTITIONS_PER_REQUEST:
        for outcome in outcomes:
            outcome.error_code, outcome.message = ErrorCode.POLICY_VIOLATION, _TOO_MANY
        return outcomes
    names = Counter(t.name for t in topics)
    nodes = len(state.node_ids)
    planned = 0
    for topic, outcome in zip(topics, outcomes, strict=True):
        rf = topic.replication_factor
        if names[topic.name] > 1:
            outcome.error_code = ErrorCode.INVALID_REQUEST
            outcome.message = "Duplicate topic name."
        elif rf != -1 and not 1 <= rf <= nodes and not topic.assignments:
            outcome.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
            outcome.message = f"replication factor {rf} is not in 1..{nodes}"
        else:
            try:
                leaders = (
                    _assignment_leaders(state, topic) if topic.assignments else None
                )
                outcome.info = state.plan_topic(
                    topic.name,
                    len(leaders) if leaders else topic.num_partitions,
                    configs=topic.configs,
                    also_planned=planned,
                )
                if leaders:
                    outcome.info.leaders = leaders
            except TopicError as err:
                outcome.error_code, outcome.message = ErrorCode(err.error_code), str(
                    err
                )
            else:
                planned += outcome.info.partitions
    if validate_only:
        return outcomes
    created = False
    budget = STEP
    for outcome in outcomes:
        info = outcome.info
        if info is None:
            continue
        state.begin_topic(info)
        try:
            for p in range(info.partitions):
                state.open_partition(info, p)
                budget -= 1
                if budget <= 0:
                    budget = STEP
                    await asyncio.sleep(0)
        except OSError as err:
            state.abort_topic(info)
            outcome.info = None
            outcome.error_code = ErrorCode.KAFKA_STORAGE_ERROR
            outcome.message = f"could not create the logs of topic {info.name!r}: {err}"
            continue
        except BaseException:
            state.abort_topic(info)  # cancelled: leave nothing half-made
            raise
        state.commit_topic(info)
        created = True
    if created:
        state.save_topics()
    return outcomes


async def create_partitions(
    state: ClusterState,
    requests: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]],
    *,
    validate_only: bool = False,
) -> list[tuple[ErrorCode, str | None]]:
    """Grow each ``(topic, count, manual assignments)`` to ``count`` partitions
    (the assignments, when given: one broker id list per new partition, whose
    first broker leads it),
    validated first and applied per topic all or nothing, in bounded steps;
    metadata saved once. Returns ``(error_code, message)`` per request entry.

    Errors: POLICY_VIOLATION (more than :data:`MAX_PARTITIONS_PER_REQUEST` new
    partitions in the request: every entry; over ``max_partitions``),
    INVALID_REQUEST (a topic given twice), INVALID_REPLICA_ASSIGNMENT (not one
    list per new partition, or a list :func:`check_replica_lists` refuses), those of
    :meth:`ClusterState.check_new_partitions`, KAFKA_STORAGE_ERROR.
    """
    results: list[tuple[ErrorCode, str | None]] = [(ErrorCode.NONE, None)] * len(
        requests
    )
    names = Counter(name for name, _, _ in requests)
    plans: list[tuple[int, TopicMetadata, int]] = []
    leaders: dict[int, list[int]] = {}
    new_total = 0
    for i, (name, count, assignments) in enumerate(requests):
        if names[name] > 1:
            results[i] = (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            continue
        try:
            info = state.check_new_partitions(name, count)
            if assignments is not None:
                added = count - info.partitions
                if len(assignments) != added:
                    raise TopicError(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Attempted to add {added} additional partition(s), but "
                        f"only {len(assignments)} assignment(s) were specified.",
                    )
                check_replica_lists(state, assignments)
                leaders[i] = [replicas[0] for replicas in assignments]
        except TopicError as err:
            results[i] = (ErrorCode(err.error_code), str(err))
            continue
        new_total += count - info.partitions
        plans.append((i, info, count))
    if new_total > MAX_PARTITIONS_PER_REQUEST:
        return [(ErrorCode.POLICY_VIOLATION, _TOO_MANY)] * len(requests)
    planned = 0
    for i, info, count in plans:
        try:
            state.check_partition_room(planned + count - info.partitions)
        except TopicError as err:
            results[i] = (ErrorCode(err.error_code), str(err))
            continue
        planned += count - info.partitions
    if validate_only:
        return results
    changed = False
    budget = STEP
    for i, info, count in plans:
        if results[i][0] != ErrorCode.NONE:
            continue
        before = info.partitions
        try:
            while info.partitions < count:
                state.add_partition(info)
                if i in leaders:
                    info.leaders[-1] = leaders[i][info.partitions - 1 - before]
                budget -= 1
                if budget <= 0:
                    budget = STEP
                    await asyncio.sleep(0)
        except OSError as err:
            state.remove_partitions_from(info, before)
            results[i] = (
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"could not create partitions of {info.name!r}: {err}",
            )
            continue
        except BaseException:
            state.remove_partitions_from(info, before)
            raise
        changed = True
    if changed:
        state.save_topics()
    return results
