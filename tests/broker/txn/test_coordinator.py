"""The transaction coordinator, its records and the partition transaction index,
driven without sockets: a real ``ClusterState`` in a temp dir, a clock and a timer
advanced by hand."""

from __future__ import annotations

import asyncio
from pathlib import Path

import attrs
import pytest

from kproto.broker.groups import GroupCoordinator
from kproto.broker.state import ClusterState
from kproto.broker.txn import (
    TransactionCoordinator,
    TransactionMetadata,
    TransactionState,
    decode_record,
    transaction_record,
)
from kproto.broker.txn_index import AbortedTxn, TransactionIndex
from kproto.errors import ErrorCode
from kproto.records import (
    ControlRecordType,
    decode_batches,
    encode_batch,
    encode_control_batch,
)
from kproto.serial import DecodeError
from tests.broker.groups.fakes import ManualClock, ManualScheduler

S = TransactionState


@attrs.define
class Harness:
    state: ClusterState
    txn: TransactionCoordinator
    clock: ManualClock
    scheduler: ManualScheduler


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return _harness(tmp_path)


def _harness(data: Path) -> Harness:
    state = ClusterState(data, [1])
    clock = ManualClock()
    state.now_ms = clock  # type: ignore[method-assign]
    state.load()
    if "t" not in state.topics:
        state.create_topic("t", 2)
    groups = GroupCoordinator(state)
    scheduler = ManualScheduler()
    txn = TransactionCoordinator(
        state, groups, scheduler=scheduler, abort_interval_ms=100
    )
    asyncio.run(groups.start())
    asyncio.run(txn.start())
    return Harness(state, txn, clock, scheduler)


def _data(pid: int, epoch: int, seq: int = 0) -> bytes:
    return encode_batch(
        [(None, b"v")],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def test_timeout_aborts_with_a_bumped_epoch(h: Harness) -> None:
    error, pid, epoch = h.txn.init_producer_id("slow", 1000)
    assert (error, epoch) == (ErrorCode.NONE, 0)
    assert h.txn.add_partitions("slow", pid, 0, [("t", 0)]) == {
        ("t", 0): ErrorCode.NONE
    }
    plog = h.state.partition_log("t", 0)
    assert plog is not None
    plog.append_batches(_data(pid, 0))
    assert plog.last_stable_offset == 0
    h.clock.ms += 900
    h.scheduler.advance(100)
    assert h.txn.transactions["slow"].state == S.ONGOING  # not yet
    h.clock.ms += 200
    h.scheduler.advance(100)
    meta = h.txn.transactions["slow"]
    assert (meta.state, meta.producer_epoch) == (S.COMPLETE_ABORT, 1)
    assert plog.last_stable_offset == plog.high_watermark == 2
    assert [
        (a.producer_id, a.first_offset, a.last_offset) for a in plog.txn_index.aborted
    ] == [(pid, 0, 1)]
    # the timer keeps one pending callback (bounded), and the producer is fenced
    assert h.scheduler.pending() == 1
    assert h.txn.end_txn("slow", pid, 0, True) == ErrorCode.PRODUCER_FENCED
    with pytest.raises(Exception, match="epoch"):
        plog.append_batches(_data(pid, 0, 1))


def test_init_producer_id_rules(h: Harness) -> None:
    assert h.txn.init_producer_id("", 1000)[0] == ErrorCode.INVALID_REQUEST
    assert h.txn.init_producer_id("x", 0)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    _, pid, _ = h.txn.init_producer_id("x", 1000)
    # an exhausted epoch rotates to a new producer id at epoch 0
    h.txn.transactions["x"].producer_epoch = 32766
    error, new_pid, epoch = h.txn.init_producer_id("x", 1000)
    assert (error, epoch) == (ErrorCode.NONE, 0) and new_pid != pid
    # end_txn on an empty transaction, unknown ids
    assert h.txn.end_txn("x", new_pid, 0, True) == ErrorCode.INVALID_TXN_STATE
    assert h.txn.end_txn("nobody", 1, 0, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.txn.add_partitions("x", new_pid, 0, [("t", 9)]) == {
        ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }


def test_state_is_recovered_from_the_log(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    _, pid, _ = h.txn.init_producer_id("a", 5000)
    h.txn.add_partitions("a", pid, 0, [("t", 1)])
    h.txn.end_txn("a", pid, 0, True)
    _, pid_b, _ = h.txn.init_producer_id("b", 5000)
    h.txn.add_partitions("b", pid_b, 0, [("t", 0), ("t", 1)])
    before = {k: attrs.evolve(v) for k, v in h.txn.transactions.items()}
    asyncio.run(h.txn.stop())
    h.state.close()
    again = _harness(tmp_path)
    assert again.txn.transactions == before
    assert again.state.next_producer_id > pid_b


def test_transaction_log_records_roundtrip() -> None:
    meta = TransactionMetadata(
        "id-1",
        1000,
        3,
        60000,
        S.ONGOING,
        partitions={("a", 0), ("a", 2), ("b", 1)},
        txn_start_timestamp_ms=5,
        txn_last_update_timestamp_ms=6,
    )
    key, value = transaction_record("id-1", meta)
    assert key[:2] == b"\x00\x00" and value is not None and value[:2] == b"\x00\x00"
    assert decode_record(key, value) == ("id-1", meta)
    assert decode_record(key, None) == ("id-1", None)
    done = attrs.evolve(meta, state=S.COMPLETE_COMMIT, partitions=set())
    assert decode_record(*transaction_record("id-1", done)) == ("id-1", done)
    with pytest.raises(DecodeError):
        decode_record(b"\x00\x01" + key[2:], value)
    with pytest.raises(DecodeError):
        decode_record(key, value[:-3])
    with pytest.raises(DecodeError):
        decode_record(key, value[:16] + b"\x09" + value[17:])  # state id 9


def test_metadata_transitions() -> None:
    meta = TransactionMetadata("m", 1, 0, 1000)
    with pytest.raises(ValueError, match="Empty -> PrepareCommit"):
        meta.transition(S.PREPARE_COMMIT, 1)
    meta.transition(S.ONGOING, 10)
    assert meta.txn_start_timestamp_ms == 10
    assert S.from_kafka_name("PrepareEpochFence") == S.PREPARE_EPOCH_FENCE
    assert S.from_kafka_name("nope") is None


def test_transaction_index() -> None:
    index = TransactionIndex()

    def feed(raw: bytes, base: int) -> None:
        for batch in decode_batches(raw):
            index.on_batch(batch, base)

    feed(_data(7, 0), 0)
    feed(_data(8, 0), 1)
    feed(_data(7, 0, 1), 2)  # continues 7's transaction
    assert index.first_unstable_offset == 0
    feed(
        encode_control_batch(
            ControlRecordType.ABORT,
            coordinator_epoch=0,
            producer_id=7,
            producer_epoch=0,
        ),
        3,
    )
    assert index.first_unstable_offset == 1
    feed(
        encode_control_batch(
            ControlRecordType.COMMIT,
            coordinator_epoch=0,
            producer_id=8,
            producer_epoch=0,
        ),
        4,
    )
    assert index.first_unstable_offset is None
    assert index.aborted == [AbortedTxn(7, 0, 3)]
    assert index.aborted_between(0, 1) == [AbortedTxn(7, 0, 3)]
    assert index.aborted_between(4, 10) == []
    assert index.aborted_between(3, 10) == [AbortedTxn(7, 0, 3)]
    index.truncate_before(4)
    assert index.aborted == []
    # non-transactional batches are not tracked
    feed(encode_batch([(None, b"x")]), 5)
    assert index.ongoing == {}


def test_fencing_at_the_last_epoch_does_not_overflow(h: Harness) -> None:
    _, pid, _ = h.txn.init_producer_id("old", 1000)
    h.txn.add_partitions("old", pid, 0, [("t", 1)])
    h.txn.transactions["old"].producer_epoch = 32767
    h.clock.ms += 2000
    assert h.txn.abort_timed_out() == ["old"]
    meta = h.txn.transactions["old"]
    assert (meta.state, meta.producer_epoch) == (S.COMPLETE_ABORT, 32767)
    # the next InitProducerId rotates to a new producer id
    error, new_pid, epoch = h.txn.init_producer_id("old", 1000)
    assert (error, epoch) == (ErrorCode.NONE, 0) and new_pid != pid
