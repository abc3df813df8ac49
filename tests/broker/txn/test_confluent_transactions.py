"""confluent-kafka (librdkafka) transactional producers against the broker's
transaction coordinator: commit, abort, send_offsets_to_transaction, fencing,
timeouts, read_committed / read_uncommitted consumers."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.records import ControlRecordType, decode_batches
from tests.broker.txn.support import transactional_producer
from tests.consuming import read_settled
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")

_ids = itertools.count()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(
        nodes=3,
        data_dir=tmp_path_factory.mktemp("txn"),
        transaction_abort_interval_ms=100,
    ) as c:
        yield c


def _name(prefix: str) -> str:
    return f"{prefix}{next(_ids)}"


def producer(cluster: Cluster, txn_id: str, **conf: object) -> object:
    return transactional_producer(cluster, txn_id, **{"linger.ms": 1, **conf})


def consume_all(
    cluster: Cluster, topic: str, partitions: int, isolation: str, expect: int
) -> list[bytes]:
    """Read every partition of ``topic`` from the start until ``expect`` values
    arrived or 3 s pass after the last one (so extra records would be seen)."""
    c = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": _name("reader"),
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    c.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
    got = read_settled(c, expect, 30, quiet_s=1.5)
    c.close()
    return got


def committed_once(cluster: Cluster, prefix: str, value: bytes) -> tuple[str, Any]:
    """A new topic of one partition holding one committed transaction of
    ``value``: its name and the transactional producer."""
    topic = _name(prefix)
    cluster.create_topic(topic, 1)
    p = producer(cluster, _name("app"))
    p.begin_transaction()
    p.produce(topic, value)
    p.commit_transaction(20)
    return topic, p


def test_commit_and_abort_read_committed_and_uncommitted(cluster: Cluster) -> None:
    topic = _name("tx")
    cluster.create_topic(topic, 3)
    p = producer(cluster, _name("app"))
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, b"committed-%d" % i, partition=i % 3)
    p.commit_transaction(20)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, b"aborted-%d" % i, partition=i % 3)
    p.flush(10)
    p.abort_transaction(20)
    p.begin_transaction()
    p.produce(topic, b"last", partition=0)
    p.commit_transaction(20)

    committed = consume_all(cluster, topic, 3, "read_committed", 31)
    assert sorted(committed) == sorted(
        [b"committed-%d" % i for i in range(30)] + [b"last"]
    )
    everything = consume_all(cluster, topic, 3, "read_uncommitted", 41)
    assert sorted(everything) == sorted(
        [b"committed-%d" % i for i in range(30)]
        + [b"aborted-%d" % i for i in range(10)]
        + [b"last"]
    )
    # each partition holds COMMIT, ABORT (and COMMIT for partition 0) markers
    markers = []
    for partition in range(3):
        for record in cluster.records(topic, partition):
            if record.control is not None:
                markers.append((partition, record.control.type))
    assert sorted(markers) == sorted(
        [(q, ControlRecordType.COMMIT) for q in range(3)]
        + [(q, ControlRecordType.ABORT) for q in range(3)]
        + [(0, ControlRecordType.COMMIT)]
    )


def test_read_committed_stops_at_an_open_transaction(cluster: Cluster) -> None:
    topic, p = committed_once(cluster, "open", b"done")
    p.begin_transaction()
    p.produce(topic, b"pending")
    p.flush(10)
    assert consume_all(cluster, topic, 1, "read_committed", 1) == [b"done"]
    assert sorted(consume_all(cluster, topic, 1, "read_uncommitted", 2)) == [
        b"done",
        b"pending",
    ]
    c = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": _name("wm"),
            "isolation.level": "read_committed",
            "log_level": 0,
        }
    )
    # read_committed: the high offset is the LSO, the first offset of the open
    # transaction (offset 2, after "done" at 0 and its marker at 1)
    low, high = c.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=10)
    c.close()
    assert (low, high) == (0, 2)
    p.commit_transaction(20)
    assert sorted(consume_all(cluster, topic, 1, "read_committed", 2)) == [
        b"done",
        b"pending",
    ]


def test_send_offsets_to_transaction_visible_only_on_commit(cluster: Cluster) -> None:
    source, sink = _name("src"), _name("sink")
    cluster.create_topic(source, 1)
    cluster.create_topic(sink, 1)
    group = _name("g")
    seed = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    for i in range(10):
        seed.produce(source, b"in-%d" % i)
    assert seed.flush(10) == 0

    consumer = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "log_level": 0,
        }
    )
    consumer.subscribe([source])
    got = []

    def ten() -> bool:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m)
        return len(got) >= 10

    eventually(ten, 30, interval_s=0, retry_on=())
    assert len(got) == 10

    p = producer(cluster, _name("etl"))
    # aborted: the offsets stay uncommitted
    p.begin_transaction()
    for m in got[:5]:
        p.produce(sink, m.value().replace(b"in", b"out"))
    p.send_offsets_to_transaction(
        [ck.TopicPartition(source, 0, 5)], consumer.consumer_group_metadata(), 20
    )
    p.abort_transaction(20)
    assert consumer.committed([ck.TopicPartition(source, 0)], 10)[0].offset < 0
    # committed: offset 10 visible together with the output
    p.begin_transaction()
    for m in got:
        p.produce(sink, m.value().replace(b"in", b"out"))
    p.send_offsets_to_transaction(
        [ck.TopicPartition(source, 0, 10)], consumer.consumer_group_metadata(), 20
    )
    p.commit_transaction(20)
    assert consumer.committed([ck.TopicPartition(source, 0)], 10)[0].offset == 10
    consumer.close()
    out = consume_all(cluster, sink, 1, "read_committed", 10)
    assert sorted(out) == sorted(b"out-%d" % i for i in range(10))


def test_second_producer_fences_the_first(cluster: Cluster) -> None:
    topic = _name("fence")
    cluster.create_topic(topic, 1)
    txn_id = _name("shared")
    first = producer(cluster, txn_id)
    first.begin_transaction()
    first.produce(topic, b"zombie")
    first.flush(10)
    second = producer(cluster, txn_id)  # aborts the first's open transaction
    second.begin_transaction()
    second.produce(topic, b"new")
    second.commit_transaction(20)
    with pytest.raises(ck.KafkaException) as raised:
        first.produce(topic, b"zombie-2")
        first.commit_transaction(20)
    error = raised.value.args[0]
    assert error.fatal()
    assert error.code() in (
        ck.KafkaError._FENCED,
        ck.KafkaError.PRODUCER_FENCED,
        ck.KafkaError.INVALID_PRODUCER_EPOCH,
    )
    assert consume_all(cluster, topic, 1, "read_committed", 1) == [b"new"]


def test_a_transaction_that_times_out_is_aborted(cluster: Cluster) -> None:
    topic = _name("timeout")
    cluster.create_topic(topic, 1)
    txn_id = _name("slow")
    p = producer(cluster, txn_id, **{"transaction.timeout.ms": 1000})
    p.begin_transaction()
    p.produce(topic, b"too-late")
    p.flush(10)

    def aborted() -> bool:
        meta = cluster.txn.describe(txn_id)
        return meta is not None and meta.state.kafka_name == "CompleteAbort"

    eventually(aborted, 10, interval_s=0.1, message="the transaction was not aborted")
    with pytest.raises(ck.KafkaException):
        p.commit_transaction(10)
    aborts = [r for r in cluster.records(topic, 0) if r.control is not None]
    assert [r.control.type for r in aborts] == [ControlRecordType.ABORT]
    assert consume_all(cluster, topic, 1, "read_committed", 0) == []


def test_control_batches_have_valid_crcs(cluster: Cluster) -> None:
    topic, _ = committed_once(cluster, "crc", b"v")
    data = b"".join(
        path.read_bytes() for path in sorted(cluster.data_dir.glob(f"{topic}-0/*.log"))
    )
    batches = list(decode_batches(data, check_crc=True))
    control = [b for b in batches if b.is_control]
    assert len(control) == 1
    assert control[0].is_transactional
    assert control[0].records[0].control.type == ControlRecordType.COMMIT
    assert control[0].records[0].control.coordinator_epoch == 0
    assert control[0].producer_id == batches[0].producer_id


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_transactional_producer(cluster: Cluster) -> None:
    """Debian's kcat (librdkafka 2.0.2) commits its input as one transaction."""
    topic = _name("kcat")
    cluster.create_topic(topic, 1)
    done = subprocess.run(
        ["kcat", "-P", "-b", cluster.bootstrap_servers, "-t", topic]
        + ["-X", "transactional.id=" + _name("kcat-tx")],
        input="one\ntwo\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Transaction successfully committed" in done.stderr
    records = cluster.records(topic, 0)
    assert [r.value for r in records if r.control is None] == [b"one", b"two"]
    assert records[-1].control is not None
    assert records[-1].control.type == ControlRecordType.COMMIT
