"""Protocol currency: real clients talk to librdkafka's mock cluster through a kproto
proxy that decodes, re-encodes and forwards every frame (see ``recorder.py``).

When Kafka (or librdkafka) adds a version, a frame stops decoding here first.
Per-scenario frame counts are printed (``pytest -s``) and kept in ``RESULTS``.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.eventually import eventually
from tests.live.mock_cluster import MockCluster
from tests.proxy.recorder import Recording, RecordingProxy

ck = pytest.importorskip("confluent_kafka")

#: Frames whose re-encoding differs from the peer's bytes, by (direction, api_key,
#: api_version; ``None`` = any version), with the reason. Anything else that differs
#: fails the test. The proxy forwards kproto's re-encoding of these.
NON_CANONICAL: dict[tuple[str, int, int | None], str] = {
    ("response", 18, 3): (
        "librdkafka's mock supports ApiVersions up to v2 and answers a v3 request with "
        "UNSUPPORTED_VERSION and a flexible body whose api_keys count (0x01, i.e. 0 "
        "entries) is followed by the ApiVersions entry it meant to send: kproto reads "
        "the v3 body as Java's ApiVersionsResponse.parse does (error 35, no api_keys) "
        "and 5 bytes are left over (kept, forwarded after the body); librdkafka then "
        "retries with ApiVersions v0"
    ),
    ("response", 76, 1): (
        "librdkafka's mock appends one byte after the ShareGroupHeartbeat v1 body "
        "(kept and forwarded after the re-encoded body, as Java ignores it)"
    ),
    ("response", 3, 13): (
        "librdkafka's mock appends one byte after the Metadata v13 body; Java's "
        "response parsing ignores trailing bytes, and so does kproto's decode_response"
    ),
}

#: Frames kproto rejects as Kafka's own generated Java reader would; the proxy
#: forwards them unchanged. Anything else that does not decode fails the test.
UNDECODABLE: dict[tuple[str, int | None, int | None], str] = {
    ("request", 3, 13): (
        "librdkafka 2.16 (AdminClient.list_topics and other all-topics metadata "
        "refreshes) writes 3 bytes (01 00 00) after the MetadataRequest v13 body "
        "(null topics, both flags false, no tagged fields); Kafka's RequestContext "
        "rejects a request with bytes left over, so kproto's decode_request raises "
        "and the proxy forwards the original frame (the mock ignores the extra bytes)"
    ),
}


def _documented(table: dict[Any, str], direction: str, key: Any, version: Any) -> bool:
    return (direction, key, version) in table or (direction, key, None) in table


RESULTS: dict[str, Recording] = {}
TIMEOUT_S = 15.0
N = 5


@pytest.fixture(scope="module")
def proxy() -> Iterator[RecordingProxy]:
    with MockCluster(3, timeout_s=20.0) as cluster:
        with RecordingProxy(cluster.brokers, timeout_s=10.0) as p:
            yield p
    print("\nproxy frame counts (requests + responses decoded, per scenario):")
    for name, rec in RESULTS.items():
        print(
            f"  {name}: {rec.frames} frames, {len(rec.requests)} (api, version) "
            f"request kinds, {sum(rec.rewritten.values())} rewritten, "
            f"{len(rec.non_canonical)} non-canonical, {len(rec.undecodable)} undecodable"
        )
        kinds = " ".join(f"{k}v{v}" for k, v in sorted(rec.requests))
        print(f"    requests (api_key v version): {kinds}")


def _check(name: str, proxy: RecordingProxy) -> Recording:
    rec = proxy.take()
    RESULTS[name] = rec
    assert not rec.errors, f"{name}: proxied connections failed: {rec.errors}"
    assert rec.frames > 0, f"{name}: no frames went through the proxy"
    odd = [n for n in rec.non_canonical if not _documented(NON_CANONICAL, *n[:3])]
    assert not odd, f"{name}: undocumented non-canonical frames: {odd}"
    bad = [u for u in rec.undecodable if not _documented(UNDECODABLE, *u[:3])]
    assert not bad, f"{name}: frames kproto could not decode: {bad}"
    return rec


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _produce(
    conf: dict[str, Any], topic: str, values: list[bytes]
) -> list[tuple[int, int]]:
    """Produce ``values`` to partition 0; the delivered (partition, offset) pairs."""
    producer = ck.Producer({"linger.ms": 5, "log_level": 2, **conf})
    offsets: list[tuple[int, int]] = []
    errors: list[Any] = []

    def report(err: Any, msg: Any) -> None:
        if err:
            errors.append(err)
        else:
            offsets.append((msg.partition(), msg.offset()))

    for v in values:
        producer.produce(topic, v, key=v, partition=0, on_delivery=report)
    assert producer.flush(TIMEOUT_S) == 0
    assert not errors, errors
    return offsets


def _consume(make: Callable[[], Any], topic: str, n: int) -> list[bytes]:
    """Subscribe, poll until ``n`` values arrived (TIMEOUT_S at most), commit, close."""
    consumer = make()
    share = isinstance(consumer, ck.ShareConsumer)
    consumer.subscribe([topic])
    got: list[bytes] = []

    def enough() -> bool:
        nonlocal got
        polled = consumer.poll(0.5)
        batch = list(polled) if share else [polled]  # ShareConsumer: Messages
        got += [m.value() for m in batch if m is not None and not m.error()]
        return len(got) >= n

    try:
        eventually(enough, TIMEOUT_S, interval_s=0, retry_on=())
        if share:
            consumer.commit_sync()
        elif got:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def _values(tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() * (1 + i) for i in range(N)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_producer_every_codec(proxy: RecordingProxy, codec: str) -> None:
    topic = _topic(f"codec-{codec}")
    offsets = _produce(
        {"bootstrap.servers": proxy.bootstrap, "compression.type": codec},
        topic,
        _values(codec),
    )
    assert sorted(offsets) == [(0, i) for i in range(N)]
    rec = _check(f"producer {codec}", proxy)
    assert any(k == 0 for k, _ in rec.requests)  # Produce went through
    assert any(k == 3 for k, _ in rec.rewritten)  # Metadata pointed at the proxy


def test_idempotent_and_transactional_producers(proxy: RecordingProxy) -> None:
    topic = _topic("eos")
    conf = {"bootstrap.servers": proxy.bootstrap, "enable.idempotence": True}
    assert sorted(_produce(conf, topic, _values("idem"))) == [(0, i) for i in range(N)]
    rec = _check("idempotent producer", proxy)
    assert any(k == 22 for k, _ in rec.requests)  # InitProducerId

    producer = ck.Producer(
        {
            "bootstrap.servers": proxy.bootstrap,
            "transactional.id": _topic("txn"),
            "log_level": 2,
        }
    )
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    for v in _values("txn"):
        producer.produce(topic, v)
    producer.commit_transaction(TIMEOUT_S)
    rec = _check("transactional producer", proxy)
    keys = {k for k, _ in rec.requests}
    assert {
        10,
        22,
        24,
        26,
    } <= keys  # FindCoordinator, InitProducerId, AddPartitions, EndTxn


def test_classic_and_kip848_consumer_groups(proxy: RecordingProxy) -> None:
    topic = _topic("groups")  # auto-created by the produce below
    values = _values("grp")
    _produce({"bootstrap.servers": proxy.bootstrap}, topic, values)
    proxy.take()
    for protocol in ("classic", "consumer"):
        conf: dict[str, Any] = {
            "bootstrap.servers": proxy.bootstrap,
            "group.id": _topic(f"g-{protocol}"),
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 2,
        }
        got = _consume(functools.partial(ck.Consumer, conf), topic, N)
        assert sorted(got) == sorted(values), protocol
        rec = _check(f"consumer group.protocol={protocol}", proxy)
        keys = {k for k, _ in rec.requests}
        assert (11 in keys) if protocol == "classic" else (68 in keys), keys


def test_share_consumer(proxy: RecordingProxy) -> None:
    topic = _topic("share")
    # A first produce auto-creates the topic (the mock assigns share partitions only
    # of topics that exist when the member joins); share groups start at the latest
    # offset, so the values are produced once the member has its assignment.
    _produce({"bootstrap.servers": proxy.bootstrap}, topic, [b"before-join"])
    proxy.take()
    values = _values("share")
    consumer = ck.ShareConsumer(
        {"bootstrap.servers": proxy.bootstrap, "group.id": _topic("sg"), "log_level": 2}
    )
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        fetches = proxy.recording.responses

        def in_session() -> bool:
            consumer.poll(0.2)
            return sum(c for (k, _), c in fetches.items() if k == 78) >= 3

        eventually(in_session, TIMEOUT_S, interval_s=0, message="no ShareFetch session")
        _produce({"bootstrap.servers": proxy.bootstrap}, topic, values)

        def all_got() -> bool:
            nonlocal got
            batch = consumer.poll(0.5)
            got += [m.value() for m in batch if not m.error()]
            return len(got) >= N

        eventually(all_got, TIMEOUT_S, interval_s=0, retry_on=())
        consumer.commit_sync()
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)
    rec = _check("share consumer", proxy)
    # ShareGroupHeartbeat and ShareFetch at v1+ (KIP-932 as released in Kafka 4.1):
    # the versions kproto lacked before the 2026-08-23 source.
    assert any(k == 76 and v >= 1 for k, v in rec.requests), rec.requests
    assert any(k == 78 and v >= 1 for k, v in rec.requests), rec.requests


def test_admin_client(proxy: RecordingProxy) -> None:
    """The AdminClient calls librdkafka's mock answers (it has no controller, so
    CreateTopics, DeleteTopics, DescribeCluster... time out even without the proxy)."""
    admin_mod = ck.admin
    topic = _topic("admin")
    _produce({"bootstrap.servers": proxy.bootstrap}, topic, _values("adm"))
    proxy.take()

    def calls(bootstrap: str) -> tuple[Any, ...]:
        admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
        md = admin.list_topics(timeout=TIMEOUT_S)
        groups = admin.list_consumer_groups(request_timeout=TIMEOUT_S)
        tp = ck.TopicPartition(topic, 0)
        spec = {tp: admin_mod.OffsetSpec.latest()}
        latest = admin.list_offsets(spec, request_timeout=TIMEOUT_S)[tp]
        listed = groups.result(TIMEOUT_S)
        return (
            sorted(md.topics[topic].partitions),
            sorted((b.id, b.port) for b in md.brokers.values()),
            sorted(str(e.code()) for e in listed.errors),
            len(listed.valid),
            latest.result(TIMEOUT_S).offset,
        )

    direct = calls(proxy.upstream_bootstrap)
    proxy.take()
    proxied = calls(proxy.bootstrap)
    assert proxied[4] == N
    # The same answers, except that the brokers are the proxy's listeners.
    assert proxied[1] == sorted(proxy.listeners.items())
    assert proxied[:1] + proxied[2:] == direct[:1] + direct[2:]
    rec = _check("admin client", proxy)
    # Metadata, ListOffsets (librdkafka answers list_consumer_groups itself with
    # UNSUPPORTED_FEATURE: the mock does not offer the ListGroups version it wants).
    assert {3, 2} <= {k for k, _ in rec.requests}


def test_kafka_python(proxy: RecordingProxy) -> None:
    kafka = pytest.importorskip("kafka")
    topic = _topic("kp")
    values = _values("kp")
    # Unpinned, kafka-python 3.0.12 sends ApiVersions v4 and cannot read the mock's
    # UNSUPPORTED_VERSION answer, so it never bootstraps even without the proxy.
    pinned = {"api_version": (2, 1, 0)}
    producer = kafka.KafkaProducer(
        bootstrap_servers=proxy.bootstrap,
        request_timeout_ms=int(TIMEOUT_S * 1000),
        **pinned,
    )
    futures = [producer.send(topic, v, partition=0) for v in values]
    assert [f.get(TIMEOUT_S).offset for f in futures] == list(range(N))
    producer.close(TIMEOUT_S)
    consumer = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=proxy.bootstrap,
        group_id=_topic("kpg"),
        auto_offset_reset="earliest",
        consumer_timeout_ms=int(TIMEOUT_S * 1000),
        **pinned,
    )
    got: list[bytes] = []
    for msg in consumer:
        got.append(msg.value)
        if len(got) == N:
            break
    consumer.close()
    assert sorted(got) == sorted(values)
    _check("kafka-python", proxy)


def test_aiokafka(proxy: RecordingProxy) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    topic = _topic("aio")
    values = _values("aio")

    async def run() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=proxy.bootstrap)
        await producer.start()
        try:
            for v in values:
                await producer.send_and_wait(topic, v)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(
            topic,
            bootstrap_servers=proxy.bootstrap,
            group_id=_topic("aiog"),
            auto_offset_reset="earliest",
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(TIMEOUT_S):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) == N:
                        break
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(run())) == sorted(values)
    _check("aiokafka", proxy)
