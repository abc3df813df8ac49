"""``group.min.session.timeout.ms`` / ``group.max.session.timeout.ms``: a classic
member asking for a session timeout outside them is refused with
INVALID_SESSION_TIMEOUT (Kafka's ``GroupMetadataManager.classicGroupJoin``), through
the broker config as a user sets it and through kafka-python's consumer."""

from __future__ import annotations

import pytest

from kproto.broker import Cluster
from kproto.errors import ErrorCode
from tests.broker.wire import connect, join_classic

BOUNDS = {"group.min.session.timeout.ms": 6000, "group.max.session.timeout.ms": 60000}


def test_join_outside_the_configured_bounds_is_refused() -> None:
    with Cluster(config=BOUNDS) as cluster, connect(cluster) as conn:
        below = join_classic(conn, "g-below", timeout_ms=5999)
        above = join_classic(conn, "g-above", timeout_ms=60001)
        inside = join_classic(conn, "g-inside", timeout_ms=6000)
    assert below.error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert above.error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert inside.error_code == ErrorCode.MEMBER_ID_REQUIRED  # then joins as usual


def test_kafka_python_consumer_below_the_minimum_fails() -> None:
    kafka = pytest.importorskip("kafka")
    errors = pytest.importorskip("kafka.errors")
    with Cluster(config=BOUNDS) as cluster:
        cluster.create_topic("t", 1)
        consumer = kafka.KafkaConsumer(
            "t",
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="g-python",
            session_timeout_ms=3000,
            heartbeat_interval_ms=1000,
            request_timeout_ms=5000,
        )
        try:
            with pytest.raises(errors.InvalidSessionTimeoutError):
                consumer.poll(timeout_ms=5000)
        finally:
            consumer.close(autocommit=False)
