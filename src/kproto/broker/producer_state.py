"""Idempotent producer state of one partition: Kafka's ``ProducerStateManager``.

Per producer id: the epoch and the last five batches' sequence ranges, so that a
retried batch is recognised and not written twice, and a gap or an old epoch is
refused, as Kafka's ``ProducerAppendInfo.checkSequence`` and
``ProducerStateEntry.findDuplicateBatch`` do (Kafka 4: a gap is
OUT_OF_ORDER_SEQUENCE_NUMBER; a duplicate among the cached batches succeeds with the
earlier offset; DUPLICATE_SEQUENCE_NUMBER is no longer returned by Kafka's log).
"""

from __future__ import annotations

import attrs

from kproto.broker.errors import ProducerStateError
from kproto.errors import ErrorCode

__all__ = ["ProducerState", "ProducerStateManager", "ProducerStateError"]

#: Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN.
NUM_BATCHES_TO_RETAIN = 5


@attrs.define
class ProducerState:
    """One producer's epoch and last batches as ``(first_sequence, last_sequence,
    base_offset)`` (Kafka's ``ProducerStateEntry``), the max timestamp (ms) of its
    last batch and the coordinator epoch of its last transaction marker (-1:
    none)."""

    producer_epoch: int
    batches: list[tuple[int, int, int]] = attrs.field(factory=list)
    last_timestamp: int = -1
    coordinator_epoch: int = -1

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


class ProducerStateManager:
    """Every idempotent producer seen on one partition.

    Attributes:
        producers: producer id -> :class:`ProducerState`.
        max_producer_id: the largest producer id seen (-1: none), so that ids
            handed out after a restart do not collide.
    """

    def __init__(self) -> None:
        self.producers: dict[int, ProducerState] = {}
        self.max_producer_id = -1

    def check(
        self, producer_id: int, producer_epoch: int, first_seq: int, last_seq: int
    ) -> int | None:
        """Check a batch before it is appended; return the base offset of the same
        batch appended before (a retry), else None.

        Raises:
            ProducerStateError: an older epoch (INVALID_PRODUCER_EPOCH), a new
                epoch not starting at sequence 0 or a sequence that does not follow
                the last (OUT_OF_ORDER_SEQUENCE_NUMBER).
        """
        state = self.producers.get(producer_id)
        if state is None:
            # No state (a new producer, or its batches were deleted): Kafka accepts
            # any sequence (checkSequence with epoch -1).
            return None
        if producer_epoch < state.producer_epoch:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {producer_id} epoch {producer_epoch} is older than "
                f"{state.producer_epoch}",
            )
        if producer_epoch > state.producer_epoch:
            if first_seq != 0:
                raise ProducerStateError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"sequence {first_seq} for a new epoch of producer {producer_id} "
                    "(expected 0)",
                )
            return None
        for seq_first, seq_last, base in state.batches:
            if seq_first == first_seq and seq_last == last_seq:
                return base
        expected = (state.last_sequence + 1) & 0x7FFFFFFF  # wraps to 0 after int32 max
        if first_seq != expected:
            raise ProducerStateError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"out of order sequence {first_seq} from producer {producer_id} "
                f"(expected {expected})",
            )
        return None

    def check_epoch(self, producer_id: int, producer_epoch: int) -> None:
        """Check only the epoch of a batch without sequence numbers (transactional
        offset commits the group coordinator writes, as Kafka's coordinator-origin
        appends).

        Raises:
            ProducerStateError: INVALID_PRODUCER_EPOCH for an older epoch.
        """
        state = self.producers.get(producer_id)
        if state is not None and producer_epoch < state.producer_epoch:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {producer_id} epoch {producer_epoch} is older than "
                f"{state.producer_epoch}",
            )

    def update_epoch(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int = -1
    ) -> None:
        """Record a transaction marker's epoch: a newer epoch (the coordinator
        fenced the producer) forgets the cached batches, so the old epoch is
        refused and the new one starts at sequence 0 (Kafka's
        ``ProducerAppendInfo.appendEndTxnMarker``)."""
        self.max_producer_id = max(self.max_producer_id, producer_id)
        state = self.producers.get(producer_id)
        if state is None or producer_epoch > state.producer_epoch:
            state = self.producers[producer_id] = ProducerState(producer_epoch)
        state.coordinator_epoch = max(state.coordinator_epoch, coordinator_epoch)

    def update(
        self,
        producer_id: int,
        epoch: int,
        first_seq: int,
        last_seq: int,
        base: int,
        timestamp_ms: int = -1,
    ) -> None:
        """Record an appended batch (also while recovering a log); ``timestamp_ms``
        is its max timestamp."""
        self.max_producer_id = max(self.max_producer_id, producer_id)
        state = self.producers.get(producer_id)
        if state is None or epoch != state.producer_epoch:
            state = self.producers[producer_id] = ProducerState(epoch)
        state.batches.append((first_seq, last_seq, base))
        del state.batches[:-NUM_BATCHES_TO_RETAIN]
        state.last_timestamp = timestamp_ms
