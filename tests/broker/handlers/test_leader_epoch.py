"""OffsetForLeaderEpoch (handlers/leader_epoch.py) at every version kproto
generates, on the leader and on a follower."""

from __future__ import annotations

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions
from kproto.records import encode_batch
from tests.broker.handlers.support import connect, send
from tests.broker.wire import offset_for_leader_epoch, produce


def _leader_conn(cluster: Cluster, topic: str, partition: int) -> Connection:
    leader = cluster.state.leader(topic, partition)
    assert leader is not None
    return connect(cluster, leader)


def _produce(conn: Connection, cluster: Cluster, topic: str, batch: bytes) -> None:
    answer = produce(conn, topic, {0: batch}, cluster=cluster)
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def _move_leader_to(cluster: Cluster, topic: str, epoch: int) -> None:
    """Move the leader of ``topic``-0 between the nodes until its epoch is ``epoch``."""
    while cluster.leader_epoch(topic, 0) < epoch:
        other = next(n for n in cluster.state.node_ids if n != cluster.leader(topic))
        cluster.move_leader(topic, 0, other)
    assert cluster.leader_epoch(topic, 0) == epoch


def test_offset_for_leader_epoch(cluster: Cluster) -> None:
    cluster.create_topic("epochs", 1)
    # batches written at leader epochs 0 (offsets 0-1), 2 (2-4) and 5 (5): the
    # leader stamps its epoch over the producer's (99); epochs 1, 3, 4 wrote nothing
    for epoch, count in ((0, 2), (2, 3), (5, 1)):
        _move_leader_to(cluster, "epochs", epoch)
        rows = [(None, b"v", (), 1000 + i) for i in range(count)]
        with _leader_conn(cluster, "epochs", 0) as pc:
            _produce(
                pc, cluster, "epochs", encode_batch(rows, partition_leader_epoch=99)
            )
    stored = [
        b.partition_leader_epoch for b in cluster.state.logs["epochs", 0].batches()
    ]
    assert stored == [0, 2, 5]
    c = _leader_conn(cluster, "epochs", 0)
    try:
        expected = {
            0: (0, 2),  # ends where epoch 2 starts
            1: (0, 2),  # unknown epoch between: the one below it, next start
            2: (2, 5),
            4: (2, 5),
            5: (5, 6),  # the latest epoch ends at the log end offset
            7: (-1, -1),  # above every known epoch
            -1: (-1, -1),
        }
        for version in api_versions(ApiKey.OFFSET_FOR_LEADER_EPOCH):
            answer = send(
                c,
                ApiKey.OFFSET_FOR_LEADER_EPOCH,
                version,
                replica_id=-1,
                topics=[
                    {
                        "topic": "epochs",
                        "partitions": [
                            {
                                "partition": 0,
                                "leader_epoch": e,
                                "current_leader_epoch": -1,
                            }
                            for e in expected
                        ],
                    }
                ],
            )
            got = {
                e: (getattr(p, "leader_epoch", want[0]), p.end_offset)  # v0: no epoch
                for (e, want), p in zip(
                    expected.items(), answer.topics[0].partitions, strict=True
                )
            }
            assert all(
                p.error_code == ErrorCode.NONE for p in answer.topics[0].partitions
            )
            assert got == expected, version
        # the current leader epoch: the log end offset when it is the latest
        plain = "plain"
        cluster.create_topic(plain, 1)
        pc = _leader_conn(cluster, plain, 0)
        _produce(pc, cluster, plain, encode_batch([(None, b"x", (), 1)] * 3))
        first, newer, missing = offset_for_leader_epoch(
            pc, plain, (0, 0, 0), (0, 0, 3), (7, 0, -1)
        )
        assert (first.error_code, first.leader_epoch, first.end_offset) == (
            ErrorCode.NONE,
            0,
            3,
        )
        assert newer.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        pc.close()
    finally:
        c.close()


def test_offset_for_leader_epoch_on_a_follower(cluster: Cluster) -> None:
    cluster.create_topic("follower", 1)
    leader = cluster.state.leader("follower", 0)
    other = next(n for n in cluster.state.node_ids if n != leader)
    c = connect(cluster, other)
    try:
        (answer,) = offset_for_leader_epoch(c, "follower", (0, 0, -1))
        assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    finally:
        c.close()
