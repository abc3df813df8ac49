"""What the transaction tests share: a confluent-kafka transactional producer, one
committed plus one aborted transaction to write a topic's markers, and a raw request
of one exact version to a node or to a transactional id's coordinator."""

from __future__ import annotations

from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.dispatch import build
from kproto.connection import Connection
from kproto.index import ApiKey, request_type

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


def call(
    cluster: Cluster, node_id: int, api: ApiKey, version: int, /, **fields: Any
) -> Any:
    """The answer of node ``node_id`` to one ``api`` request of exactly ``version``
    built from ``fields``, on a connection of its own (20 s timeout)."""
    node = cluster.state.nodes[node_id]
    with Connection(node.host, node.port, client_id="txn", timeout_s=20) as conn:
        return conn.send(build(request_type(api, version), fields))


def coordinator(cluster: Cluster, transactional_id: str) -> int:
    """The node id of ``transactional_id``'s transaction coordinator."""
    node = cluster.txn.coordinator_for(transactional_id)
    assert node is not None
    return node


def call_coordinator(
    cluster: Cluster, transactional_id: str, api: ApiKey, version: int, /, **fields: Any
) -> Any:
    """:func:`call` to ``transactional_id``'s transaction coordinator (the request's
    own ``transactional_id`` field, where it has one, goes in ``fields``)."""
    return call(cluster, coordinator(cluster, transactional_id), api, version, **fields)


def txn_offset_commit(
    cluster: Cluster,
    transactional_id: str,
    group: str,
    producer: tuple[int, int],
    version: int,
    topic: dict[str, Any],
    offset: int,
    metadata: str = "",
) -> int:
    """The error code of a TxnOffsetCommit of exactly ``version`` to ``group``'s
    coordinator: ``offset`` (with ``metadata``) for partition 0 of ``topic`` (its
    entry's key, ``{"name": ...}`` or ``{"topic_id": ...}``), committed by
    ``producer`` (producer id, epoch) of ``transactional_id`` from outside the group
    (generation -1, no member id)."""
    node = cluster.groups.coordinator_for(group)
    assert node is not None
    producer_id, producer_epoch = producer
    r = call(
        cluster,
        node,
        ApiKey.TXN_OFFSET_COMMIT,
        version,
        transactional_id=transactional_id,
        group_id=group,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                **topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": metadata,
                    }
                ],
            }
        ],
    )
    return int(r.topics[0].partitions[0].error_code)


def init_producer_id(
    cluster: Cluster,
    transactional_id: str,
    version: int,
    *,
    transaction_timeout_ms: int = 60_000,
    **fields: Any,
) -> Any:
    """The InitProducerIdResponse of exactly ``version`` from ``transactional_id``'s
    coordinator (``fields``: ``producer_id`` and ``producer_epoch`` for v3+)."""
    return call_coordinator(
        cluster,
        transactional_id,
        ApiKey.INIT_PRODUCER_ID,
        version,
        transactional_id=transactional_id,
        transaction_timeout_ms=transaction_timeout_ms,
        **fields,
    )


def end_txn(
    cluster: Cluster,
    transactional_id: str,
    producer: tuple[int, int],
    committed: bool,
    version: int,
) -> Any:
    """The EndTxnResponse of exactly ``version`` to ``producer`` (producer id,
    epoch) of ``transactional_id`` committing (or, not ``committed``, aborting)."""
    producer_id, producer_epoch = producer
    return call_coordinator(
        cluster,
        transactional_id,
        ApiKey.END_TXN,
        version,
        transactional_id=transactional_id,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        committed=committed,
    )


def call_leader(
    cluster: Cluster,
    topic: str,
    partition: int,
    api: ApiKey,
    version: int,
    /,
    **fields: Any,
) -> Any:
    """:func:`call` to the leader of ``topic``-``partition``."""
    leader = cluster.state.leader(topic, partition)
    assert leader is not None
    return call(cluster, leader, api, version, **fields)
