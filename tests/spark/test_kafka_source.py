"""The ``kproto-kafka`` data source against the in-process broker (``local[2]``).

One cluster for the module; each test uses its own topics. Spark jobs are kept few.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import BinaryType, StructField, StructType

from kproto.broker import Cluster
from kproto.client import Client, TopicPartition
from kproto.index import ApiKey
from kproto.negotiation import client_ssl_context
from kproto.records import Compression
from kproto.sasl import SaslConfig
from kproto.spark import decode_internal_topic, read_kafka, register
from kproto.spark._kafka_options import KafkaOptionError, OffsetRange, parse_options
from kproto.spark._kafka_sink import sink_settings
from kproto.spark._kafka_source import DataLossError, kafka_schema, read_range
from tests.broker.txn.support import transactional_producer
from tests.spark.streams import read_stream

ck = pytest.importorskip("confluent_kafka")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=2) as c:
        yield c


def _produce(servers: str, topic: str, parts: int, n: int, first: int = 0) -> set:
    """``n`` records per partition, keyed, with a header on odd ones; returns
    ``{(partition, offset, key, value, headers)}``."""
    out = set()
    with Client(servers) as client:
        for p in range(parts):
            records = [
                (
                    b"k%d" % i,
                    b"v-%d-%d" % (p, i),
                    [("h", b"%d" % i)] if i % 2 else [],
                )
                for i in range(first, first + n)
            ]
            codec = Compression.ZSTD if p == 1 else Compression.NONE
            for r, done in zip(
                records,
                client.produce(topic, records, partition=p, compression=codec),
                strict=True,
            ):
                out.add((p, done.offset, r[0], r[1], tuple(r[2])))
    return out


def _rows(df: object) -> set:
    return {
        (
            r["partition"],
            r["offset"],
            bytes(r["key"]),
            bytes(r["value"]),
            tuple((h["key"], bytes(h["value"])) for h in r["headers"]),
        )
        for r in df.collect()  # type: ignore[attr-defined]
    }


def test_batch_read_equals_what_was_produced(
    spark: SparkSession, cluster: Cluster
) -> None:
    cluster.create_topic("orders", 3)
    produced = _produce(cluster.bootstrap_servers, "orders", 3, 40)
    df = read_kafka(
        spark,
        cluster.bootstrap_servers,
        "orders",
        include_headers=True,
        batch_columns=True,
        options={"minPartitions": "6"},
    )
    assert df.columns[:7] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    assert df.rdd.getNumPartitions() == 6  # 3 partitions of 40 split in two
    rows = df.collect()
    assert _rows(spark.createDataFrame(rows, df.schema)) == produced
    assert len(rows) == 120
    assert {r["compression"] for r in rows if r["partition"] == 1} == {"zstd"}
    assert {r["topic"] for r in rows} == {"orders"}
    assert {r["timestampType"] for r in rows} == {0}

    # Specific offsets (Spark's JSON): one partition from 30 to 35 only.
    ranged = read_kafka(
        spark,
        cluster.bootstrap_servers,
        "orders",
        starting_offsets=json.dumps({"orders": {"0": 30, "1": 40, "2": -2}}),
        ending_offsets=json.dumps({"orders": {"0": 35, "1": -1, "2": 0}}),
    )
    got = sorted((r["partition"], r["offset"]) for r in ranged.collect())
    assert got == [(0, o) for o in range(30, 35)]


def test_bad_options_fail_at_load(spark: SparkSession, cluster: Cluster) -> None:
    register(spark)
    reader = spark.read.format("kproto-kafka").option(
        "kafka.bootstrap.servers", cluster.bootstrap_servers
    )
    with pytest.raises(Exception, match="exactly one of 'subscribe'"):
        reader.load()
    with pytest.raises(Exception, match="kafka.sasl.mechanism"):
        reader.option("subscribe", "x").option("kafka.sasl.mechanism", "PLAIN").load()


def test_streaming_restart_reads_each_record_once(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    cluster.create_topic("events", 2)
    servers = cluster.bootstrap_servers
    produced = _produce(servers, "events", 2, 25)
    register(spark)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> None:
        stream = read_stream(
            spark,
            servers,
            subscribe="events",
            maxOffsetsPerTrigger="30",
            includeHeaders="true",
        )
        query = (
            stream.writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120)
        assert query.exception() is None

    run()
    first = spark.read.parquet(str(out)).count()
    produced |= _produce(servers, "events", 2, 10, first=25)
    run()
    df = spark.read.parquet(str(out))
    rows = df.collect()
    assert first == 50
    assert len(rows) == 70  # no record twice
    assert _rows(spark.createDataFrame(rows, df.schema)) == produced
    offsets = json.loads((checkpoint / "offsets" / "2").read_text().splitlines()[-1])
    assert offsets == {"events": {"0": 35, "1": 35}}


def test_decode_internal_topic_over_live_consumer_offsets(
    spark: SparkSession, cluster: Cluster
) -> None:
    cluster.create_topic("paid", 1)
    with Client(cluster.bootstrap_servers) as client:
        client.commit_offsets("billing", {TopicPartition("paid", 0): 42})
    df = read_kafka(spark, cluster.bootstrap_servers, "__consumer_offsets")
    decoded = decode_internal_topic(df, "__consumer_offsets").where(
        F.col("offset_commit_key.group") == "billing"
    )
    rows = decoded.collect()
    assert len(rows) == 1
    row = rows[0]
    assert row.error is None and row.record_type == "OffsetCommitKey"
    assert (row.offset_commit_key.topic, row.offset_commit_key.partition) == (
        "paid",
        0,
    )
    assert row.offset_commit_value.offset == 42


def test_write_then_read_round_trip(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("written", 2)
    rows = [
        (f"k{i}", b"value-%d" % i, i % 2, [("h", b"x")] if i % 3 else [])
        for i in range(30)
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value binary, partition int, "
        "headers array<struct<key:string,value:binary>>",
    )
    register(spark)
    (
        df.write.format("kproto-kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("topic", "written")
        .option("kafka.compression.type", "lz4")
        .mode("append")
        .save()
    )
    back = read_kafka(
        spark,
        cluster.bootstrap_servers,
        "written",
        include_headers=True,
        batch_columns=True,
    ).collect()
    assert sorted(
        (r.key.decode(), bytes(r.value), r.partition, [tuple(h) for h in r.headers])
        for r in back
    ) == sorted((k, v, p, [(hk, hv) for hk, hv in h]) for k, v, p, h in rows)
    assert {r.compression for r in back} == {"lz4"}
    # One idempotent producer per task: every batch carries a producer id and
    # its partition's sequence, which start at 0 and follow each other.
    assert all(r.producer_id >= 0 and r.base_sequence >= 0 for r in back)
    for p in (0, 1):
        starts = sorted(
            {(r.producer_id, r.base_sequence) for r in back if r.partition == p}
        )
        assert starts[0][1] == 0


def test_sink_idempotence_follows_acks() -> None:
    schema = StructType([StructField("value", BinaryType())])
    base = {"kafka.bootstrap.servers": "b:9092", "topic": "t"}
    assert sink_settings(base, schema).idempotent
    assert not sink_settings({**base, "kafka.acks": "1"}, schema).idempotent
    off = {**base, "kafka.enable.idempotence": "false"}
    assert not sink_settings(off, schema).idempotent
    with pytest.raises(KafkaOptionError, match="needs kafka.acks=all"):
        sink_settings(
            {**base, "kafka.acks": "0", "kafka.enable.idempotence": "true"}, schema
        )
    with pytest.raises(KafkaOptionError, match="true or false"):
        sink_settings({**base, "kafka.enable.idempotence": "yes"}, schema)


def test_write_errors_name_the_topic(spark: SparkSession, cluster: Cluster) -> None:
    register(spark)
    df = spark.createDataFrame([(b"v",)], "value binary")
    with pytest.raises(Exception, match="'topic' column or the 'topic' option"):
        (
            df.write.format("kproto-kafka")
            .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
            .mode("append")
            .save()
        )
    # A task's Produce error fails the job with the partition named.
    cluster.create_topic("two", 2)
    bad = spark.createDataFrame([(b"v", 7)], "value binary, partition int")
    with pytest.raises(Exception, match=r"write to two-7 failed after 0 records"):
        (
            bad.write.format("kproto-kafka")
            .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
            .option("topic", "two")
            .mode("append")
            .save()
        )


def test_fail_on_data_loss(spark: SparkSession, cluster: Cluster) -> None:
    cluster.create_topic("lossy", 1)
    servers = cluster.bootstrap_servers
    _produce(servers, "lossy", 1, 20)
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": servers, "log_level": 2})
    futures = admin.delete_records([ck.TopicPartition("lossy", 0, 12)])
    for future in futures.values():
        future.result(30)
    start = json.dumps({"lossy": {"0": 5}})
    with pytest.raises(Exception, match="offsets 5..11 are gone"):
        read_kafka(spark, servers, "lossy", starting_offsets=start).collect()
    rows = read_kafka(
        spark,
        servers,
        "lossy",
        starting_offsets=start,
        options={"failOnDataLoss": "false"},
    ).collect()
    assert sorted(r.offset for r in rows) == list(range(12, 20))


def test_stream_copy_between_topics(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    # readStream (subscribePattern) -> writeStream back into Kafka, then a batch read.
    servers = cluster.bootstrap_servers
    cluster.create_topic("copy-src-a", 1)
    cluster.create_topic("copy-src-b", 1)
    produced = [
        *_produce(servers, "copy-src-a", 1, 7),
        *_produce(servers, "copy-src-b", 1, 5),
    ]
    cluster.create_topic("copy-dst", 1)
    register(spark)
    stream = read_stream(
        spark, servers, subscribePattern="copy-src-.*", includeHeaders="true"
    ).select("key", "value", "headers")
    query = (
        stream.writeStream.format("kproto-kafka")
        .option("kafka.bootstrap.servers", servers)
        .option("topic", "copy-dst")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    back = read_kafka(spark, servers, "copy-dst", include_headers=True).collect()
    assert sorted(
        (
            bytes(r.key),
            bytes(r.value),
            tuple((h.key, bytes(h.value)) for h in r.headers),
        )
        for r in back
    ) == sorted((k, v, h) for _, _, k, v, h in produced)


# --- read_range in this process (no Spark job) -----------------------------------


def _read(servers: str, r: OffsetRange, **options: str) -> list[int]:
    opts = parse_options(
        {"kafka.bootstrap.servers": servers, "subscribe": r.topic, **options}
    )
    schema = to_arrow_schema(kafka_schema(False, False), timezone="UTC")
    with opts.client() as client:
        return [
            o
            for b in read_range(client, r, opts, schema)
            for o in b["offset"].to_pylist()
        ]


def test_read_range_passes_isolation_level_and_client_id(cluster: Cluster) -> None:
    cluster.create_topic("committed", 1)
    _produce(cluster.bootstrap_servers, "committed", 1, 6)
    got = _read(
        cluster.bootstrap_servers,
        OffsetRange("committed", 0, 2, 5),
        **{"kafka.isolation.level": "read_committed", "kafka.client.id": "iso-test"},
    )
    assert got == [2, 3, 4]
    fetches = cluster.requests.filter(api_key=ApiKey.FETCH, client_id="iso-test")
    assert fetches and {f.request.isolation_level for f in fetches} == {1}


def test_batch_read_committed_drops_aborted_transactions(
    spark: SparkSession, cluster: Cluster
) -> None:
    cluster.create_topic("txn-rows", 1)
    p = transactional_producer(cluster, "spark-rc", **{"linger.ms": 1})
    for values, commit in (([b"c0", b"c1"], True), ([b"a0", b"a1"], False)):
        p.begin_transaction()
        for v in values:
            p.produce("txn-rows", v, partition=0)
        p.flush(10)
        if commit:
            p.commit_transaction(20)
        else:
            p.abort_transaction(20)
    p.begin_transaction()
    p.produce("txn-rows", b"c2", partition=0)
    p.commit_transaction(20)
    df = read_kafka(
        spark,
        cluster.bootstrap_servers,
        "txn-rows",
        options={"kafka.isolation.level": "read_committed"},
    )
    assert sorted(bytes(r["value"]) for r in df.collect()) == [b"c0", b"c1", b"c2"]
    # read_uncommitted over the same offsets sees the aborted rows (no Spark job);
    # offsets 2, 5 and 7 are the COMMIT, ABORT and COMMIT markers
    r = OffsetRange("txn-rows", 0, 0, 8)
    assert _read(cluster.bootstrap_servers, r) == [0, 1, 3, 4, 6]
    committed = "read_committed"
    assert _read(
        cluster.bootstrap_servers, r, **{"kafka.isolation.level": committed}
    ) == [0, 1, 6]


def test_read_range_past_the_log_end_is_data_loss_not_a_hang(cluster: Cluster) -> None:
    cluster.create_topic("short", 1)
    _produce(cluster.bootstrap_servers, "short", 1, 3)
    r = OffsetRange("short", 0, 0, 10)  # planned before a truncation, say
    with pytest.raises(DataLossError, match="the log ends at 3"):
        _read(cluster.bootstrap_servers, r)
    assert _read(cluster.bootstrap_servers, r, failOnDataLoss="false") == [0, 1, 2]


def test_batch_read_over_sasl_ssl(spark: SparkSession) -> None:
    """Spark's TLS and SASL options as Spark users write them (a JAAS login
    module line, a PEM trust store) reach the client: one read job over a
    SASL_SSL SCRAM listener."""
    pytest.importorskip("trustme")
    with Cluster(
        security_protocol="SASL_SSL",
        sasl_mechanisms=["SCRAM-SHA-256"],
        users={"alice": 'al "ice" pw'},
    ) as secure:
        config = secure.client_config("alice")
        with Client(
            secure.bootstrap_servers,
            ssl_context=client_ssl_context(str(secure.ca_file)),
            sasl=SaslConfig.from_client_config(config),
        ) as client:
            client.create_topics(["secure"])
            client.produce("secure", [(b"k%d" % i, b"v%d" % i) for i in range(5)])
        jaas = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="alice" password="al \\"ice\\" pw";'
        )
        df = read_kafka(
            spark,
            secure.bootstrap_servers,
            "secure",
            options={
                "kafka.security.protocol": "SASL_SSL",
                "kafka.sasl.mechanism": "SCRAM-SHA-256",
                "kafka.sasl.jaas.config": jaas,
                "kafka.ssl.truststore.location": str(secure.ca_file),
                "kafka.ssl.truststore.type": "PEM",
            },
        )
        rows = sorted((r.offset, bytes(r.value)) for r in df.collect())
    assert rows == [(i, b"v%d" % i) for i in range(5)]
