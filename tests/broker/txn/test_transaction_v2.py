"""Transaction version 2 (KIP-890 part 2) on the wire with kproto's own Connection:
Produce v12 and TxnOffsetCommit v5 add implicitly, EndTxn v5 bumps the epoch (a
retry with the old epoch succeeds), AddPartitionsToTxn v4+ adds are refused,
epoch exhaustion rotates the producer id; and TV1 unchanged when the feature is
off."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.txn import TransactionState
from kproto.broker.txn.metadata import MAX_EPOCH
from kproto.errors import ErrorCode
from kproto.framing import ConnectionClosedError
from kproto.index import ApiKey
from kproto.records import encode_batch
from tests.broker.conftest import cluster_with_topic
from tests.broker.txn.support import (
    call,
    call_coordinator,
    call_leader,
    end_txn,
    init_producer_id,
    txn_offset_commit,
)

TOPIC = "tv2"
_ids = itertools.count()


@pytest.fixture(scope="module")
def tv2() -> Iterator[Cluster]:
    yield from cluster_with_topic(TOPIC, 2, nodes=2, transaction_version=2)


@pytest.fixture(scope="module")
def tv1() -> Iterator[Cluster]:
    yield from cluster_with_topic(TOPIC, 2, nodes=1)


def init(cluster: Cluster, txn_id: str) -> tuple[int, int]:
    r = init_producer_id(cluster, txn_id, 5, producer_id=-1, producer_epoch=-1)
    assert r.error_code == ErrorCode.NONE
    return r.producer_id, r.producer_epoch


def produce(
    cluster: Cluster, txn_id: str, pid: int, epoch: int, version: int, seq: int = 0
) -> int:
    batch = encode_batch(
        [(None, b"v")],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )
    r = call_leader(
        cluster,
        TOPIC,
        0,
        ApiKey.PRODUCE,
        version,
        transactional_id=txn_id,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}
        ],
    )
    return int(r.responses[0].partition_responses[0].error_code)


def end(
    cluster: Cluster, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 5
) -> Any:
    return end_txn(cluster, txn_id, (pid, epoch), commit, version)


def state_of(cluster: Cluster, txn_id: str) -> tuple[TransactionState, set[Any]]:
    meta = cluster.txn.describe(txn_id)
    assert meta is not None
    return meta.state, meta.partitions


def test_api_versions_report_the_level(tv2: Cluster, tv1: Cluster) -> None:
    def finalized(cluster: Cluster) -> dict[str, int]:
        r = call(
            cluster,
            1,
            ApiKey.API_VERSIONS,
            3,
            client_software_name="t",
            client_software_version="1",
        )
        supported = {f.name: f.max_version for f in r.supported_features}
        assert supported["transaction.version"] == 2
        return {f.name: f.max_version_level for f in r.finalized_features}

    assert finalized(tv2)["transaction.version"] == 2
    assert "transaction.version" not in finalized(tv1)


def test_produce_v12_adds_its_partition(tv2: Cluster) -> None:
    txn_id = f"implicit-{next(_ids)}"
    pid, epoch = init(tv2, txn_id)
    # v11 keeps part 1's verification: no AddPartitionsToTxn, no append
    assert produce(tv2, txn_id, pid, epoch, 11) == ErrorCode.INVALID_TXN_STATE
    assert state_of(tv2, txn_id)[0] == TransactionState.EMPTY
    assert produce(tv2, txn_id, pid, epoch, 12) == ErrorCode.NONE
    assert state_of(tv2, txn_id) == (TransactionState.ONGOING, {(TOPIC, 0)})
    # an old epoch is fenced, not added
    assert produce(tv2, txn_id, pid, epoch - 1 if epoch else 5, 12, seq=1) in (
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.PRODUCER_FENCED,
    )


def test_end_txn_v5_bumps_the_epoch_and_a_retry_succeeds(tv2: Cluster) -> None:
    txn_id = f"bump-{next(_ids)}"
    pid, epoch = init(tv2, txn_id)
    assert produce(tv2, txn_id, pid, epoch, 12) == ErrorCode.NONE
    r = end(tv2, txn_id, pid, epoch, True)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (
        ErrorCode.NONE,
        pid,
        epoch + 1,
    )
    assert state_of(tv2, txn_id)[0] == TransactionState.COMPLETE_COMMIT
    # the client did not see the answer and retries with its old epoch
    again = end(tv2, txn_id, pid, epoch, True)
    assert (again.error_code, again.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    # ... but not with the other outcome
    assert end(tv2, txn_id, pid, epoch, False).error_code == ErrorCode.INVALID_TXN_STATE
    # two epochs back is fenced
    assert (
        end(tv2, txn_id, pid, epoch - 1, True).error_code == ErrorCode.PRODUCER_FENCED
    )
    # the next transaction at the new epoch, its sequences from 0
    assert produce(tv2, txn_id, pid, epoch + 1, 12) == ErrorCode.NONE
    aborted = end(tv2, txn_id, pid, epoch + 1, False)
    assert (aborted.error_code, aborted.producer_epoch) == (ErrorCode.NONE, epoch + 2)
    # an abort with nothing open bumps too; a commit with nothing open is refused
    assert (
        end(tv2, txn_id, pid, epoch + 2, True).error_code == ErrorCode.INVALID_TXN_STATE
    )
    empty = end(tv2, txn_id, pid, epoch + 2, False)
    assert (empty.error_code, empty.producer_epoch) == (ErrorCode.NONE, epoch + 3)


def test_end_txn_v4_keeps_the_epoch_at_tv2(tv2: Cluster) -> None:
    txn_id = f"v4-{next(_ids)}"
    pid, epoch = init(tv2, txn_id)
    assert produce(tv2, txn_id, pid, epoch, 12) == ErrorCode.NONE
    assert end(tv2, txn_id, pid, epoch, True, version=4).error_code == ErrorCode.NONE
    assert tv2.txn.producer_of(txn_id) == (pid, epoch)


def test_add_partitions_v4_adds_are_refused(tv2: Cluster) -> None:
    txn_id = f"v4add-{next(_ids)}"
    pid, epoch = init(tv2, txn_id)

    def add(version: int, verify_only: bool) -> Any:
        return call_coordinator(
            tv2,
            txn_id,
            ApiKey.ADD_PARTITIONS_TO_TXN,
            version,
            transactions=[
                {
                    "transactional_id": txn_id,
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "verify_only": verify_only,
                    "topics": [{"name": TOPIC, "partitions": [1]}],
                }
            ],
        )

    for version in (4, 5):
        r = add(version, False)
        assert r.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert r.results_by_transaction == ()
    assert state_of(tv2, txn_id)[0] == TransactionState.EMPTY
    # verify_only (KIP-890 part 1) is still served
    verified = add(5, True)
    assert verified.error_code == ErrorCode.NONE
    result = verified.results_by_transaction[0].topic_results[0]
    assert (
        result.results_by_partition[0].partition_error_code
        == ErrorCode.INVALID_TXN_STATE
    )
    # a TV1 client's v3 add still works
    r = call_coordinator(
        tv2,
        txn_id,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        3,
        v3_and_below_transactional_id=txn_id,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[{"name": TOPIC, "partitions": [1]}],
    )
    errors = r.results_by_topic_v3_and_below[0].results_by_partition
    assert errors[0].partition_error_code == ErrorCode.NONE


def _txn_offset_commit(
    cluster: Cluster, txn_id: str, group: str, pid: int, epoch: int, version: int
) -> int:
    return txn_offset_commit(
        cluster, txn_id, group, (pid, epoch), version, {"name": TOPIC}, 7
    )


def test_txn_offset_commit_v5_adds_the_group(tv2: Cluster) -> None:
    txn_id = f"offs-{next(_ids)}"
    group = f"g-{txn_id}"
    pid, epoch = init(tv2, txn_id)
    assert (
        _txn_offset_commit(tv2, txn_id, group, pid, epoch, 4)
        == ErrorCode.INVALID_TXN_STATE
    )
    assert _txn_offset_commit(tv2, txn_id, group, pid, epoch, 5) == ErrorCode.NONE
    assert end(tv2, txn_id, pid, epoch, True).error_code == ErrorCode.NONE
    committed = tv2.groups.fetch_offsets(group, [(TOPIC, 0)])[(TOPIC, 0)]
    assert committed is not None and committed.offset == 7


def test_tv1_is_unchanged(tv1: Cluster) -> None:
    txn_id = f"tv1-{next(_ids)}"
    group = f"g-{txn_id}"
    pid, epoch = init(tv1, txn_id)
    assert produce(tv1, txn_id, pid, epoch, 12) == ErrorCode.INVALID_TXN_STATE
    assert (
        _txn_offset_commit(tv1, txn_id, group, pid, epoch, 5)
        == ErrorCode.INVALID_TXN_STATE
    )
    # EndTxn v5 is not advertised on a TV1 cluster: refused as Kafka refuses an
    # unadvertised version (the connection closed), nothing bumped; v4 still works
    with pytest.raises(ConnectionClosedError):
        end(tv1, txn_id, pid, epoch, False)
    assert tv1.txn.producer_of(txn_id) == (pid, epoch)
    assert (
        end(tv1, txn_id, pid, epoch, False, 4).error_code == ErrorCode.INVALID_TXN_STATE
    )


def test_update_features_turns_tv2_on(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path) as c:
        c.create_topic(TOPIC, 1)
        txn_id = "switch"
        pid, epoch = init(c, txn_id)
        assert produce(c, txn_id, pid, epoch, 12) == ErrorCode.INVALID_TXN_STATE
        r = call(
            c,
            1,
            ApiKey.UPDATE_FEATURES,
            1,
            timeout_ms=1000,
            feature_updates=[
                {
                    "feature": "transaction.version",
                    "max_version_level": 2,
                    "upgrade_type": 1,
                }
            ],
        )
        assert r.error_code == ErrorCode.NONE
        assert produce(c, txn_id, pid, epoch, 12) == ErrorCode.NONE
        assert end(c, txn_id, pid, epoch, True).producer_epoch == epoch + 1
    # the level and the TV2 state (TransactionLogValue v1) are kept across a restart
    with Cluster(data_dir=tmp_path) as c:
        assert c.txn.transaction_version == 2
        meta = c.txn.describe(txn_id)
        assert meta is not None
        assert (meta.producer_id, meta.producer_epoch) == (pid, epoch + 1)
        assert meta.client_transaction_version == 2
        again = end(c, txn_id, pid, epoch, True)  # a retry after the restart
        assert (again.error_code, again.producer_epoch) == (ErrorCode.NONE, epoch + 1)


def test_exhausted_epoch_rotates_the_producer_id(tv2: Cluster) -> None:
    txn_id = f"rotate-{next(_ids)}"
    pid, _ = init(tv2, txn_id)
    last = MAX_EPOCH - 1
    # drive the id to its last epoch: as if it had ended 32766 transactions
    meta = tv2.txn.transactions[txn_id]
    tv2.txn.transactions[txn_id] = type(meta)(
        txn_id, pid, last, meta.txn_timeout_ms, meta.state
    )
    assert produce(tv2, txn_id, pid, last, 12) == ErrorCode.NONE
    r = end(tv2, txn_id, pid, last, True)
    assert r.error_code == ErrorCode.NONE
    assert r.producer_id != pid and r.producer_epoch == 0
    # a retry with the old id and its last epoch gets the new id
    again = end(tv2, txn_id, pid, last, True)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (
        ErrorCode.NONE,
        r.producer_id,
        0,
    )
    assert produce(tv2, txn_id, r.producer_id, 0, 12) == ErrorCode.NONE
    assert end(tv2, txn_id, r.producer_id, 0, True).producer_epoch == 1
