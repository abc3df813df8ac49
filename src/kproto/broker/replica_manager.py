"""The partitions one node leads: appending records to them and reading them back.

After Kafka's ``ReplicaManager`` (``appendRecords``, ``fetchMessages``,
``readFromLog``, ``fetchOffset``, ``deleteRecords``), ``Partition``
(``appendRecordsToLeader``, ``localLogWithEpochOrThrow``, ``readRecords``) and
``UnifiedLog`` (high watermark, last stable offset, retention). The request
handlers (:mod:`kproto.broker.handlers.produce`, :mod:`kproto.broker.handlers.fetch`)
only translate requests into these calls and their results into responses; below
this sits :class:`kproto.broker.log.PartitionLog`, which never calls back up (its
:class:`~kproto.broker.log.LogListener` is given once, when it is opened).

A Produce: for each partition, the required-acks check, the leader and
leader-epoch checks (:meth:`ReplicaManager.leader_log`), the KIP-890 transaction
check (a transactional batch only to a partition added to the producer's open
transaction), validation (inline, or off the event loop through
:class:`kproto.broker.validation_pool.ValidationPool`), on topics with Confluent's
schema validation the schema ids checked against the registry
(:mod:`kproto.broker.schema_validation`), the append, then the
topic's retention. A Fetch: the checks, the reads planned from the logs' batch
indexes, a wait for ``min_bytes`` woken by appends (Kafka's ``DelayedFetch``), then
one read per partition.

Every method runs on the cluster's event-loop thread.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

import attrs

from kproto.broker.errors import LogAppendError
from kproto.broker.fetch_session import (
    FetchPartition,
    FetchTopic,
    PartitionAnswer,
    TopicAnswer,
)
from kproto.broker.leader_epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    end_offset_for,
    epoch_for_offset,
)
from kproto.broker.leadership import leader_epoch
from kproto.broker.log import Extent, PartitionLog
from kproto.broker.log_validator import LogPolicy, RecordValidationError
from kproto.broker.read_replicas import NO_PREFERRED_REPLICA
from kproto.broker.schema_validation import check_schema_ids
from kproto.broker.state import ClusterState
from kproto.broker.topic_metadata import TopicMetadata
from kproto.errors import ErrorCode

__all__ = [
    "FetchParams",
    "PartitionResult",
    "ReplicaManager",
    "TransactionVerifier",
    "produce_policy",
    "resolve_topic",
]

T = TypeVar("T")

#: DefaultRecordBatch: attributes (int16) at byte 21, producer id (int64) at 43,
#: producer epoch (int16) at 51; attribute bit 4 is "transactional".
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER = struct.Struct(">qh")
_TRANSACTIONAL = 0x10

#: ListOffsets timestamps with a meaning of their own.
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4

_ZERO = uuid.UUID(int=0)
_NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER


class TransactionVerifier(Protocol):
    """The transaction coordinator's KIP-890 check (Kafka's partition leader asks
    with AddPartitionsToTxn ``verify_only``):
    :meth:`kproto.broker.txn.TransactionCoordinator.in_transaction`."""

    def __call__(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
        *,
        add: bool = False,
    ) -> ErrorCode: ...


class PartitionResult(NamedTuple):
    """What a Produce did with one partition's records (``ProduceResponse.json``'s
    PartitionProduceResponse: offsets -1 when nothing was appended;
    ``record_errors``: ``(batch_index, message)`` pairs)."""

    partition_index: int
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: tuple[tuple[int, str | None], ...] = ()
    error_message: str | None = None


@attrs.frozen
class FetchParams:
    """A Fetch's limits: ``max_bytes`` (bytes, the whole response), ``min_bytes``
    (bytes to wait for), ``max_wait_ms`` (ms), ``committed`` (isolation level
    READ_COMMITTED: read below the last stable offset only), and the client
    metadata of a consumer's Fetch v11+ (``rack_id``: it may then read from a
    follower, KIP-392)."""

    max_bytes: int
    min_bytes: int
    max_wait_ms: int
    committed: bool
    #: the consumer's ``client.rack`` (Fetch v11+, KIP-392; ``""``: none); None
    #: for Fetch v10 and older, which read from the leader only
    rack_id: str | None = None


def produce_policy(info: TopicMetadata, now_ms: int) -> LogPolicy:
    """The policy of a Produce to ``info`` at ``now_ms``, from its typed
    configuration (:meth:`TopicMetadata.produce_policy`: built once per
    configuration, reused within a clock millisecond)."""
    return info.produce_policy(now_ms)


def resolve_topic(
    state: ClusterState, name: str | None, topic_id: uuid.UUID | None
) -> tuple[str, ErrorCode]:
    """``(topic name, error code)`` of a topic named by ``name`` or (Fetch v13+,
    Produce v13) by ``topic_id``: an unknown id gives UNKNOWN_TOPIC_ID, neither
    UNKNOWN_TOPIC_OR_PARTITION."""
    if name:
        return name, ErrorCode.NONE
    if topic_id is not None and topic_id != _ZERO:
        for info in state.topics.values():
            if info.topic_id == topic_id:
                return info.name, ErrorCode.NONE
        return "", ErrorCode.UNKNOWN_TOPIC_ID
    return "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def _at_once(awaitable: Awaitable[T]) -> T:
    return await awaitable


class ReplicaManager:
    """The partitions node ``node_id`` of the cluster ``state`` leads.

    Args:
        state: the cluster's shared state.
        node_id: this node.
        verify_transaction: the KIP-890 check of transactional batches (None:
            none is made).
        wait: wraps the wait for a batch validated off the event loop (the
            broker passes :func:`kproto.broker.connection_limits.off_turn`, so
            the request gives up its turn meanwhile).
    """

    def __init__(
        self,
        state: ClusterState,
        node_id: int,
        *,
        verify_transaction: TransactionVerifier | None = None,
        wait: Callable[[Awaitable[Any]], Awaitable[Any]] | None = None,
    ) -> None:
        self.state = state
        self.node_id = node_id
        self.verify_transaction = verify_transaction
        self.wait = wait or _at_once

    # -- leadership ------------------------------------------------------------------

    def leader_log(
        self, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> tuple[PartitionLog | None, ErrorCode]:
        """The partition's log if this node leads it, else ``(None, error code)``:
        UNKNOWN_TOPIC_OR_PARTITION; FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when
        the client's ``current_leader_epoch`` (-1: not checked) is older / newer
        than the partition's; NOT_LEADER_OR_FOLLOWER when another node (or none)
        leads it (Kafka's ``ReplicaManager.getPartitionOrException`` and
        ``Partition.localLogWithEpochOrThrow``)."""
        state = self.state
        leader = state.leader(topic, partition)
        if leader is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if current_leader_epoch >= 0:
            epoch = leader_epoch(state, topic, partition)
            if current_leader_epoch < epoch:
                return None, ErrorCode.FENCED_LEADER_EPOCH
            if current_leader_epoch > epoch:
                return None, ErrorCode.UNKNOWN_LEADER_EPOCH
        if leader != self.node_id:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        plog = state.partition_log(topic, partition)
        if plog is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return plog, ErrorCode.NONE

    def replica_log(
        self, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> tuple[PartitionLog | None, ErrorCode, bool]:
        """For a consumer's Fetch v11+ (KIP-392): the partition's log if this
        node leads or follows it, as ``(log, error, is follower)``; the errors of
        :meth:`leader_log`, NOT_LEADER_OR_FOLLOWER when this node holds no
        replica (Kafka's ``Partition.localLogWithEpochOrThrow`` with
        ``requireLeader`` false)."""
        plog, error = self.leader_log(topic, partition, current_leader_epoch)
        if error != ErrorCode.NOT_LEADER_OR_FOLLOWER:
            return plog, error, False
        info = self.state.topics.get(topic)
        if info is None or self.node_id not in info.replicas_of(partition):
            return None, error, False
        plog = self.state.partition_log(topic, partition)
        if plog is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, False
        return plog, ErrorCode.NONE, True

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's leader epoch (-1: no such topic)."""
        return leader_epoch(self.state, topic, partition)

    # -- Produce ---------------------------------------------------------------------

    async def append_records(
        self,
        topics: Sequence[tuple[str, ErrorCode, Sequence[Any]]],
        *,
        acks: int,
        transactional_id: str | None,
        client: Hashable,
        add_to_transaction: bool = False,
    ) -> list[list[PartitionResult]]:
        """Append each partition's batches; return a result per partition, in the
        order given.

        ``topics``: ``(topic name, topic error, partitions)``, where a topic error
        (an unknown topic id) answers all its partitions and each partition has
        ``index`` and ``records`` (a request's ``PartitionProduceData``).
        ``acks`` other than 0, 1 and -1 answers INVALID_REQUIRED_ACKS; ``client``
        keys the validation pool's memory of clients sending bombs;
        ``add_to_transaction`` (Produce v12+, KIP-890 part 2) lets a
        transactional batch add its partition to the producer's transaction at
        transaction version 2 instead of requiring AddPartitionsToTxn first.

        Per partition: the leader errors of :meth:`leader_log`; INVALID_TXN_STATE
        or INVALID_PRODUCER_EPOCH (KIP-890); the log's errors
        (:meth:`kproto.broker.log.PartitionLog.append_batches`), with the
        validator's ``record_errors``.
        """
        state = self.state
        bad_acks = acks not in (0, 1, -1)
        # bound once per request: this loop runs for every produced partition
        validate = state.validation.validate
        wait = self.wait
        leader_log = self.leader_log
        topic_infos = state.topics
        now_ms = state.now_ms
        out: list[list[PartitionResult]] = []
        for name, topic_error, partitions in topics:
            results: list[PartitionResult] = []
            for pdata in partitions:
                error, message = topic_error, None
                record_errors: tuple[tuple[int, str | None], ...] = ()
                base_offset, append_time, start = -1, -1, -1
                if bad_acks:
                    error = ErrorCode.INVALID_REQUIRED_ACKS
                elif not error:
                    records = pdata.records or b""
                    plog, error = leader_log(name, pdata.index)
                    if plog is not None and transactional_id is not None:
                        error = self._verify_transaction(
                            transactional_id,
                            records,
                            name,
                            pdata.index,
                            add_to_transaction,
                        )
                    if plog is not None and not error:
                        info = topic_infos[name]
                        policy = info.produce_policy(now_ms())
                        try:
                            # small requests inline, large or bombs off the loop
                            checked = await validate(
                                records, policy, wait=wait, client=client
                            )
                            if policy.key_schema_ids or policy.value_schema_ids:
                                await check_schema_ids(
                                    name,
                                    pdata.index,
                                    info.topic_config,
                                    checked,
                                    state.schema_ids,
                                )
                            result = plog.append_batches(
                                records,
                                policy,
                                checked=checked,
                                log_append_time_ms=(
                                    policy.now_ms if policy.log_append_time else None
                                ),
                            )
                        except LogAppendError as err:
                            error, message = err.error_code, str(err)
                            if isinstance(err, RecordValidationError):
                                record_errors = err.record_errors
                        else:
                            base_offset = result.base_offset
                            append_time = result.log_append_time_ms
                            if info.topic_config.retention_overridden:
                                self.apply_retention(info, plog)
                            start = plog.log_start_offset
                results.append(
                    PartitionResult(
                        pdata.index,
                        error,
                        base_offset,
                        append_time,
                        start,
                        record_errors,
                        message,
                    )
                )
            out.append(results)
        return out

    def _verify_transaction(
        self,
        transactional_id: str | None,
        records: bytes,
        topic: str,
        partition: int,
        add: bool = False,
    ) -> ErrorCode:
        """KIP-890 part 1: a transactional batch is appended only to a partition in
        the producer's open transaction; otherwise INVALID_TXN_STATE, or the
        producer's fencing error. ``add``: part 2's implicit add instead."""
        verify = self.verify_transaction
        if (
            verify is None
            or transactional_id is None
            or len(records) < 61
            or records[16] != 2
        ):
            return ErrorCode.NONE
        (attributes,) = _ATTRIBUTES.unpack_from(records, 21)
        if not attributes & _TRANSACTIONAL:
            return ErrorCode.NONE
        producer_id, epoch = _PRODUCER.unpack_from(records, 43)
        error = verify(transactional_id, producer_id, epoch, topic, partition, add=add)
        if error == ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        return error

    def apply_retention(self, info: TopicMetadata, plog: PartitionLog) -> None:
        """Apply the topic's ``retention.ms`` / ``retention.bytes`` to one of its
        partitions (not to a compacted topic); a raised log start offset is
        checkpointed."""
        config = info.topic_config
        if not config.delete:
            return
        before = plog.log_start_offset
        plog.apply_retention(
            retention_ms=config.retention_ms,
            retention_bytes=config.retention_bytes,
            now_ms=self.state.now_ms(),
        )
        if plog.log_start_offset != before:
            self.state.save_checkpoint()

    # -- Fetch -----------------------------------------------------------------------

    async def fetch_messages(
        self, topics: list[FetchTopic], params: FetchParams
    ) -> list[TopicAnswer]:
        """Read ``topics``; wait up to ``max_wait_ms`` for at least ``min_bytes``,
        woken by every append (Kafka's ``DelayedFetch``); answer at once when a
        partition has an error or a diverging epoch.

        Per partition: the leader errors of :meth:`leader_log` (with the
        fetcher's ``current_leader_epoch``; a consumer's Fetch v11+ is served by
        a follower too, from its own watermarks, and a leader may answer it a
        ``preferred_read_replica`` and no records, KIP-392:
        :mod:`kproto.broker.read_replicas`); OFFSET_OUT_OF_RANGE outside [log
        start, high watermark]; a ``last_fetched_epoch`` whose epoch ends before
        the fetch offset answers the diverging epoch and no records (KIP-595);
        KAFKA_STORAGE_ERROR when a read fails. READ_COMMITTED reads below the last
        stable offset and lists the aborted transactions of the range read
        (KIP-98). The first batch of the first non-empty partition is returned
        whole even above the limits (KIP-74).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(params.max_wait_ms, 0) / 1000
        waiters = self.state.append_waiters
        while True:
            wake = waiters.event()
            answers, reads, total, errors = self._plan_reads(topics, params)
            left = deadline - loop.time()
            if total >= params.min_bytes or errors or left <= 0:
                break
            try:
                # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow
                # a cancellation that races with the wake-up (the node could not
                # stop)
                async with asyncio.timeout(left):
                    await wake.wait()
            except TimeoutError:
                answers, reads, total, errors = self._plan_reads(topics, params)
                break
        _read_records(answers, reads)
        return answers

    def _plan_reads(
        self, wanted: list[FetchTopic], params: FetchParams
    ) -> tuple[list[TopicAnswer], list[tuple[int, int, Extent]], int, bool]:
        """One pass over the ``wanted`` topics from the logs' batch indexes alone:
        ``(answers, reads, bytes to read, any error)``, where ``reads`` lists
        ``(topic index, partition index, extent)`` (nothing is read while a Fetch
        waits for ``min_bytes``)."""
        state = self.state
        read_replicas = state.read_replicas
        remaining = params.max_bytes
        committed = params.committed
        rack_id = params.rack_id
        # whether any leader may send this consumer to a follower (KIP-392)
        redirects = rack_id is not None and read_replicas.may_redirect(
            state.config.replica_selector_class, rack_id
        )
        total = 0
        errors = False
        answers: list[TopicAnswer] = []
        reads: list[tuple[int, int, Extent]] = []
        for t in wanted:
            name, topic_error = resolve_topic(state, t.topic, t.topic_id)
            partitions: list[PartitionAnswer] = []
            for p in t.partitions:
                error = topic_error
                hwm = start = lso = -1
                aborted = None
                plog = None
                diverging = None
                follower = False
                preferred = NO_PREFERRED_REPLICA
                if not error:
                    plog, error = self.leader_log(
                        name, p.partition, p.current_leader_epoch
                    )
                    # a consumer's Fetch v11+ may be served by a follower
                    if error == _NOT_LEADER and rack_id is not None:
                        plog, error, follower = self.replica_log(
                            name, p.partition, p.current_leader_epoch
                        )
                if plog is not None:
                    if follower:
                        start, hwm, lso = read_replicas.follower_offsets(
                            state.topics[name], p.partition, plog
                        )
                    else:
                        hwm, start = plog.high_watermark, plog.log_start_offset
                        lso = plog.last_stable_offset
                        if redirects:
                            preferred = read_replicas.preferred_read_replica(
                                state.topics[name],
                                p.partition,
                                plog,
                                selector=state.config.replica_selector_class,
                                nodes=state.nodes,
                                rack_id=rack_id or "",
                                fetch_offset=p.fetch_offset,
                            )
                    if preferred >= 0:
                        pass  # KIP-392: read from there; nothing is read here
                    elif p.last_fetched_epoch >= 0:
                        error, diverging = self._diverging(name, p, plog)
                    if error or diverging is not None or preferred >= 0:
                        pass  # the fetcher truncates first: nothing is read
                    elif not start <= p.fetch_offset <= hwm:
                        error = ErrorCode.OFFSET_OUT_OF_RANGE
                    elif remaining > 0 or total == 0:
                        # KIP-74: the first batch of the first non-empty partition
                        # is returned whole even above the limits, so a fetch
                        # always makes progress.
                        extent = plog.read_extent(
                            p.fetch_offset,
                            min(p.partition_max_bytes, max(remaining, 0)),
                            min_one=total == 0,
                            max_offset=(
                                lso if committed else hwm if follower else None
                            ),
                        )
                        if extent is not None:
                            reads.append((len(answers), len(partitions), extent))
                            total += extent.size
                            remaining -= extent.size
                            if committed:
                                aborted = _aborted(
                                    plog, p.fetch_offset, extent.end_offset
                                )
                # answer now (Kafka's DelayedFetch is skipped for these too)
                errors = (
                    errors or bool(error) or diverging is not None or preferred >= 0
                )
                partitions.append(
                    PartitionAnswer(
                        p.partition,
                        error,
                        hwm,
                        lso,
                        start,
                        aborted,
                        b"",
                        diverging,
                        preferred,
                    )
                )
            answers.append(TopicAnswer(name, t.topic_id, partitions))
        return answers, reads, total, errors

    def _diverging(
        self, topic: str, p: FetchPartition, plog: PartitionLog
    ) -> tuple[ErrorCode, tuple[int, int] | None]:
        """The fetcher's ``last_fetched_epoch`` (Fetch v12+) checked against the
        log, as Kafka's ``Partition.readRecords``: ``(error, diverging epoch)``,
        where the diverging epoch is ``(epoch, end offset)`` when the log's epoch
        ends before the fetch offset or the epoch is not in the log (the fetcher
        must truncate; nothing is read). OFFSET_OUT_OF_RANGE when the epoch's end
        is unknown or the fetch offset is below the log start offset."""
        epoch, end_offset = end_offset_for(
            plog, p.last_fetched_epoch, self.leader_epoch(topic, p.partition)
        )
        if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_EPOCH_OFFSET:
            return ErrorCode.OFFSET_OUT_OF_RANGE, None
        if p.fetch_offset < plog.log_start_offset:
            return ErrorCode.OFFSET_OUT_OF_RANGE, None
        if epoch < p.last_fetched_epoch or end_offset < p.fetch_offset:
            return ErrorCode.NONE, (epoch, end_offset)
        return ErrorCode.NONE, None

    # -- ListOffsets and DeleteRecords -----------------------------------------------

    def fetch_offset(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        *,
        current_leader_epoch: int = -1,
        committed: bool = False,
    ) -> tuple[ErrorCode, int, int, int]:
        """ListOffsets of one partition: ``(error, offset, timestamp, leader
        epoch)``. ``timestamp`` -2 earliest (and -4 earliest local), -1 latest (the
        last stable offset when ``committed``), -3 the record with the largest
        timestamp (KIP-734), else the first record whose timestamp (ms) is at or
        after it (offset -1 if none). The epoch of the latest offset is the
        partition's; of any other, the epoch that wrote it (-1: none found, or
        unstamped batches), as Kafka's ``UnifiedLog.fetchOffsetByTimestamp``."""
        plog, error = self.leader_log(topic, partition, current_leader_epoch)
        offset, found_ts = -1, -1
        current = self.leader_epoch(topic, partition)
        epoch = max(current, 0)
        if plog is not None:
            if timestamp == LATEST:
                offset = plog.last_stable_offset if committed else plog.high_watermark
            elif timestamp in (EARLIEST, EARLIEST_LOCAL):
                offset = plog.log_start_offset
            else:
                found = (
                    plog.max_timestamp()
                    if timestamp == MAX_TIMESTAMP
                    else plog.offset_for_timestamp(timestamp)
                )
                if found is not None:
                    offset, found_ts = found
            if timestamp != LATEST:  # the epoch of the offset found (-1: none)
                epoch = (
                    epoch_for_offset(plog, offset, current)
                    if offset >= 0
                    else UNDEFINED_EPOCH
                )
        return error, offset, found_ts, epoch

    def delete_records(
        self, topic: str, partition: int, offset: int
    ) -> tuple[ErrorCode, int]:
        """DeleteRecords of one partition: raise its log start offset to
        ``offset`` (-1: the high watermark); ``(error, low watermark or -1)``.
        OFFSET_OUT_OF_RANGE below 0 or above the high watermark. The caller
        checkpoints the start offsets once per request
        (``ClusterState.save_checkpoint``)."""
        plog, error = self.leader_log(topic, partition)
        if plog is None:
            return error, -1
        target = plog.high_watermark if offset == -1 else offset
        try:
            return ErrorCode.NONE, plog.delete_records_before(target)
        except LogAppendError as err:
            return err.error_code, -1


def _read_records(
    answers: list[TopicAnswer], reads: list[tuple[int, int, Extent]]
) -> None:
    """Read the planned extents into ``answers`` (one ``pread`` each); a read
    that fails (EMFILE, EIO) answers its partition KAFKA_STORAGE_ERROR."""
    for ti, pi, extent in reads:
        partitions = answers[ti].partitions
        answer = partitions[pi]
        try:
            partitions[pi] = answer._replace(records=extent.read())
        except OSError:  # this partition only
            partitions[pi] = answer._replace(
                error_code=ErrorCode.KAFKA_STORAGE_ERROR, aborted_transactions=None
            )


def _aborted(
    plog: PartitionLog, fetch_offset: int, end_offset: int
) -> list[tuple[int, int]] | None:
    """The aborted transactions a read-committed consumer needs for the batches
    fetched from ``fetch_offset`` up to ``end_offset`` (exclusive): those
    overlapping the fetched offsets (Kafka's
    ``LocalLog.collectAbortedTransactions`` up to the end of the fetched data),
    as ``(producer_id, first_offset)``; ``None`` (a null array, as Kafka sends)
    when there are none."""
    found = plog.txn_index.aborted_between(fetch_offset, end_offset)
    if not found:
        return None
    return [(a.producer_id, a.first_offset) for a in found]
