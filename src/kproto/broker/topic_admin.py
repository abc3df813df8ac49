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

The file I/O of creating logs (a directory, an empty segment and
``partition.metadata`` per partition: milliseconds each on a slow disk) runs on a
worker thread in jobs of at most :data:`STEP` partitions
(:meth:`ClusterState.open_partitions`), so the event loop keeps answering other
clients while 10,000 topics are created, as Kafka's controller creates topics off
the brokers' request threads; only the registration of each job's logs runs on the
loop. A topic being created is reserved by name
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
    "DEFAULT_REPLICATION_FACTOR",
    "NewTopic",
    "TopicOutcome",
    "create_topics",
    "create_partitions",
    "check_replica_lists",
]

#: Kafka's ``QuorumController.MAX_RECORDS_PER_USER_OP``: partitions one request may create.
MAX_PARTITIONS_PER_REQUEST = 10_000
#: Partition logs created per worker-thread job.
STEP = 64
#: Kafka's ``default.replication.factor`` default.
DEFAULT_REPLICATION_FACTOR = 1
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
    state: ClusterState,
    replica_lists: Sequence[Sequence[int]],
    replication_factor: int | None = None,
    first_partition: int = 0,
) -> None:
    """Kafka's ``ReplicationControlManager.validateManualPartitionAssignment`` for
    each list (the lists of partitions ``first_partition``, ``first_partition + 1``
    ...): not empty, brokers of the cluster, none twice, as many replicas as
    ``replication_factor`` (None: as the first list), and at least one live
    broker per list.

    Raises:
        TopicError: INVALID_REPLICA_ASSIGNMENT with Kafka's message.
    """
    live = state.live_node_ids()
    for i, replicas in enumerate(replica_lists):
        if not replicas:
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        previous = None
        for broker in sorted(replicas):
            if broker not in state.node_ids:
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker}, "
                    "but no such broker is registered.",
                )
            if broker == previous:
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "The manual partition assignment includes the broker "
                    f"{broker} more than once.",
                )
            previous = broker
        if replication_factor is not None and len(replicas) != replication_factor:
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes a partition with "
                f"{len(replicas)} replica(s), but this is not consistent with "
                f"previous partitions, which have {replication_factor} replica(s).",
            )
        replication_factor = len(replicas)
        if not any(broker in live for broker in replicas):
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "All brokers specified in the manual partition assignment for "
                f"partition {first_partition + i} are fenced or in controlled "
                "shutdown.",
            )


def _manual_assignment(state: ClusterState, topic: NewTopic) -> list[list[int]]:
    """The replica lists of a manual assignment, checked as Kafka's
    ``ReplicationControlManager.createTopic``.

    Raises:
        TopicError: INVALID_REQUEST (``replication_factor`` or ``num_partitions``
            not -1), INVALID_REPLICA_ASSIGNMENT (a partition twice, indexes not
            0..n-1, or a replica list :func:`check_replica_lists` refuses).
    """
    if topic.replication_factor != -1:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor "
            "was not set to -1.",
        )
    if topic.num_partitions != -1:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was "
            "not set to -1.",
        )
    by_index: dict[int, tuple[int, ...]] = {}
    for index, replicas in topic.assignments:
        if index in by_index:
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Found multiple manual partition assignments for partition {index}",
            )
        by_index[index] = replicas
    if sorted(by_index) != list(range(len(by_index))):
        raise TopicError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
    replica_lists = [list(by_index[p]) for p in range(len(by_index))]
    check_replica_lists(state, replica_lists)
    return replica_lists


def _replication_factor(state: ClusterState, topic: NewTopic) -> int:
    """The replication factor of a topic without manual assignment (-1: the
    default, 1, as Kafka's ``default.replication.factor``).

    Raises:
        TopicError: INVALID_REPLICATION_FACTOR (0 or below -1),
            INVALID_PARTITIONS (``num_partitions`` 0 or below -1), with Kafka's
            messages.
    """
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default "
            "value.",
        )
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise TopicError(
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    return (
        DEFAULT_REPLICATION_FACTOR
        if topic.replication_factor == -1
        else (topic.replication_factor)
    )


def _plan(state: ClusterState, topic: NewTopic, planned: int) -> TopicMetadata:
    """The topic ``topic`` would be (:meth:`ClusterState.plan_topic`), with its
    manual assignment or replication factor checked as Kafka's.

    Raises:
        TopicError: as :meth:`ClusterState.plan_topic`, :func:`_manual_assignment`
            and :func:`_replication_factor`.
    """
    if topic.assignments:
        return state.plan_topic(
            topic.name,
            configs=topic.configs,
            also_planned=planned,
            assignment=_manual_assignment(state, topic),
        )
    return state.plan_topic(
        topic.name,
        topic.num_partitions,
        configs=topic.configs,
        also_planned=planned,
        replication_factor=_replication_factor(state, topic),
    )


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
    """Validate every topic (yielding to the event loop every :data:`STEP`
    topics), then create the valid ones (unless ``validate_only``) in
    worker-thread jobs of :data:`STEP` partitions, publish them, and save the
    metadata once. Returns one outcome per requested topic, in order.

    Errors per topic: POLICY_VIOLATION (over the per-request cap: every topic;
    over the cluster's ``max_partitions``), INVALID_REQUEST (a name given twice),
    INVALID_REPLICATION_FACTOR (0, below -1, or above the live nodes),
    INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT (a manual assignment Kafka
    refuses, see :func:`check_replica_lists`), and those of
    :meth:`ClusterState.plan_topic`; KAFKA_STORAGE_ERROR when its logs cannot be
    created. A created topic keeps its replicas (placed, or as assigned), each
    partition led by its first live replica (Kafka's
    ``ReplicationControlManager.createTopic``).
    """
    outcomes = [TopicOutcome(t.name) for t in topics]
    total = sum(_requested_partitions(t, state.config.num_partitions) for t in topics)
    if total > MAX_PARTITIONS_PER_REQUEST:
        for outcome in outcomes:
            outcome.error_code, outcome.message = ErrorCode.POLICY_VIOLATION, _TOO_MANY
        return outcomes
    names = Counter(t.name for t in topics)
    # validate_only reserves nothing, so it counts the partitions it planned; a
    # real creation reserves each topic at once (ClusterState.begin_topic: its
    # name and partitions), so a request served meanwhile sees it
    planned = 0
    creating: list[TopicOutcome] = []
    try:
        for i, (topic, outcome) in enumerate(zip(topics, outcomes, strict=True)):
            if i % STEP == STEP - 1:
                await asyncio.sleep(0)  # let other clients in between
            if names[topic.name] > 1:
                outcome.error_code = ErrorCode.INVALID_REQUEST
                outcome.message = "Duplicate topic name."
                continue
            try:
                outcome.info = _plan(state, topic, planned)
            except TopicError as err:
                outcome.error_code = ErrorCode(err.error_code)
                outcome.message = str(err)
                continue
            if validate_only:
                planned += outcome.info.partitions
            else:
                state.begin_topic(outcome.info)
                creating.append(outcome)
    except BaseException:
        for outcome in creating:  # cancelled: release the reservations
            assert outcome.info is not None
            state.abort_topic(outcome.info)
        raise
    if validate_only:
        return outcomes
    work = [(o.info, p) for o in creating if o.info for p in range(o.info.partitions)]
    failed: dict[str, OSError] = {}
    try:
        # many small topics share one worker-thread job of STEP partitions
        for first in range(0, len(work), STEP):
            chunk = [
                (i, p) for i, p in work[first : first + STEP] if i.name not in failed
            ]
            failed.update(await state.open_partitions(chunk))
    except BaseException:
        for outcome in creating:  # cancelled: leave nothing half-made
            assert outcome.info is not None
            state.abort_topic(outcome.info)
        raise
    created = False
    for outcome in creating:
        info = outcome.info
        assert info is not None
        error = failed.get(info.name)
        if error is not None:
            state.abort_topic(info)
            outcome.info = None
            outcome.error_code = ErrorCode.KAFKA_STORAGE_ERROR
            outcome.message = (
                f"could not create the logs of topic {info.name!r}: {error}"
            )
            continue
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
    (the assignments, when given: one broker id list per new partition, of the
    topic's replication factor, whose first live broker leads it; else the new
    partitions get the topic's replication factor, placed after the existing
    ones as Kafka's ``StripedReplicaPlacer`` places them: racks first), validated
    first and applied per topic all or nothing, in bounded steps; metadata saved
    once. Returns ``(error_code, message)`` per request entry (Kafka's
    ``ReplicationControlManager.createPartitions``).

    Errors: POLICY_VIOLATION (more than :data:`MAX_PARTITIONS_PER_REQUEST` new
    partitions in the request: every entry; over ``max_partitions``),
    INVALID_REQUEST (a topic given twice), INVALID_REPLICA_ASSIGNMENT (not one
    list per new partition, or a list :func:`check_replica_lists` refuses),
    INVALID_REPLICATION_FACTOR (the topic's factor above the live nodes), those of
    :meth:`ClusterState.check_new_partitions`, KAFKA_STORAGE_ERROR.
    """
    results: list[tuple[ErrorCode, str | None]] = [(ErrorCode.NONE, None)] * len(
        requests
    )
    names = Counter(name for name, _, _ in requests)
    plans: list[tuple[int, TopicMetadata, int]] = []
    placements: dict[int, list[list[int]]] = {}
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
                check_replica_lists(
                    state, assignments, info.replication_factor, info.partitions
                )
                placements[i] = [list(replicas) for replicas in assignments]
            else:
                placements[i] = state.place_replicas(
                    0,
                    count - info.partitions,
                    info.replication_factor,
                    existing=[info.replicas_of(p) for p in range(info.partitions)],
                )
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
    for i, info, count in plans:
        if results[i][0] != ErrorCode.NONE:
            continue
        before = info.partitions
        try:
            while info.partitions < count:
                await state.add_partition(info, placements[i][info.partitions - before])
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
