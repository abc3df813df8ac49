"""With ACLs on, the transaction APIs are checked on the transactional id as Kafka's
``KafkaApis`` checks them (:mod:`kproto.broker.handlers.authorize.txn`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.broker.dispatch import build
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from tests.broker.handlers.authorize.support import acl_cluster, plain

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with acl_cluster(num_partitions=1) as c:
        for name in ("alice-out", "alice-in", "bob-out"):
            c.create_topic(name)
        admin = admin_mod.AdminClient(c.client_config("admin"))

        def allow(kind: Any, name: str, prefixed: bool = True) -> Any:
            return admin_mod.AclBinding(
                kind,
                name,
                (
                    admin_mod.ResourcePatternType.PREFIXED
                    if prefixed
                    else admin_mod.ResourcePatternType.LITERAL
                ),
                "User:alice",
                "*",
                admin_mod.AclOperation.ALL,
                admin_mod.AclPermissionType.ALLOW,
            )

        acls = [
            allow(admin_mod.ResourceType.TOPIC, "alice-"),
            allow(admin_mod.ResourceType.GROUP, "alice-group", prefixed=False),
            allow(admin_mod.ResourceType.TRANSACTIONAL_ID, "alice-tx"),
        ]
        for future in admin.create_acls(acls).values():
            future.result(30)
        yield c


def _producer(cluster: Cluster, txn_id: str) -> Any:
    return ck.Producer(
        {
            **cluster.client_config("alice"),
            "transactional.id": txn_id,
            "log_level": 0,
        }
    )


def test_own_transactional_id_commits(cluster: Cluster) -> None:
    p = _producer(cluster, "alice-tx-1")
    p.init_transactions(20)
    p.begin_transaction()
    p.produce("alice-out", b"v")
    consumer = ck.Consumer(
        {**cluster.client_config("alice"), "group.id": "alice-group"}
    )
    p.send_offsets_to_transaction(
        [ck.TopicPartition("alice-in", 0, 3)], consumer.consumer_group_metadata(), 20
    )
    p.commit_transaction(20)
    consumer.close()
    committed = cluster.groups.fetch_offsets("alice-group", [("alice-in", 0)])
    assert committed[("alice-in", 0)] is not None
    assert [r.value for r in cluster.records("alice-out") if r.control is None] == [
        b"v"
    ]


def test_other_transactional_id_is_refused(cluster: Cluster) -> None:
    p = _producer(cluster, "bob-tx")
    with pytest.raises(ck.KafkaException) as raised:
        p.init_transactions(20)
    error = raised.value.args[0]
    assert error.code() == ck.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert error.fatal()


def _send(conn: Connection, api: ApiKey, version: int, **fields: Any) -> Any:
    return conn.send(build(request_type(api, version), fields))


def test_protocol_level_checks(cluster: Cluster) -> None:
    alice = plain("alice")
    node = cluster.txn.coordinator_for("alice-tx-2")
    assert node is not None
    port = cluster.state.nodes[node].port
    with Connection("127.0.0.1", port, sasl=alice) as conn:
        found = conn.request(
            ApiKey.FIND_COORDINATOR,
            key_type=1,
            coordinator_keys=["alice-tx-2", "bob-tx"],
        )
        codes = {c.key: c.error_code for c in found.coordinators}
        assert codes == {
            "alice-tx-2": ErrorCode.NONE,
            "bob-tx": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        }
        pid = conn.request(
            ApiKey.INIT_PRODUCER_ID,
            transactional_id="alice-tx-2",
            transaction_timeout_ms=60000,
        )
        assert pid.error_code == ErrorCode.NONE
        added = _send(
            conn,
            ApiKey.ADD_PARTITIONS_TO_TXN,
            3,
            v3_and_below_transactional_id="alice-tx-2",
            v3_and_below_producer_id=pid.producer_id,
            v3_and_below_producer_epoch=pid.producer_epoch,
            v3_and_below_topics=[
                {"name": "alice-out", "partitions": [0]},
                {"name": "bob-out", "partitions": [0]},
            ],
        )
        results = {
            t.name: t.results_by_partition[0].partition_error_code
            for t in added.results_by_topic_v3_and_below
        }
        assert results == {
            "alice-out": ErrorCode.OPERATION_NOT_ATTEMPTED,
            "bob-out": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
        described = conn.request(
            ApiKey.DESCRIBE_TRANSACTIONS, transactional_ids=["alice-tx-2", "bob-tx"]
        )
        states = {
            s.transactional_id: s.error_code for s in described.transaction_states
        }
        assert states == {
            "alice-tx-2": ErrorCode.NONE,
            "bob-tx": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        }
        batched = _send(conn, ApiKey.ADD_PARTITIONS_TO_TXN, 4, transactions=[])
        assert batched.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        producers = conn.request(
            ApiKey.DESCRIBE_PRODUCERS,
            topics=[
                {"name": "alice-out", "partition_indexes": [0]},
                {"name": "bob-out", "partition_indexes": [0]},
            ],
        )
        codes = {t.name: t.partitions[0].error_code for t in producers.topics}
        assert codes == {
            "alice-out": ErrorCode.NONE,
            "bob-out": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
