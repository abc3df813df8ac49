"""Interop with librdkafka through its mock cluster.

* kproto produces (every codec at magic 2 through Produce v3+; magic 0/1 through
  Produce v0-v2, where the mock accepts only uncompressed message sets) and a
  confluent-kafka Consumer reads the records back;
* confluent-kafka produces (every codec; and with ``api.version.request=false`` +
  ``broker.version.fallback`` 0.9.0, which makes librdkafka write magic 0; 0.10.0
  does not give magic 1 with librdkafka 2.x, see ``C2K_CASES``), kafka-python
  produces magic 1 and magic 0, and kproto fetches and decodes;
* idempotent and transactional sessions driven by kproto alone, with the control
  batches decoded.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

import confluent_kafka
import pytest

from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.records import (
    Compression,
    ControlRecordType,
    TimestampType,
    decode_batches,
    encode_batch,
)
from kproto.serial import DecodeError
from tests.eventually import eventually
from tests.live.mock_cluster import (
    Brokers,
    MockCluster,
    check,
    fetch_all,
    produce_batch,
)

pytestmark = pytest.mark.live

N = 5
BASE_TS = 1_700_000_000_000
CODECS = list(Compression)

# (magic, Produce version, codec) cases for kproto -> confluent
K2C_CASES = [(2, None, c) for c in CODECS] + [
    (0, 0, Compression.NONE),
    (0, 1, Compression.NONE),
    (1, 2, Compression.NONE),
]
# zstd (KIP-110) needs magic 2: encode_legacy refuses it
LEGACY_COMPRESSED = [
    (m, v, c) for m, v in ((0, 1), (1, 2)) for c in CODECS if 0 < c < 4
]


def _records(tag: str, magic: int) -> list[Any]:
    out = []
    for i in range(N):
        headers = [("idx", str(i).encode()), ("nil", None)] if magic == 2 else []
        key = None if i == 3 else f"{tag}-k{i}".encode()
        value = None if i == 4 else f"{tag}-value-{i}-".encode() * (i + 1)
        out.append((key, value, headers, BASE_TS + 10 * i))
    return out


def _case_id(case: tuple[int, int | None, Compression]) -> str:
    magic, version, codec = case
    return f"magic{magic}-{codec.label}" + (
        "" if version is None else f"-produce_v{version}"
    )


def _consume(
    conf: dict[str, Any], topics: list[str], want: int, timeout_s: float = 20.0
) -> list[Any]:
    consumer = confluent_kafka.Consumer(conf)
    try:
        consumer.assign([confluent_kafka.TopicPartition(t, 0, 0) for t in topics])
        got: list[Any] = []

        def enough() -> bool:
            for msg in consumer.consume(num_messages=want - len(got), timeout=0.5):
                if msg.error() is None:
                    got.append(msg)
                elif msg.error().code() != confluent_kafka.KafkaError._PARTITION_EOF:
                    raise AssertionError(f"consumer error: {msg.error()}")
            return len(got) >= want

        eventually(enough, timeout_s, interval_s=0, retry_on=())
        return got
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def kproto_produced(
    brokers: Brokers, new_topic: Callable[[str], Any], consumer_conf: Any
) -> dict[str, Any]:
    """Produce every case with kproto, then read all of them with one Consumer."""
    cases: dict[str, Any] = {}
    for case in K2C_CASES:
        magic, version, codec = case
        topic = new_topic("k2c")
        conn = brokers.get(topic.leaders[0])
        recs = _records(_case_id(case), magic)
        res = produce_batch(
            conn,
            topic.name,
            0,
            encode_batch(recs, magic=magic, compression=codec),
            version=version,
            topic_id=topic.topic_id,
        )
        check(res.error_code, f"Produce {_case_id(case)}")
        cases[_case_id(case)] = (topic.name, magic, recs)
    msgs = _consume(consumer_conf(), [t for t, _, _ in cases.values()], N * len(cases))
    by_topic: dict[str, list[Any]] = {}
    for m in msgs:
        by_topic.setdefault(m.topic(), []).append(m)
    return {
        cid: (magic, recs, sorted(by_topic.get(t, []), key=lambda m: m.offset()))
        for cid, (t, magic, recs) in cases.items()
    }


@pytest.mark.parametrize("case", K2C_CASES, ids=_case_id)
def test_kproto_produce_confluent_consume(
    kproto_produced: dict[str, Any], case: Any
) -> None:
    magic, recs, msgs = kproto_produced[_case_id(case)]
    assert [m.offset() for m in msgs] == list(range(N))
    assert [m.key() for m in msgs] == [r[0] for r in recs]
    assert [m.value() for m in msgs] == [r[1] for r in recs]
    if magic == 2:
        assert [m.headers() for m in msgs] == [r[2] for r in recs]
    else:
        assert all(m.headers() is None for m in msgs)
    if magic == 0:
        assert {m.timestamp()[0] for m in msgs} == {
            confluent_kafka.TIMESTAMP_NOT_AVAILABLE
        }
    else:
        assert [m.timestamp() for m in msgs] == [
            (confluent_kafka.TIMESTAMP_CREATE_TIME, r[3]) for r in recs
        ]


@pytest.mark.parametrize("case", LEGACY_COMPRESSED, ids=_case_id)
def test_mock_rejects_compressed_legacy(
    brokers: Brokers, new_topic: Any, case: Any
) -> None:
    magic, version, codec = case
    topic = new_topic("legacyz")
    conn = brokers.get(topic.leaders[0])
    res = produce_batch(
        conn,
        topic.name,
        0,
        encode_batch(_records("z", magic), magic=magic, compression=codec),
        version=version,
    )
    assert res.error_code == ErrorCode.UNSUPPORTED_VERSION


# (label, producer, producer config, expected magic, codec). librdkafka 2.x honours
# broker.version.fallback only for 0.8.x/0.9.0 (magic 0); any value >= 0.10 makes it
# send ApiVersions anyway, so "0.10.0" ends up writing magic 2. Magic 1 comes from
# kafka-python pinned to api_version (0, 10, 0) instead.
C2K_CASES = [
    (f"confluent-magic2-{c.label}", "confluent", {"compression.codec": c.label}, 2, c)
    for c in CODECS
] + [
    (
        "confluent-fallback-0.9.0-magic0",
        "confluent",
        {"api.version.request": False, "broker.version.fallback": "0.9.0"},
        0,
        Compression.NONE,
    ),
    (
        "confluent-fallback-0.10.0-magic2",
        "confluent",
        {"api.version.request": False, "broker.version.fallback": "0.10.0"},
        2,
        Compression.NONE,
    ),
    (
        "kafka-python-0.10.0-magic1",
        "kafka-python",
        {"api_version": (0, 10, 0)},
        1,
        Compression.NONE,
    ),
    (
        "kafka-python-0.9-magic0",
        "kafka-python",
        {"api_version": (0, 9)},
        0,
        Compression.NONE,
    ),
]


def _produce_confluent(
    bootstrap: str, conf: dict[str, Any], topic: str, sent: list[Any]
) -> None:
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 50, "log_level": 2, **conf}
    )
    errors: list[Any] = []
    for key, value, headers, ts in sent:
        producer.produce(
            topic,
            value=value,
            key=key,
            partition=0,
            timestamp=ts,
            headers=headers or None,
            on_delivery=lambda err, msg: errors.append(err) if err else None,
        )
    assert producer.flush(15) == 0
    assert errors == []


def _produce_kafka_python(
    bootstrap: str, conf: dict[str, Any], topic: str, sent: list[Any]
) -> None:
    kafka = pytest.importorskip("kafka")
    producer = kafka.KafkaProducer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=10_000,
        max_block_ms=10_000,
        **conf,
    )
    try:
        futures = [
            producer.send(topic, value=value, key=key, partition=0, timestamp_ms=ts)
            for key, value, _, ts in sent
        ]
        for fut in futures:
            fut.get(timeout=10)
    finally:
        producer.close(timeout=5)


@pytest.mark.parametrize("case", C2K_CASES, ids=lambda c: c[0])
def test_foreign_produce_kproto_fetch(
    cluster: MockCluster, brokers: Brokers, new_topic: Any, case: Any
) -> None:
    label, kind, conf, magic, codec = case
    topic = new_topic("c2k")
    sent = _records(label, magic)
    if kind == "confluent":
        _produce_confluent(cluster.bootstrap, conf, topic.name, sent)
    else:
        _produce_kafka_python(cluster.bootstrap, conf, topic.name, sent)
    conn = brokers.get(topic.leaders[0])
    raw, data = fetch_all(conn, topic.name, 0, topic_id=topic.topic_id)
    assert data.high_watermark == N
    batches = list(decode_batches(raw))
    assert {b.magic for b in batches} == {magic}
    assert {b.compression for b in batches} == {codec}
    got = [r for b in batches for r in b.records]
    assert [r.offset for r in got] == list(range(N))
    assert [(r.key, r.value) for r in got] == [(k, v) for k, v, _, _ in sent]
    if magic == 2:
        assert [list(r.headers) for r in got] == [h for _, _, h, _ in sent]
    if magic == 0:
        assert {b.timestamp_type for b in batches} == {TimestampType.NO_TIMESTAMP}
        assert {r.timestamp for r in got} == {-1}
    else:
        assert [r.timestamp for r in got] == [ts for *_, ts in sent]


def _coordinator(brokers: Brokers, key: str, key_type: int) -> Any:
    res = brokers.any.request(ApiKey.FIND_COORDINATOR, key=key, key_type=key_type)
    check(res.error_code, "FindCoordinator")
    return brokers.get(res.node_id)


def test_idempotent_session(brokers: Brokers, new_topic: Any) -> None:
    topic = new_topic("idem")
    leader = brokers.get(topic.leaders[0])
    pid = leader.request(
        ApiKey.INIT_PRODUCER_ID, transactional_id=None, transaction_timeout_ms=-1
    )
    assert pid.error_code == 0 and pid.producer_id >= 0
    seq = 0
    for n in range(2):
        recs = [(f"k{n}{i}".encode(), b"v", [], BASE_TS) for i in range(3)]
        batch = encode_batch(
            recs,
            compression=Compression.ZSTD,
            producer_id=pid.producer_id,
            producer_epoch=pid.producer_epoch,
            base_sequence=seq,
        )
        res = produce_batch(leader, topic.name, 0, batch)
        assert res.error_code == 0 and res.base_offset == seq
        seq += 3
    raw, _ = fetch_all(leader, topic.name, 0, topic_id=topic.topic_id)
    batches = list(decode_batches(raw))
    assert [(b.producer_id, b.producer_epoch, b.base_sequence) for b in batches] == [
        (pid.producer_id, pid.producer_epoch, 0),
        (pid.producer_id, pid.producer_epoch, 3),
    ]
    assert not any(b.is_transactional or b.is_control for b in batches)


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_transactional_session(brokers: Brokers, new_topic: Any, commit: bool) -> None:
    topic = new_topic("txn")
    txn_id = f"txn-{uuid.uuid4().hex[:8]}"
    coord = _coordinator(brokers, txn_id, 1)
    pid = coord.request(
        ApiKey.INIT_PRODUCER_ID, transactional_id=txn_id, transaction_timeout_ms=30_000
    )
    check(pid.error_code, "InitProducerId")
    add = coord.request(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        v3_and_below_transactional_id=txn_id,
        v3_and_below_producer_id=pid.producer_id,
        v3_and_below_producer_epoch=pid.producer_epoch,
        v3_and_below_topics=[{"name": topic.name, "partitions": [0]}],
    )
    results = [
        p.partition_error_code
        for t in add.results_by_topic_v3_and_below
        for p in t.results_by_partition
    ]
    assert results == [0]
    leader = brokers.get(topic.leaders[0])
    batch = encode_batch(
        [(b"t%d" % i, b"txn-value", [("h", b"1")], BASE_TS + i) for i in range(3)],
        compression=Compression.LZ4,
        producer_id=pid.producer_id,
        producer_epoch=pid.producer_epoch,
        base_sequence=0,
        is_transactional=True,
    )
    res = produce_batch(leader, topic.name, 0, batch, transactional_id=txn_id)
    check(res.error_code, "Produce (transactional)")
    end = coord.request(
        ApiKey.END_TXN,
        transactional_id=txn_id,
        producer_id=pid.producer_id,
        producer_epoch=pid.producer_epoch,
        committed=commit,
    )
    check(end.error_code, "EndTxn")

    raw, data = fetch_all(leader, topic.name, 0, topic_id=topic.topic_id)
    assert data.high_watermark == 4
    # the mock writes CRC 0 on transaction markers: the default check reports it
    with pytest.raises(DecodeError) as info:
        list(decode_batches(raw))
    assert "batch@" in str(info.value) and "crc" in str(info.value).lower()
    it = decode_batches(raw, check_crc=True, skip_corrupt=True)
    data_batches = list(it)
    assert [b.base_offset for b in data_batches] == [0]
    assert [(pos, base) for pos, base, _ in it.corrupt] == [(len(batch), 3)]

    batches = list(decode_batches(raw, check_crc=False))
    assert len(batches) == 2
    data_batch, marker = batches
    assert data_batch.is_transactional and not data_batch.is_control
    assert data_batch.compression == Compression.LZ4
    assert [r.key for r in data_batch.records] == [b"t0", b"t1", b"t2"]
    assert marker.is_transactional and marker.is_control and marker.crc == 0
    assert (marker.producer_id, marker.producer_epoch) == (
        pid.producer_id,
        pid.producer_epoch,
    )
    (rec,) = marker.records
    assert rec.offset == 3 and rec.control is not None
    assert rec.control.type == (
        ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    )
    assert struct.unpack(">hh", rec.key or b"")[1] == rec.control.type
