"""A broker restarted on the same data directory recovers its transactions.

What happens to each transaction, as Kafka's ``TransactionStateManager`` loader and
log recovery do: a completed one stays completed (its markers and state are in the
logs); one found in PrepareCommit/PrepareAbort gets its markers written and is
completed; an open (Ongoing) one stays open, with the partitions' last stable
offset held at its first record, until its timeout or the producer's next
InitProducerId aborts it. Transactional offset commits wait, pending, for the same
outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from kproto.broker import Cluster
from kproto.broker.txn import TransactionState
from kproto.errors import ErrorCode
from kproto.records import ControlRecordType
from tests.broker.txn.support import transactional_producer
from tests.consuming import read_settled

ck = pytest.importorskip("confluent_kafka")


def _producer(cluster: Cluster, txn_id: str) -> object:
    return transactional_producer(cluster, txn_id)


def _read_committed(cluster: Cluster, topic: str, expect: int) -> list[bytes]:
    c = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "reader",
            "isolation.level": "read_committed",
            "log_level": 0,
        }
    )
    c.assign([ck.TopicPartition(topic, 0, 0)])
    got = read_settled(c, expect, 20)
    c.close()
    return got


def _open_transaction(
    cluster: Cluster, txn_id: str, value: bytes, group: str, offset: int
) -> Any:
    """Transactional producer ``txn_id`` with an open transaction holding
    ``value`` in "out" and ``group``'s offset ``offset`` of "in"-0."""
    producer = _producer(cluster, txn_id)
    producer.begin_transaction()
    producer.produce("out", value)
    member = ck.Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group}
    )
    producer.send_offsets_to_transaction(
        [ck.TopicPartition("in", 0, offset)], member.consumer_group_metadata(), 20
    )
    return producer


def test_restart_recovers_transactions(tmp_path: Path) -> None:
    data = tmp_path / "data"
    group = "etl"
    with Cluster(nodes=2, data_dir=data) as cluster:
        cluster.create_topic("out", 1)
        cluster.create_topic("in", 1)
        done = _open_transaction(cluster, "done", b"committed", group, 5)
        done.commit_transaction(20)
        left_open = _open_transaction(cluster, "open", b"in-flight", "other", 9)
        assert left_open.flush(10) == 0

        # a transaction whose PrepareCommit was written but not its markers (a
        # crash between the two)
        cluster.create_topic("out2", 1)
        prepared = _producer(cluster, "prepared")
        prepared.begin_transaction()
        prepared.produce("out2", b"prepared-data")
        assert prepared.flush(10) == 0

        def prepare() -> None:
            meta = cluster.txn.transactions["prepared"]
            new = attrs.evolve(meta, partitions=set(meta.partitions))
            new.transition(TransactionState.PREPARE_COMMIT, cluster.state.now_ms())
            assert cluster.txn._persist(new) == ErrorCode.NONE

        cluster._on_loop(prepare)
        before = dict(cluster.txn.transactions)
        next_id = cluster.state.next_producer_id
        del done, left_open, prepared

    with Cluster(nodes=2, data_dir=data) as cluster:
        txn = cluster.txn
        assert txn.transactions["done"].state == TransactionState.COMPLETE_COMMIT
        assert txn.transactions["done"].producer_id == before["done"].producer_id
        assert txn.transactions["open"].state == TransactionState.ONGOING
        assert txn.transactions["open"].partitions == before["open"].partitions
        assert cluster.state.next_producer_id >= next_id
        committed = cluster.groups.fetch_offsets(group, [("in", 0)])[("in", 0)]
        assert committed is not None and committed.offset == 5
        assert cluster.groups.fetch_offsets("other", [("in", 0)])[("in", 0)] is None
        assert cluster.groups.pending_txn_offsets.has_pending("other", "in", 0)
        out = cluster.state.partition_log("out", 0)
        assert out is not None
        # the open transaction holds the last stable offset at its first record
        assert out.last_stable_offset == 2 < out.high_watermark
        assert _read_committed(cluster, "out", 1) == [b"committed"]
        # the prepared transaction was completed on start: marker and state
        assert txn.transactions["prepared"].state == TransactionState.COMPLETE_COMMIT
        out2 = cluster.records("out2", 0)
        assert [r.value for r in out2 if r.control is None] == [b"prepared-data"]
        assert out2[-1].control is not None
        assert out2[-1].control.type == ControlRecordType.COMMIT
        assert _read_committed(cluster, "out2", 1) == [b"prepared-data"]
        # the producer comes back: its open transaction is aborted
        again = _producer(cluster, "open")
        assert (
            txn.transactions["open"].producer_epoch == before["open"].producer_epoch + 2
        )
        assert out.last_stable_offset == out.high_watermark
        markers = [r.control.type for r in cluster.records("out", 0) if r.control]
        assert markers == [ControlRecordType.COMMIT, ControlRecordType.ABORT]
        assert not cluster.groups.pending_txn_offsets.has_pending("other", "in", 0)
        assert cluster.groups.fetch_offsets("other", [("in", 0)])[("in", 0)] is None
        again.begin_transaction()
        again.produce("out", b"after-restart")
        again.commit_transaction(20)
        assert _read_committed(cluster, "out", 2) == [b"committed", b"after-restart"]
