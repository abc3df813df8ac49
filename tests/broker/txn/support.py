"""What the transaction tests share: a confluent-kafka transactional producer, and
one committed plus one aborted transaction to write a topic's markers."""

from __future__ import annotations

from typing import Any

import pytest

from kproto.broker import Cluster

ck = pytest.importorskip("confluent_kafka")


def transactional_producer(cluster: Cluster, transactional_id: str, **conf: Any) -> Any:
    """A confluent-kafka ``Producer`` on ``cluster`` with ``transactional.id``
    ``transactional_id`` (librdkafka quiet, ``conf`` added), its transactions
    initialized (InitProducerId answered within 20 s)."""
    producer = ck.Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": transactional_id,
            "log_level": 0,
            **conf,
        }
    )
    producer.init_transactions(20)
    return producer


def commit_kept_abort_dropped(producer: Any, topic: str) -> None:
    """Two transactions of ``producer`` on ``topic``: ``b"kept"`` committed, then
    ``b"dropped"`` written (flushed) and aborted; a COMMIT and an ABORT marker."""
    producer.begin_transaction()
    producer.produce(topic, b"kept")
    producer.commit_transaction(20)
    producer.begin_transaction()
    producer.produce(topic, b"dropped")
    assert producer.flush(10) == 0
    producer.abort_transaction(20)
