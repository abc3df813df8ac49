"""Held requests (``Cluster.hold``, :mod:`kproto.broker.held_requests`): parked
until the test releases, answers or drops them, or until their timeout; proved with
confluent-kafka and kproto's own connection and client."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from kproto.broker import Cluster
from kproto.client import Client
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.framing import ConnectionClosedError
from kproto.index import ApiKey
from kproto.records import encode_batch
from tests.broker import wire
from tests.broker.conftest import cluster_with_topic
from tests.eventually import eventually


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    yield from cluster_with_topic("t", 1, nodes=1)


@pytest.fixture
def pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    with concurrent.futures.ThreadPoolExecutor(2) as p:
        yield p


def connect(cluster: Cluster) -> Connection:
    return wire.connect(cluster, caps=wire.BY_NAME)


def produce(conn: Connection, topic: str = "t", acks: int = -1) -> Any:
    return wire.produce(conn, topic, {0: encode_batch([(b"k", b"v")])}, acks=acks)


def error_of(response: Any) -> int:
    return int(response.responses[0].partition_responses[0].error_code)


def test_held_produce_is_stored_only_when_released(cluster: Cluster) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0}
    )
    with cluster.hold(ApiKey.PRODUCE, count=1) as held:
        producer.produce("t", b"first")
        producer.poll(0)
        parked = held.wait(1, timeout_s=10)
        assert parked[0].api_key == ApiKey.PRODUCE
        assert parked[0].request.topic_data[0].name == "t"
        assert cluster.records("t", 0) == []  # not handled while parked
        assert held.release() == 1
    assert producer.flush(10) == 0
    assert [r.value for r in cluster.records("t", 0)] == [b"first"]
    assert held.taken == 1


def test_other_clients_go_on_while_a_request_is_held(
    cluster: Cluster, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    cluster.create_topic("other", 1)
    with cluster.hold(
        ApiKey.PRODUCE,
        match=lambda ctx, request: ctx.client_id != "another",
    ) as held:
        conn = connect(cluster)
        parked = pool.submit(produce, conn)
        eventually(held.requests, 10)
        with Client(cluster.bootstrap_servers, client_id="another") as client:
            client.produce("other", [(b"k", b"v")], partition=0)  # not matched
        assert len(cluster.records("other", 0)) == 1
        assert not parked.done()
        held.release()
        assert error_of(parked.result(10)) == ErrorCode.NONE
        conn.close()
    assert len(cluster.records("t", 0)) == 1


def test_held_requests_are_decided_one_at_a_time(
    cluster: Cluster, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    with cluster.hold(ApiKey.PRODUCE, count=2) as held:
        a, b = connect(cluster), connect(cluster)
        first = pool.submit(produce, a)
        eventually(lambda: len(held.requests()) == 1, 10)
        second = pool.submit(produce, b)
        eventually(lambda: len(held.requests()) == 2, 10)
        assert held.answer(ErrorCode.NOT_LEADER_OR_FOLLOWER, 1) == 1  # the oldest
        assert error_of(first.result(10)) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert len(held.requests()) == 1
        assert not second.done()
        assert held.release() == 1
        assert error_of(second.result(10)) == ErrorCode.NONE
        a.close()
        b.close()
    assert len(cluster.records("t", 0)) == 1  # the answered one stored nothing


def test_a_held_request_times_out_with_request_timed_out(cluster: Cluster) -> None:
    cluster.hold(ApiKey.PRODUCE, count=1, timeout_ms=200)
    conn = connect(cluster)
    assert error_of(produce(conn)) == ErrorCode.REQUEST_TIMED_OUT
    assert cluster.records("t", 0) == []
    assert error_of(produce(conn)) == ErrorCode.NONE  # count used up
    conn.close()


def test_a_held_request_can_be_disconnected(
    cluster: Cluster, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    held = cluster.hold(ApiKey.PRODUCE, count=1)
    conn = connect(cluster)
    parked = pool.submit(produce, conn)
    eventually(held.requests, 10)
    assert held.disconnect() == 1
    with pytest.raises(ConnectionClosedError):
        parked.result(10)
    conn.close()


def test_clear_faults_releases_and_close_drops_parked_requests(
    pool: concurrent.futures.ThreadPoolExecutor,
) -> None:
    with Cluster(nodes=1) as c:
        c.create_topic("t", 1)
        held = c.hold(ApiKey.PRODUCE)
        conn = connect(c)
        parked = pool.submit(produce, conn)
        eventually(held.requests, 10)
        c.clear_faults()
        assert error_of(parked.result(10)) == ErrorCode.NONE
        held = c.hold(ApiKey.PRODUCE)
        parked = pool.submit(produce, conn)
        eventually(held.requests, 10)
    # the cluster closed with a request parked: it was dropped, not left hanging
    with pytest.raises((ConnectionClosedError, OSError)):
        parked.result(10)
    conn.close()


def test_bad_holds_are_refused(cluster: Cluster) -> None:
    with pytest.raises(ValueError, match="count"):
        cluster.hold(ApiKey.PRODUCE, count=0)
    with pytest.raises(ValueError, match="timeout_ms"):
        cluster.hold(ApiKey.PRODUCE, timeout_ms=0)
    with pytest.raises(ValueError, match="no node 9"):
        cluster.hold(ApiKey.PRODUCE, node=9)


def test_wait_times_out_when_nothing_is_parked(cluster: Cluster) -> None:
    held = cluster.hold(ApiKey.FETCH)
    with pytest.raises(TimeoutError, match="0 FETCH request"):
        held.wait(1, timeout_s=0.1)
    assert held.stop() == 0
