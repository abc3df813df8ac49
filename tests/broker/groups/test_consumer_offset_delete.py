"""OffsetDelete (KIP-496) on a KIP-848 consumer group: a topic its members subscribe
to is refused with GROUP_SUBSCRIBED_TO_TOPIC while the group has members (Kafka's
``ConsumerGroup.validateOffsetDelete`` and ``isSubscribedToTopic``); other topics'
offsets are deleted, and every topic's once the group is empty."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.broker.wire import commit_offset

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def conn() -> Iterator[Connection]:
    with Cluster(nodes=1) as cluster:
        for topic in ("sub", "other"):
            cluster.create_topic(topic, 1)
        info = cluster.state.nodes[1]
        with Connection(info.host, info.port, timeout_s=20) as c:
            c.negotiate(caps={ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9})
            yield c


def heartbeat(conn: Connection, epoch: int, **fields: Any) -> Any:
    answer = conn.request(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        group_id="g",
        member_id="m1",
        member_epoch=epoch,
        **fields,
    )
    assert answer.error_code == ErrorCode.NONE
    return answer


def offset_delete(conn: Connection, *topics: str) -> dict[str, int]:
    answer = conn.request(
        ApiKey.OFFSET_DELETE,
        group_id="g",
        topics=[{"name": t, "partitions": [{"partition_index": 0}]} for t in topics],
    )
    assert answer.error_code == ErrorCode.NONE
    return {t.name: t.partitions[0].error_code for t in answer.topics}


def committed(conn: Connection) -> dict[str, int]:
    (group,) = conn.request(
        ApiKey.OFFSET_FETCH,
        groups=[
            {"group_id": "g", "member_id": None, "member_epoch": -1, "topics": None}
        ],
    ).groups
    return {t.name: t.partitions[0].committed_offset for t in group.topics}


def test_offset_delete_refuses_subscribed_topics_until_empty(conn: Connection) -> None:
    joined = heartbeat(
        conn,
        0,
        rebalance_timeout_ms=2000,
        subscribed_topic_names=["sub"],
        topic_partitions=[],
    )
    for topic, offset in (("sub", 5), ("other", 6)):
        assert (
            commit_offset(conn, "g", topic, 0, offset, member_id="m1", member_epoch=1)
            == ErrorCode.NONE
        )
    assert offset_delete(conn, "sub", "other") == {
        "sub": ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
        "other": ErrorCode.NONE,
    }
    assert committed(conn) == {"sub": 5}
    heartbeat(conn, -1)  # the last member leaves: the group is empty
    assert joined.member_epoch == 1
    assert offset_delete(conn, "sub") == {"sub": ErrorCode.NONE}
    assert committed(conn) == {}
