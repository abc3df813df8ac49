"""Fault injection on a running cluster (``kproto.broker.faults`` through ``Cluster``),
proved with kproto's own connection and client."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.client import BrokerError, Client
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.framing import ConnectionClosedError
from kproto.index import ApiKey
from kproto.records import encode_batch
from tests.broker import wire


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=3) as c:
        yield c


def connect(cluster: Cluster, node: int) -> Connection:
    server = cluster.servers[node - 1]
    assert server.node_id == node
    conn = Connection(server.host, server.port, timeout_s=10)
    # Produce v13 and Fetch v13+ name topics by id only: keep to names here
    conn.negotiate(caps={ApiKey.PRODUCE: 12, ApiKey.FETCH: 12})
    return conn


def produce_request(conn: Connection, topic: str, *partitions: int) -> object:
    batch = encode_batch([(b"k", b"v")])
    return wire.produce(conn, topic, {p: batch for p in partitions})


def partition_errors(response: object) -> list[int]:
    return [p.error_code for p in wire.partition_answers(response)]


# ---------------------------------------------------------------- inject_errors


def test_injected_errors_answer_the_next_requests_in_order(cluster: Cluster) -> None:
    cluster.create_topic("t", 1)
    leader = cluster.leader("t", 0)
    cluster.inject_errors(
        ApiKey.PRODUCE, [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT]
    )
    with Client(cluster.bootstrap_servers) as client:
        # the client refreshes metadata and retries NOT_LEADER_OR_FOLLOWER once,
        # then meets the second error, which it raises
        with pytest.raises(BrokerError) as err:
            client.produce("t", [(b"k", b"v")], partition=0)
        assert err.value.error_code == ErrorCode.REQUEST_TIMED_OUT
        assert cluster.records("t", 0) == []  # an injected error stores nothing
        # the queue is used up: the next request is served
        assert client.produce("t", [(b"k", b"v")], partition=0)[0].offset == 0
    answered = [
        partition_errors(r.response)[0]
        for r in cluster.requests.filter(api_key=ApiKey.PRODUCE, node_id=leader)
    ]
    assert answered == [
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NONE,
    ]
    assert cluster.faults.pending() == 0


def test_error_fills_every_error_code_of_the_response(cluster: Cluster) -> None:
    cluster.create_topic("t", 3)
    node = cluster.leader("t", 0)
    with connect(cluster, node) as conn:
        cluster.inject_errors(ApiKey.PRODUCE, [ErrorCode.KAFKA_STORAGE_ERROR])
        response = produce_request(conn, "t", 0, 1, 2)
        assert partition_errors(response) == [ErrorCode.KAFKA_STORAGE_ERROR] * 3
        assert [p.index for t in response.responses for p in t.partition_responses] == [
            0,
            1,
            2,
        ]
        cluster.inject_errors(ApiKey.FETCH, [ErrorCode.NOT_LEADER_OR_FOLLOWER])
        fetched = wire.fetch(conn, "t", (0, 2), partition_max_bytes=1000)
        assert fetched.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER  # top level too
        assert [
            (p.partition_index, p.error_code)
            for t in fetched.responses
            for p in t.partitions
        ] == [
            (0, ErrorCode.NOT_LEADER_OR_FOLLOWER),
            (2, ErrorCode.NOT_LEADER_OR_FOLLOWER),
        ]
        cluster.inject_errors(
            ApiKey.FIND_COORDINATOR, [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
        )
        found = conn.request(
            ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=["g1", "g2"]
        )
        assert [(c.key, c.error_code) for c in found.coordinators] == [
            ("g1", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
            ("g2", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
        ]
    assert cluster.records("t", 0) == []


def test_errors_for_one_node_leave_the_others_alone(cluster: Cluster) -> None:
    cluster.inject_errors(ApiKey.API_VERSIONS, [ErrorCode.UNKNOWN_SERVER_ERROR], node=2)
    with connect(cluster, 1) as conn:
        assert conn.request(ApiKey.API_VERSIONS).error_code == ErrorCode.NONE
    assert cluster.faults.pending(ApiKey.API_VERSIONS) == 1
    with connect(cluster, 3) as conn:
        cluster.inject_errors(ApiKey.METADATA, [ErrorCode.UNKNOWN_SERVER_ERROR], node=3)
        assert conn.request(ApiKey.API_VERSIONS).error_code == ErrorCode.NONE
        answer = conn.request(ApiKey.METADATA, topics=[{"name": "x"}])
        assert [t.error_code for t in answer.topics] == [ErrorCode.UNKNOWN_SERVER_ERROR]
        assert {b.node_id for b in answer.brokers} == {1, 2, 3}


def test_disconnect_closes_the_connection_unanswered(cluster: Cluster) -> None:
    cluster.create_topic("t", 1)
    node = cluster.leader("t", 0)
    cluster.inject_errors(ApiKey.PRODUCE, ["disconnect", (ErrorCode.NONE, 0)])
    with connect(cluster, node) as conn:
        with pytest.raises(ConnectionClosedError):
            produce_request(conn, "t", 0)
    assert cluster.records("t", 0) == []
    with connect(cluster, node) as conn:  # an injected NONE answers without storing
        assert partition_errors(produce_request(conn, "t", 0)) == [ErrorCode.NONE]
        assert cluster.records("t", 0) == []
        assert partition_errors(produce_request(conn, "t", 0)) == [ErrorCode.NONE]
    assert [r.offset for r in cluster.records("t", 0)] == [0]


def test_bad_faults_are_refused(cluster: Cluster) -> None:
    with pytest.raises(ValueError, match="not a Kafka error code"):
        cluster.inject_errors(ApiKey.PRODUCE, [12345])
    with pytest.raises(ValueError, match="ErrorCode or 'disconnect'"):
        cluster.inject_errors(ApiKey.PRODUCE, ["hang up"])
    with pytest.raises(ValueError, match="no node 9"):
        cluster.inject_errors(ApiKey.PRODUCE, [ErrorCode.NONE], node=9)
    with pytest.raises(ValueError, match="rtt_ms >= 0"):
        cluster.inject_errors(ApiKey.PRODUCE, [(ErrorCode.NONE, -5)])
    with pytest.raises(ValueError, match=">= 0 ms"):
        cluster.set_latency(1, -1)
    with pytest.raises(ValueError, match="no node 4"):
        cluster.stop_node(4)
    with pytest.raises(ValueError, match="no node 0"):
        cluster.move_leader("t", 0, 0)
    with pytest.raises(TypeError, match="callable"):
        cluster.on_request(ApiKey.METADATA, "not a function")  # type: ignore[arg-type]
    assert cluster.faults.pending() == 0


# ---------------------------------------------------------------- latency, drops


def test_latency_delays_only_that_node(cluster: Cluster) -> None:
    cluster.set_latency(1, 1500)
    slow, fast = connect(cluster, 1), connect(cluster, 2)
    done = threading.Event()

    def ask_slow() -> None:
        slow.request(ApiKey.API_VERSIONS)
        done.set()

    started = time.monotonic()
    thread = threading.Thread(target=ask_slow)
    thread.start()
    time.sleep(0.05)
    assert fast.request(ApiKey.API_VERSIONS).error_code == ErrorCode.NONE
    assert not done.is_set()  # node 2 answered while node 1 still waits
    thread.join(10)
    assert done.is_set() and time.monotonic() - started >= 1.5
    cluster.set_latency(1, 0)
    assert slow.request(ApiKey.API_VERSIONS).error_code == ErrorCode.NONE
    slow.close()
    fast.close()


def test_injected_error_with_rtt(cluster: Cluster) -> None:
    cluster.inject_errors(ApiKey.API_VERSIONS, [(ErrorCode.NONE, 400)], node=1)
    with connect(cluster, 2):
        assert cluster.faults.pending() == 1  # node 1's queue, untouched by node 2
    started = time.monotonic()
    with connect(cluster, 1):
        assert time.monotonic() - started >= 0.4
    assert cluster.faults.pending() == 0


def test_drop_connections(cluster: Cluster) -> None:
    conns = [connect(cluster, n) for n in (1, 2, 3)]
    assert cluster.drop_connections(2) == 1
    assert conns[0].request(ApiKey.API_VERSIONS).error_code == ErrorCode.NONE
    with pytest.raises(ConnectionClosedError):
        conns[1].request(ApiKey.API_VERSIONS)
    assert cluster.drop_connections() == 2
    for conn in (conns[0], conns[2]):
        with pytest.raises(ConnectionClosedError):
            conn.request(ApiKey.API_VERSIONS)
    with connect(cluster, 2) as conn:  # clients reconnect
        assert conn.request(ApiKey.API_VERSIONS).error_code == ErrorCode.NONE
    for conn in conns:
        conn.close()


# ---------------------------------------------------------------- hooks


def test_hook_replaces_metadata_then_is_removed(cluster: Cluster) -> None:
    cluster.create_topic("t", 2)
    seen: list[tuple[int, int]] = []

    def observe(ctx: object, request: object) -> None:
        seen.append((ctx.node_id, ctx.api_version))  # type: ignore[attr-defined]

    def deny(ctx: object, request: object) -> dict[str, object]:
        return {
            "brokers": [],
            "topics": [
                {"name": t.name, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
                for t in request.topics  # type: ignore[attr-defined]
            ],
        }

    watcher = cluster.on_request(ApiKey.METADATA, observe)
    denier = cluster.on_request(ApiKey.METADATA, deny)
    with Client(cluster.bootstrap_servers) as client:
        with pytest.raises(BrokerError) as err:
            client.describe_topics(["t"])
        assert err.value.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert seen  # the observer ran first and fell through
        assert cluster.remove_hook(denier)
        assert not cluster.remove_hook(denier)
        (described,) = client.describe_topics(["t"])
        assert len(described.partitions) == 2
    assert cluster.remove_hook(watcher)


def test_async_hook_caps_produce_version_through_api_versions(
    cluster: Cluster,
) -> None:
    cluster.create_topic("t", 1)

    async def cap_produce(ctx: object, request: object) -> dict[str, object]:
        await asyncio.sleep(0)
        served = ctx.served_apis  # type: ignore[attr-defined]
        return {
            "error_code": ErrorCode.NONE,
            "api_keys": [
                {
                    "api_key": k,
                    "min_version": lo,
                    "max_version": 3 if k == ApiKey.PRODUCE else hi,
                }
                for k, (lo, hi) in served.items()
            ],
        }

    handle = cluster.on_request(ApiKey.API_VERSIONS, cap_produce)
    with Client(cluster.bootstrap_servers) as client:
        client.produce("t", [(b"k", b"v")], partition=0)
    cluster.remove_hook(handle)
    assert [r.api_version for r in cluster.requests.filter(api_key=ApiKey.PRODUCE)] == [
        3
    ]


def test_hook_can_inject_from_the_loop(cluster: Cluster) -> None:
    """A hook runs on the cluster's loop thread and may call the fault methods."""

    def slow_down_after_metadata(ctx: object, request: object) -> None:
        cluster.set_latency(ctx.node_id, 300)  # type: ignore[attr-defined]

    cluster.on_request(ApiKey.METADATA, slow_down_after_metadata)
    with connect(cluster, 2) as conn:
        conn.request(ApiKey.METADATA, topics=[])
        started = time.monotonic()
        conn.request(ApiKey.API_VERSIONS)
        assert time.monotonic() - started >= 0.3
    assert cluster.faults.latency_ms(2) == 300


def test_hook_can_disconnect(cluster: Cluster) -> None:
    cluster.on_request(ApiKey.METADATA, lambda ctx, request: "disconnect")
    with connect(cluster, 1) as conn:
        with pytest.raises(ConnectionClosedError):
            conn.request(ApiKey.METADATA, topics=[])
    cluster.clear_faults()
    with connect(cluster, 1) as conn:
        assert conn.request(ApiKey.METADATA, topics=[]).brokers


# ---------------------------------------------------------------- leadership


def fetch_partition(
    conn: Connection, cluster: Cluster, topic: str, epoch: int
) -> tuple[int, int]:
    response = wire.fetch(
        conn, topic, (0,), partition_max_bytes=1000, current_leader_epoch=epoch
    )
    (partition,) = response.responses[0].partitions
    listed = wire.list_offsets(conn, topic, current_leader_epoch=epoch)
    return partition.error_code, listed.error_code


def test_move_leader_bumps_the_epoch_and_fences(cluster: Cluster) -> None:
    cluster.create_topic("t", 1)
    old = cluster.leader("t", 0)
    new = old % 3 + 1
    assert cluster.leader_epoch("t", 0) == 0
    assert cluster.move_leader("t", 0, new) == 1
    with connect(cluster, old) as conn:
        assert partition_errors(produce_request(conn, "t", 0)) == [
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        ]
        assert fetch_partition(conn, cluster, "t", 1) == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
        )
    with connect(cluster, new) as conn:
        assert fetch_partition(conn, cluster, "t", 0) == (
            ErrorCode.FENCED_LEADER_EPOCH,
            ErrorCode.FENCED_LEADER_EPOCH,
        )
        assert fetch_partition(conn, cluster, "t", 2) == (
            ErrorCode.UNKNOWN_LEADER_EPOCH,
            ErrorCode.UNKNOWN_LEADER_EPOCH,
        )
        assert fetch_partition(conn, cluster, "t", 1) == (
            ErrorCode.NONE,
            ErrorCode.NONE,
        )
        assert fetch_partition(conn, cluster, "t", -1) == (
            ErrorCode.NONE,
            ErrorCode.NONE,
        )
        (meta,) = conn.request(ApiKey.METADATA, topics=[{"name": "t"}]).topics
        assert (meta.partitions[0].leader_id, meta.partitions[0].leader_epoch) == (
            new,
            1,
        )
    with pytest.raises(KeyError):
        cluster.move_leader("t", 5, new)


def test_stop_node_moves_leaders_and_coordinators(cluster: Cluster) -> None:
    cluster.create_topic("t", 3)
    before = {p: cluster.leader("t", p) for p in range(3)}
    coordinator = cluster.coordinator("g")
    down = before[0]
    cluster.stop_node(down)
    after = {p: cluster.leader("t", p) for p in range(3)}
    assert down not in after.values()
    for p in range(3):
        moved = before[p] == down
        assert cluster.leader_epoch("t", p) == (1 if moved else 0)
        assert after[p] == (after[p] if moved else before[p])
    assert cluster.coordinator("g") != down
    if coordinator != down:
        assert cluster.coordinator("g") == coordinator
    with Client(cluster.bootstrap_servers) as client:  # the stopped node is skipped
        (described,) = client.describe_topics(["t"])
        assert [p.leader for p in described.partitions] == [after[p] for p in range(3)]
        assert client.produce("t", [(b"k", b"v")], partition=0)[0].offset == 0
    server = cluster.servers[down - 1]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((server.host, server.port), timeout=5).close()
    cluster.start_node(down)  # back on the same port; leaders stay where they went
    with connect(cluster, down) as conn:
        brokers = conn.request(ApiKey.METADATA, topics=[]).brokers
        assert {b.node_id for b in brokers} == {1, 2, 3}
    assert {p: cluster.leader("t", p) for p in range(3)} == after


def test_offline_partitions_report_leader_not_available(cluster: Cluster) -> None:
    cluster.create_topic("t", 3)
    cluster.coordinator("g")  # creates __consumer_offsets
    group_partition = cluster.groups.partition_for("g")
    down = cluster.leader("__consumer_offsets", group_partition)
    cluster.stop_node(down, move_leaders=False)
    live = next(n for n in (1, 2, 3) if n != down)
    with connect(cluster, live) as conn:
        (meta,) = conn.request(ApiKey.METADATA, topics=[{"name": "t"}]).topics
        offline = [p for p in meta.partitions if p.leader_id == -1]
        assert offline and all(
            p.error_code == ErrorCode.LEADER_NOT_AVAILABLE for p in offline
        )
        assert all(
            p.error_code == ErrorCode.NONE for p in meta.partitions if p.leader_id != -1
        )
        (found,) = conn.request(
            ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=["g"]
        ).coordinators
        assert found.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    cluster.start_node(down)
    assert cluster.leader("__consumer_offsets", group_partition) == down
    assert cluster.leader_epoch("__consumer_offsets", group_partition) == 2
    assert cluster.coordinator("g") == down


def test_move_coordinator(cluster: Cluster) -> None:
    old = cluster.coordinator("g")
    new = old % 3 + 1
    assert cluster.move_coordinator("g", new) == 1
    assert cluster.coordinator("g") == new
    with connect(cluster, old) as conn:
        answer = conn.request(
            ApiKey.HEARTBEAT, group_id="g", generation_id=1, member_id="m"
        )
        assert answer.error_code == ErrorCode.NOT_COORDINATOR
        (found,) = conn.request(
            ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=["g"]
        ).coordinators
        assert found.node_id == new
    cluster.stop_node(new)
    with pytest.raises(ValueError, match="stopped"):
        cluster.move_coordinator("g", new)


def test_topics_created_while_a_node_is_down_avoid_it(cluster: Cluster) -> None:
    cluster.stop_node(2)
    cluster.create_topic("t", 6)
    assert {cluster.leader("t", p) for p in range(6)} == {1, 3}
    cluster.start_node(2)


def test_faults_in_async_mode() -> None:
    asyncio.run(faults_in_async_mode())


async def faults_in_async_mode() -> None:
    async with Cluster(nodes=2) as cluster:
        cluster.create_topic("t", 1)
        cluster.inject_errors(ApiKey.API_VERSIONS, [ErrorCode.UNKNOWN_SERVER_ERROR])
        assert cluster.faults.pending() == 1
        with pytest.raises(RuntimeError, match="async_"):
            cluster.stop_node(1)
        leader = cluster.leader("t", 0)
        await cluster.async_stop_node(leader)
        assert cluster.leader("t", 0) != leader
        await cluster.async_start_node(leader)
        assert cluster.servers[leader - 1].running


@pytest.mark.kafka_cluster(nodes=3)
def test_through_the_fixture(kafka_cluster: Cluster) -> None:
    kafka_cluster.inject_errors(
        ApiKey.METADATA, [ErrorCode.UNKNOWN_SERVER_ERROR], node=1
    )
    with connect(kafka_cluster, 1) as conn:
        (topic,) = conn.request(ApiKey.METADATA, topics=[{"name": "x"}]).topics
        assert topic.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    kafka_cluster.stop_node(1)
    assert kafka_cluster.coordinator("g") in (2, 3)
