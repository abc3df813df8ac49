"""ShareFetch's limits and isolation as Kafka 4.2 applies them
(``DelayedShareFetch``, ``SharePartition.acquire``): ``max_bytes`` bounds the
batches returned (the first one passes; 0 returns none), ``max_records``,
``batch_size`` and the ``record_limit`` acquire mode shape the acquired ranges,
and the group config ``share.isolation.level=read_committed`` stops at the last
stable offset and archives aborted transactions' records. Raw ShareFetch requests
and confluent-kafka's ShareConsumer."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.records import encode_batch
from tests.broker.share import support
from tests.broker.share.support import (
    ck,
    fresh,
    poll_for,
    poll_until,
    share_consumer,
)
from tests.broker.wire import produce

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def conn(cluster: Cluster) -> Iterator[Connection]:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=10) as c:
        c.negotiate(caps={ApiKey.PRODUCE: 12})  # topics by name
        yield c


def batches(conn: Connection, topic: str, *sizes: int, value: bytes = b"v") -> None:
    """Append one batch of ``n`` records per size to partition 0."""
    for n in sizes:
        batch = encode_batch([(None, value, (), 0) for _ in range(n)])
        answer = produce(conn, topic, {0: batch})
        assert answer.responses[0].partition_responses[0].error_code == 0


def share_fetch(
    conn: Connection,
    group: str,
    topic_id: uuid.UUID,
    *,
    epoch: int = 0,
    member: str = "m",
    **limits: Any,
) -> list[tuple[int, int, int]]:
    """One ShareFetch of partition 0; the acquired ranges (first, last, count)."""
    fields = {"max_records": 500, "batch_size": 500, **limits}
    topics = [support.share_topic(topic_id, [])]
    answer = support.share_request(
        conn, ApiKey.SHARE_FETCH, group, member, epoch, topics, **fields
    )
    assert answer.error_code == ErrorCode.NONE
    (part,) = answer.responses[0].partitions
    assert part.error_code == ErrorCode.NONE
    return [
        (a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records
    ]


def topic_of(cluster: Cluster, prefix: str) -> tuple[str, uuid.UUID]:
    name = fresh(prefix)
    cluster.create_topic(name, 1)
    return name, cluster.state.topics[name].topic_id


def test_max_bytes_bounds_the_batches(cluster: Cluster, conn: Connection) -> None:
    topic, topic_id = topic_of(cluster, "bytes")
    batches(conn, topic, 1, 1, 1, 1, 1)
    group = fresh("g")
    # 0 bytes: nothing (Kafka's PartitionMaxBytesStrategy takes no partition)
    assert share_fetch(conn, group, topic_id, max_bytes=0) == []
    # fewer bytes than one batch: the first batch still comes, alone
    assert share_fetch(conn, group, topic_id, epoch=1, max_bytes=1) == [(0, 0, 1)]
    # room for two batches of ~70 bytes, not three
    assert share_fetch(conn, group, topic_id, epoch=2, max_bytes=150) == [(1, 2, 1)]
    assert share_fetch(conn, group, topic_id, epoch=3) == [(3, 4, 1)]


def test_max_records_batch_size_and_record_limit(
    cluster: Cluster, conn: Connection
) -> None:
    topic, topic_id = topic_of(cluster, "recs")
    batches(conn, topic, 3, 3, 3, 3)
    group = fresh("g")
    # max_records is soft: whole batches until 4 records are reached (two batches)
    assert share_fetch(conn, group, topic_id, max_records=4) == [(0, 5, 1)]
    # batch_size 3: the acquired records are split at batch boundaries
    assert share_fetch(conn, group, topic_id, epoch=1, batch_size=3) == [
        (6, 8, 1),
        (9, 11, 1),
    ]
    other = fresh("g")
    # record_limit (KIP-1206): exactly max_records, the rest stays available
    assert share_fetch(conn, other, topic_id, max_records=2, share_acquire_mode=1) == [
        (0, 1, 1)
    ]
    assert share_fetch(
        conn, other, topic_id, epoch=1, max_records=2, share_acquire_mode=1
    ) == [(2, 3, 1)]


def _set_group_config(cluster: Cluster, group: str, name: str, value: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(10)


@pytest.mark.skipif(
    not hasattr(ck, "ShareConsumer"), reason="this confluent-kafka has no ShareConsumer"
)
def test_read_committed_share_group(cluster: Cluster) -> None:
    topic = fresh("txn")
    cluster.create_topic(topic, 1)
    committed, uncommitted = fresh("rc"), fresh("ru")
    _set_group_config(cluster, committed, "share.isolation.level", "read_committed")
    with pytest.raises(ck.KafkaException):
        _set_group_config(cluster, committed, "share.isolation.level", "serializable")
    producer = ck.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": fresh("t")}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    for v in (b"a0", b"a1"):
        producer.produce(topic, v, partition=0)
    producer.flush(10)
    producer.abort_transaction(10)
    producer.begin_transaction()
    for v in (b"c0", b"c1"):
        producer.produce(topic, v, partition=0)
    producer.commit_transaction(10)
    producer.begin_transaction()
    producer.produce(topic, b"open", partition=0)
    producer.flush(10)  # stored, its transaction still open
    rc, ru = share_consumer(cluster, committed), share_consumer(cluster, uncommitted)
    rc.subscribe([topic])
    ru.subscribe([topic])
    try:
        got = poll_until(rc, lambda got: len(got) >= 2)
        assert [m.value() for m in got] == [b"c0", b"c1"]
        # nothing past the last stable offset
        assert poll_for(rc, 1.0) == []
        # read_uncommitted (the default) gets everything stored
        everything = poll_until(ru, lambda got: len(got) >= 5)
        assert [m.value() for m in everything] == [b"a0", b"a1", b"c0", b"c1", b"open"]
        producer.commit_transaction(10)
        late = poll_until(rc, lambda got: len(got) >= 1)
        assert [m.value() for m in late] == [b"open"]
        rc.commit_sync(10)
    finally:
        rc.close()
        ru.close()


@pytest.mark.skipif(
    not hasattr(ck, "ShareConsumer"), reason="this confluent-kafka has no ShareConsumer"
)
def test_share_consumer_with_a_small_fetch_max_bytes(
    cluster: Cluster, conn: Connection
) -> None:
    """Batches of ~700 bytes and ``fetch.max.bytes`` 1000: every ShareFetch
    response carries one batch, as Kafka's."""
    topic, _ = topic_of(cluster, "small")
    batches(conn, topic, *[1] * 6, value=b"x" * 600)
    group = fresh("g")
    consumer = ck.ShareConsumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "fetch.max.bytes": 1000,
            "message.max.bytes": 1000,
            "log_level": 3,
        }
    )
    consumer.subscribe([topic])
    try:
        got = poll_until(consumer, lambda got: len(got) >= 6)
        consumer.commit_sync(10)
    finally:
        consumer.close()
    assert [m.offset() for m in got] == list(range(6))
    fetched = [
        r.response
        for r in cluster.requests.filter(api_key=ApiKey.SHARE_FETCH)
        if r.request.group_id == group and r.response is not None
    ]
    acquired = [
        [
            (a.first_offset, a.last_offset)
            for t in response.responses
            for p in t.partitions
            for a in p.acquired_records
        ]
        for response in fetched
    ]
    assert all(len(a) <= 1 for a in acquired), acquired
    assert sorted(a[0] for a in acquired if a) == [(i, i) for i in range(6)]
