"""kproto.proxy between confluent-kafka (and kproto's own Connection) and
librdkafka's mock cluster: addresses rewritten, every other frame byte-identical,
hooks, and a bad client frame closing only its own connection."""

from __future__ import annotations

import asyncio
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from kproto.connection import Connection
from kproto.framing import decode_response_frame
from kproto.index import ApiKey, response_type
from kproto.proxy import ADDRESS_APIS, FrameEvent, Proxy
from tests.live.mock_cluster import MockCluster

pytestmark = pytest.mark.live

confluent_kafka = pytest.importorskip("confluent_kafka")


class ProxyThread:
    """A Proxy running on its own event loop in a daemon thread."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.events: list[FrameEvent] = []
        proxy.on_frame = self.events.append  # called on the proxy's loop thread
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._run(proxy.start())

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(20)

    def close(self) -> None:
        self._run(self.proxy.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    """librdkafka's mock cluster, in-process, on 127.0.0.1 (as the live tests')."""
    with MockCluster(3, timeout_s=20.0) as c:
        yield c


@pytest.fixture
def proxied(cluster: MockCluster) -> Iterator[ProxyThread]:
    running = ProxyThread(Proxy(cluster.bootstrap))
    try:
        yield running
    finally:
        running.close()


def _same_but_addresses(
    received: Any, sent: Any, mapping: dict[tuple[str, int], tuple[str, int]]
) -> int:
    """Assert ``sent`` is ``received`` with broker addresses mapped; return how
    many addresses were mapped. Written apart from the proxy's own walker."""
    if isinstance(received, tuple):
        assert isinstance(sent, tuple) and len(sent) == len(received)
        return sum(
            _same_but_addresses(a, b, mapping)
            for a, b in zip(received, sent, strict=True)
        )
    if not attrs.has(type(received)):
        assert received == sent
        return 0
    assert type(received) is type(sent)
    names = [f.name for f in attrs.fields(type(received))]
    mapped = 0
    if "host" in names and "port" in names and received.port >= 0:
        assert (sent.host, sent.port) == mapping[(received.host, received.port)]
        names.remove("host")
        names.remove("port")
        mapped = 1
    for name in names:
        mapped += _same_but_addresses(
            getattr(received, name), getattr(sent, name), mapping
        )
    return mapped


def _check_events(events: list[FrameEvent], proxy: Proxy) -> dict[int, int]:
    """Every frame byte-identical except address-bearing responses, which differ
    in their addresses only. Returns ``{api_key: rewritten frames}``."""
    rewritten: dict[int, int] = {}
    listen = set(proxy.listeners.values())
    for event in events:
        if event.sent == event.received:
            continue
        assert event.direction == "response" and event.api_key in ADDRESS_APIS
        cls = response_type(event.api_key, event.api_version)
        before = decode_response_frame(cls, event.received)
        after = decode_response_frame(cls, event.sent)
        assert after.header == before.header and after.trailing == before.trailing
        assert _same_but_addresses(before.response, after.response, proxy.listeners)
        for broker in getattr(after.response, "brokers", ()):
            assert (broker.host, broker.port) in listen
        rewritten[event.api_key] = rewritten.get(event.api_key, 0) + 1
    return rewritten


def test_confluent_producer_and_consumer_group_through_proxy(
    proxied: ProxyThread, cluster: MockCluster
) -> None:
    proxy = proxied.proxy
    topic = f"proxied-{uuid.uuid4().hex[:8]}"
    values = [b"value-%d" % i for i in range(30)]
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": proxy.bootstrap_servers, "log_level": 2}
    )
    for i, value in enumerate(values):
        producer.produce(topic, key=b"k%d" % (i % 5), value=value)
    assert producer.flush(20) == 0
    # what the client learnt about the cluster: only proxy addresses
    md = producer.list_topics(timeout=10)
    listen_ports = {port for _, port in proxy.listeners.values()}
    assert {b.port for b in md.brokers.values()} <= listen_ports
    assert {b.id for b in md.brokers.values()} == set(cluster.brokers)
    del producer

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": proxy.bootstrap_servers,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 2,
        }
    )
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        for _ in range(200):
            if len(got) == len(values):
                break
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            got.append(msg.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)

    # every upstream broker got a listener; each mock broker is reached only so
    assert set(proxy.listeners) == set(cluster.brokers.values())
    events = list(proxied.events)
    apis = {e.api_key for e in events}
    assert {
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.METADATA,
        ApiKey.FIND_COORDINATOR,
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.OFFSET_COMMIT,
    } <= apis
    rewritten = _check_events(events, proxy)
    assert rewritten.get(ApiKey.METADATA, 0) >= 1
    assert rewritten.get(ApiKey.FIND_COORDINATOR, 0) >= 1
    # requests in, responses out, paired by correlation id
    requests = [e for e in events if e.direction == "request"]
    assert all(e.sent == e.received for e in requests)
    assert all(e.api_key >= 0 for e in events)


def test_bad_client_frame_closes_only_that_connection(proxied: ProxyThread) -> None:
    proxy = proxied.proxy
    host, port = proxy.listeners[proxy.upstream[0]]
    with Connection(host, port, timeout_s=10.0) as good:
        good.negotiate()
        with socket.create_connection((host, port), timeout=10.0) as bad:
            bad.sendall(b"\xff\xff\xff\xff")  # size -1
            assert bad.recv(16) == b""  # the proxy hung up on this client only
        md = good.request(ApiKey.METADATA, topics=None)
    assert {(b.host, b.port) for b in md.brokers} <= set(proxy.listeners.values())


def test_hooks_replace_requests_and_responses(cluster: MockCluster) -> None:
    seen: list[str] = []

    def rename_topics(header: Any, request: Any) -> Any:
        seen.append(header.client_id)
        topics = tuple(attrs.evolve(t, name="hooked-" + t.name) for t in request.topics)
        return attrs.evolve(request, topics=topics)

    async def brand(header: Any, response: Any) -> Any:
        return attrs.evolve(response, cluster_id="via-proxy")

    running = ProxyThread(
        Proxy(
            cluster.bootstrap,
            request_hooks={ApiKey.METADATA: rename_topics},
            response_hooks={ApiKey.METADATA: brand},
        )
    )
    try:
        host, port = running.proxy.bootstrap_servers.split(",")[0].split(":")
        with Connection(host, int(port), client_id="hook-test", timeout_s=10) as conn:
            md = conn.request(
                ApiKey.METADATA,
                topics=[{"name": "plain"}],
                allow_auto_topic_creation=True,
            )
    finally:
        running.close()
    assert md.cluster_id == "via-proxy"
    assert [t.name for t in md.topics] == ["hooked-plain"]
    assert seen == ["hook-test"]
    (request,) = [
        e
        for e in running.events
        if e.direction == "request" and e.api_key == ApiKey.METADATA
    ]
    assert request.sent != request.received and b"hooked-plain" in request.sent


def test_kproto_async_client_through_proxy(cluster: MockCluster) -> None:
    from kproto.client import AsyncClient

    topic = f"proxied-client-{uuid.uuid4().hex[:8]}"
    events: list[FrameEvent] = []

    async def main() -> tuple[list[bytes | None], Proxy]:
        async with Proxy(cluster.bootstrap, on_frame=events.append) as proxy:
            async with AsyncClient(proxy.bootstrap_servers) as client:
                sent = await client.produce(topic, [(b"k", b"v1"), (b"k", b"v2")])
                partition = sent[0].partition
                records = [r async for r in client.iter_records(topic, partition, 0)]
        return [r.value for r in records], proxy

    values, proxy = asyncio.run(asyncio.wait_for(main(), 30))
    assert values == [b"v1", b"v2"]
    assert set(proxy.listeners) == set(cluster.brokers.values())
    assert _check_events(events, proxy).get(ApiKey.METADATA, 0) >= 1
