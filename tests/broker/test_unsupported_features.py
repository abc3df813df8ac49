"""A client asking for a feature the broker does not serve fails fast: a
non-retriable error, surfaced within seconds, that names the problem.

THE EXPECTATIONS LIVE HERE AND IN :mod:`kproto.broker.handlers.unsupported`. When a
feature lands, delete its refusal there and its tests here
(they assert the refusal, so they will fail until then), and test the feature
itself in its own module.

| feature | broker answer | confluent-kafka | kafka-python | aiokafka | kcat |
| --- | --- | --- | --- | --- | --- |
| KIP-932 share consumer | ShareGroupHeartbeat: UNSUPPORTED_VERSION | fatal KafkaException from ``ShareConsumer.poll()`` | (no share groups) | (no share groups) | - |

Each client is run against its own deadline of :data:`DEADLINE_S` (the time it may
take to give up; before this behaviour the consumers polled forever without an
error). Transactions, refused here until the transaction coordinator landed, are
served and tested in ``tests/broker/txn/``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.broker.handlers.unsupported import (
    REFUSALS,
    SHARE_GROUPS,
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
        member = {"group_id": "g", "member_id": "m", "member_epoch": 0}
        share = conn.request(
            ApiKey.SHARE_GROUP_HEARTBEAT, **member, subscribed_topic_names=["plain"]
        )
        assert share.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert share.error_message == SHARE_GROUPS.message
        # KIP-848 consumer groups are served (tests/broker/test_consumer_protocol.py)
        assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in REFUSALS


def test_confluent_share_consumer(cluster: Cluster) -> None:
    ck = pytest.importorskip("confluent_kafka")
    if not hasattr(ck, "ShareConsumer"):
        pytest.skip("this confluent-kafka has no ShareConsumer (2.16+)")
    consumer = ck.ShareConsumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "kip932",
            "log_level": 0,
        }
    )
    consumer.subscribe(["plain"])
    deadline = time.monotonic() + DEADLINE_S
    try:
        with pytest.raises(ck.KafkaException) as raised:
            while time.monotonic() < deadline:
                for message in consumer.poll(0.5):
                    assert message.error() is None
    finally:
        consumer.close()
    error = raised.value.args[0]
    assert error.code() == ck.KafkaError.UNSUPPORTED_VERSION
    assert error.fatal()
    assert "ShareGroupHeartbeat" in error.str()
