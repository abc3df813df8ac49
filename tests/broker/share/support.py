"""What the share-group tests share: cluster settings, a producer, a share
consumer, a bounded poll loop, the share-partition start offsets of a group, and
raw ShareFetch / ShareAcknowledge requests."""

from __future__ import annotations

import itertools
import uuid
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


def new_topic(cluster: Cluster, prefix: str, records: int, partitions: int = 1) -> str:
    """A fresh topic of ``partitions`` partitions holding ``records`` records
    (:func:`produce`); its name."""
    topic = fresh(prefix)
    cluster.create_topic(topic, partitions)
    produce(cluster, topic, records, partitions)
    return topic


def share_consumer(
    cluster: Cluster,
    group: str,
    *,
    explicit: bool = False,
    topics: list[str] | None = None,
) -> Any:
    """A confluent-kafka ``ShareConsumer`` of ``group`` (acknowledging explicitly
    with ``explicit``), subscribed to ``topics`` if given."""
    config = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": group,
        "log_level": 3,
    }
    if explicit:
        config["share.acknowledgement.mode"] = "explicit"
    consumer = ck.ShareConsumer(config)
    if topics is not None:
        consumer.subscribe(topics)
    return consumer


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


def deliveries(messages: list[Any]) -> list[tuple[int, int]]:
    """Each message's offset and delivery count (KIP-932), in order."""
    return [(m.offset(), m.delivery_count()) for m in messages]


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


def share_topic(
    topic_id: uuid.UUID, batches: list[dict[str, Any]], partition: int = 0
) -> dict[str, Any]:
    """A ShareFetch / ShareAcknowledge topic entry: ``partition`` of ``topic_id``
    with its acknowledgement ``batches`` (first_offset, last_offset,
    acknowledge_types)."""
    return {
        "topic_id": topic_id,
        "partitions": [
            {"partition_index": partition, "acknowledgement_batches": batches}
        ],
    }


#: ShareFetch's limits where a test names none: no wait, up to 1 MiB and 100 records
FETCH_LIMITS = {
    "max_wait_ms": 0,
    "min_bytes": 1,
    "max_bytes": 1 << 20,
    "max_records": 100,
    "batch_size": 100,
}


def share_request(
    conn: Connection,
    api_key: ApiKey,
    group: str,
    member_id: str,
    epoch: int,
    topics: list[dict[str, Any]],
    **fields: Any,
) -> Any:
    """The answer to a ShareFetch or ShareAcknowledge (``api_key``, KIP-932) of
    ``member_id`` of ``group`` at share session ``epoch`` for ``topics`` (topic
    entries, :func:`share_topic`); a ShareFetch's ``fields`` replace
    :data:`FETCH_LIMITS`."""
    if api_key == ApiKey.SHARE_FETCH:
        fields = {**FETCH_LIMITS, **fields}
    return conn.request(
        api_key,
        group_id=group,
        member_id=member_id,
        share_session_epoch=epoch,
        topics=topics,
        **fields,
    )
