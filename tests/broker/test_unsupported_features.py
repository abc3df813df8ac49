"""A client asking for a feature the broker does not serve fails fast: a
non-retriable error, surfaced within seconds, that names the problem.

THE EXPECTATIONS LIVE HERE AND IN :mod:`kproto.broker.handlers.unsupported`. When a
feature lands (transactions are next), delete its refusal there and its tests here
(they assert the refusal, so they will fail until then), and test the feature
itself in its own module.

| feature | broker answer | confluent-kafka | kafka-python | aiokafka | kcat |
| --- | --- | --- | --- | --- | --- |
| transactions | FindCoordinator key type 1 / transactional InitProducerId: TRANSACTIONAL_ID_AUTHORIZATION_FAILED | fatal KafkaException from ``init_transactions()`` | ``TransactionalIdAuthorizationFailedError`` | ``TransactionalIdAuthorizationFailed`` from ``start()`` | exit 1 |

Each client is run against its own deadline of :data:`DEADLINE_S` (the time it may
take to give up; before this behaviour the transactional producers retried until
their timeout and the consumers polled forever without an error).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.broker.handlers.unsupported import (
    REFUSALS,
    TRANSACTIONS,
)
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey

#: How long a client may take to surface the error (s); pytest's timeout is the
#: backstop for a client that ignores its own deadline.
DEADLINE_S = 15.0

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1) as c:
        c.create_topic("plain", 1)
        yield c


# -- the broker's answers, at the protocol level -----------------------------------


def test_refusals_at_the_protocol_level(cluster: Cluster) -> None:
    info = cluster.state.nodes[1]
    with Connection(info.host, info.port, timeout_s=30) as conn:
        conn.negotiate()
        assert conn.broker_api_versions is not None
        # every API that refuses is advertised, so that clients ask and get a
        # non-retriable answer rather than give up silently or keep waiting
        assert set(REFUSALS) <= set(conn.broker_api_versions)
        found = conn.request(
            ApiKey.FIND_COORDINATOR, key_type=1, coordinator_keys=["tx"]
        )
        (coordinator,) = found.coordinators
        assert coordinator.error_code == TRANSACTIONS.error_code
        assert coordinator.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert "transactions are not supported" in coordinator.error_message
        pid = conn.request(
            ApiKey.INIT_PRODUCER_ID, transactional_id="tx", transaction_timeout_ms=60000
        )
        assert pid.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert pid.producer_id == -1
        # an idempotent producer (no transactional id) is still served
        idempotent = conn.request(
            ApiKey.INIT_PRODUCER_ID, transactional_id=None, transaction_timeout_ms=-1
        )
        assert (idempotent.error_code, idempotent.producer_epoch) == (0, 0)
        member = {"group_id": "g", "member_id": "m", "member_epoch": 0}
        # KIP-848 consumer groups and KIP-932 share groups are served
        # (tests/broker/test_consumer_protocol.py, tests/broker/test_share_groups.py)
        assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in REFUSALS
        assert ApiKey.SHARE_GROUP_HEARTBEAT not in REFUSALS
        share = conn.request(
            ApiKey.SHARE_GROUP_HEARTBEAT, **member, subscribed_topic_names=["plain"]
        )
        assert (share.error_code, share.member_epoch) == (ErrorCode.NONE, 1)


# -- transactions ------------------------------------------------------------------


def test_confluent_transactional_producer(cluster: Cluster) -> None:
    ck = pytest.importorskip("confluent_kafka")
    producer = ck.Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": "ck-tx",
            "log_level": 0,
        }
    )
    with pytest.raises(ck.KafkaException) as raised:
        producer.init_transactions(DEADLINE_S)
    error = raised.value.args[0]
    assert error.code() == ck.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert error.fatal() and not error.retriable()
    assert "transactions are not supported" in error.str()


def test_kafka_python_transactional_producer(cluster: Cluster) -> None:
    kafka = pytest.importorskip("kafka")
    from kafka.errors import TransactionalIdAuthorizationFailedError

    producer = kafka.KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        transactional_id="kp-tx",
        max_block_ms=int(DEADLINE_S * 1000),
    )
    try:
        with pytest.raises(TransactionalIdAuthorizationFailedError) as raised:
            producer.init_transactions()
        assert not raised.value.retriable
    finally:
        producer.close(timeout=5)


def test_aiokafka_transactional_producer(cluster: Cluster) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.errors import TransactionalIdAuthorizationFailed

    async def start() -> None:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, transactional_id="ak-tx"
        )
        try:
            await asyncio.wait_for(producer.start(), DEADLINE_S)
        finally:
            await producer.stop()

    with pytest.raises(TransactionalIdAuthorizationFailed) as raised:
        asyncio.run(start())
    assert not raised.value.retriable


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_transactional_producer(cluster: Cluster) -> None:
    done = subprocess.run(
        ["kcat", "-P", "-b", cluster.bootstrap_servers, "-t", "plain"]
        + ["-X", "transactional.id=kcat-tx"],
        input="one\n",
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode != 0
    assert "Transactional Id authorization failed" in done.stderr
    assert "transactions are not supported" in done.stderr
    assert cluster.records("plain", 0) == []
