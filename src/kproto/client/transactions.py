"""The transactional producer's state machine (sans-IO): transactional id,
coordinator, producer id and epoch, the partitions of the open transaction.

Sources: KIP-98 (transactions), KIP-447 (``send_offsets_to_transaction`` with the
consumer's group metadata), KIP-890 (transaction version 2), and Java's
``TransactionManager``, whose states, request order and error handling this
follows:

- ``init_transactions``: FindCoordinator (key type TRANSACTION), ApiVersions of
  the coordinator (its finalized ``transaction.version`` feature picks the
  protocol), InitProducerId with the ``transactional.id``.
- **Transaction version 1**: AddPartitionsToTxn (v0-v3) before the first batch to
  each partition, Produce at most v11, AddOffsetsToTxn then TxnOffsetCommit (at
  most v4) for offsets, EndTxn (at most v4); the epoch stays.
- **Transaction version 2** (the coordinator finalizes ``transaction.version`` 2
  and serves EndTxn v5+, Produce v12+, TxnOffsetCommit v5+): no
  AddPartitionsToTxn or AddOffsetsToTxn (Produce v12+ and TxnOffsetCommit v5 add
  implicitly), and every EndTxn v5 answers the producer id and epoch to go on
  with (the epoch bumped; a new id when it was exhausted), which reset the
  sequences.

Errors, as Java's: PRODUCER_FENCED / INVALID_PRODUCER_EPOCH end the producer
(:class:`ProducerFencedError`); a failed send, TxnOffsetCommit's group errors and
authorization errors on topics or groups make the transaction abortable
(:class:`TransactionAbortableError`: only :meth:`TransactionManager.abort_transaction`
is accepted next); CONCURRENT_TRANSACTIONS and COORDINATOR_LOAD_IN_PROGRESS are
retried after a backoff, NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE after
finding the coordinator again, a bounded number of times.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from kproto import __version__
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.records import Compression, RecordInput

from .protocol import (
    ANY_NODE,
    COORDINATOR_CODES,
    Backoff,
    Call,
    WaitingOp,
    offsets_by_topic,
)
from .results import BrokerError, ClientError, ProducedRecord, TopicPartition

if TYPE_CHECKING:
    from kproto.serde import Serializer

    from .core import ClientCore

__all__ = [
    "ConsumerGroupMetadata",
    "ProducerFencedError",
    "TransactionAbortableError",
    "TransactionError",
    "TransactionFatalError",
    "TransactionManager",
    "TransactionState",
    "TransactionStateError",
]

#: FindCoordinator key types (``FindCoordinatorRequest.json``).
_GROUP_KEY, _TRANSACTION_KEY = 0, 1

#: The last versions before transaction version 2 (Java's
#: ``LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2``); AddPartitionsToTxn v4+ is
#: the brokers' form.
PRODUCE_MAX_TV1 = 11
END_TXN_MAX_TV1 = 4
TXN_OFFSET_COMMIT_MAX_TV1 = 4
TXN_OFFSET_COMMIT_TV2 = 5
ADD_PARTITIONS_MAX = 3

#: Errors after which the request is sent again after a backoff.
_RETRY_CODES = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
_FENCED_CODES = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})
#: Errors that leave the producer usable once the transaction is aborted
#: (Java's ``transitionToAbortableError`` cases).
_ABORTABLE_CODES = frozenset(
    {
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ErrorCode.TRANSACTION_ABORTABLE,
        ErrorCode.OPERATION_NOT_ATTEMPTED,
    }
)


class TransactionState(enum.Enum):
    """Java's ``TransactionManager.State``."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


class TransactionError(ClientError):
    """A transactional producer's error (the broker's, when there is one, is the
    ``__cause__``)."""


class TransactionStateError(TransactionError):
    """A method called in a state that does not allow it (Java's
    ``IllegalStateException``), e.g. ``send`` before ``begin_transaction``."""


class TransactionAbortableError(TransactionError):
    """The open transaction failed and must be aborted
    (:meth:`TransactionManager.abort_transaction`); the producer stays usable."""


class TransactionFatalError(TransactionError):
    """The producer cannot go on (Java's fatal errors: e.g. INVALID_TXN_STATE,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED); close it."""


class ProducerFencedError(TransactionFatalError):
    """Another producer with the same ``transactional.id`` started (or the
    transaction timed out): this one is fenced (Java's
    ``ProducerFencedException``). Close it."""


@attrs.frozen
class ConsumerGroupMetadata:
    """The consumer's group identity for :meth:`TransactionManager.
    send_offsets_to_transaction` (Java's ``ConsumerGroupMetadata``, KIP-447): the
    coordinator fences a commit from a zombie member by its generation.

    Attributes:
        group_id: the consumer group.
        generation_id: the member's generation (-1: not checked).
        member_id: the member id ("": not checked).
        group_instance_id: the static member's instance id (None: dynamic).
    """

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


_S = TransactionState


def _non_empty(manager: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not value:
        raise ClientError(f"{attribute.name} must be a non-empty string")


def _positive(manager: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if value <= 0:
        raise ClientError(f"{attribute.name} must be > 0, got {value}")


@attrs.define(eq=False, slots=False)
class TransactionManager:
    """One ``transactional.id``'s producer state (Java's ``TransactionManager``).

    Constructing it makes ``core`` transactional: ``core.produce`` then adds the
    partitions to the open transaction first (:meth:`add_partitions`) and sends
    transactional batches.

    Args:
        core: the client core the producer sends with.
        transactional_id: Java's ``transactional.id``.
        transaction_timeout_ms: ``transaction.timeout.ms`` (ms; Java's default
            60000): the coordinator aborts a transaction open longer.
        retry_backoff_ms: the first wait after a retriable error (ms, doubled
            each time up to ``retry_backoff_max_ms``; Java's ``retry.backoff.ms``
            and ``retry.backoff.max.ms``).
        max_retries: how many times one request is sent again at most.

    Attributes:
        state: the :class:`TransactionState`.
        transaction_version: 1 or 2, known after :meth:`init_transactions`.
        producer_id, producer_epoch: the producer's (-1 before init).
        partitions: the partitions of the open transaction (at TV2: those sent to).
    """

    core: ClientCore
    transactional_id: str = attrs.field(validator=_non_empty)
    transaction_timeout_ms: int = attrs.field(
        default=60_000, kw_only=True, validator=_positive
    )
    retry_backoff_ms: int = attrs.field(default=100, kw_only=True)
    retry_backoff_max_ms: int = attrs.field(default=1_000, kw_only=True)
    max_retries: int = attrs.field(default=20, kw_only=True)

    def __attrs_post_init__(self) -> None:
        idempotence = self.core.idempotence
        if idempotence is None:
            from .idempotence import Idempotence

            idempotence = self.core.idempotence = Idempotence()
        self.idempotence = idempotence
        self.state = _S.UNINITIALIZED
        self.transaction_version = 1
        self.partitions: set[tuple[str, int]] = set()
        self.coordinator: int | None = None
        #: a send or offset commit was attempted: EndTxn is needed
        self._started = False
        #: the groups added with AddOffsetsToTxn (TV1)
        self._groups: set[str] = set()
        #: a send failed with its fate unknown: bump the epoch after the abort (TV1)
        self._bump_after_abort = False
        self._error: TransactionError | None = None
        self.core.transaction = self

    # ---------------------------------------------------------------- properties

    @property
    def producer_id(self) -> int:
        return self.idempotence.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.idempotence.producer_epoch

    @property
    def produce_max_version(self) -> int | None:
        """The highest Produce version to send (v11 at transaction version 1)."""
        return None if self.transaction_version >= 2 else PRODUCE_MAX_TV1

    # ---------------------------------------------------------------- helpers

    def _require(self, *states: TransactionState, action: str) -> None:
        if self.state in states:
            return
        if self.state == _S.FATAL_ERROR and self._error is not None:
            raise self._error
        if self.state == _S.ABORTABLE_ERROR and self._error is not None:
            raise TransactionAbortableError(
                f"cannot {action}: the transaction must be aborted ({self._error})"
            )
        raise TransactionStateError(
            f"cannot {action} in state {self.state.value} "
            f"(transactional.id {self.transactional_id!r})"
        )

    def _fail(self, error: TransactionError) -> TransactionError:
        """Enter the state ``error`` calls for; return it to raise."""
        if isinstance(error, TransactionFatalError):
            self.state = _S.FATAL_ERROR
        elif self.state != _S.FATAL_ERROR:
            self.state = _S.ABORTABLE_ERROR
        self._error = error
        return error

    def _classify(self, err: BrokerError) -> TransactionError:
        code = err.error_code
        if code in _FENCED_CODES:
            return ProducerFencedError(
                f"transactional.id {self.transactional_id!r} is fenced: {err}"
            )
        if code in _ABORTABLE_CODES or code in _RETRY_CODES:
            return TransactionAbortableError(str(err))
        return TransactionFatalError(str(err))

    def _backoff(self, attempt: int) -> Backoff:
        return Backoff(
            min(self.retry_backoff_ms * (2**attempt), self.retry_backoff_max_ms)
        )

    def _find_coordinator(self, key: str, key_type: int) -> WaitingOp[int]:
        """FindCoordinator for a transactional id or a group, retrying
        COORDINATOR_NOT_AVAILABLE."""

        def build(v: int) -> dict[str, Any]:
            return {"key": key, "key_type": key_type, "coordinator_keys": [key]}

        for attempt in range(self.max_retries + 1):
            response = yield Call(ANY_NODE, ApiKey.FIND_COORDINATOR, build)
            found = (
                response.coordinators[0]
                if hasattr(response, "coordinators")
                else response
            )
            code = found.error_code
            if code == ErrorCode.NONE:
                self.core.metadata.brokers[found.node_id] = (found.host, found.port)
                return int(found.node_id)
            if (
                code not in _RETRY_CODES | COORDINATOR_CODES
                or attempt == self.max_retries
            ):
                raise BrokerError(
                    code,
                    f"FindCoordinator {key}",
                    error_message=getattr(found, "error_message", None),
                )
            yield self._backoff(attempt)
        raise AssertionError("unreachable")

    def _send(
        self,
        api_key: ApiKey,
        build: Callable[[int], Mapping[str, Any]],
        code_of: Callable[[Any], int],
        where: str,
        *,
        group: str | None = None,
        max_version: int | None = None,
    ) -> WaitingOp[Any]:
        """Send to the transaction coordinator (or ``group``'s coordinator):
        resend after a backoff on a retriable error, after finding the
        coordinator again when it moved; return the first other answer.

        Raises:
            BrokerError: an error other than those, or one still there after
                ``max_retries``.
        """
        node = None if group is not None else self.coordinator
        for attempt in range(self.max_retries + 1):
            if node is None:
                if group is not None:
                    node = yield from self._find_coordinator(group, _GROUP_KEY)
                else:
                    node = yield from self._find_coordinator(
                        self.transactional_id, _TRANSACTION_KEY
                    )
                    self.coordinator = node
            response = yield Call(node, api_key, build, max_version)
            code = code_of(response)
            last = attempt == self.max_retries
            if code in COORDINATOR_CODES and not last:
                node = None
                if group is None:
                    self.coordinator = None
                continue
            if code in _RETRY_CODES and not last:
                yield self._backoff(attempt)
                continue
            if code != ErrorCode.NONE:
                raise BrokerError(code, where)
            return response
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------- init

    def init_transactions(self) -> WaitingOp[None]:
        """Find the coordinator, learn the transaction version it finalizes,
        and get the producer id and epoch (InitProducerId; this fences any older
        producer with the same ``transactional.id`` and aborts its open
        transaction). Java's ``initTransactions``.

        Raises:
            ProducerFencedError: a newer producer took the id meanwhile.
            TransactionFatalError: InitProducerId failed otherwise (e.g.
                TRANSACTIONAL_ID_AUTHORIZATION_FAILED, INVALID_TRANSACTION_TIMEOUT).
            TransactionStateError: already initialized.
        """
        self._require(_S.UNINITIALIZED, _S.INITIALIZING, action="init_transactions")
        self.state = _S.INITIALIZING
        self.coordinator = yield from self._find_coordinator(
            self.transactional_id, _TRANSACTION_KEY
        )
        self.transaction_version = yield from self._transaction_version()
        try:
            yield from self._init_producer_id(bump=False)
        except BrokerError as err:
            raise self._fail(self._classify_init(err)) from err
        self.state = _S.READY

    def _classify_init(self, err: BrokerError) -> TransactionError:
        if err.error_code in _FENCED_CODES:
            return self._classify(err)
        return TransactionFatalError(str(err))

    def _transaction_version(self) -> WaitingOp[int]:
        """2 if the coordinator finalizes ``transaction.version`` 2 and serves the
        versions that carry it (EndTxn v5, Produce v12, TxnOffsetCommit v5), as
        Java's ``TransactionManager.isTransactionV2Enabled``; else 1."""

        def build(v: int) -> dict[str, Any]:
            return {
                "client_software_name": "kproto",
                "client_software_version": __version__,
            }

        assert self.coordinator is not None
        response = yield Call(self.coordinator, ApiKey.API_VERSIONS, build)
        features = {
            f.name: f.max_version_level
            for f in getattr(response, "finalized_features", None) or ()
        }
        highest = {k.api_key: k.max_version for k in response.api_keys}
        if (
            features.get("transaction.version", 0) >= 2
            and highest.get(ApiKey.END_TXN, 0) >= 5
            and highest.get(ApiKey.PRODUCE, 0) >= 12
            and highest.get(ApiKey.TXN_OFFSET_COMMIT, 0) >= TXN_OFFSET_COMMIT_TV2
        ):
            return 2
        return 1

    def _init_producer_id(self, *, bump: bool) -> WaitingOp[None]:
        idem = self.idempotence
        pid, epoch = (idem.producer_id, idem.producer_epoch) if bump else (-1, -1)

        def build(v: int) -> dict[str, Any]:
            return {
                "transactional_id": self.transactional_id,
                "transaction_timeout_ms": self.transaction_timeout_ms,
                "producer_id": pid,
                "producer_epoch": epoch,
            }

        response = yield from self._send(
            ApiKey.INIT_PRODUCER_ID,
            build,
            lambda r: int(r.error_code),
            f"InitProducerId {self.transactional_id}",
        )
        idem.producer_id = response.producer_id
        idem.producer_epoch = response.producer_epoch
        idem.sequences.clear()

    # ---------------------------------------------------------------- transaction

    def begin_transaction(self) -> None:
        """Start a transaction (local only, as Java's ``beginTransaction``).

        Raises:
            TransactionStateError: not initialized, or a transaction is open.
        """
        self._require(_S.READY, action="begin_transaction")
        self.state = _S.IN_TRANSACTION
        self.partitions = set()
        self._groups = set()
        self._started = False

    def add_partitions(self, topic: str, partitions: Iterable[int]) -> WaitingOp[None]:
        """Before a send: at transaction version 1, AddPartitionsToTxn (v0-v3) for
        the partitions not yet in the transaction; at version 2 they are only
        noted (Produce v12+ adds them).

        Raises:
            TransactionStateError: no transaction is open.
            ProducerFencedError: AddPartitionsToTxn failed, fenced.
            TransactionAbortableError: AddPartitionsToTxn failed; abort.
            TransactionFatalError: AddPartitionsToTxn failed otherwise.
        """
        self._require(_S.IN_TRANSACTION, action="send")
        new = sorted({(topic, p) for p in partitions} - self.partitions)
        if not new:
            return
        if self.transaction_version >= 2:
            self.partitions.update(new)
            self._started = True  # the Produce may add them: EndTxn is needed
            return
        by_topic: dict[str, list[int]] = {}
        for t, p in new:
            by_topic.setdefault(t, []).append(p)
        idem = self.idempotence

        def build(v: int) -> dict[str, Any]:
            return {
                "v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": idem.producer_id,
                "v3_and_below_producer_epoch": idem.producer_epoch,
                "v3_and_below_topics": [
                    {"name": t, "partitions": ps} for t, ps in by_topic.items()
                ],
            }

        def code_of(response: Any) -> int:
            codes = [
                p.partition_error_code
                for t in response.results_by_topic_v3_and_below
                for p in t.results_by_partition
            ]
            # the cause, not the OPERATION_NOT_ATTEMPTED of the others
            real = [c for c in codes if c not in (0, ErrorCode.OPERATION_NOT_ATTEMPTED)]
            return int(real[0]) if real else int(codes[0]) if codes else 0

        try:
            yield from self._send(
                ApiKey.ADD_PARTITIONS_TO_TXN,
                build,
                code_of,
                f"AddPartitionsToTxn {self.transactional_id}",
                max_version=ADD_PARTITIONS_MAX,
            )
        except BrokerError as err:
            raise self._fail(self._classify(err)) from err
        self.partitions.update(new)
        self._started = True

    def produce_failed(self, err: Exception) -> TransactionError:
        """A send inside the transaction failed: the error to raise (fenced:
        :class:`ProducerFencedError`; a state or fatal error as it is; anything
        else makes the transaction abortable)."""
        if isinstance(err, TransactionError):
            return err
        self._bump_after_abort = True
        if isinstance(err, BrokerError) and err.error_code in _FENCED_CODES:
            return self._fail(self._classify(err))
        return self._fail(TransactionAbortableError(f"send failed: {err}"))

    def send(
        self,
        topic: str,
        records: Sequence[RecordInput],
        *,
        partition: int | None = None,
        compression: Compression = Compression.NONE,
        timeout_ms: int = 30_000,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
    ) -> WaitingOp[list[ProducedRecord]]:
        """Produce ``records`` inside the open transaction (``acks=-1``); the
        arguments and result as :meth:`kproto.client.Client.produce`. A
        read_committed consumer sees them once the transaction commits.

        Raises:
            TransactionStateError: no transaction is open.
            TransactionAbortableError: the send failed: abort the transaction.
            ProducerFencedError: fenced.
        """
        return self.core.produce(
            topic,
            records,
            partition=partition,
            acks=-1,
            compression=compression,
            timeout_ms=timeout_ms,
            key_serializer=key_serializer,
            value_serializer=value_serializer,
        )

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int],
        group_metadata: ConsumerGroupMetadata,
        *,
        metadata: str | None = "",
    ) -> WaitingOp[None]:
        """Commit ``{TopicPartition: next offset to read}`` for the consumer's group
        inside the transaction (Java's ``sendOffsetsToTransaction``): visible to
        the group once the transaction commits. TV1: AddOffsetsToTxn then
        TxnOffsetCommit (v0-v4); TV2: TxnOffsetCommit v5 alone.

        Raises:
            TransactionStateError: no transaction is open.
            ProducerFencedError: fenced.
            TransactionAbortableError: the group refused the commit
                (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID: the
                consumer lost its partitions; GROUP_AUTHORIZATION_FAILED).
        """
        self._require(_S.IN_TRANSACTION, action="send_offsets_to_transaction")
        group = group_metadata.group_id
        idem = self.idempotence
        if self.transaction_version >= 2:
            self._started = True  # TxnOffsetCommit v5 adds the group
        try:
            if self.transaction_version < 2 and group not in self._groups:

                def build_add(v: int) -> dict[str, Any]:
                    return {
                        "transactional_id": self.transactional_id,
                        "producer_id": idem.producer_id,
                        "producer_epoch": idem.producer_epoch,
                        "group_id": group,
                    }

                yield from self._send(
                    ApiKey.ADD_OFFSETS_TO_TXN,
                    build_add,
                    lambda r: int(r.error_code),
                    f"AddOffsetsToTxn {group}",
                )
                self._groups.add(group)
                self._started = True
            by_topic = offsets_by_topic(offsets)

            def build_commit(v: int) -> dict[str, Any]:
                return {
                    "transactional_id": self.transactional_id,
                    "group_id": group,
                    "producer_id": idem.producer_id,
                    "producer_epoch": idem.producer_epoch,
                    "generation_id_or_member_epoch": group_metadata.generation_id,
                    "member_id": group_metadata.member_id,
                    "group_instance_id": group_metadata.group_instance_id,
                    "topics": [
                        {
                            "name": t,
                            "partitions": [
                                {
                                    "partition_index": p,
                                    "committed_offset": o,
                                    "committed_leader_epoch": -1,
                                    "committed_metadata": metadata,
                                }
                                for p, o in parts
                            ],
                        }
                        for t, parts in by_topic.items()
                    ],
                }

            def code_of(response: Any) -> int:
                codes = [p.error_code for t in response.topics for p in t.partitions]
                return next((int(c) for c in codes if c), 0)

            if by_topic:
                yield from self._send(
                    ApiKey.TXN_OFFSET_COMMIT,
                    build_commit,
                    code_of,
                    f"TxnOffsetCommit {group}",
                    group=group,
                    max_version=(
                        TXN_OFFSET_COMMIT_TV2
                        if self.transaction_version >= 2
                        else TXN_OFFSET_COMMIT_MAX_TV1
                    ),
                )
        except BrokerError as err:
            raise self._fail(self._classify(err)) from err

    def commit_transaction(self) -> WaitingOp[None]:
        """Commit the open transaction (EndTxn with ``committed``; none when nothing
        was sent). Called again after an error it sends the EndTxn again.

        Raises:
            TransactionStateError: no transaction is open.
            TransactionAbortableError: the transaction failed: abort it.
            ProducerFencedError, TransactionFatalError: EndTxn failed.
        """
        self._require(
            _S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION, action="commit_transaction"
        )
        self.state = _S.COMMITTING_TRANSACTION
        yield from self._end(committed=True)

    def abort_transaction(self) -> WaitingOp[None]:
        """Abort the open transaction (EndTxn without ``committed``; none when
        nothing was sent), also after a :class:`TransactionAbortableError`. At
        transaction version 1 the epoch is bumped afterwards (InitProducerId
        v3+, KIP-360) when a send failed with its fate unknown.

        Raises:
            TransactionStateError: no transaction is open.
            ProducerFencedError, TransactionFatalError: EndTxn failed.
        """
        self._require(
            _S.IN_TRANSACTION,
            _S.ABORTABLE_ERROR,
            _S.ABORTING_TRANSACTION,
            action="abort_transaction",
        )
        self.state = _S.ABORTING_TRANSACTION
        yield from self._end(committed=False)
        if self._bump_after_abort and self.transaction_version < 2:
            try:
                yield from self._init_producer_id(bump=True)
            except BrokerError as err:
                raise self._fail(self._classify_init(err)) from err
        self._bump_after_abort = False

    def _end(self, *, committed: bool) -> WaitingOp[None]:
        if self._started:
            idem = self.idempotence
            tv2 = self.transaction_version >= 2
            pid, epoch = idem.producer_id, idem.producer_epoch

            def build(v: int) -> dict[str, Any]:
                if tv2 and v < 5:
                    raise ClientError(
                        f"EndTxn v{v} negotiated: transaction version 2 needs v5+"
                    )
                return {
                    "transactional_id": self.transactional_id,
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "committed": committed,
                }

            try:
                response = yield from self._send(
                    ApiKey.END_TXN,
                    build,
                    lambda r: int(r.error_code),
                    f"EndTxn {self.transactional_id}",
                    max_version=None if tv2 else END_TXN_MAX_TV1,
                )
            except BrokerError as err:
                error = self._classify(err)
                if not isinstance(error, ProducerFencedError):
                    error = TransactionFatalError(str(err))
                raise self._fail(error) from err
            if tv2:
                # KIP-890 part 2: the bumped epoch (or a new id), sequences from 0
                idem.producer_id = response.producer_id
                idem.producer_epoch = response.producer_epoch
                idem.sequences.clear()
        self.state = _S.READY
        self._error = None
        self.partitions = set()
        self._groups = set()
        self._started = False
