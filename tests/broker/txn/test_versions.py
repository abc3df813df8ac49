"""Every version of the transaction APIs over the wire with kproto's own Connection:
InitProducerId v0-v5 (KIP-360 bumps), AddPartitionsToTxn v0-v5 (batched and
verify-only from v4), AddOffsetsToTxn, EndTxn, TxnOffsetCommit, Describe/List
transactions, DescribeProducers, and what read_committed Fetch / ListOffsets see."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions
from kproto.records import encode_batch
from tests.broker.conftest import cluster_with_topic
from tests.broker.txn.support import (
    call,
    call_coordinator,
    call_leader,
    coordinator,
    end_txn,
    init_producer_id,
    txn_offset_commit,
)

TOPIC = "tv"
_ids = itertools.count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from cluster_with_topic(TOPIC, 3, nodes=3)


def served(cluster: Cluster, api: ApiKey) -> list[int]:
    return list(api_versions(api))


def init(cluster: Cluster, txn_id: str, version: int = 4, **extra: Any) -> Any:
    return init_producer_id(cluster, txn_id, version, **extra)


def add(
    cluster: Cluster,
    txn_id: str,
    pid: int,
    epoch: int,
    parts: dict[str, list[int]],
    version: int = 3,
) -> dict[tuple[str, int], int]:
    r = call_coordinator(
        cluster,
        txn_id,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        version,
        v3_and_below_transactional_id=txn_id,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in parts.items()],
    )
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in r.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def end(
    cluster: Cluster,
    txn_id: str,
    pid: int,
    epoch: int,
    committed: bool,
    version: int = 4,
) -> int:
    return int(end_txn(cluster, txn_id, (pid, epoch), committed, version).error_code)


def produce(
    cluster: Cluster,
    txn_id: str | None,
    pid: int,
    epoch: int,
    seq: int,
    partition: int,
    values: list[bytes],
) -> int:
    batch = encode_batch(
        [(None, v) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn_id is not None,
    )
    r = call_leader(
        cluster,
        TOPIC,
        partition,
        ApiKey.PRODUCE,
        9,
        transactional_id=txn_id,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            {"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}
        ],
    )
    return int(r.responses[0].partition_responses[0].error_code)


def fetch(
    cluster: Cluster, partition: int, offset: int, isolation: int, version: int = 11
) -> Any:
    r = call_leader(
        cluster,
        TOPIC,
        partition,
        ApiKey.FETCH,
        version,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": TOPIC,
                "partitions": [
                    {
                        "partition": partition,
                        "fetch_offset": offset,
                        "partition_max_bytes": 1 << 20,
                        "log_start_offset": -1,
                        "current_leader_epoch": -1,
                    }
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    return r.responses[0].partitions[0]


def latest(cluster: Cluster, partition: int, isolation: int, version: int = 5) -> int:
    r = call_leader(
        cluster,
        TOPIC,
        partition,
        ApiKey.LIST_OFFSETS,
        version,
        replica_id=-1,
        isolation_level=isolation,
        topics=[
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": partition,
                        "timestamp": -1,
                        "current_leader_epoch": -1,
                    }
                ],
            }
        ],
    )
    return int(r.topics[0].partitions[0].offset)


def test_api_versions_advertises_the_transaction_apis(cluster: Cluster) -> None:
    r = call(
        cluster,
        1,
        ApiKey.API_VERSIONS,
        3,
        client_software_name="t",
        client_software_version="1",
    )
    ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert ranges[ApiKey.INIT_PRODUCER_ID] == (0, 5)
    assert ranges[ApiKey.ADD_PARTITIONS_TO_TXN] == (0, 5)
    assert ranges[ApiKey.ADD_OFFSETS_TO_TXN] == (0, 4)
    assert ranges[ApiKey.END_TXN] == (0, 4)
    assert ranges[ApiKey.TXN_OFFSET_COMMIT] == (0, 6)
    for api in (
        ApiKey.DESCRIBE_PRODUCERS,
        ApiKey.DESCRIBE_TRANSACTIONS,
        ApiKey.LIST_TRANSACTIONS,
    ):
        assert api in ranges


@pytest.mark.parametrize("version", range(6))
def test_init_producer_id_bumps_and_fences(cluster: Cluster, version: int) -> None:
    txn_id = f"init-{version}"
    first = init(cluster, txn_id, version)
    assert (first.error_code, first.producer_epoch) == (ErrorCode.NONE, 0)
    second = init(cluster, txn_id, version)
    assert (second.error_code, second.producer_id, second.producer_epoch) == (
        ErrorCode.NONE,
        first.producer_id,
        1,
    )
    # the first producer is fenced
    fenced = (
        ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_PRODUCER_EPOCH
    )
    error = add(cluster, txn_id, first.producer_id, 0, {TOPIC: [0]}, min(version, 3))
    assert error == {(TOPIC, 0): fenced}
    if version >= 3:
        # KIP-360: the producer bumps its own epoch; a retry of that bump gets the
        # same epoch; an unknown producer id is fenced
        bumped = init(
            cluster, txn_id, version, producer_id=second.producer_id, producer_epoch=1
        )
        assert (bumped.error_code, bumped.producer_epoch) == (ErrorCode.NONE, 2)
        retry = init(
            cluster, txn_id, version, producer_id=second.producer_id, producer_epoch=1
        )
        assert (retry.error_code, retry.producer_epoch) == (ErrorCode.NONE, 2)
        stranger = init(
            cluster, txn_id, version, producer_id=12345678, producer_epoch=0
        )
        expected = (
            ErrorCode.PRODUCER_FENCED
            if version >= 4
            else ErrorCode.INVALID_PRODUCER_EPOCH
        )
        assert stranger.error_code == expected


def test_init_producer_id_checks_coordinator_and_timeout(cluster: Cluster) -> None:
    txn_id = "where"
    other = next(n for n in cluster.state.node_ids if n != coordinator(cluster, txn_id))
    r = call(
        cluster,
        other,
        ApiKey.INIT_PRODUCER_ID,
        4,
        transactional_id=txn_id,
        transaction_timeout_ms=1000,
    )
    assert r.error_code == ErrorCode.NOT_COORDINATOR
    r = init_producer_id(cluster, txn_id, 4, transaction_timeout_ms=900_001)
    assert r.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    r = call(
        cluster,
        other,
        ApiKey.INIT_PRODUCER_ID,
        4,
        transactional_id=None,
        transaction_timeout_ms=1000,
    )
    assert (r.error_code, r.producer_epoch) == (ErrorCode.NONE, 0)


def test_init_producer_id_aborts_the_open_transaction(cluster: Cluster) -> None:
    txn_id = f"reinit-{next(_ids)}"
    p = init(cluster, txn_id)
    assert add(cluster, txn_id, p.producer_id, p.producer_epoch, {TOPIC: [1]}) == {
        (TOPIC, 1): ErrorCode.NONE
    }
    assert (
        produce(cluster, txn_id, p.producer_id, p.producer_epoch, 0, 1, [b"open"])
        == ErrorCode.NONE
    )
    again = init(cluster, txn_id)
    assert again.error_code == ErrorCode.CONCURRENT_TRANSACTIONS  # the client retries
    again = init(cluster, txn_id)
    assert (again.error_code, again.producer_epoch) == (
        ErrorCode.NONE,
        p.producer_epoch + 2,
    )
    records = cluster.records(TOPIC, 1)
    assert records[-1].control is not None and records[-1].control.type == 0  # ABORT
    # the zombie's epoch is refused by the partition
    assert (
        produce(cluster, None, p.producer_id, p.producer_epoch, 1, 1, [b"zombie"])
        == ErrorCode.INVALID_PRODUCER_EPOCH
    )


@pytest.mark.parametrize("version", range(4))
def test_add_partitions_and_end_txn_v0_v3(cluster: Cluster, version: int) -> None:
    txn_id = f"add-{version}"
    p = init(cluster, txn_id)
    pid, epoch = p.producer_id, p.producer_epoch
    assert (
        end(cluster, txn_id, pid, epoch, True, min(version, 4))
        == ErrorCode.INVALID_TXN_STATE
    )
    errors = add(
        cluster, txn_id, pid, epoch, {TOPIC: [0, 2], "no-such-topic": [0]}, version
    )
    assert errors == {
        (TOPIC, 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        (TOPIC, 2): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert add(cluster, txn_id, pid, epoch, {TOPIC: [0, 2]}, version) == {
        (TOPIC, 0): ErrorCode.NONE,
        (TOPIC, 2): ErrorCode.NONE,
    }
    assert add(cluster, txn_id, pid + 1, epoch, {TOPIC: [1]}, version) == {
        (TOPIC, 1): ErrorCode.INVALID_PRODUCER_ID_MAPPING
    }
    described = cluster.txn.describe(txn_id)
    assert described is not None and described.partitions == {(TOPIC, 0), (TOPIC, 2)}
    before = [len(cluster.records(TOPIC, q)) for q in range(3)]
    assert end(cluster, txn_id, pid, epoch, True, version) == ErrorCode.NONE
    assert end(cluster, txn_id, pid, epoch, True, version) == ErrorCode.NONE  # a retry
    assert (
        end(cluster, txn_id, pid, epoch, False, version) == ErrorCode.INVALID_TXN_STATE
    )
    after = [len(cluster.records(TOPIC, q)) for q in range(3)]
    assert [a - b for a, b in zip(after, before, strict=True)] == [
        1,
        0,
        1,
    ]  # one marker each
    marker = cluster.records(TOPIC, 0)[-1]
    assert marker.control is not None and marker.control.type == 1  # COMMIT


@pytest.mark.parametrize("version", [4, 5])
def test_add_partitions_batched_and_verify_only(cluster: Cluster, version: int) -> None:
    a, b = f"batch-a-{version}", f"batch-b-{version}"
    pa, pb = init(cluster, a), init(cluster, b)
    assert add(cluster, a, pa.producer_id, pa.producer_epoch, {TOPIC: [0]}) == {
        (TOPIC, 0): ErrorCode.NONE
    }
    node = coordinator(cluster, a)
    txns = [
        {
            "transactional_id": a,
            "producer_id": pa.producer_id,
            "producer_epoch": pa.producer_epoch,
            "verify_only": True,
            "topics": [{"name": TOPIC, "partitions": [0, 1]}],
        },
        {
            "transactional_id": b,
            "producer_id": pb.producer_id,
            "producer_epoch": pb.producer_epoch,
            "verify_only": False,
            "topics": [{"name": TOPIC, "partitions": [2]}],
        },
    ]
    r = call(cluster, node, ApiKey.ADD_PARTITIONS_TO_TXN, version, transactions=txns)
    assert r.error_code == ErrorCode.NONE
    results = {
        (t.transactional_id, topic.name, p.partition_index): p.partition_error_code
        for t in r.results_by_transaction
        for topic in t.topic_results
        for p in topic.results_by_partition
    }
    expected_b = (
        ErrorCode.NONE if coordinator(cluster, b) == node else ErrorCode.NOT_COORDINATOR
    )
    assert results == {
        (a, TOPIC, 0): ErrorCode.NONE,
        (a, TOPIC, 1): ErrorCode.INVALID_TXN_STATE,
        (b, TOPIC, 2): expected_b,
    }
    meta = cluster.txn.describe(a)
    assert meta is not None and meta.partitions == {(TOPIC, 0)}  # verify added nothing


def test_produce_outside_the_transaction_is_refused(cluster: Cluster) -> None:
    txn_id = f"verify-{next(_ids)}"
    p = init(cluster, txn_id)
    assert (
        produce(cluster, txn_id, p.producer_id, p.producer_epoch, 0, 2, [b"x"])
        == ErrorCode.INVALID_TXN_STATE
    )
    add(cluster, txn_id, p.producer_id, p.producer_epoch, {TOPIC: [2]})
    assert (
        produce(cluster, txn_id, p.producer_id, p.producer_epoch, 0, 2, [b"x"])
        == ErrorCode.NONE
    )
    assert (
        end(cluster, txn_id, p.producer_id, p.producer_epoch, False) == ErrorCode.NONE
    )


def test_read_committed_fetch_and_list_offsets(cluster: Cluster) -> None:
    part = 1
    txn_id = f"rc-{next(_ids)}"
    p = init(cluster, txn_id)
    pid, epoch = p.producer_id, p.producer_epoch
    start = latest(cluster, part, 0)
    add(cluster, txn_id, pid, epoch, {TOPIC: [part]})
    assert (
        produce(cluster, txn_id, pid, epoch, 0, part, [b"a1", b"a2"]) == ErrorCode.NONE
    )
    assert latest(cluster, part, 1) == start  # LSO: the open transaction's first offset
    assert latest(cluster, part, 0) == start + 2
    assert latest(cluster, part, 1, version=1) == start + 2  # v1 has no isolation level
    open_fetch = fetch(cluster, part, start, 1)
    assert (
        open_fetch.records,
        open_fetch.last_stable_offset,
        open_fetch.high_watermark,
    ) == (b"", start, start + 2)
    assert fetch(cluster, part, start, 0).records  # read_uncommitted sees them
    assert end(cluster, txn_id, pid, epoch, False) == ErrorCode.NONE
    assert latest(cluster, part, 1) == start + 3  # past the marker
    done = fetch(cluster, part, start, 1)
    assert done.last_stable_offset == start + 3
    assert [(a.producer_id, a.first_offset) for a in done.aborted_transactions] == [
        (pid, start)
    ]
    # nothing aborted after the marker
    assert fetch(cluster, part, start + 3, 1).aborted_transactions in (None, ())
    assert fetch(cluster, part, start, 0).aborted_transactions in (None, ())


@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize("commit_version", [0, 3, 6])
def test_add_offsets_and_txn_offset_commit(
    cluster: Cluster, version: int, commit_version: int
) -> None:
    txn_id = f"offs-{version}-{commit_version}"
    group = f"offs-group-{version}-{commit_version}"
    p = init(cluster, txn_id)
    pid, epoch = p.producer_id, p.producer_epoch
    group_node = cluster.groups.coordinator_for(group)
    assert group_node is not None
    topic: dict[str, Any] = {"name": TOPIC}
    if commit_version >= 6:
        topic = {"topic_id": cluster.state.topics[TOPIC].topic_id}

    def commit() -> int:
        return txn_offset_commit(
            cluster, txn_id, group, (pid, epoch), commit_version, topic, 42, "m"
        )

    def add_offsets(producer_epoch: int) -> int:
        answer = call_coordinator(
            cluster,
            txn_id,
            ApiKey.ADD_OFFSETS_TO_TXN,
            version,
            transactional_id=txn_id,
            producer_id=pid,
            producer_epoch=producer_epoch,
            group_id=group,
        )
        return int(answer.error_code)

    # KIP-890 part 1: the group's partition must be added first
    assert commit() == ErrorCode.INVALID_TXN_STATE
    assert add_offsets(epoch) == ErrorCode.NONE
    assert commit() == ErrorCode.NONE
    assert (
        cluster.groups.fetch_offsets(group, [(TOPIC, 0)])[(TOPIC, 0)] is None
    )  # pending
    stable = call(
        cluster,
        group_node,
        ApiKey.OFFSET_FETCH,
        7,
        group_id=group,
        require_stable=True,
        topics=[{"name": TOPIC, "partition_indexes": [0]}],
    )
    assert stable.topics[0].partitions[0].error_code == ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert add_offsets(epoch + 1) == (
        ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_PRODUCER_EPOCH
    )
    assert end(cluster, txn_id, pid, epoch, True) == ErrorCode.NONE
    committed = cluster.groups.fetch_offsets(group, [(TOPIC, 0)])[(TOPIC, 0)]
    assert committed is not None and (committed.offset, committed.metadata) == (42, "m")


def test_describe_and_list_transactions_and_producers(cluster: Cluster) -> None:
    txn_id = f"desc-{next(_ids)}"
    p = init(cluster, txn_id)
    pid, epoch = p.producer_id, p.producer_epoch
    add(cluster, txn_id, pid, epoch, {TOPIC: [0, 1]})
    assert produce(cluster, txn_id, pid, epoch, 0, 0, [b"d"]) == ErrorCode.NONE
    node = coordinator(cluster, txn_id)
    r = call(
        cluster,
        node,
        ApiKey.DESCRIBE_TRANSACTIONS,
        0,
        transactional_ids=[txn_id, "never-seen"],
    )
    states = {s.transactional_id: s for s in r.transaction_states}
    mine = states[txn_id]
    assert (
        mine.error_code,
        mine.transaction_state,
        mine.producer_id,
        mine.producer_epoch,
    ) == (ErrorCode.NONE, "Ongoing", pid, epoch)
    assert [(t.topic, list(t.partitions)) for t in mine.topics] == [(TOPIC, [0, 1])]
    assert mine.transaction_start_time_ms > 0
    assert states["never-seen"].error_code in (
        ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
        ErrorCode.NOT_COORDINATOR,
    )
    for version in served(cluster, ApiKey.LIST_TRANSACTIONS):
        extra: dict[str, Any] = {}
        if version >= 1:
            extra["duration_filter"] = -1
        if version >= 2:
            extra["transactional_id_pattern"] = "desc-.*"
        listed = call(
            cluster,
            node,
            ApiKey.LIST_TRANSACTIONS,
            version,
            state_filters=["Ongoing", "Bogus"],
            producer_id_filters=[],
            **extra,
        )
        assert listed.error_code == ErrorCode.NONE
        assert list(listed.unknown_state_filters) == ["Bogus"]
        assert (txn_id, pid, "Ongoing") in [
            (s.transactional_id, s.producer_id, s.transaction_state)
            for s in listed.transaction_states
        ]
    r = call_leader(
        cluster,
        TOPIC,
        0,
        ApiKey.DESCRIBE_PRODUCERS,
        0,
        topics=[{"name": TOPIC, "partition_indexes": [0]}],
    )
    part = r.topics[0].partitions[0]
    assert part.error_code == ErrorCode.NONE
    mine_p = [a for a in part.active_producers if a.producer_id == pid]
    assert len(mine_p) == 1
    assert (mine_p[0].producer_epoch, mine_p[0].last_sequence) == (epoch, 0)
    assert mine_p[0].current_txn_start_offset >= 0
    assert mine_p[0].last_timestamp > 0 and mine_p[0].coordinator_epoch == -1
    assert end(cluster, txn_id, pid, epoch, True) == ErrorCode.NONE
    r = call_leader(
        cluster,
        TOPIC,
        0,
        ApiKey.DESCRIBE_PRODUCERS,
        0,
        topics=[{"name": TOPIC, "partition_indexes": [0]}],
    )
    after = [
        a for a in r.topics[0].partitions[0].active_producers if a.producer_id == pid
    ]
    assert (after[0].coordinator_epoch, after[0].current_txn_start_offset) == (0, -1)
    r = call(cluster, node, ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[txn_id])
    assert (
        r.transaction_states[0].transaction_state,
        list(r.transaction_states[0].topics),
    ) == ("CompleteCommit", [])
