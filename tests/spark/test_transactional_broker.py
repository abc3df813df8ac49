"""kproto.spark reads a transactional broker's data dir: the transaction markers
with valid CRCs and the ``__transaction_state`` records (one Spark job)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from kproto.broker import Cluster
from kproto.spark import decode_internal_topic, read_log_segments
from tests.broker.txn.support import commit_kept_abort_dropped, transactional_producer


def test_markers_and_transaction_state(spark: SparkSession, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Cluster(data_dir=data, transaction_partitions=2) as cluster:
        cluster.create_topic("orders", 1)
        producer = transactional_producer(cluster, "spark-app")
        commit_kept_abort_dropped(producer, "orders")
        producer_id = cluster.txn.transactions["spark-app"].producer_id
    paths = [
        str(data / "orders-0"),
        str(data / "__transaction_state-0"),
        str(data / "__transaction_state-1"),
    ]
    rows = decode_internal_topic(
        read_log_segments(spark, paths), "__transaction_state"
    ).collect()
    orders = [r for r in rows if r.topic == "orders"]
    assert [(r.is_control, r.is_transactional, r.producer_id) for r in orders] == [
        (False, True, producer_id),
        (True, True, producer_id),
        (False, True, producer_id),
        (True, True, producer_id),
    ]
    # the markers pass through undecoded and without error: their CRCs held
    assert [r.error for r in orders if r.is_control] == [None, None]
    state = [r for r in rows if r.topic == "__transaction_state"]
    assert all(r.error is None for r in state), [r.error for r in state]
    assert {r.transaction_log_key.transactional_id for r in state} == {"spark-app"}
    statuses = [(r.offset, r.transaction_log_value.transaction_status) for r in state]
    # Empty, Ongoing, PrepareCommit, CompleteCommit, Ongoing, PrepareAbort,
    # CompleteAbort (Kafka's state ids)
    assert [s for _, s in sorted(statuses)] == [0, 1, 2, 4, 1, 3, 5]
    assert {r.transaction_log_value.producer_id for r in state} == {producer_id}
