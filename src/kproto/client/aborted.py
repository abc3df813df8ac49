"""Consumer-side filtering of aborted transactions under read_committed (KIP-98).

A read_committed Fetch stops at the last stable offset and lists, per partition,
the transactions aborted in the returned range as ``(producer_id, first_offset)``.
The consumer drops their batches itself, as Java's ``CompletedFetch`` does: walking
the batches in offset order, an aborted transaction becomes active once a batch
reaches its ``first_offset``; a transactional batch of an active producer is
skipped; that producer's ABORT marker (a control batch) ends it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from .results import AbortedTransaction

__all__ = ["AbortedFilter"]


class AbortedFilter:
    """The aborted-transaction state of one partition's Fetch response.

    Feed :meth:`keep` every batch of the response in offset order (batches below
    the requested offset too); follows ``CompletedFetch.nextFetchedBatch``.

    Args:
        aborted: the response's ``aborted_transactions``.
    """

    def __init__(self, aborted: Iterable[AbortedTransaction]) -> None:
        self._pending = [(a.first_offset, a.producer_id) for a in aborted]
        heapq.heapify(self._pending)
        self._active: set[int] = set()

    def __bool__(self) -> bool:
        """False when nothing can ever be filtered (no aborted transaction)."""
        return bool(self._pending or self._active)

    def keep(
        self,
        *,
        last_offset: int,
        producer_id: int,
        is_transactional: bool,
        is_control: bool,
        is_abort_marker: bool,
    ) -> bool:
        """Whether the batch's records are visible to a read_committed consumer.

        Args:
            last_offset: the batch's last offset (``base_offset +
                last_offset_delta``).
            producer_id: the batch's producer id (-1 when none).
            is_transactional, is_control: the batch attributes.
            is_abort_marker: a control batch holding an ABORT marker.

        Control batches are never kept (their records are markers, not data).
        """
        if producer_id < 0:
            return not is_control
        pending = self._pending
        while pending and pending[0][0] <= last_offset:
            self._active.add(heapq.heappop(pending)[1])
        if is_abort_marker:
            self._active.discard(producer_id)
            return False
        if is_transactional and producer_id in self._active:
            return False
        return not is_control
