"""The leader epoch cache derived from a log's batches (Kafka's
``LeaderEpochFileCache.endOffsetFor`` cases)."""

from __future__ import annotations

from pathlib import Path

from kproto.broker.leader_epoch_cache import (
    end_offset_for,
    epoch_entries,
    epoch_for_offset,
)
from kproto.broker.log import PartitionLog
from kproto.records import encode_batch


def batch(n: int, epoch: int) -> bytes:
    return encode_batch(
        [(None, b"v", (), 1000 + i) for i in range(n)], partition_leader_epoch=epoch
    )


def open_log(path: Path) -> PartitionLog:
    return PartitionLog.open("t", 0, path / "t-0", segment_bytes=300)


def test_epochs_from_batches_across_segments(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    for epoch in (1, 1, 3, 3, 3, 4):  # 2 records each; small segments roll
        plog.append_batches(batch(2, epoch))
    assert len(plog.segments) > 1
    assert epoch_entries(plog, 4) == [(1, 0), (3, 4), (4, 10)]
    assert end_offset_for(plog, 0, 4) == (0, 0)  # below every epoch: first start
    assert end_offset_for(plog, 1, 4) == (1, 4)
    assert end_offset_for(plog, 2, 4) == (1, 4)
    assert end_offset_for(plog, 3, 4) == (3, 10)
    assert end_offset_for(plog, 4, 4) == (4, 12)
    assert end_offset_for(plog, 9, 4) == (-1, -1)
    # a newer current epoch with no batch yet starts at the log end offset
    assert end_offset_for(plog, 4, 6) == (4, 12)
    assert end_offset_for(plog, 6, 6) == (6, 12)
    # the memo follows appends
    plog.append_batches(batch(1, 6))
    assert end_offset_for(plog, 6, 6) == (6, 13)


def test_unstamped_batches_are_epoch_zero(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append_batches(batch(5, -1))
    assert end_offset_for(plog, 0, 0) == (0, 5)
    # after leadership moved (epoch 2), epoch 0 ends where the log ends: a
    # consumer's position is never taken for truncated
    assert end_offset_for(plog, 0, 2) == (0, 5)
    assert end_offset_for(plog, 2, 2) == (2, 5)
    assert end_offset_for(plog, -1, 2) == (-1, -1)


def test_epoch_for_offset(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    # an empty log: the current epoch starts at offset 0 (Partition.makeLeader)
    assert epoch_for_offset(plog, 0, 2) == 2
    plog.append_batches(batch(2, -1))  # 0-1: no epoch
    for epoch in (1, 1, 3):  # 2-3, 4-5, 6-7
        plog.append_batches(batch(2, epoch))
    assert [epoch_for_offset(plog, o, 4) for o in range(9)] == [
        -1,  # unstamped: no epoch (Kafka answers ListOffsets with none)
        -1,
        1,
        1,
        1,
        1,
        3,
        3,
        4,  # the log end offset: the current epoch's start
    ]
    plog.delete_records_before(3)
    assert epoch_for_offset(plog, 3, 4) == 1
