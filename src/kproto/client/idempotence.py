"""The idempotent producer's state: producer id, epoch and per-partition sequences.

Sources: KIP-98 (idempotence: a producer id and epoch from InitProducerId, a
sequence number per partition in each batch, so the broker stores a retried batch
once), KIP-360 (on UNKNOWN_PRODUCER_ID or OUT_OF_ORDER_SEQUENCE_NUMBER the producer
bumps its epoch by sending InitProducerId v3+ with its current id and epoch, and
its sequences start again at 0) and Java's ``TransactionManager`` /
``Sender`` (what is retried, what bumps the epoch, what fails the batch).
Sans-IO: :class:`kproto.client.core.ClientCore` drives it.
"""

from __future__ import annotations

from typing import Any

from kproto.errors import ErrorCode
from kproto.index import ApiKey

from .protocol import ANY_NODE, Call, Op, check_code
from .results import BrokerError

__all__ = [
    "IDEMPOTENT_ATTEMPTS",
    "Idempotence",
    "ProducerSequenceError",
    "RESET_CODES",
]

#: How many times an idempotent batch is sent at most (the first send included):
#: each resend carries the same producer id, epoch and sequence (bounded, where
#: Java retries until ``delivery.timeout.ms``).
IDEMPOTENT_ATTEMPTS = 4

#: Errors after which the producer bumps its epoch before producing again
#: (Java's ``TransactionManager.canRetry`` / ``handleFailedBatch`` for an
#: idempotent, non-transactional producer).
RESET_CODES = frozenset(
    {
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.UNKNOWN_PRODUCER_ID,
    }
)

#: Java's ``Short.MAX_VALUE``: an epoch that cannot be bumped (a new id is asked).
MAX_EPOCH = 0x7FFF


class ProducerSequenceError(BrokerError):
    """The broker refused an idempotent batch's producer id, epoch or sequence
    (OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, PRODUCER_FENCED, or
    UNKNOWN_PRODUCER_ID again after an epoch bump). The batch was not stored; the
    client bumps its epoch before its next produce (KIP-360), so the client stays
    usable."""


class Idempotence:
    """Producer id, epoch and the next sequence of each partition.

    Attributes:
        producer_id: from InitProducerId (-1 before the first produce).
        producer_epoch: likewise.
        sequences: ``{(topic, partition): next base_sequence}``.
        bump_needed: a batch's fate is unknown or the broker refused the sequence
            state: the next :meth:`ensure` asks InitProducerId again.
    """

    def __init__(self) -> None:
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[tuple[str, int], int] = {}
        self.bump_needed = False

    def ensure(self) -> Op[None]:
        """InitProducerId if there is no producer id yet, or an epoch bump is
        needed: with the current id and epoch (v3+, KIP-360) when there is one, a
        new id otherwise (the broker refused the bump, the epoch is exhausted, or
        it speaks v0-v2, which ignore those fields and hand out a new id).

        Raises:
            BrokerError: InitProducerId failed (e.g. CLUSTER_AUTHORIZATION_FAILED).
        """
        if self.producer_id >= 0 and not self.bump_needed:
            return
        bump = self.producer_id >= 0 and self.producer_epoch < MAX_EPOCH
        response = yield from self._init(bump)
        if bump and response.error_code in RESET_CODES:
            response = yield from self._init(False)
        check_code(response.error_code, "InitProducerId")
        self.producer_id = response.producer_id
        self.producer_epoch = response.producer_epoch
        self.sequences.clear()
        self.bump_needed = False

    def _init(self, bump: bool) -> Op[Any]:
        def build(v: int) -> dict[str, Any]:
            return {
                "transactional_id": None,
                "transaction_timeout_ms": 2**31 - 1,  # Java's for no transactions
                "producer_id": self.producer_id if bump else -1,
                "producer_epoch": self.producer_epoch if bump else -1,
            }

        response = yield Call(ANY_NODE, ApiKey.INIT_PRODUCER_ID, build)
        return response

    def batch_header(self, topic: str, partition: int) -> tuple[int, int, int]:
        """``(producer_id, producer_epoch, base_sequence)`` of the next batch for
        a partition."""
        return (
            self.producer_id,
            self.producer_epoch,
            self.sequences.get((topic, partition), 0),
        )

    def acknowledged(self, topic: str, partition: int, count: int) -> None:
        """A batch of ``count`` records was stored: advance the sequence (it wraps
        to 0 after int32 max, as Java's ``DefaultRecordBatch.incrementSequence``)."""
        key = (topic, partition)
        self.sequences[key] = (self.sequences.get(key, 0) + count) & 0x7FFFFFFF
