"""The transaction coordinator of :mod:`kproto.broker` (KIP-98, KIP-360, KIP-890
part 1).

:class:`TransactionCoordinator` (constructed by the cluster as
``TransactionCoordinator(state, groups)``) holds every transactional id's
:class:`TransactionMetadata`, persists it to ``__transaction_state``
(:mod:`.records`) and ends transactions by writing markers (:mod:`.markers`). The
request handlers that drive it are in :mod:`kproto.broker.handlers.transactions`.
"""

from __future__ import annotations

from .coordinator import TRANSACTION_STATE_TOPIC, TransactionCoordinator
from .markers import write_markers
from .metadata import TransactionMetadata, TransactionState
from .records import decode_record, partition_for, transaction_record

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "TransactionCoordinator",
    "TransactionMetadata",
    "TransactionState",
    "decode_record",
    "partition_for",
    "transaction_record",
    "write_markers",
]
