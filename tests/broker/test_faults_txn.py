"""A confluent-kafka transactional producer through a move of its transaction
coordinator (the node leading its ``__transaction_state`` partition stops)."""

from __future__ import annotations

import pytest

from kproto.broker import Cluster
from kproto.index import ApiKey
from tests.broker.txn.support import transactional_producer
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")


def test_transactional_producer_rides_through_a_coordinator_move() -> None:
    with Cluster(nodes=3, request_log_size=20_000) as cluster:
        if getattr(cluster, "txn", None) is None:
            pytest.skip("this broker has no transaction coordinator yet")
        cluster.create_topic("t", 2)
        producer = transactional_producer(cluster, "tx")
        producer.begin_transaction()
        for i in range(10):
            producer.produce("t", b"%d" % i, partition=i % 2)
        producer.commit_transaction(20)
        coordinator = cluster.transaction_coordinator("tx")
        cluster.stop_node(coordinator)
        moved_to = cluster.transaction_coordinator("tx")
        assert moved_to not in (coordinator, -1)
        producer.begin_transaction()
        for i in range(10, 20):
            producer.produce("t", b"%d" % i, partition=i % 2)
        producer.commit_transaction(30)
        assert cluster.requests.filter(api_key=ApiKey.END_TXN, node_id=moved_to)
        consumer = ck.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "reader",
                "isolation.level": "read_committed",
                "log_level": 0,
            }
        )
        consumer.assign([ck.TopicPartition("t", p, 0) for p in range(2)])
        seen: list[int] = []

        def twenty() -> bool:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen.append(int(msg.value()))
            return len(seen) >= 20

        eventually(twenty, 30, interval_s=0, retry_on=())
        consumer.close()
        assert sorted(seen) == list(range(20))
