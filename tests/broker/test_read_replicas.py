"""Fetch from followers (KIP-392), as Kafka's ``ReplicaManager.findPreferredReadReplica``
and ``RackAwareReplicaSelector``: a consumer with ``client.rack`` is sent to the
in-sync follower on its rack and reads there (confluent-kafka's Consumer; the
request log shows which node served it); followers serve consumers' Fetch v11+ from
their own watermarks; the test controls ``partition_set_follower`` and
``partition_set_follower_wmarks`` (librdkafka's mock)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.broker_config import RACK_AWARE_SELECTOR, BrokerConfigError
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.meta import build_entity
from kproto.records import decode_batches
from tests.eventually import during, eventually

ck = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.timeout(120)

RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
_names = itertools.count()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(
        nodes=3,
        data_dir=tmp_path_factory.mktemp("read-replicas"),
        config={"replica.selector.class": RACK_AWARE_SELECTOR},
    ) as c:
        for node, rack in RACKS.items():
            c.set_rack(node, rack)
        yield c


def produce(cluster: Cluster, topic: str) -> None:
    """Records v0..v9 into ``topic``-0, one record batch each (a follower's
    watermarks fall between batches, as replication copies whole batches)."""
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(10):
        producer.produce(topic, f"v{i}".encode(), partition=0)
        assert producer.flush(10) == 0


@pytest.fixture
def topic(cluster: Cluster) -> Iterator[str]:
    """A one-partition topic on nodes 1, 2, 3, led by node 1 at leader epoch 1
    or more, holding 10 records; the followers' controls are cleared
    afterwards."""
    name = f"rr{next(_names)}"
    cluster.create_topic(name, 1, replication_factor=3)
    assert cluster.move_leader(name, 0, 1) >= 1  # an epoch a fetch can be behind
    produce(cluster, name)
    yield name
    cluster.partition_set_follower(name, 0, None)
    cluster.partition_set_follower_wmarks(name, 0, -1, -1)


def fetch(
    cluster: Cluster,
    node: int,
    topic: str,
    *,
    offset: int = 0,
    rack: str = "",
    version: int = 16,
    epoch: int = -1,
) -> Any:
    """The one partition's answer to a Fetch of ``topic``-0 from ``offset``, sent
    to ``node`` at ``version`` by a consumer on ``rack``."""
    entry: dict[str, Any] = (
        {"topic": topic}
        if version < 13
        else {"topic_id": cluster.state.topics[topic].topic_id}
    )
    partition: dict[str, Any] = {
        "partition": 0,
        "fetch_offset": offset,
        "partition_max_bytes": 1 << 20,
    }
    if version >= 9:
        partition["current_leader_epoch"] = epoch
    entry["partitions"] = [partition]
    fields = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "topics": [entry],
        "forgotten_topics_data": [],
        "rack_id": rack,
        "replica_state": None,
    }
    info = cluster.state.nodes[node]
    with Connection(info.host, info.port, timeout_s=10) as conn:
        request: Any = build_entity(
            request_type(ApiKey.FETCH, version), fields, drop_absent=True
        )
        response = conn.send(request)
    ((answer,),) = [t.partitions for t in response.responses]
    return answer


def offsets(records: bytes | None) -> list[int]:
    """The offsets of the records in a Fetch answer's record batches."""
    return [r.offset for batch in decode_batches(records or b"") for r in batch.records]


def consume(cluster: Cluster, topic: str, rack: str, count: int) -> list[bytes]:
    consumer = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"g-{topic}-{rack}",
            "client.rack": rack,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([ck.TopicPartition(topic, 0, 0)])
    got: list[bytes] = []

    def read() -> bool:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got.append(message.value())
        return len(got) >= count

    try:
        eventually(read, 20, interval_s=0, retry_on=(), message=lambda: f"{got}")
    finally:
        consumer.close()
    return got


def fetch_nodes(cluster: Cluster, topic: str) -> dict[int, int]:
    """Records served per node by the Fetches of ``topic`` in the request log."""
    served: dict[int, int] = {}
    topic_id = cluster.state.topics[topic].topic_id
    for record in cluster.request_log(api_key=ApiKey.FETCH):
        for t in record.response.responses:
            if getattr(t, "topic", None) != topic and t.topic_id != topic_id:
                continue
            for p in t.partitions:
                if p.records:
                    served[record.node_id] = served.get(record.node_id, 0) + len(
                        offsets(p.records)
                    )
    return served


# -------------------------------------------------------------- real consumer


def test_consumer_with_client_rack_reads_from_its_racks_follower(
    cluster: Cluster, topic: str
) -> None:
    cluster.clear_request_log()
    got = consume(cluster, topic, "rack-b", 10)
    assert got == [f"v{i}".encode() for i in range(10)]
    # node 1 (the leader) sent the consumer to node 2, which served every record
    assert fetch_nodes(cluster, topic) == {2: 10}
    redirects = [
        p.preferred_read_replica
        for r in cluster.request_log(api_key=ApiKey.FETCH, node_id=1)
        for t in r.response.responses
        for p in t.partitions
    ]
    assert 2 in redirects


def test_consumer_on_the_leaders_rack_reads_from_the_leader(
    cluster: Cluster, topic: str
) -> None:
    cluster.clear_request_log()
    assert len(consume(cluster, topic, "rack-a", 10)) == 10
    assert fetch_nodes(cluster, topic) == {1: 10}


def test_kafka_python_consumer_with_client_rack(cluster: Cluster, topic: str) -> None:
    kafka = pytest.importorskip("kafka")
    cluster.clear_request_log()
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        client_rack="rack-c",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    consumer.assign([kafka.TopicPartition(topic, 0)])
    got: list[bytes] = []
    try:
        for message in consumer:
            got.append(message.value)
            if len(got) == 10:
                break
    finally:
        consumer.close()
    assert got == [f"v{i}".encode() for i in range(10)]
    assert fetch_nodes(cluster, topic) == {3: 10}


def test_consumer_waits_for_a_lagging_follower(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """librdkafka's test 0104 ``do_test_offset_reset_lag`` on kproto: a pinned
    follower (no selector) lagging behind its leader serves records up to its
    high watermark, then nothing until it catches up, then the rest; every
    record comes from the follower."""
    with Cluster(nodes=3, data_dir=tmp_path_factory.mktemp("pinned")) as cluster:
        cluster.create_topic("pinned", 1, replication_factor=3)
        produce(cluster, "pinned")
        leader = cluster.leader("pinned", 0)
        assert fetch(cluster, leader, "pinned", rack="x").preferred_read_replica == -1
        follower = next(n for n in (1, 2, 3) if n != leader)
        cluster.partition_set_follower("pinned", 0, follower)
        cluster.partition_set_follower_wmarks("pinned", 0, -1, 7)  # 3 behind
        cluster.clear_request_log()
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "lag",
                "client.rack": "myrack",
                "auto.offset.reset": "earliest",
                "fetch.message.max.bytes": 100,
            }
        )
        consumer.assign([ck.TopicPartition("pinned", 0, ck.OFFSET_BEGINNING)])
        got: list[bytes] = []

        def poll() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())
            return len(got) >= 10

        try:
            eventually(lambda: poll() or len(got) >= 7, 20, interval_s=0, retry_on=())
            during(poll, 1.5)
            assert len(got) == 7, "nothing above the follower's high watermark"
            cluster.partition_set_follower_wmarks("pinned", 0, -1, -1)
            eventually(poll, 20, interval_s=0, retry_on=())
        finally:
            consumer.close()
        assert got == [f"v{i}".encode() for i in range(10)]
        assert fetch_nodes(cluster, "pinned") == {follower: 10}


# ------------------------------------------------------------------- the leader


def test_leader_answers_the_follower_on_the_consumers_rack(
    cluster: Cluster, topic: str
) -> None:
    answer = fetch(cluster, 1, topic, rack="rack-c")
    assert answer.error_code == ErrorCode.NONE
    assert answer.preferred_read_replica == 3
    assert answer.records in (None, b"")  # nothing read: the consumer goes there
    assert answer.high_watermark == 10


@pytest.mark.parametrize(
    ("rack", "version"),
    [("", 16), ("rack-a", 16), ("rack-z", 16), ("rack-b", 10)],
    ids=["no-rack", "leaders-rack", "no-replica-there", "fetch-v10"],
)
def test_leader_keeps_the_consumer(
    cluster: Cluster, topic: str, rack: str, version: int
) -> None:
    answer = fetch(cluster, 1, topic, rack=rack, version=version)
    assert answer.error_code == ErrorCode.NONE
    assert getattr(answer, "preferred_read_replica", -1) == -1
    assert offsets(answer.records) == list(range(10))


def test_follower_out_of_the_isr_is_not_chosen(cluster: Cluster, topic: str) -> None:
    cluster.decommission_node(2)  # still serving, no longer listed: not in the ISR
    try:
        assert fetch(cluster, 1, topic, rack="rack-b").preferred_read_replica == -1
    finally:
        cluster.stop_node(2)
        cluster.start_node(2)


def test_follower_lacking_the_fetch_offset_is_not_chosen(
    cluster: Cluster, topic: str
) -> None:
    cluster.partition_set_follower_wmarks(topic, 0, 2, 6)
    assert fetch(cluster, 1, topic, offset=6, rack="rack-b").preferred_read_replica == 2
    assert (
        fetch(cluster, 1, topic, offset=7, rack="rack-b").preferred_read_replica == -1
    )
    assert (
        fetch(cluster, 1, topic, offset=1, rack="rack-b").preferred_read_replica == -1
    )


def test_default_selector_is_the_leader(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with Cluster(nodes=2, data_dir=tmp_path_factory.mktemp("leader-only")) as c:
        c.set_rack(1, "r1")
        c.set_rack(2, "r2")
        c.create_topic("t", 1, replication_factor=2)
        leader = c.leader("t", 0)
        other = 3 - leader
        answer = fetch(c, leader, "t", rack=c.state.nodes[other].rack or "")
        assert answer.preferred_read_replica == -1


def test_replica_selector_class_is_checked() -> None:
    with pytest.raises(BrokerConfigError, match="replica.selector.class"):
        Cluster(config={"replica.selector.class": "com.example.Nearest"})


# ----------------------------------------------------------------- a follower


def test_follower_serves_consumers_fetch_v11_and_up(
    cluster: Cluster, topic: str
) -> None:
    answer = fetch(cluster, 2, topic)
    assert answer.error_code == ErrorCode.NONE
    assert answer.preferred_read_replica == -1  # a follower never redirects
    assert offsets(answer.records) == list(range(10))
    assert fetch(cluster, 2, topic, version=11).error_code == ErrorCode.NONE


def test_follower_refuses_fetch_v10_and_epochs_as_the_leader(
    cluster: Cluster, topic: str
) -> None:
    epoch = cluster.leader_epoch(topic, 0)
    assert fetch(cluster, 2, topic, version=10).error_code == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    assert fetch(cluster, 2, topic, epoch=epoch).error_code == ErrorCode.NONE
    assert fetch(cluster, 2, topic, epoch=epoch - 1).error_code == (
        ErrorCode.FENCED_LEADER_EPOCH
    )
    assert fetch(cluster, 2, topic, epoch=epoch + 1).error_code == (
        ErrorCode.UNKNOWN_LEADER_EPOCH
    )


def test_node_without_a_replica_is_not_leader_or_follower(cluster: Cluster) -> None:
    name = f"rr{next(_names)}"
    cluster.create_topic(name, 1, replication_factor=2)
    outsider = next(
        n for n in (1, 2, 3) if n not in cluster.state.topics[name].replicas[0]
    )
    assert fetch(cluster, outsider, name).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_follower_watermarks_bound_what_a_follower_serves(
    cluster: Cluster, topic: str
) -> None:
    cluster.partition_set_follower_wmarks(topic, 0, 3, 7)
    answer = fetch(cluster, 2, topic, offset=3)
    assert (answer.log_start_offset, answer.high_watermark) == (3, 7)
    assert answer.last_stable_offset == 7
    assert offsets(answer.records) == [3, 4, 5, 6]
    assert fetch(cluster, 2, topic, offset=7).records in (None, b"")
    for outside in (2, 8):
        assert fetch(cluster, 2, topic, offset=outside).error_code == (
            ErrorCode.OFFSET_OUT_OF_RANGE
        )
    # the leader keeps its own
    leader = fetch(cluster, 1, topic, offset=8)
    assert (leader.error_code, leader.high_watermark) == (ErrorCode.NONE, 10)
    cluster.partition_set_follower_wmarks(topic, 0, -1, -1)
    assert offsets(fetch(cluster, 2, topic, offset=8).records) == [8, 9]


def test_controls_check_their_arguments(cluster: Cluster, topic: str) -> None:
    with pytest.raises(KeyError):
        cluster.partition_set_follower("missing", 0, 2)
    with pytest.raises(KeyError):
        cluster.partition_set_follower_wmarks(topic, 1, 0, 1)
    with pytest.raises(ValueError, match="-1 or 0 <= lo <= hi"):
        cluster.partition_set_follower_wmarks(topic, 0, 5, 4)
    name = f"rr{next(_names)}"
    cluster.create_topic(name, 1, replication_factor=1)
    outsider = next(n for n in (1, 2, 3) if n != cluster.leader(name, 0))
    with pytest.raises(ValueError, match="no replica"):
        cluster.partition_set_follower(name, 0, outsider)
    # an id no node has is answered all the same (a client must cope)
    cluster.partition_set_follower(topic, 0, 42)
    assert fetch(cluster, 1, topic, rack="rack-b").preferred_read_replica == 42
