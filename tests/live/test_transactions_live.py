"""kproto.client's transactional producer against librdkafka's mock cluster
(transaction version 1: the mock finalizes no ``transaction.version``): the TV1
request flow the mock accepts (FindCoordinator, InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn), commits read back
by a confluent-kafka consumer.

The mock (librdkafka 2.16) writes no transaction markers, stores no
TxnOffsetCommit and fences no producer (confluent-kafka's own transactional
producer shows the same: its aborted records reach a read_committed consumer and
a second ``init_transactions`` leaves the first producer working), so abort
visibility, transactional offsets and fencing are tested against kproto's broker
only (``tests/client/test_client_transactions.py``)."""

from __future__ import annotations

import uuid

import confluent_kafka
import pytest

from kproto.client import (
    ConsumerGroupMetadata,
    TopicPartition,
    TransactionalProducer,
)
from tests.eventually import eventually
from tests.live.mock_cluster import MOCK_VERSION_CAPS, MockCluster

pytestmark = pytest.mark.live


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def producer(cluster: MockCluster, txn_id: str) -> TransactionalProducer:
    return TransactionalProducer(
        cluster.bootstrap, txn_id, timeout_s=10.0, version_caps=MOCK_VERSION_CAPS
    )


def read_committed(cluster: MockCluster, topic: str, expected: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": fresh("reader"),
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []

    def enough() -> bool:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            values.append(msg.value() or b"")
        return len(values) >= expected

    try:
        eventually(enough, 20, interval_s=0)
        # nothing more arrives (an aborted record would come right after)
        for _ in range(5):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                values.append(msg.value() or b"")
    finally:
        consumer.close()
    return sorted(values)


def test_commit_abort_and_offsets(cluster: MockCluster) -> None:
    """Every request of a TV1 transaction is accepted; the committed records
    are read back (the mock shows aborted ones too: no markers)."""
    topic, group = fresh("txn"), fresh("group")
    with producer(cluster, fresh("tx")) as p:
        p.init_transactions()
        assert p.manager.transaction_version == 1
        with p.transaction():
            p.send(topic, [(b"a", b"committed-1"), (b"b", b"committed-2")])
            p.send_offsets_to_transaction(
                {TopicPartition(topic, 0): 2}, ConsumerGroupMetadata(group)
            )
        p.begin_transaction()
        p.send(topic, [(b"a", b"aborted")])
        p.abort_transaction()
        with p.transaction():
            p.send(topic, [(b"c", b"committed-3")])
        assert p.manager.producer_epoch == 0  # TV1: the epoch stays
    assert read_committed(cluster, topic, 4) == [
        b"aborted",  # the mock writes no ABORT marker
        b"committed-1",
        b"committed-2",
        b"committed-3",
    ]
