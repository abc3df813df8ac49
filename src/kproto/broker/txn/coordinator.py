"""The transaction coordinator of one in-process cluster (KIP-98, KIP-360, KIP-890
parts 1 and 2).

:class:`TransactionCoordinator` follows Kafka's ``TransactionCoordinator`` and
``TransactionStateManager``:

- the coordinator of a transactional id is the leader of ``__transaction_state``
  partition ``partition_for(transactional_id, partitions)``; other nodes answer
  NOT_COORDINATOR;
- every state change of a transactional id is appended to that partition as a
  ``TransactionLogKey``/``TransactionLogValue`` record before it is acted on, and
  :meth:`TransactionCoordinator.start` replays the partitions after a restart;
- ending a transaction writes PrepareCommit/PrepareAbort, then a COMMIT/ABORT
  control batch on every partition of the transaction (Kafka's
  ``TransactionMarkerChannelManager``; here a direct append to each partition log,
  :mod:`kproto.broker.txn.markers`), then CompleteCommit/CompleteAbort. All of it
  happens before EndTxn is answered (Kafka answers after the Prepare record and
  sends the markers asynchronously; the states a client can observe are the same).
- a transaction open longer than its ``transaction.timeout.ms`` is aborted by a
  timer that runs every ``abort_interval_ms`` (Kafka's
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms``), after bumping
  the producer epoch, which fences the producer, as ``abortTimedOutTransactions``.

- transaction version 2 (KIP-890 part 2), on when the cluster's finalized
  ``transaction.version`` feature is 2 (:attr:`TransactionCoordinator.
  transaction_version`): a partition leader adds a Produce v12+'s partition, and
  the group coordinator a TxnOffsetCommit v5's group, to the transaction itself
  (:meth:`TransactionCoordinator.in_transaction` with ``add``); EndTxn v5 bumps
  the epoch at every commit and abort, an exhausted epoch rotating to a new
  producer id (Kafka's ``TransactionMetadata.prepareAbortOrCommit``), and a retry
  with the epoch before the bump succeeds (:meth:`TransactionCoordinator.end_txn`
  with ``tv2``).

Everything runs on the cluster's event-loop thread; appends are synchronous, so no
transition is ever half done when another request looks (Kafka's ``pendingState``
and CONCURRENT_TRANSACTIONS while markers are in flight do not arise, except the
CONCURRENT_TRANSACTIONS Kafka answers to InitProducerId after aborting an open
transaction, which is kept so clients retry as they do with Kafka).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

import attrs

from kproto.broker.coordinator_runtime import CoordinatorRuntime, CoordinatorWriteError
from kproto.broker.groups import OFFSETS_TOPIC, GroupCoordinator
from kproto.broker.groups.timers import AsyncioScheduler, Scheduler, TimerHandle
from kproto.broker.state import ClusterState
from kproto.errors import ErrorCode
from kproto.serial import DecodeError

from .markers import write_markers
from .metadata import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TransactionState,
)
from .records import (
    TRANSACTION_STATE_TOPIC,
    decode_record,
    transaction_record,
)

__all__ = ["TransactionCoordinator", "TRANSACTION_STATE_TOPIC"]

log = logging.getLogger("kproto.broker.txn")
S = TransactionState

DEFAULT_TRANSACTION_PARTITIONS = 5
#: Kafka's transaction.max.timeout.ms default (15 minutes).
DEFAULT_MAX_TIMEOUT_MS = 900_000
DEFAULT_ABORT_INTERVAL_MS = 1_000
#: The coordinator epoch written in markers (the __transaction_state partition's
#: leader epoch, always 0 here: Metadata reports leader epoch 0).
COORDINATOR_EPOCH = 0


class TransactionCoordinator:
    """Every transactional id of one in-process cluster.

    Args:
        state: the cluster state (``leader``, ``partition_log``,
            ``ensure_internal_topic``, ``now_ms``, ``next_producer_id``).
        groups: the group coordinator, told when a marker ends the transactional
            offset commits of a group.
        scheduler: replaces asyncio's ``call_later`` (tests drive time by hand).
        partitions: partitions of ``__transaction_state`` (>= 1, default 5; Kafka's
            ``transaction.state.log.num.partitions`` is 50).
        max_timeout_ms: the largest ``transaction.timeout.ms`` accepted (ms;
            Kafka's ``transaction.max.timeout.ms``, 900000).
        abort_interval_ms: how often open transactions are checked for their
            timeout (ms; Kafka's default is 10000).
    """

    def __init__(
        self,
        state: ClusterState,
        groups: GroupCoordinator,
        *,
        scheduler: Scheduler | None = None,
        partitions: int = DEFAULT_TRANSACTION_PARTITIONS,
        max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
        abort_interval_ms: int = DEFAULT_ABORT_INTERVAL_MS,
    ) -> None:
        self.state = state
        self.groups = groups
        self.scheduler = scheduler or AsyncioScheduler()
        self.partitions = partitions
        self.max_timeout_ms = max_timeout_ms
        self.abort_interval_ms = abort_interval_ms
        self.transactions: dict[str, TransactionMetadata] = {}
        #: the ``__transaction_state`` writer
        self.runtime = CoordinatorRuntime(state, TRANSACTION_STATE_TOPIC, partitions)
        self.started = False
        self._timer: TimerHandle | None = None

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        """Replay ``__transaction_state`` (last record of each id wins), complete the
        transactions found half ended (PrepareCommit/PrepareAbort: their markers
        are written again, as Kafka's loader hands them to the marker channel),
        then accept requests and start the timeout timer. Open (Ongoing)
        transactions stay open: their timeout aborts them, or the producer's next
        InitProducerId does."""
        loaded: dict[str, TransactionMetadata | None] = {}
        for partition in range(self.partitions):
            where = f"{TRANSACTION_STATE_TOPIC}-{partition}"
            try:
                for key, value in self.runtime.records(partition):
                    try:
                        txn_id, meta = decode_record(key, value)
                    except DecodeError as exc:
                        log.warning("%s: skipping record: %s", where, exc)
                        continue
                    loaded[txn_id] = meta
            except DecodeError as exc:
                log.error("%s: cannot replay: %s", where, exc)
        for txn_id, meta in loaded.items():
            if meta is None or meta.state == S.DEAD:
                continue
            self.transactions[txn_id] = meta
            self.state.next_producer_id = max(
                self.state.next_producer_id, meta.producer_id + 1
            )
        for meta in list(self.transactions.values()):
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._complete(meta)
        self.started = True
        self._schedule()

    async def stop(self) -> None:
        """Cancel the timeout timer; leaves no task."""
        self.started = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        self._timer = self.scheduler.call_later(self.abort_interval_ms, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if not self.started:
            return
        try:
            self.abort_timed_out()
        finally:
            self._schedule()

    @property
    def transaction_version(self) -> int:
        """The cluster's finalized ``transaction.version`` feature level (0: not
        finalized; 2: KIP-890 part 2 rules)."""
        return self.state.dynamic.features.get("transaction.version", 0)

    # -- coordinator lookup ----------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        """The ``__transaction_state`` partition of ``transactional_id``."""
        return self.runtime.partition_for(transactional_id)

    def coordinator_for(self, transactional_id: str) -> int | None:
        """The node id coordinating ``transactional_id`` (creating
        ``__transaction_state`` on first use), or None without a leader."""
        return self.runtime.coordinator_for(transactional_id)

    def check_coordinator(self, transactional_id: str, node_id: int) -> ErrorCode:
        """NONE if ``node_id`` coordinates ``transactional_id``; else
        NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS
        (before :meth:`start` finished)."""
        return self.runtime.check_coordinator(transactional_id, node_id, self.started)

    # -- InitProducerId --------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        expected: tuple[int, int] | None = None,
    ) -> tuple[ErrorCode, int, int]:
        """``(error, producer_id, producer_epoch)`` for a transactional producer
        (Kafka's ``handleInitProducerId``): a new id at epoch 0 for a new
        transactional id, else the epoch bumped, which fences the older producer.
        An open transaction is aborted first (with an epoch bumped once more) and
        CONCURRENT_TRANSACTIONS answered, so the client retries. ``expected``
        ``(producer_id, epoch)`` (InitProducerId v3+, KIP-360) lets a producer
        bump its own epoch after an error; a retry of that bump gets the same
        epoch again.

        Errors: INVALID_REQUEST (empty id), INVALID_TRANSACTION_TIMEOUT (not in
        1..``max_timeout_ms``), PRODUCER_FENCED (``expected`` is not this id's
        producer), CONCURRENT_TRANSACTIONS.
        """
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, -1, -1
        if not 0 < transaction_timeout_ms <= self.max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1
        now = self.state.now_ms()
        meta = self.transactions.get(transactional_id)
        if meta is None:
            meta = TransactionMetadata(
                transactional_id,
                self._new_producer_id(),
                NO_PRODUCER_EPOCH,
                transaction_timeout_ms,
                txn_last_update_timestamp_ms=now,
            )
        if expected is not None and not (
            meta.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == meta.producer_id
        ):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if meta.state == S.ONGOING:
            error = self._fence_and_abort(meta)
            return error or ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        new = attrs.evolve(meta, partitions=set())
        if meta.is_epoch_exhausted and (
            expected is None or expected[1] == meta.producer_epoch
        ):
            # Kafka's prepareProducerIdRotation: a new id, epoch 0
            new.producer_id = self._new_producer_id()
            new.producer_epoch = 0
            new.last_producer_epoch = (
                meta.producer_epoch if expected is not None else NO_PRODUCER_EPOCH
            )
        elif expected is None:
            new.producer_epoch = meta.producer_epoch + 1
            new.last_producer_epoch = NO_PRODUCER_EPOCH
        elif (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or expected[1] == meta.producer_epoch
        ):
            new.producer_epoch = meta.producer_epoch + 1
            new.last_producer_epoch = meta.producer_epoch
        elif expected[1] == meta.last_producer_epoch:
            pass  # a retry of a bump that succeeded: same epoch again
        else:
            return ErrorCode.PRODUCER_FENCED, -1, -1
        new.txn_timeout_ms = transaction_timeout_ms
        new.transition(S.EMPTY, now)
        new.txn_start_timestamp_ms = -1
        error = self._persist(new)
        if error:
            return error, -1, -1
        return ErrorCode.NONE, new.producer_id, new.producer_epoch

    def _new_producer_id(self) -> int:
        producer_id = self.state.next_producer_id
        self.state.next_producer_id += 1
        return producer_id

    # -- AddPartitionsToTxn, AddOffsetsToTxn -----------------------------------------

    def _check_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[ErrorCode, TransactionMetadata | None]:
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        return ErrorCode.NONE, meta

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[tuple[str, int]],
        *,
        verify_only: bool = False,
    ) -> dict[tuple[str, int], ErrorCode]:
        """Add ``partitions`` to the producer's transaction, starting one if none is
        open (Kafka's ``handleAddPartitionsToTransaction``); an error per partition.

        Errors: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
        CONCURRENT_TRANSACTIONS; UNKNOWN_TOPIC_OR_PARTITION for a partition that
        does not exist, and then OPERATION_NOT_ATTEMPTED for the others, as
        Kafka's ``KafkaApis`` does.

        With ``verify_only`` (AddPartitionsToTxn v4+, KIP-890 part 1) nothing is
        added: NONE for each partition in the producer's open transaction,
        INVALID_TXN_STATE for the others; the producer errors above for all.
        """
        asked = list(dict.fromkeys(partitions))
        error, meta = self._check_producer(
            transactional_id, producer_id, producer_epoch
        )
        if meta is None:
            return dict.fromkeys(asked, error)
        if verify_only:
            return {
                tp: (
                    ErrorCode.NONE
                    if meta.state == S.ONGOING and tp in meta.partitions
                    else ErrorCode.INVALID_TXN_STATE
                )
                for tp in asked
            }
        unknown = [
            tp
            for tp in asked
            if not 0 <= tp[1] < (self.state.topic_partitions(tp[0]) or 0)
        ]
        if unknown:
            return {
                tp: (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if tp in unknown
                    else ErrorCode.OPERATION_NOT_ATTEMPTED
                )
                for tp in asked
            }
        if meta.state == S.ONGOING and set(asked) <= meta.partitions:
            return dict.fromkeys(asked, ErrorCode.NONE)
        new = attrs.evolve(meta, partitions=set(meta.partitions))
        new.transition(S.ONGOING, self.state.now_ms())
        new.partitions.update(asked)
        error = self._persist(new)
        if error:
            return dict.fromkeys(asked, error)
        return dict.fromkeys(asked, ErrorCode.NONE)

    def add_offsets(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
    ) -> ErrorCode:
        """Add the group's ``__consumer_offsets`` partition to the transaction
        (AddOffsetsToTxn), so its TxnOffsetCommit offsets get the marker."""
        self.groups.runtime.ensure_topic()
        tp = (OFFSETS_TOPIC, self.groups.partition_for(group_id))
        return self.add_partitions(transactional_id, producer_id, producer_epoch, [tp])[
            tp
        ]

    def in_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
        *,
        add: bool = False,
    ) -> ErrorCode:
        """The check a partition leader makes before appending a transactional
        batch (KIP-890 part 1 verification): NONE when the partition is in the
        producer's open transaction, else the producer's error or
        INVALID_TXN_STATE. With ``add`` (a Produce v12+ or TxnOffsetCommit v5 at
        transaction version 2, Kafka's ``AddPartitionsToTxnManager`` operation
        ``addPartition``) the partition is added instead, starting a transaction
        if none is open: the errors of :meth:`add_partitions`."""
        tp = (topic, partition)
        return self.add_partitions(
            transactional_id,
            producer_id,
            producer_epoch,
            [tp],
            verify_only=not (add and self.transaction_version >= 2),
        )[tp]

    # -- EndTxn ----------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        *,
        tv2: bool = False,
    ) -> ErrorCode:
        """Commit or abort the open transaction (Kafka's ``handleEndTransaction``):
        PrepareCommit/PrepareAbort, markers on every partition, then
        CompleteCommit/CompleteAbort. After NONE, :meth:`producer_of` is the id
        and epoch the producer goes on with (EndTxn v5's response fields).

        Transaction version 1 (``tv2`` False): the epoch stays; a retry of the
        same outcome after it completed answers NONE.

        Transaction version 2 (``tv2``: EndTxn v5+ while the cluster's
        ``transaction.version`` is 2): the epoch is bumped at every end and the
        markers carry the bumped epoch; an exhausted epoch (``MAX_EPOCH - 1``)
        moves the producer to a new id at epoch 0. A retry with the epoch
        before the bump (or the old id and its last epoch, after a rotation)
        answers NONE with the current id and epoch; an abort with nothing open
        bumps the epoch too (the producer may not know if a partition was added
        implicitly), a commit with nothing open is INVALID_TXN_STATE. Source:
        Kafka's ``TransactionCoordinator.endTransaction`` (``isValidEpoch``,
        ``retryOnEpochBump``, ``retryOnOverflow``).

        Errors: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, INVALID_TXN_STATE
        (nothing open, or the other outcome already decided),
        NOT_COORDINATOR (the state could not be written).
        """
        tv2 = tv2 and self.transaction_version >= 2
        meta = self.transactions.get(transactional_id)
        if meta is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if tv2:
            error = self._end_v2(meta, producer_id, producer_epoch, committed)
        elif meta.producer_id != producer_id:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif producer_epoch != meta.producer_epoch:
            error = ErrorCode.PRODUCER_FENCED
        elif meta.state == S.ONGOING:
            error = self._end(meta, committed)
        elif meta.state == (S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT):
            error = ErrorCode.NONE
        else:
            error = ErrorCode.INVALID_TXN_STATE
        return error

    def producer_of(self, transactional_id: str) -> tuple[int, int]:
        """``(producer_id, producer_epoch)`` of ``transactional_id`` (-1, -1:
        unknown)."""
        meta = self.transactions.get(transactional_id)
        return (-1, -1) if meta is None else (meta.producer_id, meta.producer_epoch)

    def _end_v2(
        self,
        meta: TransactionMetadata,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
    ) -> ErrorCode:
        """EndTxn at transaction version 2 (see :meth:`end_txn`)."""
        retry_on_overflow = (
            meta.previous_producer_id == producer_id
            and producer_epoch == MAX_EPOCH - 1
            and meta.producer_epoch == 0
        )
        retry_on_bump = (
            meta.producer_id == producer_id
            and meta.producer_epoch == producer_epoch + 1
        )
        if meta.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        complete = meta.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
        if complete and (retry_on_bump or retry_on_overflow):
            done = S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT
            return ErrorCode.NONE if meta.state == done else ErrorCode.INVALID_TXN_STATE
        if producer_epoch != meta.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if meta.state != S.ONGOING and committed:
            return ErrorCode.INVALID_TXN_STATE
        if meta.state not in (S.ONGOING, S.EMPTY) and not complete:
            return ErrorCode.INVALID_TXN_STATE
        bumped = attrs.evolve(meta, partitions=set(meta.partitions))
        bumped.client_transaction_version = 2
        bumped.last_producer_epoch = meta.producer_epoch
        bumped.producer_epoch = min(meta.producer_epoch + 1, MAX_EPOCH)
        if meta.is_epoch_exhausted:
            # Kafka's prepareAbortOrCommit at TV2: rotate to a new id on completion
            bumped.next_producer_id = self._new_producer_id()
        return self._end(bumped, committed)

    def _end(self, meta: TransactionMetadata, committed: bool) -> ErrorCode:
        prepared = attrs.evolve(meta, partitions=set(meta.partitions))
        prepared.transition(
            S.PREPARE_COMMIT if committed else S.PREPARE_ABORT, self.state.now_ms()
        )
        error = self._persist(prepared)
        if error:
            return error
        self._complete(prepared)
        return ErrorCode.NONE

    def _complete(self, meta: TransactionMetadata) -> None:
        """Write the markers of a prepared transaction, then its Complete state."""
        committed = meta.state == S.PREPARE_COMMIT
        write_markers(
            self.state,
            self.groups,
            meta.partitions,
            committed=committed,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            coordinator_epoch=COORDINATOR_EPOCH,
        )
        done = attrs.evolve(meta, partitions=set(meta.partitions))
        if meta.next_producer_id != NO_PRODUCER_ID:
            # a TV2 end of an exhausted epoch: the producer goes on with a new id
            done.previous_producer_id = meta.producer_id
            done.producer_id = meta.next_producer_id
            done.producer_epoch = 0
            done.last_producer_epoch = NO_PRODUCER_EPOCH
            done.next_producer_id = NO_PRODUCER_ID
        done.transition(
            S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT, self.state.now_ms()
        )
        if self._persist(done):
            # the markers are written; the state stays Prepare* in memory and the
            # next start completes it again (markers are idempotent for readers)
            log.error(
                "transaction %s: cannot write its Complete state", meta.transactional_id
            )

    def _fence_and_abort(self, meta: TransactionMetadata) -> ErrorCode:
        """Bump the epoch (fencing the producer) and abort the open transaction with
        it (Kafka's ``prepareFenceProducerEpoch`` then ``endTransaction(ABORT)``)."""
        fenced = attrs.evolve(meta, partitions=set(meta.partitions))
        # int16: at the last epoch the abort keeps it (Kafka refuses to overflow)
        fenced.producer_epoch = min(meta.producer_epoch + 1, MAX_EPOCH)
        fenced.last_producer_epoch = NO_PRODUCER_EPOCH
        return self._end(fenced, committed=False)

    def abort_timed_out(self) -> list[str]:
        """Abort every open transaction older than its timeout; return their ids."""
        now = self.state.now_ms()
        aborted = []
        for txn_id, meta in list(self.transactions.items()):
            if meta.timed_out(now):
                log.info("transaction %s timed out: aborting it", txn_id)
                if self._fence_and_abort(meta) == ErrorCode.NONE:
                    aborted.append(txn_id)
        return aborted

    # -- Describe, List --------------------------------------------------------------

    def describe(self, transactional_id: str) -> TransactionMetadata | None:
        """The metadata of ``transactional_id`` (None: unknown)."""
        meta = self.transactions.get(transactional_id)
        return None if meta is None or meta.state == S.DEAD else meta

    def list_transactions(
        self,
        node_id: int,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int = -1,
        pattern: str | None = None,
    ) -> tuple[list[TransactionMetadata], list[str]]:
        """``(transactions coordinated by node_id that pass the filters, unknown
        state names)`` (Kafka's ``listTransactionStates``): ``states`` by Kafka
        name, ``producer_ids``, ``duration_ms`` (running longer than, ms; -1 any)
        and ``pattern`` (a regular expression the id must match, KIP-1152).

        Raises:
            re.error: ``pattern`` is not a regular expression.
        """
        wanted: set[TransactionState] = set()
        unknown: list[str] = []
        for name in states:
            state = TransactionState.from_kafka_name(name)
            if state is None:
                unknown.append(name)
            else:
                wanted.add(state)
        if unknown and not wanted:
            return [], unknown
        pids = set(producer_ids)
        regex = re.compile(pattern) if pattern else None
        now = self.state.now_ms()
        out = []
        for txn_id, meta in sorted(self.transactions.items()):
            if meta.state == S.DEAD or self.coordinator_for(txn_id) != node_id:
                continue
            if wanted and meta.state not in wanted:
                continue
            if pids and meta.producer_id not in pids:
                continue
            if duration_ms >= 0 and now - meta.txn_start_timestamp_ms <= duration_ms:
                continue
            if regex is not None and not regex.fullmatch(txn_id):
                continue
            out.append(meta)
        return out, unknown

    # -- persistence -----------------------------------------------------------------

    def _persist(self, meta: TransactionMetadata) -> ErrorCode:
        """Append ``meta`` to its ``__transaction_state`` partition, then make it the
        id's state: NONE, or the coordinator's error (NOT_COORDINATOR for a failed
        write, as Kafka's ``TransactionStateManager.appendTransactionToLog``)."""
        pair = transaction_record(meta.transactional_id, meta)
        try:
            self.runtime.append(self.partition_for(meta.transactional_id), [pair])
        except CoordinatorWriteError as err:
            return err.error_code
        self.transactions[meta.transactional_id] = meta
        return ErrorCode.NONE
