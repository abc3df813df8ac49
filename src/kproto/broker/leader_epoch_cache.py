"""The leader epoch cache of a partition log (KIP-101/KIP-279; Kafka's
``LeaderEpochFileCache``): the first offset written at each leader epoch, and the
end offset of a requested epoch (OffsetForLeaderEpoch, KIP-320).

Kafka keeps the cache in the ``leader-epoch-checkpoint`` file, appending an entry
when a batch of a new epoch is appended. This broker derives it from the stored
batches' ``partition_leader_epoch`` (bytes 12-15 of each batch header, stamped by
:meth:`kproto.broker.log.PartitionLog.append_batches` with the partition's leader
epoch; -1, no epoch, is skipped), memoised per log until the log changes, and adds
the partition's current leader epoch, which starts at the log end offset when no
batch carries it yet (as ``Partition.makeLeader`` assigns it): an epoch whose leader
wrote nothing is not in the cache, as Kafka drops an entry a later one starts at the
same offset as. A log whose batches carry no epoch (written by a log with no leader
epoch, e.g. a tool's) is taken as written at epoch 0.
"""

from __future__ import annotations

import struct
import weakref
from bisect import bisect_right

from kproto.broker.log import PartitionLog
from kproto.records._header import PARTITION_LEADER_EPOCH_AT

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "epoch_entries",
    "end_offset_for",
    "epoch_for_offset",
]

#: Kafka's ``UNDEFINED_EPOCH`` / ``UNDEFINED_EPOCH_OFFSET``.
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_EPOCH = struct.Struct(">i")

_memo: weakref.WeakKeyDictionary[
    PartitionLog, tuple[tuple[int, int, int], list[tuple[int, int]]]
] = weakref.WeakKeyDictionary()


def _stored_entries(plog: PartitionLog) -> list[tuple[int, int]]:
    """``[(epoch, start offset)]`` from the batches, epochs increasing."""
    key = (plog.log_start_offset, plog.high_watermark, len(plog.segments))
    cached = _memo.get(plog)
    if cached is not None and cached[0] == key:
        return cached[1]
    entries: list[tuple[int, int]] = []
    for segment in plog.segments:
        if not segment.size:
            continue
        data = segment.read_all()
        for base, position in zip(segment.offsets, segment.positions, strict=True):
            if position + PARTITION_LEADER_EPOCH_AT + 4 > len(data):
                break
            (epoch,) = _EPOCH.unpack_from(data, position + PARTITION_LEADER_EPOCH_AT)
            if epoch >= 0 and (not entries or epoch > entries[-1][0]):
                entries.append((epoch, max(base, plog.log_start_offset)))
    _memo[plog] = (key, entries)
    return entries


def epoch_entries(plog: PartitionLog, current_epoch: int) -> list[tuple[int, int]]:
    """The cache: ``[(leader epoch, start offset)]``, epochs increasing, ending
    with ``current_epoch`` (the partition's leader epoch now)."""
    entries = list(_stored_entries(plog))
    if not entries:
        # no batch carries an epoch: the data is taken as epoch 0's, so no epoch
        # seems to end before a consumer's position (no false truncation)
        entries.append((0, plog.log_start_offset))
    if current_epoch > entries[-1][0]:
        entries.append((current_epoch, plog.high_watermark))
    return entries


def end_offset_for(
    plog: PartitionLog, requested_epoch: int, current_epoch: int
) -> tuple[int, int]:
    """``(epoch, end offset)`` for ``requested_epoch``, as Kafka's
    ``LeaderEpochFileCache.endOffsetFor``: the latest epoch ends at the log end
    offset; an older one at the start offset of the next higher epoch, answered
    with the highest epoch not above it (or the requested one when there is
    none); an epoch above every known one, or -1, gets
    ``(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)``."""
    entries = epoch_entries(plog, current_epoch)
    if requested_epoch == UNDEFINED_EPOCH:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if entries[-1][0] == requested_epoch:
        return requested_epoch, plog.high_watermark
    epochs = [epoch for epoch, _ in entries]
    higher = bisect_right(epochs, requested_epoch)
    if higher == len(entries):
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    start_of_higher = entries[higher][1]
    if higher == 0:
        return requested_epoch, start_of_higher
    return entries[higher - 1][0], start_of_higher


def epoch_for_offset(plog: PartitionLog, offset: int, current_epoch: int) -> int:
    """The leader epoch that wrote ``offset`` (Kafka's
    ``LeaderEpochFileCache.epochForOffset``): that of the last epoch starting at or
    before it, the current one starting at the log end offset when no batch
    carries it yet; :data:`UNDEFINED_EPOCH` when none does (an offset of batches
    that carry no epoch). ListOffsets answers it with the offsets it finds."""
    entries = list(_stored_entries(plog))
    if not entries or current_epoch > entries[-1][0]:
        entries.append((current_epoch, plog.high_watermark))
    found = bisect_right([start for _, start in entries], offset)
    return entries[found - 1][0] if found else UNDEFINED_EPOCH
