"""read_log_segments on the data directory of a broker that went through faults:
an idempotent producer's records, each stored once, in order per partition."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kproto.broker import Cluster
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.spark import read_log_segments

ck = pytest.importorskip("confluent_kafka")


def test_exactly_once_through_faults_seen_by_spark(
    spark: SparkSession, tmp_path: Path
) -> None:
    partitions, total = 2, 400
    with Cluster(nodes=3, data_dir=tmp_path) as cluster:
        cluster.create_topic("t", partitions)
        producer = ck.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "enable.idempotence": True,
                "retry.backoff.ms": 20,
                "log_level": 2,
            }
        )
        errors: list[object] = []
        stopped = cluster.leader("t", 0)
        for i in range(total):
            producer.produce(
                "t",
                b"%d" % (i // partitions),
                partition=i % partitions,
                on_delivery=lambda err, msg: err and errors.append(err),
            )
            if i == total // 4:
                assert producer.flush(30) == 0
                cluster.inject_errors(
                    ApiKey.PRODUCE,
                    [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER],
                )
            elif i == total // 2:
                cluster.stop_node(stopped)
            elif i == 3 * total // 4:
                cluster.start_node(stopped)
        assert producer.flush(60) == 0
        assert errors == []
    rows = read_log_segments(spark, [str(tmp_path)]).where("topic = 't'").collect()
    for p in range(partitions):
        got = sorted(
            (r["offset"], bytes(r["value"])) for r in rows if r["partition"] == p
        )
        assert got == [(n, b"%d" % n) for n in range(total // partitions)]
