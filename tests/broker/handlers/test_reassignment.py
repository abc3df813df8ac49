"""ElectLeaders and the partition reassignment APIs (handlers/reassignment.py)
at every version kproto generates."""

from __future__ import annotations

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions
from tests.broker.handlers.support import connect, send


def test_elect_leaders_is_not_needed(cluster: Cluster, conn: Connection) -> None:
    cluster.create_topic("elect", 2)
    for version in api_versions(ApiKey.ELECT_LEADERS):
        answer = send(
            conn,
            ApiKey.ELECT_LEADERS,
            version,
            election_type=0,
            topic_partitions=[
                {"topic": "elect", "partitions": [0, 1, 9]},
                {"topic": "nope", "partitions": [0]},
            ],
            timeout_ms=1000,
        )
        results = {
            (r.topic, p.partition_id): p.error_code
            for r in answer.replica_election_results
            for p in r.partition_result
        }
        assert results == {
            ("elect", 0): ErrorCode.ELECTION_NOT_NEEDED,
            ("elect", 1): ErrorCode.ELECTION_NOT_NEEDED,
            ("elect", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        everything = send(
            conn, ApiKey.ELECT_LEADERS, version, topic_partitions=None, timeout_ms=1000
        )
        assert everything.replica_election_results == ()


def test_alter_and_list_partition_reassignments(
    cluster: Cluster, conn: Connection
) -> None:
    cluster.create_topic("moving", 2)
    nodes = cluster.state.node_ids
    for version in api_versions(ApiKey.ALTER_PARTITION_REASSIGNMENTS):
        target = [n for n in nodes if n != cluster.state.leader("moving", 0)][0]
        answer = send(
            conn,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            version,
            timeout_ms=1000,
            topics=[
                {
                    "name": "moving",
                    "partitions": [
                        {"partition_index": 0, "replicas": [target]},
                        {"partition_index": 1, "replicas": None},
                        {"partition_index": 5, "replicas": [target]},
                        {"partition_index": 1, "replicas": [77]},
                        {"partition_index": 1, "replicas": list(nodes)},
                    ],
                }
            ],
        )
        assert answer.error_code == ErrorCode.NONE
        errors = [p.error_code for p in answer.responses[0].partitions]
        assert errors == [
            ErrorCode.NONE,
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ErrorCode.NONE,  # the replication factor may change (KIP-860 default)
        ]
        assert cluster.state.leader("moving", 0) == target
        metadata = conn.request(ApiKey.METADATA, topics=[{"name": "moving"}])
        leaders = {
            p.partition_index: (p.leader_id, list(p.replica_nodes))
            for p in metadata.topics[0].partitions
        }
        assert leaders[0] == (target, [target])
        assert leaders[1][1] == list(nodes)
        if version >= 1:
            kept = send(
                conn,
                ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                version,
                timeout_ms=1000,
                allow_replication_factor_change=False,
                topics=[
                    {
                        "name": "moving",
                        "partitions": [{"partition_index": 1, "replicas": [target]}],
                    }
                ],
            )
            assert kept.responses[0].partitions[0].error_code == (
                ErrorCode.INVALID_REPLICATION_FACTOR
            )
    listed = conn.request(
        ApiKey.LIST_PARTITION_REASSIGNMENTS, timeout_ms=1000, topics=None
    )
    assert (listed.error_code, listed.topics) == (ErrorCode.NONE, ())


def test_elect_leaders_of_an_offline_partition() -> None:
    """A partition whose replicas' nodes are stopped (leader -1): nothing to
    elect; once a replica is live again an unclean election gives it the lead."""
    with Cluster(nodes=2) as c:
        c.create_topic("offline", 1)
        down = c.state.leader("offline", 0)
        assert down is not None
        up = next(n for n in c.state.node_ids if n != down)
        c.stop_node(down, move_leaders=False)
        conn = connect(c, up)
        try:
            for kind, code in (
                (0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
                (1, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE),
            ):
                answer = conn.request(
                    ApiKey.ELECT_LEADERS,
                    election_type=kind,
                    topic_partitions=[{"topic": "offline", "partitions": [0]}],
                    timeout_ms=1000,
                )
                result = answer.replica_election_results[0].partition_result[0]
                assert result.error_code == code
        finally:
            conn.close()
