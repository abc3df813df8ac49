"""Offsets committed inside a transaction (TxnOffsetCommit, KIP-98), pending until
the transaction ends.

As Kafka's ``OffsetMetadataManager`` (``pendingTransactionalOffsets``): a
transactional commit is appended to the group's ``__consumer_offsets`` partition in
a transactional batch of the producer, and kept aside per producer id; OffsetFetch
does not see it. When the transaction coordinator writes the COMMIT marker to that
partition the offsets become the group's committed offsets; an ABORT marker drops
them. Replaying the partition on start does the same with the stored batches and
markers.
"""

from __future__ import annotations

from collections.abc import Callable

from kproto.records import ControlRecordType, RecordBatch

from .group import CommittedOffset

__all__ = ["PendingTxnOffsets"]

#: (group id, topic, partition)
OffsetKey = tuple[str, str, int]


class PendingTxnOffsets:
    """Pending transactional offsets per producer id.

    ``partition_for`` maps a group id to its ``__consumer_offsets`` partition, so a
    marker completes only the groups of the partition it was written to.
    """

    def __init__(self, partition_for: Callable[[str], int]) -> None:
        self.partition_for = partition_for
        self.by_producer: dict[int, dict[OffsetKey, CommittedOffset]] = {}

    def add(self, producer_id: int, key: OffsetKey, value: CommittedOffset) -> None:
        self.by_producer.setdefault(producer_id, {})[key] = value

    def complete(
        self, producer_id: int, offsets_partition: int
    ) -> dict[OffsetKey, CommittedOffset]:
        """Remove and return the producer's pending offsets of the groups on
        ``offsets_partition``."""
        pending = self.by_producer.get(producer_id)
        if not pending:
            return {}
        done = {
            k: v
            for k, v in pending.items()
            if self.partition_for(k[0]) == offsets_partition
        }
        for k in done:
            del pending[k]
        if not pending:
            del self.by_producer[producer_id]
        return done

    def replay_marker(
        self, batch: RecordBatch, offsets_partition: int
    ) -> dict[OffsetKey, CommittedOffset]:
        """A control batch met while replaying ``offsets_partition``: the offsets a
        COMMIT marker makes committed (an ABORT marker drops them: empty)."""
        if not batch.is_transactional or not batch.records:
            return {}
        control = batch.records[0].control
        done = self.complete(batch.producer_id, offsets_partition)
        if control is None or control.type != ControlRecordType.COMMIT:
            return {}
        return done

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether some open transaction holds an offset of this partition
        (OffsetFetch ``require_stable`` answers UNSTABLE_OFFSET_COMMIT, KIP-447)."""
        key = (group_id, topic, partition)
        return any(key in pending for pending in self.by_producer.values())
