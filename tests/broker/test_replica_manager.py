"""The replica manager (:mod:`kproto.broker.replica_manager`) without sockets: the
leader and leader-epoch checks, the acks and KIP-890 checks, the append, the produce
produce policy, retention, a Fetch waiting for ``min_bytes`` woken by an append, the
leader epoch stamped through the log's listener, ListOffsets and DeleteRecords."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kproto.broker.fetch_session import FetchPartition, FetchTopic
from kproto.broker.leadership import set_leader
from kproto.broker.log_validator import LogPolicy
from kproto.broker.replica_manager import (
    FetchParams,
    PartitionResult,
    ReplicaManager,
    produce_policy,
)
from kproto.broker.state import ClusterState
from kproto.broker.topic_config import TopicConfig
from kproto.broker.topic_metadata import TopicMetadata
from kproto.errors import ErrorCode
from kproto.records import decode_batches, encode_batch

CLIENT = ("127.0.0.1", "User:ANONYMOUS", "test")


@pytest.fixture
def state(tmp_path: Path) -> Iterator[ClusterState]:
    s = ClusterState(tmp_path, [1, 2])
    s.load()
    s.create_topic("t", 2)  # partition 0 led by node 1, partition 1 by node 2
    yield s
    s.close()


def batch(*values: bytes, **producer: Any) -> bytes:
    return encode_batch([(None, v) for v in values], **producer)


def produce(
    replicas: ReplicaManager,
    partitions: dict[int, bytes],
    *,
    topic: str = "t",
    acks: int = -1,
    transactional_id: str | None = None,
) -> list[PartitionResult]:
    entries = [SimpleNamespace(index=i, records=r) for i, r in partitions.items()]
    (results,) = asyncio.run(
        replicas.append_records(
            [(topic, ErrorCode.NONE, entries)],
            acks=acks,
            transactional_id=transactional_id,
            client=CLIENT,
        )
    )
    return results


def test_the_leader_appends_and_others_answer_not_leader(state: ClusterState) -> None:
    node1 = ReplicaManager(state, 1)
    first, second = produce(node1, {0: batch(b"a", b"b"), 1: batch(b"c")})
    assert (first.error_code, first.base_offset, first.log_start_offset) == (0, 0, 0)
    assert second.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert second.base_offset == -1
    (again,) = produce(node1, {0: batch(b"c")})
    assert again.base_offset == 2
    (unknown,) = produce(node1, {0: batch(b"x")}, topic="absent")
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_bad_acks_and_bad_records_store_nothing(state: ClusterState) -> None:
    replicas = ReplicaManager(state, 1)
    (refused,) = produce(replicas, {0: batch(b"a")}, acks=2)
    assert refused.error_code == ErrorCode.INVALID_REQUIRED_ACKS
    corrupt = bytearray(batch(b"a"))
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    (bad,) = produce(replicas, {0: bytes(corrupt)})
    assert bad.error_code == ErrorCode.CORRUPT_MESSAGE
    assert bad.error_message
    plog = state.partition_log("t", 0)
    assert plog is not None and plog.high_watermark == 0


def test_a_transactional_batch_needs_its_partition_in_the_transaction(
    state: ClusterState,
) -> None:
    asked: list[tuple[str, int, int, str, int]] = []
    answer = {"code": ErrorCode.INVALID_TXN_STATE}

    def verify(
        txn_id: str, pid: int, epoch: int, topic: str, p: int, *, add: bool = False
    ) -> ErrorCode:
        asked.append((txn_id, pid, epoch, topic, p))
        return answer["code"]

    replicas = ReplicaManager(state, 1, verify_transaction=verify)
    txn = batch(b"a", producer_id=7, producer_epoch=3, base_sequence=0)
    transactional = batch(
        b"a", producer_id=7, producer_epoch=3, base_sequence=0, is_transactional=True
    )
    # an idempotent (not transactional) batch is not checked
    (plain,) = produce(replicas, {0: txn}, transactional_id="tx")
    assert plain.error_code == ErrorCode.NONE and asked == []
    (refused,) = produce(replicas, {0: transactional}, transactional_id="tx")
    assert refused.error_code == ErrorCode.INVALID_TXN_STATE
    assert asked == [("tx", 7, 3, "t", 0)]
    answer["code"] = ErrorCode.PRODUCER_FENCED
    (fenced,) = produce(replicas, {0: transactional}, transactional_id="tx")
    assert fenced.error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_the_log_stamps_the_partitions_leader_epoch(state: ClusterState) -> None:
    replicas = ReplicaManager(state, 1)
    produce(replicas, {0: batch(b"a")})
    assert set_leader(state, "t", 0, 1) == 1  # a new epoch, same leader
    produce(replicas, {0: batch(b"b")})
    plog = state.partition_log("t", 0)
    assert plog is not None
    stored = decode_batches(plog.read(0, 1 << 20))
    assert [b.partition_leader_epoch for b in stored] == [0, 1]
    _, fenced = replicas.leader_log("t", 0, current_leader_epoch=0)
    assert fenced == ErrorCode.FENCED_LEADER_EPOCH
    _, ahead = replicas.leader_log("t", 0, current_leader_epoch=5)
    assert ahead == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_retention_raises_the_log_start_offset(state: ClusterState) -> None:
    # one batch a segment (internal.segment.bytes has no 1 MiB floor)
    configs = {"internal.segment.bytes": "100", "retention.bytes": "100"}
    state.create_topic("r", 1, configs=configs)
    replicas = ReplicaManager(state, state.topics["r"].leaders[0])
    results = [produce(replicas, {0: batch(b"x" * 60)}, topic="r")[0] for _ in range(4)]
    assert [r.base_offset for r in results] == [0, 1, 2, 3]
    assert results[-1].log_start_offset > 0
    plog = state.partition_log("r", 0)
    assert plog is not None and plog.log_start_offset == results[-1].log_start_offset


def test_fetch_waits_for_min_bytes_until_an_append(state: ClusterState) -> None:
    replicas = ReplicaManager(state, 1)
    wanted = [FetchTopic("t", None, [FetchPartition(0, 0, 1 << 20)])]
    params = FetchParams(
        max_bytes=1 << 20, min_bytes=1, max_wait_ms=5000, committed=False
    )

    async def body() -> list[Any]:
        fetch = asyncio.create_task(replicas.fetch_messages(wanted, params))
        await asyncio.sleep(0)  # the fetch is waiting: nothing to read yet
        assert not fetch.done()
        await replicas.append_records(
            [("t", ErrorCode.NONE, [SimpleNamespace(index=0, records=batch(b"v"))])],
            acks=1,
            transactional_id=None,
            client=CLIENT,
        )
        async with asyncio.timeout(5):
            return await fetch

    (topic,) = asyncio.run(body())
    (answer,) = topic.partitions
    assert (answer.error_code, answer.high_watermark) == (ErrorCode.NONE, 1)
    assert [r.value for b in decode_batches(answer.records) for r in b.records] == [
        b"v"
    ]


def test_fetch_errors_answer_at_once(state: ClusterState) -> None:
    replicas = ReplicaManager(state, 1)
    produce(replicas, {0: batch(b"a")})
    unknown_id = uuid.uuid4()
    wanted = [
        FetchTopic("t", None, [FetchPartition(0, 5, 100), FetchPartition(1, 0, 100)]),
        FetchTopic(None, unknown_id, [FetchPartition(0, 0, 100)]),
    ]
    params = FetchParams(
        max_bytes=100, min_bytes=1, max_wait_ms=60_000, committed=False
    )
    out_of_range, not_leader = asyncio.run(replicas.fetch_messages(wanted, params))
    assert [p.error_code for p in out_of_range.partitions] == [
        ErrorCode.OFFSET_OUT_OF_RANGE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ]
    assert not_leader.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_list_offsets_and_delete_records(state: ClusterState) -> None:
    replicas = ReplicaManager(state, 1)
    produce(replicas, {0: batch(b"a", b"b", b"c")})
    assert replicas.fetch_offset("t", 0, -1) == (ErrorCode.NONE, 3, -1, 0)
    assert replicas.fetch_offset("t", 0, -2) == (ErrorCode.NONE, 0, -1, 0)
    assert replicas.delete_records("t", 0, 2) == (ErrorCode.NONE, 2)
    assert replicas.fetch_offset("t", 0, -2)[1] == 2
    assert replicas.delete_records("t", 0, 9) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert replicas.delete_records("t", 1, 0) == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        -1,
    )


def test_produce_policy_follows_the_typed_topic_config() -> None:
    info = TopicMetadata("policy-topic", uuid.uuid4(), [0])
    for now_ms in (1000, 1000, 1001):
        assert produce_policy(info, now_ms) == LogPolicy.for_produce(
            TopicConfig(), now_ms
        )
    # a new configuration (create or alter parses one) is read again
    info.topic_config = TopicConfig.from_properties(
        {"cleanup.policy": "compact", "max.message.bytes": "2048"}
    )
    policy = produce_policy(info, 1001)
    assert policy.compacted and policy.max_message_bytes == 2048
    assert policy.now_ms == 1001 and not policy.log_append_time
    info.topic_config = TopicConfig.from_properties(
        {"message.timestamp.type": "LogAppendTime"}
    )
    policy = produce_policy(info, 1002)
    assert policy.log_append_time and not policy.compacted
    assert policy == LogPolicy.for_produce(info.topic_config, 1002)
