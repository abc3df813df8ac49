"""What the share-group tests share: cluster settings, a producer, a share
consumer, a bounded poll loop and the share-partition start offsets of a group."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.index import ApiKey
from tests.eventually import during, eventually

ck = pytest.importorskip("confluent_kafka")

#: How long a client may take to show what a test waits for (s).
DEADLINE_S = 20.0
#: Share partitions start at the log start; members heartbeat every 200 ms.
SHARE_CONFIGS = {
    "share.auto.offset.reset": "earliest",
    "group.share.heartbeat.interval.ms": 200,
}
_names = itertools.count()


def fresh(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


def produce(cluster: Cluster, topic: str, count: int, partitions: int = 1) -> None:
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(count):
        producer.produce(topic, f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(10) == 0


def share_consumer(cluster: Cluster, group: str, *, explicit: bool = False) -> Any:
    config = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": group,
        "log_level": 3,
    }
    if explicit:
        config["share.acknowledgement.mode"] = "explicit"
    return ck.ShareConsumer(config)


def poll_until(
    consumer: Any, done: Callable[[list[Any]], bool], seconds: float = DEADLINE_S
) -> list[Any]:
    """Poll (accepting nothing explicitly) until ``done(messages)``; the messages."""
    got: list[Any] = []

    def polled() -> bool:
        if done(got):
            return True
        for message in consumer.poll(0.2):
            assert message.error() is None, message.error()
            got.append(message)
        return done(got)

    eventually(polled, seconds, interval_s=0, retry_on=())
    return got


def poll_for(consumer: Any, seconds: float) -> list[Any]:
    """Every message delivered within ``seconds`` (a quiet period, not a wait for
    something: a test expecting nothing asserts ``== []``)."""
    got: list[Any] = []

    def polled() -> None:
        for message in consumer.poll(0.2):
            assert message.error() is None, message.error()
            got.append(message)

    during(polled, seconds)
    return got


def start_offsets(cluster: Cluster, group: str, topic: str) -> dict[int, int]:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        answer = conn.request(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            groups=[{"group_id": group, "topics": None}],
        )
    (g,) = answer.groups
    assert g.error_code == 0
    return {
        p.partition_index: p.start_offset
        for t in g.topics
        if t.topic_name == topic
        for p in t.partitions
    }
