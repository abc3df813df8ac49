"""The leader stamps its partition leader epoch into every batch it appends (Kafka's
``LogValidator`` / ``UnifiedLog.appendAsLeader``), outside the CRC: segment files
read back with ``kproto dump-log``, OffsetForLeaderEpoch answered from the stamped
epochs, epochs resumed on restart, transaction markers and coordinator records
stamped, and librdkafka's KIP-320 position validation across leader moves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import crc32c
import pytest

from kproto.broker import Cluster
from kproto.cli import main
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.records import decode_batches, encode_batch
from tests.broker import wire
from tests.broker.conftest import segment_files
from tests.broker.txn.support import transactional_producer
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")


def connect(cluster: Cluster, topic: str, partition: int = 0) -> Connection:
    info = cluster.state.nodes[cluster.leader(topic, partition)]
    conn = Connection(info.host, info.port, timeout_s=30)
    conn.negotiate()
    return conn


def produce(
    cluster: Cluster, topic: str, values: list[bytes], timestamp: int = 1000
) -> None:
    """One batch of ``values`` to ``topic``-0 through its leader, written with the
    producer's ``partition_leader_epoch`` -1 (librdkafka's and Java's)."""
    batch = encode_batch([(None, v, (), timestamp) for v in values])
    with connect(cluster, topic) as conn:
        answer = wire.produce(conn, topic, {0: batch}, cluster=cluster)
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def end_offsets(
    cluster: Cluster, topic: str, epochs: list[int], current: int = -1
) -> list[tuple[int, int, int]]:
    """OffsetForLeaderEpoch (latest version) for ``epochs`` of ``topic``-0:
    ``(error_code, leader_epoch, end_offset)`` each."""
    with connect(cluster, topic) as conn:
        answers = wire.offset_for_leader_epoch(
            conn, topic, *[(0, e, current) for e in epochs]
        )
    return [(p.error_code, p.leader_epoch, p.end_offset) for p in answers]


def list_offsets(
    cluster: Cluster, topic: str, timestamps: list[int]
) -> list[tuple[int, int]]:
    """ListOffsets (latest version) of ``topic``-0: ``(offset, leader_epoch)`` for
    each of ``timestamps`` (ms, or -1 latest, -2 earliest, -3 max timestamp)."""
    out = []
    with connect(cluster, topic) as conn:
        for ts in timestamps:
            p = wire.list_offsets(conn, topic, ts)
            assert p.error_code == ErrorCode.NONE
            out.append((p.offset, p.leader_epoch))
    return out


def dump_json(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    assert main(["dump-log", "--json", "--fail-on-corrupt", str(path)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def stored_epochs(path: Path) -> list[int]:
    """Each batch's ``partition_leader_epoch``, every CRC-32C checked by hand."""
    data = path.read_bytes()
    epochs = []
    for batch in decode_batches(data, check_crc=True):
        start = batch.position
        end = start + 12 + batch.batch_length
        crc = int.from_bytes(data[start + 17 : start + 21], "big")
        assert crc == crc32c.crc32c(data[start + 21 : end])
        epochs.append(batch.partition_leader_epoch)
    return epochs


def other_node(cluster: Cluster, topic: str) -> int:
    """A running node that does not lead ``topic``-0."""
    leader = cluster.leader(topic)
    return next(s.node_id for s in cluster.servers if s.running and s.node_id != leader)


def test_batches_carry_the_epoch_of_their_leader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Cluster(nodes=3, data_dir=tmp_path) as cluster:
        cluster.create_topic("t", 1)
        produce(cluster, "t", [b"a", b"b"])  # epoch 0: offsets 0-1
        assert cluster.move_leader("t", 0, other_node(cluster, "t")) == 1
        produce(cluster, "t", [b"c"], timestamp=2000)  # epoch 1: offset 2
        cluster.stop_node(cluster.leader("t"))  # epoch 2: offsets 3-5
        assert cluster.leader_epoch("t") == 2
        produce(cluster, "t", [b"d", b"e", b"f"], timestamp=3000)
        cluster.move_leader("t", 0, other_node(cluster, "t"))  # epoch 3: no data

        [path] = segment_files(tmp_path, "t")
        assert stored_epochs(path) == [0, 1, 2]
        rows = dump_json(path, capsys)
        assert [(r["offset"], r["partition_leader_epoch"]) for r in rows] == [
            (0, 0),
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 2),
        ]
        assert all(r["is_valid"] for r in rows)
        assert main(["dump-log", "--fail-on-corrupt", str(path)]) == 0
        lines = capsys.readouterr().out.splitlines()
        batches = [line for line in lines if line.startswith("baseOffset:")]
        assert [line.split(" partitionLeaderEpoch: ")[1][0] for line in batches] == [
            "0",
            "1",
            "2",
        ]

        # LeaderEpochFileCache.endOffsetFor: an epoch ends where the next higher
        # one starts; the current one (3, no data yet) at the log end offset
        assert end_offsets(cluster, "t", [0, 1, 2, 3, 4, -1], current=3) == [
            (ErrorCode.NONE, 0, 2),
            (ErrorCode.NONE, 1, 3),
            (ErrorCode.NONE, 2, 6),
            (ErrorCode.NONE, 3, 6),
            (ErrorCode.NONE, -1, -1),  # above every epoch: UNDEFINED_EPOCH_OFFSET
            (ErrorCode.NONE, -1, -1),
        ]
        [older] = end_offsets(cluster, "t", [0], current=2)
        [newer] = end_offsets(cluster, "t", [0], current=4)
        assert older[0] == ErrorCode.FENCED_LEADER_EPOCH
        assert newer[0] == ErrorCode.UNKNOWN_LEADER_EPOCH

        # ListOffsets: the epoch that wrote the offset found; the latest, the
        # partition's (UnifiedLog.fetchOffsetByTimestamp)
        assert list_offsets(cluster, "t", [-2, 1500, 2500, -3, 9999, -1]) == [
            (0, 0),
            (2, 1),
            (3, 2),
            (3, 2),
            (-1, -1),
            (6, 3),
        ]

        # two moves with nothing written: epoch 4 is not in the cache (Kafka drops
        # an entry the next one starts at the same offset as); 5 has data
        cluster.move_leader("t", 0, other_node(cluster, "t"))
        cluster.move_leader("t", 0, other_node(cluster, "t"))
        produce(cluster, "t", [b"g"])
        assert end_offsets(cluster, "t", [2, 3, 4, 5]) == [
            (ErrorCode.NONE, 2, 6),
            (ErrorCode.NONE, 2, 6),
            (ErrorCode.NONE, 2, 6),
            (ErrorCode.NONE, 5, 7),
        ]
    assert stored_epochs(path) == [0, 1, 2, 5]


def test_a_restarted_cluster_resumes_the_stored_epochs(tmp_path: Path) -> None:
    with Cluster(nodes=2, data_dir=tmp_path) as cluster:
        cluster.create_topic("t", 1)
        produce(cluster, "t", [b"a"])
        cluster.move_leader("t", 0, other_node(cluster, "t"))
        cluster.move_leader("t", 0, other_node(cluster, "t"))
        produce(cluster, "t", [b"b"])
    with Cluster(nodes=2, data_dir=tmp_path) as cluster:
        # epochs never go back: the next batch is not stamped 0 after 2's
        assert cluster.leader_epoch("t") == 2
        produce(cluster, "t", [b"c"])
        cluster.move_leader("t", 0, other_node(cluster, "t"))
        produce(cluster, "t", [b"d"])
        assert end_offsets(cluster, "t", [0, 1, 2, 3], current=3) == [
            (ErrorCode.NONE, 0, 1),
            (ErrorCode.NONE, 0, 1),
            (ErrorCode.NONE, 2, 3),
            (ErrorCode.NONE, 3, 4),
        ]
    [path] = segment_files(tmp_path, "t")
    assert stored_epochs(path) == [0, 2, 2, 3]


def test_transaction_markers_and_coordinator_records_are_stamped(
    tmp_path: Path,
) -> None:
    with Cluster(nodes=2, data_dir=tmp_path) as cluster:
        cluster.create_topic("tx", 1)
        cluster.move_leader("tx", 0, other_node(cluster, "tx"))  # epoch 1
        p = transactional_producer(cluster, "stamped")
        p.begin_transaction()
        p.produce("tx", b"v", partition=0)
        p.commit_transaction(20)
        records = cluster.records("tx", 0)
        assert [r.control is not None for r in records] == [False, True]
        [path] = segment_files(tmp_path, "tx")
        assert stored_epochs(path) == [1, 1]
        # the coordinator's own appends (__transaction_state) are stamped too
        state_logs = [
            f
            for f in segment_files(tmp_path, "__transaction_state")
            if f.stat().st_size
        ]
        assert state_logs
        for f in state_logs:
            assert set(stored_epochs(f)) == {0}


def test_librdkafka_consumer_reads_everything_across_leader_moves() -> None:
    """librdkafka validates its position with OffsetForLeaderEpoch after every
    leader change (KIP-320), using the epoch of the last batch it consumed: a
    wrong end offset would be reported as log truncation or reset the position."""
    with Cluster(nodes=3) as cluster:
        cluster.create_topic("moves", 1)
        errors: list[object] = []
        producer = ck.Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0}
        )
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "moves",
                "auto.offset.reset": "error",
                "enable.auto.commit": False,
                "topic.metadata.refresh.interval.ms": 200,
                "error_cb": errors.append,
                "log_level": 0,
            }
        )
        consumer.assign([ck.TopicPartition("moves", 0, 0)])
        got: list[tuple[bytes, int]] = []

        def read(count: int) -> None:
            def enough() -> bool:
                m = consumer.poll(0.2)
                if m is not None:
                    assert m.error() is None, m.error()
                    got.append((m.value(), m.leader_epoch()))
                return len(got) >= count

            eventually(enough, 30, interval_s=0, retry_on=())

        sent = 0
        for round_ in range(3):
            for _ in range(20):
                producer.produce("moves", b"%d" % sent, partition=0)
                sent += 1
            assert producer.flush(30) == 0
            read(sent)
            if round_ == 1:
                cluster.stop_node(cluster.leader("moves"))
            else:
                cluster.move_leader("moves", 0, other_node(cluster, "moves"))
        for _ in range(20):
            producer.produce("moves", b"%d" % sent, partition=0)
            sent += 1
        assert producer.flush(30) == 0
        read(sent)
        consumer.close()
        # every message once, in order, with the epoch of the leader that wrote
        # it: 20 at each of epochs 0 (first leader), 1 (moved), 2 (its node
        # stopped) and 3 (moved)
        assert got == [(b"%d" % i, i // 20) for i in range(sent)]
        assert errors == []
        # the validation ran against the stamped epochs
        asked = [
            p.leader_epoch
            for r in cluster.requests.filter(api_key=ApiKey.OFFSET_FOR_LEADER_EPOCH)
            for t in r.request.topics
            for p in t.partitions
        ]
        assert asked and max(asked) >= 1


def fetch(
    conn: Connection,
    cluster: Cluster,
    topic: str,
    offset: int,
    last_epoch: int,
    session: tuple[int, int] = (0, -1),
    wait_ms: int = 5000,
) -> Any:
    """A Fetch (latest version) of ``topic``-0 at ``offset`` with
    ``last_fetched_epoch`` ``last_epoch``, in ``(session id, session epoch)``."""
    return conn.request(
        ApiKey.FETCH,
        max_wait_ms=wait_ms,  # a diverging answer does not wait
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=session[0],
        session_epoch=session[1],
        topics=[
            {
                "topic_id": cluster.state.topics[topic].topic_id,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": last_epoch,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def test_fetch_answers_a_diverging_epoch() -> None:
    """Fetch v12+ ``last_fetched_epoch`` (Kafka's ``Partition.readRecords``): a
    fetcher whose log went on past where the epoch ends here gets
    ``diverging_epoch`` and no records."""
    with Cluster(nodes=2) as cluster:
        cluster.create_topic("d", 1)
        produce(cluster, "d", [b"a", b"b"])  # epoch 0: 0-1
        cluster.move_leader("d", 0, other_node(cluster, "d"))
        produce(cluster, "d", [b"c"])  # epoch 1: 2
        cluster.move_leader("d", 0, other_node(cluster, "d"))
        cluster.move_leader("d", 0, other_node(cluster, "d"))
        produce(cluster, "d", [b"d", b"e"])  # epoch 3: 3-4 (2 wrote nothing)

        def answer(
            offset: int, last_epoch: int, wait_ms: int = 5000
        ) -> tuple[int, int, int, bytes]:
            with connect(cluster, "d") as conn:
                p = fetch(conn, cluster, "d", offset, last_epoch, wait_ms=wait_ms)
                p = p.responses[0]
            p = p.partitions[0]
            div = p.diverging_epoch
            return p.error_code, div.epoch, div.end_offset, bytes(p.records or b"")

        # epoch 1 ends at 3: a fetcher at 3 is in step and reads on
        error, epoch, end, records = answer(3, 1)
        assert (error, epoch, end) == (ErrorCode.NONE, -1, -1)
        assert [r.value for b in decode_batches(records) for r in b.records] == [
            b"d",
            b"e",
        ]
        # a fetcher with epoch-1 data up to 4 diverged at 3
        assert answer(4, 1) == (ErrorCode.NONE, 1, 3, b"")
        # epoch 2 is not in the log: the one below it (1) ends at 3
        assert answer(4, 2) == (ErrorCode.NONE, 1, 3, b"")
        # the current epoch ends at the log end offset
        assert answer(5, 3, wait_ms=10)[:3] == (ErrorCode.NONE, -1, -1)
        # above every known epoch: no end offset
        assert answer(5, 9)[0] == ErrorCode.OFFSET_OUT_OF_RANGE
        # no epoch (-1, what consumers send): not checked
        assert answer(4, -1)[:3] == (ErrorCode.NONE, -1, -1)

        # in a fetch session (KIP-227) a diverging partition is always answered
        # (its high watermark and offsets did not change)
        with connect(cluster, "d") as conn:
            opened = fetch(conn, cluster, "d", 5, 3, session=(0, 0), wait_ms=10)
            assert opened.session_id != 0
            later = fetch(conn, cluster, "d", 4, 1, session=(opened.session_id, 1))
        [topic] = later.responses
        div = topic.partitions[0].diverging_epoch
        assert (div.epoch, div.end_offset) == (1, 3)
