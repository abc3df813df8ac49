"""Writing transaction markers: the in-process twin of Kafka's
``TransactionMarkerChannelManager`` (which sends WriteTxnMarkers to each partition's
leader).

A marker is a control batch (magic 2, attributes transactional | control) of one
record: key ControlRecordType version 0 and type (ABORT 0, COMMIT 1), value
EndTransactionMarker version 0 and the coordinator epoch
(:func:`kproto.records.encode_control_batch`, CRC-32C over attributes onwards),
stamped on append with the partition's leader epoch as every batch the leader writes.
Here the coordinator appends it to each partition log itself; on a
``__consumer_offsets`` partition the group coordinator is then told, so the
transaction's offset commits there become visible or are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kproto.broker.errors import LogAppendError
from kproto.broker.groups import OFFSETS_TOPIC, GroupCoordinator
from kproto.broker.log_validator import LogPolicy
from kproto.broker.state import ClusterState
from kproto.records import ControlRecordType, encode_control_batch

__all__ = ["write_markers"]

log = logging.getLogger("kproto.broker.txn")

#: Appends of the coordinator itself (Kafka's ``AppendOrigin.COORDINATOR``: control
#: batches allowed, no client checks).
COORDINATOR = LogPolicy(client=False)


def write_markers(
    state: ClusterState,
    groups: GroupCoordinator,
    partitions: Iterable[tuple[str, int]],
    *,
    committed: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
) -> int:
    """Append a COMMIT (``committed``) or ABORT marker of ``producer_id`` at
    ``producer_epoch`` to every partition in ``partitions``; return how many were
    written. A partition that no longer exists (its topic was deleted) is skipped,
    as Kafka's marker channel drops markers for unknown partitions."""
    control = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
    written = 0
    for topic, partition in sorted(partitions):
        plog = state.partition_log(topic, partition)
        if plog is None:
            log.info("marker for %s-%d skipped: no such partition", topic, partition)
            continue
        batch = encode_control_batch(
            control,
            coordinator_epoch=coordinator_epoch,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            timestamp=state.now_ms(),
        )  # the log stamps its partition's leader epoch (-1 until then)
        try:
            plog.append_batches(batch, COORDINATOR)
        except LogAppendError as exc:
            log.error("marker for %s-%d not written: %s", topic, partition, exc)
            continue
        written += 1
        if topic == OFFSETS_TOPIC:
            groups.complete_transaction(producer_id, partition, committed)
    return written
