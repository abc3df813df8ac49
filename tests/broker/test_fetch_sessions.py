"""Incremental fetch sessions (KIP-227): a real consumer of 100 partitions, and
the session protocol (creation, incremental answers, forgetting, errors, closing,
eviction) with kproto's own Connection."""

from __future__ import annotations

from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.fetch_session import FetchSessionCache
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.meta import build_entity
from kproto.records import decode_records, encode_batch
from tests.consuming import read_values
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")


def _produce_300(cluster: Cluster) -> None:
    cluster.create_topic("many", 100)
    producer = ck.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 2}
    )
    for i in range(300):
        producer.produce("many", b"v%d" % i, key=b"k%d" % i, partition=i % 100)
    assert producer.flush(30) == 0


def _partitions(topics: Any) -> int:
    return sum(len(t.partitions) for t in topics)


def test_kafka_python_consumer_of_100_partitions_uses_sessions() -> None:
    kafka = pytest.importorskip("kafka")
    with Cluster() as cluster:
        _produce_300(cluster)
        consumer = kafka.KafkaConsumer(
            "many",
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="g100",
            auto_offset_reset="earliest",
            fetch_max_wait_ms=50,
        )
        got = set(read_values(consumer, 300, timeout_s=60))
        for _ in range(4):  # incremental fetches with no news
            consumer.poll(200)
        consumer.close()
        assert got == {b"v%d" % i for i in range(300)}
        fetches = cluster.requests.filter(api_key=ApiKey.FETCH)
        opened = [
            r
            for r in fetches
            if r.request.session_epoch == 0 and r.response.session_id != 0
        ]
        incremental = [
            r
            for r in fetches
            if r.request.session_id != 0 and r.request.session_epoch > 0
        ]
        assert opened, "no fetch session was opened"
        assert _partitions(opened[0].request.topics) == 100
        assert incremental, "kafka-python never sent an incremental fetch"
        assert all(r.response.error_code == ErrorCode.NONE for r in incremental)
        assert all(r.response.session_id == r.request.session_id for r in incremental)
        assert any(_partitions(r.request.topics) < 100 for r in incremental)
        assert any(_partitions(r.response.responses) < 100 for r in incremental)


def test_confluent_consumer_of_100_partitions_sessionless() -> None:
    """librdkafka 2.16 does not implement KIP-227: it sends epoch -1 (sessionless
    full fetches), which the broker answers with session id 0."""
    with Cluster() as cluster:
        _produce_300(cluster)
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "g100",
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 50,
                "log_level": 2,
            }
        )
        consumer.subscribe(["many"])
        got: set[bytes] = set()

        def all_read() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.add(msg.value())
            return len(got) >= 300

        eventually(all_read, 60, interval_s=0, retry_on=())
        consumer.close()
        assert got == {b"v%d" % i for i in range(300)}
        fetches = cluster.requests.filter(api_key=ApiKey.FETCH)
        assert fetches
        assert all(
            (r.request.session_epoch, r.response.session_id) == (-1, 0) for r in fetches
        )


# ------------------------------------------------------------------ protocol


def fetch(conn: Connection, version: int, **fields: Any) -> Any:
    fields.setdefault("replica_id", -1)
    fields.setdefault("max_wait_ms", 0)
    fields.setdefault("min_bytes", 0)
    fields.setdefault("max_bytes", 1 << 20)
    fields.setdefault("isolation_level", 0)
    fields.setdefault("forgotten_topics_data", [])
    fields.setdefault("rack_id", "")
    fields.setdefault("replica_state", None)
    return conn.send(build_entity(_fetch_type(version), fields, drop_absent=True))


def _fetch_type(version: int) -> type:
    return request_type(ApiKey.FETCH, version)


def topics(
    names: dict[str, list[tuple[int, int]]], version: int, ids: dict[str, Any]
) -> list[dict[str, Any]]:
    return [
        {
            "topic": name,
            "topic_id": ids[name],
            "partitions": [
                {
                    "partition": p,
                    "fetch_offset": offset,
                    "partition_max_bytes": 1 << 20,
                    "current_leader_epoch": -1,
                    "last_fetched_epoch": -1,
                    "log_start_offset": -1,
                }
                for p, offset in parts
            ],
        }
        for name, parts in names.items()
    ]


def answered(response: Any) -> dict[int, int]:
    """partition -> records answered."""
    return {
        p.partition_index: len(list(decode_records(p.records))) if p.records else 0
        for t in response.responses
        for p in t.partitions
    }


@pytest.mark.parametrize("version", [7, 12, 13, 17])
def test_session_protocol(version: int) -> None:
    with Cluster() as cluster:
        info = cluster.create_topic("s", 3)
        ids = {"s": info.topic_id}
        host, port = cluster.bootstrap_servers.split(":")
        with Connection(host, int(port)) as conn:
            for p in range(3):
                produce(conn, info.topic_id, p)
            parts = [(0, 0), (1, 0), (2, 0)]
            full = fetch(
                conn,
                version,
                session_id=0,
                session_epoch=0,
                topics=topics({"s": parts}, version, ids),
            )
            assert full.error_code == ErrorCode.NONE
            sid = full.session_id
            assert sid > 0
            assert answered(full) == {0: 1, 1: 1, 2: 1}
            # incremental: every partition advanced past its record; nothing new
            inc = fetch(
                conn,
                version,
                session_id=sid,
                session_epoch=1,
                topics=topics({"s": [(0, 1), (1, 1), (2, 1)]}, version, ids),
            )
            assert (inc.error_code, inc.session_id) == (ErrorCode.NONE, sid)
            assert answered(inc) == {}
            # new data on partition 2: only partition 2 answered, from the cached offset
            produce(conn, info.topic_id, 2)
            inc = fetch(conn, version, session_id=sid, session_epoch=2, topics=[])
            assert answered(inc) == {2: 1}
            # a wrong epoch, an unknown session
            bad = fetch(conn, version, session_id=sid, session_epoch=7, topics=[])
            assert (bad.error_code, bad.session_id) == (
                ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                0,
            )
            bad = fetch(conn, version, session_id=sid + 1, session_epoch=1, topics=[])
            assert bad.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            # partition 2 moves on, partition 1 is forgotten
            forgotten = [{"topic": "s", "topic_id": info.topic_id, "partitions": [1]}]
            inc = fetch(
                conn,
                version,
                session_id=sid,
                session_epoch=3,
                topics=topics({"s": [(2, 2)]}, version, ids),
                forgotten_topics_data=forgotten,
            )
            assert answered(inc) == {}
            produce(conn, info.topic_id, 1)  # not in the session any more
            inc = fetch(conn, version, session_id=sid, session_epoch=4, topics=[])
            assert answered(inc) == {}
            cache = cluster.servers[0].dispatcher.fetch_sessions
            assert sorted(k[1] for k in cache.sessions[sid].partitions) == [0, 2]
            # closing the session: a sessionless full answer
            closed = fetch(
                conn,
                version,
                session_id=sid,
                session_epoch=-1,
                topics=topics({"s": [(1, 0)]}, version, ids),
            )
            assert (closed.error_code, closed.session_id) == (ErrorCode.NONE, 0)
            assert answered(closed) == {1: 2}
            assert sid not in cache.sessions
            gone = fetch(conn, version, session_id=sid, session_epoch=5, topics=[])
            assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def produce(conn: Connection, topic_id: Any, partition: int) -> None:
    request = build_entity(
        request_type(ApiKey.PRODUCE, 9),
        {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 5000,
            "topic_data": [
                {
                    "name": "s",
                    "partition_data": [
                        {"index": partition, "records": encode_batch([(b"k", b"v")])}
                    ],
                }
            ],
        },
    )
    response = conn.send(request)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def test_cache_eviction_as_kafka() -> None:
    now = [0]
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000, clock=lambda: now[0])

    def open_session(size: int) -> int | None:
        from kproto.broker.fetch_session import (
            FetchPartition,
            FetchPlan,
            FetchTopic,
            PartitionAnswer,
            TopicAnswer,
        )

        view = FetchTopic("t", None, [FetchPartition(p, 0, 1) for p in range(size)])
        plan = FetchPlan(ErrorCode.NONE, [view], full=True)
        answers = [
            PartitionAnswer(p, ErrorCode.NONE, 0, 0, 0, None, b"") for p in range(size)
        ]
        cache.finish(plan, [view], [TopicAnswer("t", None, answers)])
        return plan.session.session_id if plan.session else None

    a = open_session(5)
    now[0] = 10
    b = open_session(1)
    assert a and b and len(cache.sessions) == 2
    # full, every session created less than eviction_ms ago: none created
    assert open_session(3) is None
    # sessions older than eviction_ms but used recently: the smallest goes for a
    # larger new one
    now[0] = 2000
    for session in cache.sessions.values():
        session.last_used_ms = 1900
    c = open_session(3)
    assert c and set(cache.sessions) == {a, c}
    # none smaller than the new one: not created
    assert open_session(2) is None
    # a session idle for eviction_ms goes, whatever its size
    now[0] = 3000
    d = open_session(1)
    assert d and set(cache.sessions) == {c, d}


def test_sessions_are_per_node() -> None:
    with Cluster(nodes=2) as cluster:
        info = cluster.create_topic("s", 2)  # partition 0 on node 1, 1 on node 2
        ids = {"s": info.topic_id}
        first, second = cluster.bootstrap_servers.split(",")
        with (
            Connection(*_host_port(first)) as one,
            Connection(*_host_port(second)) as two,
        ):
            full = fetch(
                one,
                12,
                session_id=0,
                session_epoch=0,
                topics=topics({"s": [(0, 0)]}, 12, ids),
            )
            assert full.session_id > 0
            elsewhere = fetch(
                two, 12, session_id=full.session_id, session_epoch=1, topics=[]
            )
            assert elsewhere.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            same = fetch(
                one, 12, session_id=full.session_id, session_epoch=1, topics=[]
            )
            assert (same.error_code, same.session_id) == (
                ErrorCode.NONE,
                full.session_id,
            )
            # forgetting every partition closes the session (Kafka: sessionless)
            forget = [{"topic": "s", "partitions": [0]}]
            closed = fetch(
                one,
                12,
                session_id=full.session_id,
                session_epoch=2,
                topics=[],
                forgotten_topics_data=forget,
            )
            assert (closed.error_code, closed.session_id) == (ErrorCode.NONE, 0)
            assert not cluster.servers[0].dispatcher.fetch_sessions.sessions


def _host_port(address: str) -> tuple[str, int]:
    host, port = address.split(":")
    return host, int(port)
