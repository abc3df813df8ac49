"""DescribeTopicPartitions (handlers/topic_partitions.py): pages by cursor,
unknown topics, the listing of every topic."""

from __future__ import annotations

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey


def test_describe_topic_partitions_pages_with_a_cursor(
    cluster: Cluster, conn: Connection
) -> None:
    cluster.create_topic("dtp-a", 3)
    cluster.create_topic("dtp-b", 2)
    pages = []
    cursor = None
    for _ in range(10):
        answer = conn.request(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            topics=[{"name": "dtp-b"}, {"name": "dtp-a"}, {"name": "dtp-missing"}],
            response_partition_limit=2,
            cursor=cursor,
        )
        pages.append(
            [(t.name, [p.partition_index for p in t.partitions]) for t in answer.topics]
        )
        if answer.next_cursor is None:
            break
        cursor = {
            "topic_name": answer.next_cursor.topic_name,
            "partition_index": answer.next_cursor.partition_index,
        }
    assert pages == [
        [("dtp-a", [0, 1])],
        [("dtp-a", [2]), ("dtp-b", [0])],
        [("dtp-b", [1]), ("dtp-missing", [])],
    ]
    answer = conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, topics=[{"name": "dtp-a"}])
    (topic,) = answer.topics
    assert topic.topic_id == cluster.state.topics["dtp-a"].topic_id
    assert [p.leader_id for p in topic.partitions] == cluster.state.topics[
        "dtp-a"
    ].leaders
    assert topic.topic_authorized_operations > 0
    missing = conn.request(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS, topics=[{"name": "dtp-missing"}]
    )
    assert missing.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    everything = conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, topics=[])
    names = [t.name for t in everything.topics]
    assert names == sorted(names) and {"dtp-a", "dtp-b"} <= set(names)
