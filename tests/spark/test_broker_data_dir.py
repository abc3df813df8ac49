"""read_log_segments on a kproto broker's data directory returns every produced record."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kproto.broker import Cluster
from kproto.spark import read_log_segments

ck = pytest.importorskip("confluent_kafka")


def test_read_log_segments_on_a_broker_data_dir(
    spark: SparkSession, tmp_path: Path
) -> None:
    with Cluster(nodes=2, data_dir=tmp_path) as cluster:
        cluster.create_topic("orders", 2)
        producer = ck.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "compression.type": "lz4",
                "log_level": 2,
            }
        )
        for i in range(100):
            producer.produce("orders", b"order-%d" % i, key=b"k%d" % i, partition=i % 2)
        assert producer.flush(30) == 0
        stored = {
            (p, r.offset, r.value)
            for p in range(2)
            for r in cluster.records("orders", p)
        }
    rows = read_log_segments(spark, [str(tmp_path)]).where("topic = 'orders'").collect()
    assert {(r["partition"], r["offset"], bytes(r["value"])) for r in rows} == stored
    assert len(rows) == 100
