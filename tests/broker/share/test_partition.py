"""The share partition's state machine (Kafka's ``SharePartition``), on a real
partition log with timers driven by hand: acquisition, acknowledgement, delivery
counts, the delivery-count limit, lock expiry, the in-flight window and the SPSO."""

from __future__ import annotations

from pathlib import Path

import pytest

from kproto.broker.log import PartitionLog
from kproto.broker.share import RecordState, SharePartition, simple_assign
from kproto.broker.share.partition import AcknowledgeType as A
from kproto.broker.share.partition import read_batches
from kproto.errors import ErrorCode
from kproto.records import decode_batches, encode_batch
from tests.broker.groups.fakes import ManualScheduler


@pytest.fixture
def plog(tmp_path: Path) -> PartitionLog:
    log = PartitionLog.open("t", 0, tmp_path / "t-0", segment_bytes=1 << 20)
    yield log
    log.close()


def produce(plog: PartitionLog, *values: bytes) -> None:
    plog.append_batches(encode_batch([(None, v, (), 0) for v in values]))


def make(
    scheduler: ManualScheduler, start: int = 0, *, limit: int = 5, locks: int = 100
) -> tuple[SharePartition, list[SharePartition]]:
    released: list[SharePartition] = []
    share = SharePartition(
        "g",
        "t",
        0,
        start,
        lock_duration_ms=1000,
        delivery_count_limit=limit,
        max_record_locks=locks,
        scheduler=scheduler,
        on_released=released.append,
    )
    return share, released


def offsets(data: bytes) -> list[int]:
    return [r.offset for b in decode_batches(data) for r in b.records]


def test_acquire_new_records_whole_batches_and_nothing_twice(
    plog: PartitionLog,
) -> None:
    produce(plog, b"a", b"b", b"c")
    produce(plog, b"d", b"e")
    share, _ = make(ManualScheduler())
    ranges, data = share.acquire("m1", plog, 2, 1 << 20)
    # the first batch is acquired whole although max_records is 2 (batch alignment)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in ranges] == [
        (0, 2, 1)
    ]
    assert offsets(data) == [0, 1, 2]
    ranges, data = share.acquire("m2", plog, 10, 1 << 20)
    assert [(r.first_offset, r.last_offset) for r in ranges] == [(3, 4)]
    assert offsets(data) == [3, 4]
    assert share.acquire("m1", plog, 10, 1 << 20) == ([], b"")
    assert share.end_offset == 5 and share.start_offset == 0


def test_accept_reject_release_and_the_start_offset(plog: PartitionLog) -> None:
    produce(plog, b"a", b"b", b"c", b"d")
    share, _ = make(ManualScheduler())
    share.acquire("m", plog, 10, 1 << 20)
    # another member cannot acknowledge what m holds; nothing is applied
    assert (
        share.acknowledge("x", [(0, 0, [A.ACCEPT])]) == ErrorCode.INVALID_RECORD_STATE
    )
    assert (
        share.acknowledge("m", [(0, 3, [A.ACCEPT, A.REJECT, A.RELEASE, A.ACCEPT])]) == 0
    )
    assert share.start_offset == 2  # 0 accepted, 1 archived, 2 available again
    assert share.records[2].state == RecordState.AVAILABLE
    assert share.records[3].state == RecordState.ACKNOWLEDGED
    # acknowledging again is an error (the records are no longer acquired)
    assert (
        share.acknowledge("m", [(3, 3, [A.ACCEPT])]) == ErrorCode.INVALID_RECORD_STATE
    )
    # the released record is redelivered, with its delivery count
    ranges, data = share.acquire("m2", plog, 10, 1 << 20)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in ranges] == [
        (2, 2, 2)
    ]
    assert 2 in offsets(data)
    assert share.acknowledge("m2", [(2, 2, [A.ACCEPT])]) == 0
    assert (share.start_offset, share.records) == (4, {})


def test_malformed_acknowledgements_are_invalid_requests(plog: PartitionLog) -> None:
    produce(plog, b"a", b"b")
    share, _ = make(ManualScheduler())
    share.acquire("m", plog, 10, 1 << 20)
    assert share.acknowledge("m", [(1, 0, [1])]) == ErrorCode.INVALID_REQUEST
    assert share.acknowledge("m", [(0, 1, [1, 1, 1])]) == ErrorCode.INVALID_REQUEST
    assert share.acknowledge("m", [(0, 1, [9])]) == ErrorCode.INVALID_REQUEST
    assert all(r.state == RecordState.ACQUIRED for r in share.records.values())


def test_delivery_count_limit_archives_a_poison_record(plog: PartitionLog) -> None:
    produce(plog, b"poison")
    share, _ = make(ManualScheduler(), limit=3)
    for delivery in (1, 2, 3):
        ranges, _ = share.acquire("m", plog, 10, 1 << 20)
        assert [r.delivery_count for r in ranges] == [delivery]
        assert share.acknowledge("m", [(0, 0, [A.RELEASE])]) == 0
    # released after its third delivery: archived, the SPSO moves past it
    assert share.acquire("m", plog, 10, 1 << 20) == ([], b"")
    assert share.start_offset == 1


def test_lock_expiry_makes_records_available(plog: PartitionLog) -> None:
    produce(plog, b"a", b"b")
    scheduler = ManualScheduler()
    share, released = make(scheduler)
    share.acquire("m", plog, 10, 1 << 20)
    scheduler.advance(999)
    assert not released
    scheduler.advance(1)
    assert released == [share]
    assert all(r.state == RecordState.AVAILABLE for r in share.records.values())
    # the old holder's acknowledgement is refused; a new member gets them
    assert (
        share.acknowledge("m", [(0, 1, [A.ACCEPT])]) == ErrorCode.INVALID_RECORD_STATE
    )
    ranges, _ = share.acquire("m2", plog, 10, 1 << 20)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in ranges] == [
        (0, 1, 2)
    ]
    # an acknowledged acquisition leaves no timer behind
    assert share.acknowledge("m2", [(0, 1, [A.ACCEPT])]) == 0
    assert scheduler.pending() == 0


def test_renew_extends_the_lock(plog: PartitionLog) -> None:
    produce(plog, b"a")
    scheduler = ManualScheduler()
    share, released = make(scheduler)
    share.acquire("m", plog, 10, 1 << 20)
    scheduler.advance(900)
    assert share.acknowledge("m", [(0, 0, [A.RENEW])]) == 0
    scheduler.advance(900)
    assert not released and share.records[0].state == RecordState.ACQUIRED
    scheduler.advance(100)
    assert released and share.records[0].state == RecordState.AVAILABLE


def test_in_flight_window_limits_acquisition(plog: PartitionLog) -> None:
    for i in range(6):
        produce(plog, bytes([i]))
    share, _ = make(ManualScheduler(), locks=3)
    ranges, _ = share.acquire("m", plog, 100, 1 << 20)
    assert [(r.first_offset, r.last_offset) for r in ranges] == [(0, 2)]
    assert share.acquire("m", plog, 100, 1 << 20) == ([], b"")
    share.acknowledge("m", [(0, 0, [A.ACCEPT])])
    ranges, _ = share.acquire("m", plog, 100, 1 << 20)
    assert [(r.first_offset, r.last_offset) for r in ranges] == [(3, 3)]


def test_release_member_and_state_batches_roundtrip(plog: PartitionLog) -> None:
    produce(plog, b"a", b"b", b"c", b"d")
    share, _ = make(ManualScheduler())
    share.acquire("m", plog, 10, 1 << 20)
    share.acknowledge("m", [(1, 1, [A.ACCEPT])])
    assert share.release_member("m")
    batches = share.state_batches()
    assert [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in batches
    ] == [
        (0, 0, 0, 1),
        (1, 1, 2, 1),
        (2, 3, 0, 1),
    ]
    again, _ = make(ManualScheduler())
    again.restore(share.start_offset, batches)
    assert again.state_batches() == batches and again.end_offset == 4


def test_records_deleted_from_the_log_leave_the_share_partition(
    plog: PartitionLog,
) -> None:
    produce(plog, b"a", b"b", b"c")
    share, _ = make(ManualScheduler())
    plog.delete_records_before(2)
    ranges, _ = share.acquire("m", plog, 10, 1 << 20)
    assert [(r.first_offset, r.last_offset) for r in ranges] == [(2, 2)]
    assert share.start_offset == 2


def test_redeliveries_are_bounded_by_bytes_too(plog: PartitionLog) -> None:
    """Released records come back batch by batch from the next fetch offset, under
    the same byte limit as new ones (Kafka's fetch from ``nextFetchOffset``)."""
    for value in (b"a", b"b", b"c"):
        produce(plog, value)
    share, _ = make(ManualScheduler())
    ranges, _ = share.acquire("m", plog, 10, 1 << 20)
    assert [(r.first_offset, r.last_offset) for r in ranges] == [(0, 2)]
    assert share.acknowledge("m", [(0, 2, [A.RELEASE])]) == 0
    ranges, data = share.acquire("m", plog, 10, 1)  # the first batch only
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in ranges] == [
        (0, 0, 2)
    ]
    assert offsets(data) == [0]
    assert share.acquire("m", plog, 10, 1, min_one=False) == ([], b"")
    ranges, _ = share.acquire("m", plog, 10, 1 << 20)
    assert [(r.first_offset, r.last_offset) for r in ranges] == [(1, 2)]


def test_read_batches_spans_a_range(plog: PartitionLog) -> None:
    produce(plog, b"a", b"b")
    produce(plog, b"c")
    produce(plog, b"d", b"e")
    got = [(base, last) for base, last, _, _ in read_batches(plog, 1, 3)]
    assert got == [(0, 1), (2, 2), (3, 4)]


def test_simple_assignor() -> None:
    # fewer members than partitions: round robin
    assert simple_assign({"b": ("t",), "a": ("t",)}, {"t": 3}) == {
        "a": {"t": [0, 2]},
        "b": {"t": [1]},
    }
    # more members than partitions: every member one, partitions shared
    got = simple_assign({m: ("t",) for m in "abc"}, {"t": 2})
    assert got == {"a": {"t": [0]}, "b": {"t": [1]}, "c": {"t": [0]}}
    # unknown topics are left out
    assert simple_assign({"a": ("nope",)}, {}) == {"a": {}}
    # one subscription: the partitions of all its topics are spread together
    assert simple_assign({"a": ("t", "u"), "b": ("u", "t")}, {"t": 1, "u": 1}) == {
        "a": {"t": [0]},
        "b": {"u": [0]},
    }
    # different subscriptions: each topic over its own subscribers
    assert simple_assign({"a": ("t", "u"), "b": ("u",)}, {"t": 1, "u": 1}) == {
        "a": {"t": [0], "u": [0]},
        "b": {"u": [0]},
    }


def test_acknowledgements_outside_the_window_are_refused_unwalked(
    plog: PartitionLog,
) -> None:
    produce(plog, b"a")
    share, _ = make(ManualScheduler())
    share.acquire("m", plog, 10, 1 << 20)
    huge = [(0, 2**62, [A.ACCEPT])]
    assert share.acknowledge("m", huge) == ErrorCode.INVALID_RECORD_STATE
    assert share.records[0].state == RecordState.ACQUIRED


def test_a_log_read_failure_leaves_nothing_acquired(
    plog: PartitionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    produce(plog, b"a", b"b")
    scheduler = ManualScheduler()
    share, _ = make(scheduler)
    share.acquire("m", plog, 10, 1 << 20)
    assert share.acknowledge("m", [(0, 1, [A.RELEASE])]) == 0

    def broken(*args: object, **kwargs: object) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(plog, "read", broken)
    with pytest.raises(OSError):
        share.acquire("m", plog, 10, 1 << 20)
    assert [(r.state, r.delivery_count) for r in share.records.values()] == [
        (RecordState.AVAILABLE, 1),
        (RecordState.AVAILABLE, 1),
    ]
    assert scheduler.pending() == 0
    monkeypatch.undo()
    ranges, _ = share.acquire("m", plog, 10, 1 << 20)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in ranges] == [
        (0, 1, 2)
    ]
