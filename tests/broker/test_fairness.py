"""Fairness under hostile clients: decompression bombs refused within a memory
bound, client quotas throttling and muting (KIP-219), connection limits, the
request queue bound, idle connections closed."""

from __future__ import annotations

import asyncio
import gc
import socket
import struct
import threading
import time
import tracemalloc
from collections.abc import Iterator

import cramjam
import crc32c
import pytest

from kproto.broker import Cluster
from kproto.broker.connection_limits import (
    ClientTurns,
    ConnectionQuotas,
    RequestQueue,
    admit,
    admit_now,
    off_turn,
)
from kproto.broker.log_validator import (
    LogPolicy,
    RecordValidationError,
    validate_batches,
)
from kproto.broker.quotas import (
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotas,
    QuotaDefaults,
    entity_precedence,
)
from kproto.broker.topic_config import TopicConfig
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.meta import build_entity
from kproto.schema.produce.v9 import ProduceRequest
from tests.broker.conftest import cluster_with_topic

_HEADER = struct.Struct(">qiibIhiqqqhii")
_ZSTD = 4


def raw_batch(records: bytes, count: int, codec: int = 0) -> bytes:
    """A magic 2 batch around an already encoded (and compressed) records region."""
    now = int(time.time() * 1000)
    head = _HEADER.pack(
        0, 49 + len(records), -1, 2, 0, codec, count - 1, now, now, -1, -1, -1, count
    )
    body = head[21:] + records
    return head[:17] + struct.pack(">I", crc32c.crc32c(body)) + body


def zstd_zeros(size: int) -> bytes:
    """A zstd stream of ``size`` zero bytes, compressed 1 MiB at a time."""
    compressor = cramjam.zstd.Compressor(level=1)
    chunk = bytes(1 << 20)
    for _ in range(size >> 20):
        compressor.compress(chunk)
    return bytes(compressor.finish())


def empty_records(count: int) -> bytes:
    """``count`` records without key, value or headers (7-9 bytes each)."""
    out = bytearray()
    for i in range(count):
        delta = bytearray()
        v = i << 1  # zigzag of a non-negative offset delta
        while v >= 0x80:
            delta.append(v & 0x7F | 0x80)
            v >>= 7
        delta.append(v)
        body = (
            b"\x00\x00" + delta + b"\x01\x01\x00"
        )  # attrs, ts, offset, key, value, hdrs
        out += bytes([len(body) << 1]) + body
    return bytes(out)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from cluster_with_topic("fair", 1, nodes=1, max_connections_per_ip=40)


def produce(conn: Connection, topic: str, records: bytes) -> tuple[int, int]:
    """``(error_code, throttle_time_ms)`` of one Produce of ``records``."""
    request = build_entity(
        ProduceRequest,
        {
            "acks": 1,
            "timeout_ms": 5000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": records}]}
            ],
        },
    )
    response = conn.send(request)
    partition = response.responses[0].partition_responses[0]
    return partition.error_code, response.throttle_time_ms


def connect(cluster: Cluster, client_id: str = "t") -> Connection:
    return Connection("127.0.0.1", cluster.servers[0].port, client_id=client_id)


def closed_by_broker(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_zstd_bomb_is_refused_without_expanding_it(cluster: Cluster) -> None:
    bomb = raw_batch(zstd_zeros(1 << 30), 1, _ZSTD)  # 1 GiB of zeros
    assert len(bomb) < 64 * 1024
    with connect(cluster) as conn:
        conn.negotiate()
        tracemalloc.start()
        try:
            error, _ = produce(conn, "fair", bomb)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert error == ErrorCode.RECORD_LIST_TOO_LARGE
        # the default max.message.bytes (1 MiB) bounds the expansion at 16x that
        assert peak < 48 << 20
        # and the buffer is freed at once, not when the garbage collector runs
        gc.disable()
        tracemalloc.start()
        try:
            for _ in range(3):
                assert produce(conn, "fair", bomb)[0] == ErrorCode.RECORD_LIST_TOO_LARGE
            current, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            gc.enable()
        assert current < 8 << 20
        # the connection and the partition still serve
        assert produce(conn, "fair", raw_batch(empty_records(3), 3))[0] == 0


def test_the_decompression_bound_follows_max_message_bytes() -> None:
    zeros = cramjam.zstd.compress(bytes(40 << 20))
    configs = {
        "cleanup.policy": "delete",
        "message.timestamp.type": "CreateTime",
        "message.timestamp.before.max.ms": str(2**63 - 1),
        "message.timestamp.after.max.ms": str(2**63 - 1),
    }

    def code(batch: bytes, policy: LogPolicy) -> object:
        with pytest.raises(RecordValidationError) as err:
            validate_batches(batch, policy)
        return err.value.error_code

    small = LogPolicy.for_produce(
        TopicConfig.from_properties({**configs, "max.message.bytes": "1048588"}), 0
    )
    assert small.max_decompressed_bytes == 16 * 1048588
    sixteen = raw_batch(zeros, 16, _ZSTD)
    assert code(sixteen, small) == ErrorCode.RECORD_LIST_TOO_LARGE
    large = LogPolicy.for_produce(
        TopicConfig.from_properties({**configs, "max.message.bytes": str(4 << 20)}), 0
    )
    assert large.max_decompressed_bytes == 64 << 20
    # within both bounds the 40 MiB of zeros decompress and are found malformed
    assert code(sixteen, large) == ErrorCode.INVALID_RECORD
    # one record may not expand past max.message.bytes
    assert code(raw_batch(zeros, 1, _ZSTD), large) == ErrorCode.RECORD_LIST_TOO_LARGE


def test_a_batch_of_many_empty_records_is_accepted(cluster: Cluster) -> None:
    count = 100_000  # above the C loop's limit: walked without column lists
    with connect(cluster) as conn:
        assert produce(conn, "fair", raw_batch(empty_records(count), count))[0] == 0
        bad = bytearray(raw_batch(empty_records(count), count + 1))
        assert produce(conn, "fair", bytes(bad))[0] == ErrorCode.INVALID_RECORD


def test_a_throttled_client_is_answered_then_muted(cluster: Cluster) -> None:
    server = cluster.servers[0]
    saved = server.quotas
    server.quotas = ClientQuotas(
        lambda: {(("client-id", "greedy"),): {PRODUCER_BYTE_RATE: 1000.0}},
        window_ms=100,
        window_num=11,
    )
    try:
        with connect(cluster, "greedy") as greedy, connect(cluster, "other") as other:
            greedy.negotiate()
            other.negotiate()
            records = raw_batch(empty_records(3000), 3000)  # ~27 KB
            error, throttle_ms = produce(greedy, "fair", records)
            assert error == 0
            assert 0 < throttle_ms <= 1100  # at most the window (11 x 100 ms)
            sent = time.monotonic()
            # another client id is not throttled, and is served while greedy is muted
            assert produce(other, "fair", raw_batch(empty_records(3), 3)) == (0, 0)
            assert time.monotonic() - sent < throttle_ms / 1000
            # greedy's next request is read only once its throttle time is over
            greedy.request(ApiKey.API_VERSIONS)
            assert time.monotonic() - sent >= throttle_ms / 1000 * 0.9
    finally:
        server.quotas = saved


def test_request_percentage_throttles_handler_time() -> None:
    now = [100.0]
    quotas = ClientQuotas(
        lambda: {}, QuotaDefaults(request_percentage=10.0), clock=lambda: now[0]
    )
    assert quotas.enabled
    # 10% of a thread = 100 ms of handler time per second: 5 s of it over 11 s
    throttle = quotas.record(
        "alice",
        "c",
        ApiKey.METADATA,
        request_bytes=0,
        response_bytes=0,
        handler_ms=5000,
    )
    assert throttle > 0
    # ApiVersions is exempt
    assert (
        quotas.record(
            "alice",
            "c",
            ApiKey.API_VERSIONS,
            request_bytes=0,
            response_bytes=0,
            handler_ms=5000,
        )
        == 0
    )
    assert not ClientQuotas(lambda: {}).enabled


def test_quota_lookup_follows_kafka_precedence() -> None:
    stored = {
        (("client-id", None),): {REQUEST_PERCENTAGE: 1.0},
        (("client-id", "app"),): {REQUEST_PERCENTAGE: 2.0},
        (("user", None),): {REQUEST_PERCENTAGE: 3.0},
        (("client-id", "app"), ("user", "alice")): {REQUEST_PERCENTAGE: 4.0},
    }
    quotas = ClientQuotas(lambda: stored, QuotaDefaults(request_percentage=9.0))
    assert quotas.quota_for("alice", "app", REQUEST_PERCENTAGE) == 4.0
    assert quotas.quota_for("bob", "app", REQUEST_PERCENTAGE) == 3.0  # user default
    del stored[(("user", None),)]
    assert quotas.quota_for("bob", "app", REQUEST_PERCENTAGE) == 2.0
    assert quotas.quota_for("bob", "x", REQUEST_PERCENTAGE) == 1.0
    assert quotas.quota_for("bob", "x", PRODUCER_BYTE_RATE) is None
    stored.clear()
    assert quotas.quota_for("bob", "x", REQUEST_PERCENTAGE) == 9.0
    assert entity_precedence("u", "c")[0] == (("client-id", "c"), ("user", "u"))


def test_connections_over_the_per_ip_limit_are_closed() -> None:
    with Cluster(max_connections_per_ip=2) as limited:
        port = limited.servers[0].port
        first = socket.create_connection(("127.0.0.1", port), timeout=10)
        second = socket.create_connection(("127.0.0.1", port), timeout=10)
        third = socket.create_connection(("127.0.0.1", port), timeout=10)
        with first, second, third:
            assert closed_by_broker(third)
        with Connection("127.0.0.1", port) as ok:  # the others closed: served
            assert ok.request(ApiKey.API_VERSIONS).error_code == 0


def test_connection_quotas_count_in_all_and_per_ip() -> None:
    quotas = ConnectionQuotas(max_connections=3, max_connections_per_ip=2)
    assert quotas.admit("a") is None and quotas.admit("a") is None
    assert "max.connections.per.ip" in (quotas.admit("a") or "")
    assert quotas.admit("b") is None
    assert "max.connections" in (quotas.admit("c") or "")
    quotas.release("a")
    assert quotas.admit("c") is None
    assert quotas.total == 3 and quotas.by_ip == {"a": 1, "b": 1, "c": 1}
    with pytest.raises(ValueError, match="max_connections_per_ip"):
        ConnectionQuotas(max_connections_per_ip=-1)


def test_the_request_queue_bound_holds() -> None:
    async def run() -> list[str]:
        queue = RequestQueue(2)
        events: list[str] = []
        release = asyncio.Event()

        async def request(name: str) -> None:
            async with queue:
                events.append(f"start {name}")
                assert queue.size <= 2
                await release.wait()

        tasks = [asyncio.create_task(request(str(i))) for i in range(4)]
        await asyncio.sleep(0.05)
        events.append("release")
        release.set()
        await asyncio.gather(*tasks)
        assert queue.peak == 2 and queue.size == 0
        return events

    events = asyncio.run(run())
    assert events.index("release") == 2  # two entered, two waited for a slot


def test_admit_now_takes_only_what_is_free_now() -> None:
    """The coroutine-free admission takes a slot and the turn when both are free,
    and nothing when either is taken (the caller then waits in :func:`admit`)."""

    async def run() -> None:
        queue, turns = RequestQueue(1), ClientTurns()
        metadata = struct.pack(">hhih", 3, 12, 1, 1) + b"a" + b"\x00"
        fetch = struct.pack(">hhih", 1, 16, 1, 1) + b"b" + b"\x00"
        held = admit_now(queue, turns, metadata, "h", "User:x")
        assert held is not None and queue.size == 1 and queue.peak == 1
        assert admit_now(queue, turns, metadata, "h", "User:x") is None  # no slot
        assert queue.size == 1 and turns.waiting(("h", "User:x", b"a")) == 0
        # a Fetch takes no slot, but the client's turn is still needed
        other = admit_now(queue, turns, fetch, "h", "User:x")
        assert other is not None and queue.size == 1
        assert admit_now(queue, turns, fetch, "h", "User:x") is None  # turn taken
        other.close()
        held.close()
        assert queue.size == 0
        await asyncio.sleep(0)  # turns pass on at the next loop round
        again = admit_now(queue, turns, metadata, "h", "User:x")
        assert again is not None
        again.close()

    asyncio.run(run())


def test_the_request_queue_bounds_a_node() -> None:
    with Cluster(queued_max_requests=1) as one:
        port = one.servers[0].port

        def client() -> None:
            with Connection("127.0.0.1", port) as conn:
                for _ in range(5):
                    conn.request(ApiKey.METADATA, topics=None)

        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert one.servers[0].request_queue.peak == 1


def test_an_idle_connection_is_closed() -> None:
    with Cluster(connections_max_idle_ms=100) as idle:
        s = socket.create_connection(("127.0.0.1", idle.servers[0].port), timeout=10)
        with s:
            assert closed_by_broker(s)  # the socket timeout (10 s) bounds the wait


def test_a_client_gets_one_turn_at_a_time_across_its_connections() -> None:
    """50 requests of one client and one of another: the other's is handled
    right after the first of the 50, not after all of them; a turn given up
    with off_turn lets the client's next request in."""

    async def run() -> list[str]:
        queue, turns = RequestQueue(500), ClientTurns()
        order: list[str] = []

        def frame(client_id: bytes) -> bytes:
            header = struct.pack(">hhih", 3, 12, 1, len(client_id)) + client_id
            return header + b"\x00"

        async def request(name: str, client_id: bytes) -> None:
            held = await admit(queue, turns, frame(client_id), "127.0.0.1", "User:x")
            order.append(name)
            held.close()

        flood = [asyncio.create_task(request(f"f{i}", b"flood")) for i in range(50)]
        await asyncio.sleep(0)  # the first flood request runs, 49 wait
        assert turns.waiting(("127.0.0.1", "User:x", b"flood")) == 49
        await request("good", b"good")
        await asyncio.gather(*flood)
        # off_turn: the client's waiting request goes while the awaitable runs

        async def slow() -> None:
            await asyncio.sleep(0.01)

        held = await admit(queue, turns, frame(b"flood"), "127.0.0.1", "User:x")
        other = asyncio.create_task(request("f-late", b"flood"))
        await asyncio.sleep(0)
        await off_turn(slow())
        assert order[-1] == "f-late"  # before this request gave its turn up
        held.close()
        await other
        assert queue.size == 0
        return order

    order = asyncio.run(run())
    assert order[:2] == ["f0", "good"]
    assert len(order) == 52


def test_a_pipelined_request_gets_the_turn_handed_on_in_order() -> None:
    """The next request of a client whose turn is being handed on waits one loop
    round in line, ahead of requests of that client arriving after it; cancelled
    while waiting, it leaves the client free."""

    async def run() -> None:
        queue, turns = RequestQueue(500), ClientTurns()
        frame = struct.pack(">hhih", 3, 12, 1, 1) + b"c" + b"\x00"
        key = ("h", "User:x", b"c")
        first = await admit(queue, turns, frame, "h", "User:x")
        first.close()  # the hand-off is scheduled for the next round
        order: list[str] = []

        async def request(name: str) -> None:
            held = await admit(queue, turns, frame, "h", "User:x")
            order.append(name)
            await asyncio.sleep(0)
            held.close()

        second = asyncio.create_task(request("second"))
        await asyncio.sleep(0)  # second queues itself first in line
        third = asyncio.create_task(request("third"))
        await asyncio.sleep(0)
        assert turns.waiting(key) in (1, 2)
        await asyncio.gather(second, third)
        assert order == ["second", "third"]
        assert turns.waiting(key) == 0

        again = await admit(queue, turns, frame, "h", "User:x")
        waiter = asyncio.create_task(admit(queue, turns, frame, "h", "User:x"))
        again.close()
        await asyncio.sleep(0)  # waiter queued itself, then was handed the turn
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        for _ in range(3):
            await asyncio.sleep(0)
        assert turns.waiting(key) == 0
        last = admit_now(queue, turns, frame, "h", "User:x")
        assert last is not None  # nobody holds the client's turn
        last.close()

    asyncio.run(run())
