"""Transactions seen by one partition log: the last stable offset and the aborted
transactions index.

Kafka keeps, per partition, the first offset of every open transaction
(``ProducerStateManager.ongoingTxns``, which gives ``firstUnstableOffset`` and so
the last stable offset, LSO) and writes each aborted transaction to a ``.txnindex``
file beside the segment (``TransactionIndex``: producer id, first offset, last
offset = the abort marker's offset, LSO when aborted). This module keeps the same
facts in memory; :class:`kproto.broker.log.PartitionLog` feeds it every batch it
appends and, on open, every batch it recovers, so the index is rebuilt from the
segments after a restart.

Read-committed Fetch (KIP-98) reads below :attr:`TransactionIndex.first_unstable_offset`
and reports :meth:`TransactionIndex.aborted_between` so the consumer drops the
aborted producers' records.
"""

from __future__ import annotations

import bisect
import struct

import attrs

from kproto.records import ControlRecordType, RecordBatch, decode_batches

__all__ = ["AbortedTxn", "TransactionIndex"]

#: DefaultRecordBatch: attributes (int16) at byte 21, producer id (int64) at 43;
#: attribute bits 4 (transactional) and 5 (control).
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_ID = struct.Struct(">q")
_TRANSACTIONAL, _CONTROL = 0x10, 0x20


@attrs.frozen
class AbortedTxn:
    """One aborted transaction on a partition (Kafka's ``AbortedTxn``): its
    producer id, the offset of its first record and the offset of its abort marker
    (``last_offset``)."""

    producer_id: int
    first_offset: int
    last_offset: int


class TransactionIndex:
    """Open and aborted transactions of one partition.

    Attributes:
        ongoing: producer id -> offset of the first record of its open transaction.
        aborted: aborted transactions in marker-offset order.
    """

    def __init__(self) -> None:
        self.ongoing: dict[int, int] = {}
        self.aborted: list[AbortedTxn] = []
        self._last_offsets: list[int] = []  # aborted[i].last_offset, ascending

    def on_batch(self, batch: RecordBatch, base_offset: int) -> None:
        """Account for a batch written at ``base_offset`` (append or recovery): a
        transactional data batch opens (or continues) its producer's transaction, a
        COMMIT/ABORT marker closes it (an ABORT is indexed)."""
        if not batch.is_transactional or batch.producer_id < 0:
            return
        if not batch.is_control:
            self.on_data(batch.producer_id, base_offset)
            return
        control = batch.records[0].control if batch.records else None
        if control is not None:
            self.on_marker(batch.producer_id, control.type, base_offset)

    def on_stored(self, batch: bytes | bytearray, base_offset: int) -> None:
        """As :meth:`on_batch`, from a stored magic 2 batch's bytes: the header
        says whether it is transactional; only a marker (rare) is decoded."""
        (attributes,) = _ATTRIBUTES.unpack_from(batch, 21)
        if not attributes & _TRANSACTIONAL:
            return
        if attributes & _CONTROL:
            for decoded in decode_batches(batch):
                self.on_batch(decoded, base_offset)
        else:
            self.on_data(_PRODUCER_ID.unpack_from(batch, 43)[0], base_offset)

    def on_data(self, producer_id: int, base_offset: int) -> None:
        """A transactional data batch of ``producer_id`` at ``base_offset``."""
        self.ongoing.setdefault(producer_id, base_offset)

    def on_marker(self, producer_id: int, control_type: int, offset: int) -> None:
        """A control record of ``producer_id`` at ``offset``: COMMIT or ABORT ends
        its transaction (an ABORT is indexed); other control types are ignored."""
        if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return
        first = self.ongoing.pop(producer_id, None)
        if control_type == ControlRecordType.ABORT and first is not None:
            self.aborted.append(AbortedTxn(producer_id, first, offset))
            self._last_offsets.append(offset)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction (None: none is open)."""
        return min(self.ongoing.values()) if self.ongoing else None

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions that overlap the offsets ``[start, end)``: marker at
        or after ``start`` and first record before ``end`` (Kafka's
        ``collectAbortedTxns(fetchOffset, upperBoundOffset)``); markers are in
        offset order, so the scan starts at the first marker at or after ``start``."""
        i = bisect.bisect_left(self._last_offsets, start)
        return [a for a in self.aborted[i:] if a.first_offset < end]

    def truncate_before(self, offset: int) -> None:
        """Forget aborted transactions whose marker lies below ``offset`` (the log
        start moved past them)."""
        i = bisect.bisect_left(self._last_offsets, offset)
        del self.aborted[:i]
        del self._last_offsets[:i]
