"""One transactional id's state: Kafka's ``TransactionState`` and ``TransactionMetadata``.

States and their ids are Kafka's (the ids are what ``TransactionLogValue``'s
``transaction_status`` holds): Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3,
CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7. Transitions are
checked against each state's valid previous states, as
``TransactionMetadata.prepareTransitionTo`` does.
"""

from __future__ import annotations

import enum

import attrs

__all__ = [
    "MAX_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "TransactionMetadata",
    "TransactionState",
    "is_epoch_exhausted",
]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
#: int16 max: epochs from ``MAX_EPOCH - 1`` on are exhausted (Kafka's isEpochExhausted).
MAX_EPOCH = 32767


class TransactionState(enum.IntEnum):
    """A transaction's state; the value is Kafka's state id, ``name_`` its name as
    DescribeTransactions / ListTransactions report it (``"Ongoing"``...)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """Kafka's name of the state (``"PrepareCommit"``)."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_kafka_name(cls, name: str) -> TransactionState | None:
        for state in cls:
            if state.kafka_name == name:
                return state
        return None


S = TransactionState
#: Kafka's ``TransactionState.validPreviousStates``.
VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # TV2 (KIP-890 part 2): an abort with nothing open bumps the epoch too
    S.PREPARE_ABORT: frozenset(
        {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    ),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka's ``TransactionMetadata.isEpochExhausted``: no epoch left to bump to."""
    return producer_epoch >= MAX_EPOCH - 1


@attrs.define
class TransactionMetadata:
    """What the coordinator knows of one transactional id (Kafka's
    ``TransactionMetadata``; written to ``__transaction_state`` as
    ``TransactionLogValue``).

    Attributes:
        transactional_id: the producer's ``transactional.id``.
        producer_id, producer_epoch: the id and epoch in use.
        last_producer_epoch: the epoch before the last bump that the producer
            asked for itself (KIP-360 retries), else -1.
        txn_timeout_ms: ``transaction.timeout.ms`` (ms) given in InitProducerId.
        state: the :class:`TransactionState`.
        partitions: the ``(topic, partition)`` pairs of the open transaction.
        txn_start_timestamp_ms: when the open transaction began (-1: none).
        txn_last_update_timestamp_ms: the last change (ms).
        previous_producer_id: the id before the last rotation of an exhausted
            epoch at TV2 (-1: none), so a retried EndTxn of the old id succeeds.
        next_producer_id: the id a prepared TV2 transaction rotates to when it
            completes (-1: no rotation).
        client_transaction_version: 2 once the producer ended a transaction with
            EndTxn v5+ (KIP-890 part 2: each end bumps the epoch), else 0.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState = TransactionState.EMPTY
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: set[tuple[str, int]] = attrs.field(factory=set)
    txn_start_timestamp_ms: int = -1
    txn_last_update_timestamp_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0

    def transition(self, state: TransactionState, now_ms: int) -> None:
        """Move to ``state``.

        Raises:
            ValueError: ``state`` may not follow the current state (a coordinator
                bug, as Kafka's IllegalStateException).
        """
        if self.state not in VALID_PREVIOUS[state]:
            raise ValueError(
                f"transaction {self.transactional_id!r}: illegal transition "
                f"{self.state.kafka_name} -> {state.kafka_name}"
            )
        if state == S.ONGOING and self.state != S.ONGOING:
            self.txn_start_timestamp_ms = now_ms
        if state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            self.partitions = set()
        self.state = state
        self.txn_last_update_timestamp_ms = now_ms

    @property
    def is_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def timed_out(self, now_ms: int) -> bool:
        """An Ongoing transaction older than its timeout (Kafka's
        ``TransactionStateManager.timedOutTransactions``)."""
        return (
            self.state == S.ONGOING
            and self.txn_start_timestamp_ms + self.txn_timeout_ms < now_ms
        )
