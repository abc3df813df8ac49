"""The internal-topic writer (:mod:`kproto.broker.coordinator_runtime`): partitioning,
append and replay for a tenant, the one error mapping, and a failed internal write
answered with the API's error code over a connection that stays open (OffsetCommit,
ConsumerGroupHeartbeat, JoinGroup/SyncGroup, AddOffsetsToTxn/EndTxn, a share-group
state write), the failure injected into the internal topic's segment writes."""

from __future__ import annotations

import doctest
import errno
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster, coordinator_runtime
from kproto.broker.coordinator_runtime import (
    CoordinatorRuntime,
    CoordinatorWriteError,
    coordinator_error,
    java_string_hashcode,
    partition_for,
)
from kproto.broker.groups import OFFSETS_TOPIC
from kproto.broker.share.records import SHARE_STATE_TOPIC
from kproto.broker.state import ClusterState
from kproto.broker.txn.records import TRANSACTION_STATE_TOPIC
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.wire import commit_offset, join_classic, join_consumer_group

pytestmark = pytest.mark.timeout(120)

# -- partitioning and the error mapping ------------------------------------------------


def test_partition_for_is_kafkas_abs_of_the_java_hashcode() -> None:
    # Utils.abs(hashCode) % n: a negative hash code is negated, not masked
    key = "group-2xgroup-2xgroup-2x"
    assert java_string_hashcode(key) == -881745476
    assert partition_for(key, 5) == 881745476 % 5 == 1
    # Utils.abs(Integer.MIN_VALUE) is 0
    assert java_string_hashcode("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 7) == 0
    assert partition_for("hello", 50) == 99162322 % 50


def test_the_module_examples_hold() -> None:
    failures, tried = doctest.testmod(coordinator_runtime)
    assert (failures, tried) == (0, 2)


def test_storage_errors_are_mapped_as_kafkas_coordinators_map_them() -> None:
    storage = ErrorCode.KAFKA_STORAGE_ERROR
    assert coordinator_error(storage) == ErrorCode.NOT_COORDINATOR
    assert coordinator_error(storage, ApiKey.END_TXN) == ErrorCode.NOT_COORDINATOR
    missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert coordinator_error(missing) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    too_large = ErrorCode.MESSAGE_TOO_LARGE
    assert coordinator_error(too_large) == ErrorCode.UNKNOWN_SERVER_ERROR
    # the client's own error of a transactional batch passes unchanged
    fenced = ErrorCode.INVALID_PRODUCER_EPOCH
    assert coordinator_error(fenced) == fenced
    # share-group state answers the storage error itself
    share = ApiKey.ALTER_SHARE_GROUP_OFFSETS
    assert coordinator_error(storage, share) == storage
    assert coordinator_error(missing, share) == ErrorCode.COORDINATOR_NOT_AVAILABLE


# -- a tenant: the Schema Registry's _schemas topic ------------------------------------


def _state(data_dir: Path) -> ClusterState:
    state = ClusterState(data_dir, [1])
    state.load()
    return state


def test_a_compacted_single_partition_tenant_appends_and_replays(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    schemas = CoordinatorRuntime(state, "_schemas", 1)
    assert schemas.coordinator_for("any subject") == 1
    assert schemas.check_coordinator("s", 1, loaded=False) == (
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    )
    assert schemas.check_coordinator("s", 2, loaded=True) == ErrorCode.NOT_COORDINATOR
    assert state.topics["_schemas"].configs == {"cleanup.policy": "compact"}
    key = json.dumps({"subject": "s", "version": 1}).encode()
    value = json.dumps({"schema": '"string"', "id": 1}).encode()
    assert schemas.append(0, [(key, value)]) == 0
    assert schemas.append(0, [(key, None)]) == 1  # a tombstone
    state.close()

    again = _state(tmp_path)
    replayed = list(CoordinatorRuntime(again, "_schemas", 1).records(0))
    assert replayed == [(key, value), (key, None)]
    again.close()


def test_a_failed_append_stores_nothing_and_says_why(tmp_path: Path) -> None:
    state = _state(tmp_path)
    runtime = CoordinatorRuntime(state, "_schemas", 1)
    runtime.ensure_topic()
    plog = state.partition_log("_schemas", 0)
    assert plog is not None
    with _failing_segment(plog):
        with pytest.raises(CoordinatorWriteError) as caught:
            runtime.append(0, [(b"k", b"v")])
    assert caught.value.storage_error == ErrorCode.KAFKA_STORAGE_ERROR
    assert caught.value.error_code == ErrorCode.NOT_COORDINATOR
    assert "_schemas-0" in caught.value.message
    assert list(runtime.records(0)) == []
    assert runtime.append(0, [(b"k", b"v")]) == 0
    state.close()


# -- a failed internal write over the wire ---------------------------------------------


def _no_space(*_: Any, **__: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@contextmanager
def _failing_segment(plog: Any) -> Iterator[None]:
    """Writes to the active segment of ``plog`` fail as a full disk would (the log
    turns the OSError into LogAppendError(KAFKA_STORAGE_ERROR))."""
    segment = plog.segments[-1]
    segment.add = _no_space
    try:
        yield
    finally:
        del segment.add


@contextmanager
def failing(cluster: Cluster, topic: str) -> Iterator[None]:
    """Every partition of the internal topic ``topic`` fails its writes."""
    info = cluster.state.topics[topic]
    segments = []
    for p in range(info.partitions):
        plog = cluster.state.partition_log(topic, p)
        assert plog is not None
        segments.append(plog.segments[-1])
    for segment in segments:
        segment.add = _no_space
    try:
        yield
    finally:
        for segment in segments:
            del segment.add


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1, share_configs={"share.auto.offset.reset": "earliest"}) as c:
        c.create_topic("t", 1)
        c.coordinator("any")  # creates __consumer_offsets
        yield c


@pytest.fixture
def conn(cluster: Cluster) -> Iterator[Connection]:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=20) as c:
        c.negotiate(caps={ApiKey.OFFSET_COMMIT: 8, ApiKey.JOIN_GROUP: 3})
        yield c


def still_answers(conn: Connection) -> None:
    """The connection was not closed: it serves the next request."""
    (topic,) = conn.request(ApiKey.METADATA, topics=[{"name": "t"}]).topics
    assert topic.error_code == ErrorCode.NONE


def commit(conn: Connection, group: str, offset: int) -> int:
    return commit_offset(conn, group, "t", 0, offset)


def test_offset_commit(cluster: Cluster, conn: Connection) -> None:
    with failing(cluster, OFFSETS_TOPIC):
        assert commit(conn, "oc", 5) == ErrorCode.NOT_COORDINATOR
    still_answers(conn)
    (group,) = conn.request(
        ApiKey.OFFSET_FETCH, groups=[{"group_id": "oc", "topics": None}]
    ).groups
    assert group.topics == ()  # nothing was acknowledged, nothing is served
    assert commit(conn, "oc", 5) == ErrorCode.NONE


def test_consumer_group_heartbeat(cluster: Cluster, conn: Connection) -> None:
    def join() -> Any:
        return join_consumer_group(
            conn, "hb", "member-1", ["t"], rebalance_timeout_ms=5000
        )

    with failing(cluster, OFFSETS_TOPIC):
        refused = join()
    assert refused.error_code == ErrorCode.NOT_COORDINATOR
    assert refused.error_message
    still_answers(conn)
    assert join().error_code == ErrorCode.NONE


def classic_join(conn: Connection, group: str) -> Any:
    return join_classic(conn, group, timeout_ms=10_000)


def test_classic_join_converting_a_consumer_group(
    cluster: Cluster, conn: Connection
) -> None:
    def heartbeat(epoch: int) -> Any:
        return conn.request(
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            group_id="converted",
            member_id="member-1",
            member_epoch=epoch,
            rebalance_timeout_ms=5000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )

    joined = heartbeat(0)
    assert joined.error_code == ErrorCode.NONE
    assert heartbeat(-1).error_code == ErrorCode.NONE  # left: an empty group
    # a classic join converts the empty consumer group: its tombstones fail
    with failing(cluster, OFFSETS_TOPIC):
        refused = classic_join(conn, "converted")
    assert refused.error_code == ErrorCode.NOT_COORDINATOR
    still_answers(conn)
    assert classic_join(conn, "converted").error_code == ErrorCode.NONE


def test_classic_join_and_sync_group(cluster: Cluster, conn: Connection) -> None:
    joined = classic_join(conn, "classic")
    assert joined.error_code == ErrorCode.NONE
    with failing(cluster, OFFSETS_TOPIC):
        synced = conn.request(
            ApiKey.SYNC_GROUP,
            group_id="classic",
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            assignments=[{"member_id": joined.member_id, "assignment": b"a"}],
        )
    assert synced.error_code == ErrorCode.NOT_COORDINATOR
    still_answers(conn)


def test_add_offsets_to_txn_and_end_txn(cluster: Cluster, conn: Connection) -> None:
    init = conn.request(
        ApiKey.INIT_PRODUCER_ID, transactional_id="tx", transaction_timeout_ms=60_000
    )
    assert init.error_code == ErrorCode.NONE
    producer = {
        "transactional_id": "tx",
        "producer_id": init.producer_id,
        "producer_epoch": init.producer_epoch,
    }
    with failing(cluster, TRANSACTION_STATE_TOPIC):
        added = conn.request(ApiKey.ADD_OFFSETS_TO_TXN, group_id="txg", **producer)
    assert added.error_code == ErrorCode.NOT_COORDINATOR
    still_answers(conn)
    added = conn.request(ApiKey.ADD_OFFSETS_TO_TXN, group_id="txg", **producer)
    assert added.error_code == ErrorCode.NONE
    with failing(cluster, TRANSACTION_STATE_TOPIC):
        ended = conn.request(ApiKey.END_TXN, committed=False, **producer)
    assert ended.error_code == ErrorCode.NOT_COORDINATOR
    still_answers(conn)
    ended = conn.request(ApiKey.END_TXN, committed=False, **producer)
    assert ended.error_code == ErrorCode.NONE


def test_share_group_state_write(cluster: Cluster, conn: Connection) -> None:
    alter = {
        "group_id": "share",
        "topics": [
            {
                "topic_name": "t",
                "partitions": [{"partition_index": 0, "start_offset": 0}],
            }
        ],
    }
    cluster.share.runtime.ensure_topic()
    with failing(cluster, SHARE_STATE_TOPIC):
        refused = conn.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, **alter)
    assert refused.error_code == ErrorCode.NONE
    (row,) = refused.responses[0].partitions
    assert row.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    still_answers(conn)
    done = conn.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, **alter)
    assert done.responses[0].partitions[0].error_code == ErrorCode.NONE
