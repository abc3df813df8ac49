"""Log compaction: the latest value per key survives, tombstones go after
delete.retention.ms (two passes, KIP-534), offsets and CRCs hold, swaps survive a
crash, __consumer_offsets compacts, transactions' aborted data goes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster, cleaner_manager
from kproto.broker.cleaner_manager import CHECKPOINT_FILE
from kproto.records import (
    Compression,
    ControlRecordType,
    decode_batches,
    encode_batch,
    encode_control_batch,
)
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")

COMPACTED = {
    "cleanup.policy": "compact",
    "internal.segment.bytes": "1500",
    "delete.retention.ms": "200",
    "min.cleanable.dirty.ratio": "0.01",
}


def produce(
    cluster: Cluster, topic: str, items: list[tuple[bytes, bytes | None]]
) -> None:
    producer = ck.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0, "log_level": 2}
    )
    for i, (key, value) in enumerate(items):
        producer.produce(topic, value, key=key)
        if i % 4 == 3:  # several small batches, so segments roll
            producer.flush(10)
    assert producer.flush(30) == 0


def consume_all(cluster: Cluster, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    consumer = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"read-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "log_level": 2,
        }
    )
    consumer.subscribe([topic])
    out = []

    def at_end() -> bool:
        msg = consumer.poll(0.5)
        if msg is None:
            return False
        if msg.error():
            return bool(msg.error().code() == ck.KafkaError._PARTITION_EOF)
        out.append((msg.offset(), msg.key(), msg.value()))
        return False

    eventually(at_end, 30, interval_s=0, retry_on=())
    consumer.close()
    return out


def stored_batches(cluster: Cluster, topic: str, partition: int = 0) -> list[Any]:
    """Every stored batch, decoded with CRC checks (as dump-log does)."""
    plog = cluster.state.partition_log(topic, partition)
    assert plog is not None
    return [
        b
        for path in sorted(plog.directory.glob("*.log"))
        for b in decode_batches(path.read_bytes(), check_crc=True)
    ]


def test_compacted_topic_keeps_latest_value_and_drops_expired_tombstones() -> None:
    with Cluster(log_cleaner_backoff_ms=3_600_000) as cluster:
        cluster.create_topic("changelog", 1, configs=COMPACTED)
        items: list[tuple[bytes, bytes | None]] = [
            (b"k%d" % (i % 8), b"v%d" % i) for i in range(120)
        ]
        items += [(b"k0", None), (b"k1", None)]  # tombstones
        items += [(b"f%d" % i, b"filler") for i in range(40)]  # rolls past them
        produce(cluster, "changelog", items)
        plog = cluster.state.partition_log("changelog", 0)
        assert plog is not None and len(plog.segments) > 3
        end = plog.high_watermark
        before = {(r.offset, r.key, r.value) for r in cluster.records("changelog")}

        stats = cluster.compact()
        assert stats.partitions == 1 and stats.removed > 0
        after_first = consume_all(cluster, "changelog")
        keys = [k for _, k, _ in after_first]
        assert len(keys) == len(set(keys)), "one record per key"
        assert set(after_first) <= before, "offsets, keys and values preserved"
        latest = {k: (o, v) for o, k, v in sorted(before)}
        assert {k: (o, v) for o, k, v in after_first} == latest
        # the tombstones survive the first cleaning, stamped with a delete horizon
        horizon_batches = [
            b for b in stored_batches(cluster, "changelog") if b.has_delete_horizon
        ]
        assert horizon_batches
        assert any(r.value is None for b in horizon_batches for r in b.records)

        time.sleep(0.3)  # past delete.retention.ms since the first cleaning
        cluster.compact()
        final = consume_all(cluster, "changelog")
        assert {k for _, k, _ in final} == {
            k for k in latest if k not in (b"k0", b"k1")
        }
        assert all(v is not None for _, _, v in final)
        assert {(o, k, v) for o, k, v in final} <= before
        assert plog.high_watermark == end
        for batch in stored_batches(cluster, "changelog"):  # CRCs checked on decode
            last = batch.base_offset + batch.last_offset_delta
            assert batch.records and batch.records[-1].offset == last
            assert all(batch.base_offset <= r.offset <= last for r in batch.records)
        dump = subprocess.run(
            [
                sys.executable,
                "-m",
                "kproto",
                "dump-log",
                "--fail-on-corrupt",
                "--json",
                str(plog.directory),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert dump.returncode == 0, dump.stderr
        checkpoint = (cluster.data_dir / CHECKPOINT_FILE).read_text().splitlines()
        assert checkpoint[:2] == ["0", "1"] and checkpoint[2].startswith("changelog 0 ")


@pytest.mark.kafka_cluster(configs={"log.cleaner.backoff.ms": "50"})
def test_background_cleaner_compacts_without_being_asked(
    kafka_cluster: Cluster,
) -> None:
    cluster = kafka_cluster
    cluster.create_topic("bg", 1, configs=COMPACTED)
    produce(cluster, "bg", [(b"k%d" % (i % 2), b"v%d" % i) for i in range(80)])
    plog = cluster.state.partition_log("bg", 0)
    assert plog is not None

    def compacted() -> bool:
        below = [
            r.key
            for r in cluster.records("bg")
            if r.offset < plog.segments[-1].base_offset
        ]
        return len(below) == len(set(below))

    eventually(compacted, 30, interval_s=0.05, message="duplicate keys below")
    assert consume_all(cluster, "bg")[-1][2] == b"v79"


def test_dirty_ratio_and_compaction_lags_honoured() -> None:
    with Cluster(log_cleaner_backoff_ms=3_600_000) as cluster:
        cluster.create_topic(
            "lazy", 1, configs={**COMPACTED, "min.cleanable.dirty.ratio": "0.99"}
        )
        cluster.create_topic(
            "young", 1, configs={**COMPACTED, "min.compaction.lag.ms": "3600000"}
        )
        items = [(b"k%d" % (i % 4), b"v%d" % i) for i in range(80)]
        distinct = [(b"d%d" % i, b"v" * 20) for i in range(120)]
        produce(cluster, "lazy", distinct)  # nothing to remove: clean bytes stay
        produce(cluster, "young", items)
        assert cluster.compact().partitions == 1  # lazy: first cleaning, ratio 1.0
        cluster.alter_topic_configs("lazy", {"min.cleanable.dirty.ratio": "0.9"})
        produce(cluster, "lazy", items + items[:40])  # some dirt: ratio below 0.9
        before = len(cluster.records("lazy"))
        assert cluster.compact("lazy").partitions == 0
        assert len(cluster.records("lazy")) == before
        # the same dirt older than max.compaction.lag.ms must be cleaned
        cluster.alter_topic_configs("lazy", {"max.compaction.lag.ms": "1"})
        time.sleep(0.01)
        assert cluster.compact("lazy").partitions == 1
        assert len(cluster.records("lazy")) < before
        # records younger than min.compaction.lag.ms are never cleaned
        assert len(cluster.records("young")) == 80


def test_restart_in_the_middle_of_a_swap(tmp_path: Path, monkeypatch: Any) -> None:
    data = tmp_path / "data"
    with Cluster(data_dir=data, log_cleaner_backoff_ms=3_600_000) as cluster:
        cluster.create_topic("swap", 1, configs=COMPACTED)
        produce(cluster, "swap", [(b"k%d" % (i % 3), b"v%d" % i) for i in range(60)])
        expected = {
            k: v
            for _, k, v in sorted(
                (r.offset, r.key, r.value) for r in cluster.records("swap")
            )
        }

        def crash(swap: Path, target: Path) -> None:
            raise OSError("crash after the .swap rename")

        monkeypatch.setattr(cleaner_manager, "_complete_swap", crash)
        cluster.compact()  # the error is logged; the .swap stays
        directory = cluster.state.partition_log("swap", 0).directory  # type: ignore[union-attr]
        assert list(directory.glob("*.log.swap"))
        monkeypatch.undo()
        # an unfinished cleaning too: recovery deletes it
        (directory / "00000000000000000000.log.cleaned").write_bytes(b"junk")
    with Cluster(data_dir=data, log_cleaner_backoff_ms=3_600_000) as cluster:
        assert not list(directory.glob("*.swap")) and not list(
            directory.glob("*.cleaned")
        )
        records = cluster.records("swap")
        for batch in stored_batches(cluster, "swap"):
            assert batch.records or batch.producer_id >= 0
        assert {r.key: r.value for r in records} == expected
        cluster.compact()
        keys = [r.key for r in cluster.records("swap")]
        active = cluster.state.partition_log("swap", 0).segments[-1]  # type: ignore[union-attr]
        cleaned_keys = [
            r.key for r in cluster.records("swap") if r.offset < active.base_offset
        ]
        assert len(cleaned_keys) == len(set(cleaned_keys))
        assert set(keys) == set(expected)


def committed_offset(cluster: Cluster, group: str, topic: str) -> int:
    """``group``'s committed offset of ``topic``-0, as a confluent-kafka consumer
    of the group reads it (OffsetFetch)."""
    consumer = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "log_level": 2,
        }
    )
    (committed,) = consumer.committed([ck.TopicPartition(topic, 0)], timeout=10)
    consumer.close()
    return int(committed.offset)


def test_consumer_offsets_compacts(tmp_path: Path) -> None:
    with Cluster(
        data_dir=tmp_path,
        offsets_partitions=1,
        segment_bytes=600,
        log_cleaner_backoff_ms=3_600_000,
    ) as cluster:
        cluster.create_topic("in", 1)
        produce(cluster, "in", [(b"k", b"v")])
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "committer",
                "enable.auto.commit": False,
                "log_level": 2,
            }
        )
        for i in range(30):
            consumer.commit(offsets=[ck.TopicPartition("in", 0, i)], asynchronous=False)
        consumer.close()
        info = cluster.state.topics["__consumer_offsets"]
        assert info.config("cleanup.policy") == "compact"
        plog = cluster.state.partition_log("__consumer_offsets", 0)
        assert plog is not None and len(plog.segments) > 2
        commits_before = len(cluster.records("__consumer_offsets"))
        assert cluster.compact("__consumer_offsets").partitions == 1
        after = cluster.records("__consumer_offsets")
        assert len(after) < commits_before
        keys = [r.key for r in after if r.offset < plog.segments[-1].base_offset]
        assert len(keys) == len(set(keys))
        assert committed_offset(cluster, "committer", "in") == 29
    # the group coordinator recovers the commit from the compacted log
    with Cluster(data_dir=tmp_path, offsets_partitions=1) as cluster:
        assert committed_offset(cluster, "committer", "in") == 29


def test_compressed_batches_keep_their_codec_and_valid_crcs() -> None:
    with Cluster(log_cleaner_backoff_ms=3_600_000) as cluster:
        cluster.create_topic("zipped", 1, configs=COMPACTED)
        producer = ck.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "compression.type": "lz4",
                "linger.ms": 0,
                "log_level": 2,
            }
        )
        for i in range(160):
            producer.produce("zipped", b"value-%d" % i * 3, key=b"k%d" % (i % 5))
            if i % 8 == 7:
                producer.flush(10)
        assert producer.flush(30) == 0
        before = {(r.offset, r.key, r.value) for r in cluster.records("zipped")}
        codecs = {
            b.base_offset: b.compression for b in stored_batches(cluster, "zipped")
        }
        assert Compression.LZ4 in codecs.values()
        assert cluster.compact().removed > 0
        batches = stored_batches(cluster, "zipped")  # CRCs checked
        assert any(b.compression == Compression.LZ4 for b in batches)
        assert all(b.compression == codecs[b.base_offset] for b in batches)
        rewritten = [b for b in batches if len(b.records) < b.last_offset_delta + 1]
        assert rewritten, "some batches lost records in the middle"
        for batch in batches:  # the last offset delta names the last record kept
            assert (
                batch.records[-1].offset == batch.base_offset + batch.last_offset_delta
            )
        got = consume_all(cluster, "zipped")
        assert set(got) <= before
        assert {k: v for _, k, v in got} == {k: v for _, k, v in sorted(before)}


def test_last_batch_of_an_idempotent_producer_stays_as_an_empty_header(
    tmp_path: Path,
) -> None:
    with Cluster(data_dir=tmp_path, log_cleaner_backoff_ms=3_600_000) as cluster:
        cluster.create_topic("idem", 1, configs=COMPACTED)
        plog = cluster.state.partition_log("idem", 0)
        assert plog is not None

        def write(batch: bytes) -> None:
            plog.append_batches(batch)  # type: ignore[union-attr]

        def idem(seq: int, value: bytes) -> bytes:
            return encode_batch(
                [(b"k", value)], producer_id=42, producer_epoch=0, base_sequence=seq
            )

        cluster._on_loop(lambda: write(idem(0, b"first")))
        cluster._on_loop(lambda: write(idem(1, b"second")))
        cluster._on_loop(lambda: write(encode_batch([(b"k", b"newest")])))
        for i in range(40):
            batch = encode_batch([(b"f%d" % i, b"x" * 60)])
            cluster._on_loop(lambda batch=batch: write(batch))
        cluster.compact()
        batches = [b for b in stored_batches(cluster, "idem") if b.producer_id == 42]
        # the first batch went; the producer's last is an empty header, sequence kept
        assert [(b.base_offset, b.base_sequence, len(b.records)) for b in batches] == [
            (1, 1, 0)
        ]
        assert [r.value for r in cluster.records("idem") if r.key == b"k"] == [
            b"newest"
        ]
    with Cluster(data_dir=tmp_path, log_cleaner_backoff_ms=3_600_000) as cluster:
        plog = cluster.state.partition_log("idem", 0)
        assert plog is not None
        # the producer's sequence survived compaction and restart: a retry of
        # sequence 1 is a duplicate, sequence 2 follows
        retry = cluster._on_loop(lambda: plog.append_batches(idem(1, b"second")))  # type: ignore[union-attr]
        assert retry.base_offset == 1
        with pytest.raises(Exception, match="sequence"):
            cluster._on_loop(lambda: plog.append_batches(idem(5, b"gap")))  # type: ignore[union-attr]
        cluster._on_loop(lambda: plog.append_batches(idem(2, b"third")))  # type: ignore[union-attr]


def test_aborted_transaction_data_removed_and_markers_kept_then_dropped() -> None:
    with Cluster(log_cleaner_backoff_ms=3_600_000) as cluster:
        cluster.create_topic("tx", 1, configs=COMPACTED)
        plog = cluster.state.partition_log("tx", 0)
        assert plog is not None

        def write(batch: bytes) -> None:
            plog.append_batches(batch, _policy())  # type: ignore[union-attr]

        def _policy() -> Any:
            from kproto.broker.log_validator import LogPolicy

            return LogPolicy(max_message_bytes=1 << 20, client=False)

        def txn(pid: int, seq: int, values: list[bytes]) -> bytes:
            return encode_batch(
                [(b"p%d-%d" % (pid, seq + i), v) for i, v in enumerate(values)],
                producer_id=pid,
                producer_epoch=0,
                base_sequence=seq,
                is_transactional=True,
            )

        def marker(pid: int, kind: int) -> bytes:
            return encode_control_batch(
                kind, coordinator_epoch=0, producer_id=pid, producer_epoch=0
            )

        cluster._on_loop(lambda: write(txn(7, 0, [b"committed0", b"committed1"])))
        cluster._on_loop(lambda: write(marker(7, ControlRecordType.COMMIT)))
        cluster._on_loop(lambda: write(txn(8, 0, [b"aborted0", b"aborted1"])))
        cluster._on_loop(lambda: write(marker(8, ControlRecordType.ABORT)))
        # producer 8 goes on: its aborted batch is not its last (Kafka keeps the
        # header of a producer's last batch, and the marker with it)
        cluster._on_loop(lambda: write(txn(8, 2, [b"later"])))
        cluster._on_loop(lambda: write(marker(8, ControlRecordType.COMMIT)))

        def roll(tag: bytes) -> None:
            for i in range(40):  # roll the active segment away
                batch = encode_batch([(tag + b"%d" % i, b"x" * 60)])
                cluster._on_loop(lambda batch=batch: write(batch))

        roll(b"f")
        cluster.compact()
        values = {r.value for r in cluster.records("tx")}
        assert b"committed0" in values and b"aborted0" not in values
        controls = [b for b in stored_batches(cluster, "tx") if b.is_control]
        assert len(controls) == 3  # the ABORT marker stays while its data was there
        roll(b"g")
        cluster.compact()  # the ABORT marker's data is gone: a delete horizon
        aborts = [
            b
            for b in stored_batches(cluster, "tx")
            if b.is_control and b.records[0].control.type == ControlRecordType.ABORT
        ]
        assert len(aborts) == 1 and aborts[0].has_delete_horizon
        time.sleep(0.3)
        roll(b"h")
        cluster.compact()
        kinds = [
            b.records[0].control.type
            for b in stored_batches(cluster, "tx")
            if b.is_control
        ]
        # the COMMIT marker stays: its transaction's data is still there
        assert kinds == [ControlRecordType.COMMIT, ControlRecordType.COMMIT]
        assert {b"committed0", b"committed1"} <= {
            r.value for r in cluster.records("tx")
        }
